// A plugin that exercises the whole SDK surface, for sdk/js/test.sh. Each outcome depends only on
// the iteration, so a run of N tasks on one worker has known counts (see test.sh).

import {
  HttpError, TaskError, abort, check, counter, env, envOr, environment, failed, gauge, inputJson, post,
  retryable, trend,
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
