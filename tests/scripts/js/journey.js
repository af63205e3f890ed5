// A three-step journey against loadhost's built-in target (`loadhost target`), run as a script by
// the JavaScript runner (tests/e2e/runner_js.rs): the helpers come from ./helpers.js, the SDK from
// ./lib/loadhost.js as in a plugin build.sh builds.

import { check, counter, envOr, failed } from './lib/loadhost.js';
import { echoed, step } from './helpers.js';

let base;

export function init(workerId) {
  base = envOr('TARGET_URL', 'http://127.0.0.1:8080');
  console.log(`worker ${workerId} starts against ${base}`);
}

export function doTask(task) {
  step('home', `${base}/`);
  const order = { id: Number(task.iteration), item: 'tea' };
  if (!check('order echoed', echoed(`${base}/echo`, order))) throw failed(`order ${order.id} was not echoed`);
  step('status 204', `${base}/status?code=204`, 204);
  counter('journeys', 1, { marker: 'v1' });
}
