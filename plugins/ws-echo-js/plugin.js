// A WebSocket echo workload: one connection per worker, opened on its first task and kept for the
// later ones (a module variable is per-worker state: each worker is its own instance).
//
// Each task sends MESSAGES text messages (default 10) `w{worker}-i{iteration}-m{k}`, k from 0, to
// TARGET_URL (default ws://127.0.0.1:8080/ws/echo, the built-in target's echo), and after each one
// receives one message and checks that it is what was sent (`echo matches`). A mismatch fails the
// task (the connection is kept); any other error (a network error, a closed connection, a timeout,
// too many connections, a message over the cap) forgets the connection, so the next task
// reconnects, and is retryable, except a denied host or a bad URL, which fail the task. The host records ws_sessions,
// ws_msgs_sent, ws_msgs_received and the rest by itself. The Python and C versions behave the same.

import { check, declareMetrics, declareOptions, env, failed, retryable } from './lib/loadhost.js';
import * as ws from './lib/ws.js';

declareMetrics('echo matches:check');
declareOptions(
  'TARGET_URL:url=ws://127.0.0.1:8080/ws/echo "the WebSocket echo server"',
  'MESSAGES:int=10 "messages sent and awaited per task"',
);

// Milliseconds: long enough for a loaded target, short of the host's 60 s task timeout.
const CONNECT_TIMEOUT_MS = 10000;
const RECEIVE_TIMEOUT_MS = 10000;

// Read on the first task: the environment is not there when the build evaluates the module.
let settings;
// This worker's connection, undefined until the first task opens it or after an error forgot it.
let conn;

// Drop the connection, so that the next task opens a new one.
function forget() {
  const old = conn;
  conn = undefined;
  old?.drop();
}

// The task error for a WebSocket error: a denied host (its message says "denied") or a bad URL
// will not get better; the rest may on a new connection (as the Rust ws-echo decides).
function outcome(e) {
  if (!(e instanceof ws.WebSocketError)) return e;
  if (e.kind === 'denied' || e.kind === 'invalid-request') return failed(e.message);
  return retryable(e.message);
}

export function doTask(task) {
  settings ??= {
    url: env('TARGET_URL'),
    messages: env('MESSAGES'),
  };
  if (conn === undefined) {
    try {
      conn = ws.connect(settings.url, { timeout: CONNECT_TIMEOUT_MS });
    } catch (e) {
      throw outcome(e);
    }
  }
  for (let k = 0; k < settings.messages; k++) {
    const text = `w${task.workerId}-i${task.iteration}-m${k}`;
    let echoed;
    try {
      conn.sendText(text);
      echoed = conn.receive(RECEIVE_TIMEOUT_MS);
    } catch (e) {
      forget();
      throw outcome(e);
    }
    if (echoed instanceof ws.Close) {
      forget();
      const why = echoed.reason === '' ? `${echoed.code}` : `${echoed.code} ${echoed.reason}`;
      throw retryable(`the server closed the connection (${why})`);
    }
    if (!check('echo matches', echoed === text)) {
      const shown = typeof echoed === 'string' ? `'${echoed}'` : `${echoed.length} bytes`;
      throw failed(`sent '${text}', received ${shown}`);
    }
  }
}
