// A plugin that exercises the whole SDK surface, for sdk/js/test.sh. Each outcome depends only on
// the iteration, so a run of N tasks on one worker has known counts (see test.sh).

import {
  HttpError, TaskError, abort, check, cookies, counter, env, envOr, environment, failed, gauge, get, inputJson,
  post, retryable, trend,
} from './lib/loadhost.js';

let initData;

export function setup(options) {
  JSON.parse(options); // the run's configuration, as JSON
  if (envOr('SETUP_FAIL', false)) throw new Error('setup refused');
  return 'token-42';
}

export function init(workerId, setupData) {
  initData = setupData;
}

export function teardown(setupData) {
  if (setupData !== 'token-42') throw new Error(`teardown got ${setupData}`);
}

export function doTask(task) {
  counter('tasks_by_scenario', 1, { scenario: task.scenario });
  counter('units', 2n);
  gauge('last_worker', task.workerId);
  trend('iteration_mod_10', Number(task.iteration % 10n));
  check('iteration is a BigInt', typeof task.iteration === 'bigint');
  check('setup data reached init', initData === 'token-42');
  check('env number', envOr('N', 0) === 42);
  check('env bool', envOr('FLAG', false) === true);
  check('env default', envOr('UNSET', 'fallback') === 'fallback');
  check('env string', env('S') === 'hello world' && environment().S === 'hello world');
  const row = inputJson(task);
  check('input row', row === undefined || typeof row.id === 'number');

  const target = envOr('TARGET_URL', 'http://127.0.0.1:8080/');
  const echoed = post(new URL('/echo', target).href).json({ id: 7 }).timeout(5000).send();
  check('echo round trip', echoed.isSuccess() && echoed.json().id === 7 && echoed.header('Content-Type') === 'application/json');
  // The response parts a request asks for: the host reads the whole response either way.
  const echo = () => post(new URL('/echo', target).href).json({ id: 7 });
  const noBody = echo().discardBody().send();
  check('discardBody: headers without body', noBody.isSuccess() && noBody.body.length === 0
    && noBody.text() === '' && noBody.header('content-type') === 'application/json');
  const noHeaders = echo().withoutHeaders().send();
  check('withoutHeaders: body without headers', noHeaders.isSuccess() && noHeaders.headers.length === 0
    && noHeaders.header('content-type') === undefined && noHeaders.json().id === 7);
  const statusOnly = echo().withoutHeaders().discardBody().send();
  check('withoutHeaders and discardBody: the status alone', statusOnly.status === 200
    && statusOnly.headers.length === 0 && statusOnly.body.length === 0);
  // The host's options, by default: 3 redirects followed to a gzip body, which comes back decoded.
  const hops = new URL('/redirect?n=3&to=/gzip%3Fbytes%3D500', target).href;
  const gzipUrl = new URL('/gzip?bytes=500', target).href;
  const followed = get(hops).send();
  check('redirects followed, gzip decoded', followed.status === 200 && followed.redirects === 3
    && followed.finalUrl === gzipUrl && followed.body.length === 500 && followed.header('content-encoding') === undefined);
  // Each option turned off, as an options object and as builder methods.
  const kept = get(hops, { redirects: 0, decompress: false, name: 'surface-raw' }).send();
  const raw = get(gzipUrl).redirects(0).rawBody().name('surface-raw').send();
  check('options: no redirect, raw body', kept.status === 302 && kept.redirects === 0 && kept.finalUrl === hops
    && raw.header('content-encoding') === 'gzip' && raw.body.length !== 500);
  let refused = 0;
  for (const bad of [() => get(hops, { redirect: 0 }), () => get(hops).redirects(-1), () => get(hops, { auth: 'a:b' })]) {
    try { bad(); } catch (e) { refused += e instanceof TypeError || e instanceof RangeError ? 1 : 0; }
  }
  check('bad options refused', refused === 3);
  // The worker's cookie jar: kept from a response, sent with the next request, read, set, cleared;
  // a request without cookies neither sends nor keeps them.
  cookies.clear();
  const jarUrl = new URL('/cookies', target).href;
  get(new URL('/cookies/set?c=w', target).href).send();
  const sent = get(jarUrl).send().text();
  const unsent = get(jarUrl, { cookies: false }).send().text();
  const unsentToo = get(jarUrl).noCookies().send().text();
  cookies.set(target, 'x=1; Path=/');
  const jar = cookies.get(jarUrl).map(([k, v]) => `${k}=${v}`).sort().join(';');
  cookies.clear();
  let badUrl = false;
  try { cookies.get('not a url'); } catch (e) { badUrl = e instanceof HttpError && e.kind === 'invalid-request'; }
  check('cookie jar: kept, sent, read, set, cleared', sent === 'c=w' && unsent === '' && unsentToo === ''
    && jar === 'c=w;x=1' && cookies.get(jarUrl).length === 0 && badUrl);
  // Basic authentication is one more header; the target answers whatever it is.
  check('basic auth request answered', get(target, { auth: ['ada', 'secret'] }).send().status === 200
    && get(target).basicAuth('ada', 'secret').send().status === 200);
  try {
    post('http://127.0.0.1:9/').send();
    check('denied request throws HttpError', false);
  } catch (e) {
    check('denied request throws HttpError', e instanceof HttpError && e.kind === 'denied');
  }

  if (envOr('ABORT_AT', -1) === Number(task.iteration)) throw abort('stop here');
  switch (Number(task.iteration % 5n)) {
    case 1:
      throw failed('thrown failure');
    case 2:
      return retryable('returned retryable');
    case 3:
      JSON.parse('not json'); // an exception that is no TaskError: the task fails with its message
      return undefined;
    case 4:
      // An async doTask: the promise is awaited (and a returned TaskError would count as well).
      return Promise.resolve().then(() => check('async doTask', retryable('x') instanceof TaskError));
    default:
      return undefined;
  }
}
