// A two-step checkout journey against the built-in target: the JavaScript twin of
// `plugins/checkout` (Rust), to show and test groups, checks with tags and expected statuses;
// `checkout-python` and `checkout-c` behave the same.
//
// Each worker expects 200-299 and 410 for its requests (set in `init`). Each task with iteration
// `i` has the tier `gold` (even `i`) or `silver` (odd `i`), and:
// - in the group `checkout`: `GET TARGET_URL/` (`/status?code=503` for a silver task with
//   `i % 4 == 1`) and the check `status is 200`, tagged with the tier;
// - in the group `pay`, inside it: `GET TARGET_URL/status?code=404`, a request that expects
//   200-299 and 404, and the check `basket gone`;
// - outside any group: `GET TARGET_URL/status?code=410`, which the worker expects, and the check
//   `coupon expired`.
//
// So only the 503s count in `http_req_failed`. A check that does not hold fails the task.

import { check, declareMetrics, envOr, failed, get, group, setExpectedStatuses } from './lib/loadhost.js';

declareMetrics('status is 200{tier,group}:check', 'basket gone{group}:check', 'coupon expired:check');

export function init() {
  setExpectedStatuses({ min: 200, max: 299 }, 410);
}

// GET `url`; a request error fails the task with its text.
function status(request) {
  try {
    return request.send().status;
  } catch (e) {
    throw failed(String(e.message ?? e));
  }
}

export function doTask(task) {
  const base = envOr('TARGET_URL', 'http://127.0.0.1:8080').replace(/\/+$/, '');
  const i = task.iteration;
  const tier = i % 2n === 0n ? 'gold' : 'silver';
  const [ok, gone] = group('checkout', () => {
    const url = tier === 'silver' && i % 4n === 1n ? `${base}/status?code=503` : `${base}/`;
    const held = check('status is 200', status(get(url)) === 200, { tier });
    const basket = group('pay', () => check('basket gone',
      status(get(`${base}/status?code=404`, { expectedStatuses: [{ min: 200, max: 299 }, 404] })) === 404));
    return [held, basket];
  });
  const expired = check('coupon expired', status(get(`${base}/status?code=410`)) === 410);
  if (!(ok && gone && expired)) throw failed(`a check failed on iteration ${i} (${tier})`);
}
