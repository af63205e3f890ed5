// The host's HTTP options through the JavaScript SDK (tests/e2e/http_features.rs): one
// `GET $TARGET_URL` per task with the SDK's defaults (follow redirects, keep cookies, decode the
// body).
//
// Checks `status is 200`, `redirects as expected` (EXPECT_REDIRECTS, default 0), `final url as
// expected` (with EXPECT_FINAL), and `decoded` (the body is as long as the target's
// `x-decoded-length`, without `content-encoding`, when the target says a decoded length). A request
// error fails the task with its text.

import {
  HttpError, check, declareMetrics, declareOptions, env, failed, get,
} from './lib/loadhost.js';

declareMetrics('status is 200:check', 'redirects as expected:check', 'final url as expected:check', 'decoded:check');
declareOptions(
  'TARGET_URL:url=http://127.0.0.1:8080/ "the page to GET"',
  'EXPECT_REDIRECTS:int=0 "how many redirects the request should follow"',
  'EXPECT_FINAL:string "the URL the response should come from (none: not checked)"',
);

export function doTask() {
  const url = env('TARGET_URL');
  let response;
  try {
    response = get(url, { name: 'features' }).send();
  } catch (e) {
    throw e instanceof HttpError ? failed(e.message) : e;
  }
  check('redirects as expected', response.redirects === env('EXPECT_REDIRECTS'));
  const final = env('EXPECT_FINAL') ?? '';
  if (final) check('final url as expected', response.finalUrl === final);
  const decodedLength = response.header('x-decoded-length');
  if (decodedLength !== undefined) {
    check('decoded', response.body.length === Number(decodedLength)
      && response.text().startsWith('loadhost sends') && response.header('content-encoding') === undefined);
  }
  if (!check('status is 200', response.status === 200)) throw failed(`GET ${url} answered ${response.status}`);
}
