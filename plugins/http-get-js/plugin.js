// One `GET TARGET_URL` per task (default http://127.0.0.1:8080/), with a check that the status is
// 200. A 5xx is a retryable failure, any other non-200 a failure; a denied or broken request is
// retryable. The host records http_reqs, http_req_duration and the rest by itself. Only the status
// is read, so neither the headers nor the body are brought into the plugin.
// The JavaScript twin of plugins/http-get; build it with `sdk/js/build.sh plugins/http-get-js OUT.wasm`.

import {
  HttpError, check, declareMetrics, declareOptions, env, failed, get, retryable,
} from './lib/loadhost.js';

declareMetrics('status is 200:check');
declareOptions('TARGET_URL:url=http://127.0.0.1:8080/ "the page to GET"');

// Read on the first task, not at the top level: the top level runs at build time.
let url;

export function doTask(_task) {
  url ??= env('TARGET_URL');
  let response;
  try {
    response = get(url).withoutHeaders().discardBody().send();
  } catch (e) {
    if (e instanceof HttpError) throw retryable(e.message);
    throw e;
  }
  if (check('status is 200', response.status === 200)) return;
  if (response.status >= 500) throw retryable(`GET ${url} answered ${response.status}`);
  throw failed(`GET ${url} answered ${response.status}`);
}
