// __NAME__: a loadhost plugin. Each task is one call of doTask: here, one GET of TARGET_URL with a
// check that the status is 200. A 5xx is retryable, any other non-200 a failure, and a request
// that got no response (refused, denied by --allow-host, …) retryable.

import {
  HttpError, check, declareMetrics, declareOptions, env, failed, get, retryable,
} from './lib/loadhost.js';

// The metrics it records, for `loadhost inspect` and for thresholds without `--metric`.
declareMetrics('status is 200:check');

// The settings it reads (`loadhost run -e NAME=VALUE`), each with a type, a default or `!`
// (required) and a help: `loadhost inspect` lists them, `loadhost run` checks -e against them
// before any load, and env(NAME) reads each typed, its default from here.
declareOptions('TARGET_URL:url=http://127.0.0.1:8080/ "the page to GET"');

// The module's top level runs at build time, so settings are read on the first task.
let url;

export function doTask(task) {
  url ??= env('TARGET_URL');
  let response;
  try {
    response = get(url).send();
  } catch (e) {
    if (e instanceof HttpError) throw retryable(e.message);
    throw e;
  }
  if (check('status is 200', response.status === 200)) return;
  if (response.status >= 500) throw retryable(`GET ${url} answered ${response.status}`);
  throw failed(`GET ${url} answered ${response.status}`);
}

// Optional, once per run before any load; what it returns goes to every init and to teardown:
// export function setup(options) { return ''; }
// Optional, once per worker before its first task:
// export function init(workerId, setupData) {}
// Optional, once per run after the load:
// export function teardown(setupData) {}
