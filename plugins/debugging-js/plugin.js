// What loadhost shows when a plugin goes wrong: the JavaScript twin of `plugins/debugging` (Rust),
// for the host's output and errors-table tests; `debugging-python` and `debugging-c` behave the
// same.
//
// Each task with iteration `i` prints `debug: starting iteration {i}` to stdout (console.log) and
// `note: worker {workerId} on iteration {i}` to stderr (console.error), and records the trend
// `journey_ms` (`10 * (i % 10)`) and the counter `orders` tagged `tier` (`bulk` when `i % 3 == 0`,
// else `retail`), both declared; then: on iteration 3 it reads a property of a missing array
// element (a TypeError, so the task fails with the exception's text); on `i % 5 == 1` it fails
// with `upstream said 503 for order {i}`; on `i % 5 == 2` with `checkout timed out after {i} ms`;
// otherwise it passes.
//
// Settings: `PRINT_BYTES=N` also prints a line of N `x` to stdout per task (default 0);
// `DELAY_MS=N` waits N ms before the outcome (default 0); `MODE=bad-metric` records a trend of
// '6.4ms', which the SDK refuses with a TypeError naming the call.

import { counter, declareMetrics, declareOptions, env, failed, trend } from './lib/loadhost.js';

declareMetrics('journey_ms:trend', 'orders{tier}:counter');
declareOptions(
  'PRINT_BYTES:int=0 "print a line of this many bytes in each task"',
  'MODE:string "bad-metric: record a trend that is not a number in each task"',
  'DELAY_MS:int=0 "wait this many milliseconds in each task"',
);

export function doTask(task) {
  const i = task.iteration;
  console.log(`debug: starting iteration ${i}`);
  console.error(`note: worker ${task.workerId} on iteration ${i}`);
  const size = env('PRINT_BYTES');
  if (size > 0) console.log('x'.repeat(size));
  trend('journey_ms', Number(10n * (i % 10n)));
  counter('orders', 1, { tier: i % 3n === 0n ? 'bulk' : 'retail' });
  if (env('MODE') === 'bad-metric') {
    trend('t', '6.4ms'); // the bad metric
  }
  const delay = env('DELAY_MS');
  // No sleep in a synchronous task: wait on the clock (a fixture, not a pattern to copy).
  for (const until = performance.now() + delay; performance.now() < until; );
  if (i === 3n) {
    const orders = [];
    return orders[i].total; // the bug
  }
  if (i % 5n === 1n) throw failed(`upstream said 503 for order ${i}`);
  if (i % 5n === 2n) throw failed(`checkout timed out after ${i} ms`);
  return undefined;
}
