// The journey's helpers, imported by ./journey.js through a relative path.

import { check, get, post } from './lib/loadhost.js';

/** GET `url` named `name`, and check that it answered `status`. */
export function step(name, url, status = 200) {
  const response = get(url, { name }).send();
  return check(`${name} answered ${status}`, response.status === status);
}

/** POST `value` as JSON to the target's /echo, and whether the same value came back. */
export function echoed(url, value) {
  const response = post(url).json(value).send();
  return response.status === 200 && response.json().id === value.id;
}
