// The SDK's own checks, for sdk/js/test.sh: metric calls refuse what the host would drop, naming
// the call; a setting that does not parse aborts the run even when the plugin catches the error;
// an exception's text names the plugin's file and line, not the SDK's. MODE (-e MODE=…) picks one.

import { check, counter, envOr, gauge, trend } from './lib/loadhost.js';
import { firstOrderTotal } from './orders.js';

// Whether `call` throws an `ErrorType` whose message is `message`.
function throws(call, ErrorType, message) {
  try {
    call();
  } catch (e) {
    return e instanceof ErrorType && e.message === message;
  }
  return false;
}

export function doTask() {
  switch (envOr('MODE', '')) {
    case 'metrics':
      check('trend of a string', throws(() => trend('t', '6.4ms'), TypeError,
        "metrics.trend('t', '6.4ms'): value must be a finite number, got string '6.4ms'"));
      check('trend of NaN', throws(() => trend('t', NaN), RangeError,
        "metrics.trend('t', NaN): value must be a finite number, got number NaN"));
      check('gauge of undefined', throws(() => gauge('g', undefined), TypeError,
        "metrics.gauge('g', undefined): value must be a finite number, got undefined undefined"));
      check('counter of 2.5', throws(() => counter('items', 2.5), RangeError,
        "metrics.counter('items', 2.5): delta must be a non-negative integer, got number 2.5"));
      check('counter of a string', throws(() => counter('items', '2'), TypeError,
        "metrics.counter('items', '2'): delta must be a non-negative integer, got string '2'"));
      check('counter of -1n', throws(() => counter('items', -1n), RangeError,
        "metrics.counter('items', -1n): delta must be a non-negative integer below 2^64, got bigint -1n"));
      check('empty name', throws(() => check('', true), RangeError,
        "metrics.check('', true): name must be a non-empty string, got string ''"));
      check('tag of null', throws(() => counter('items', 1, { k: null }), TypeError,
        "metrics.counter('items', 1): tag 'k' must be a string (or a number), got null null"));
      check('tags of a string', throws(() => counter('items', 1, 'k=v'), TypeError,
        "metrics.counter('items', 1): tags must be an object or [key, value] pairs, got string 'k=v'"));
      // What is fine is recorded: numbers and booleans as tag values, a BigInt delta.
      counter('items', 3n, { ok: true, n: 1.5 });
      trend('t_ok', 6.4, [['unit', 'ms']]);
      return undefined;
    case 'caught-bad-env':
      try {
        envOr('DELAY_MS', 0n);
      } catch {
        // swallowed: the run is aborted all the same
      }
      return undefined;
    case 'throw':
      return firstOrderTotal([]);
    case 'process-env':
      return process.env.TARGET_URL; // eslint-disable-line no-undef
    default:
      return undefined;
  }
}
