// loadhost SDK for JavaScript plugins.
//
// A plugin is an ES module `plugin.js` that exports `doTask(task)` and, optionally, `setup`, `init`
// and `teardown`; `build.sh` turns it into a WebAssembly component (lib/entry.js adapts it to the
// WIT exports). This module is what the plugin imports:
//
//   import { check, get, retryable, failed, envOr } from './lib/loadhost.js';
//
//   export function doTask(task) {
//     const response = get(envOr('TARGET_URL', 'http://127.0.0.1:8080/')).send();
//     if (!check('status is 200', response.status === 200)) throw failed(`status ${response.status}`);
//   }
//
// Layout: task errors (retryable/failed/abort), sleep (think time on the host's timer), metrics
// (counter/gauge/trend/check, and declareMetrics to state them for `loadhost inspect` and
// thresholds), groups (group, k6's steps, timed as group_duration), configuration
// from the environment (env/envOr/environment, and declareOptions to state the options read, typed,
// with their defaults, for `loadhost inspect` and `loadhost run`'s checks), HTTP (get/post/put/del/request, with
// withoutHeaders()/discardBody() for a plugin that reads only the status, and the host's
// redirects, cookie jar and decompression: an options object or builder methods), the worker's
// cookie jar (cookies.get/set/clear), task input helpers.
//
// The module's top level runs at BUILD time (the engine is snapshotted after evaluating it), when no
// host function may be called: read the environment, send requests and record metrics inside
// doTask/init/setup, never at the top level.

import * as hostMetrics from 'loadhost:plugin/metrics@0.1.0';
import {
  addCookie as hostAddCookie, clearCookies as hostClearCookies, cookiesFor as hostCookiesFor, sendOpts as hostSendOpts,
  sendExpecting as hostSendExpecting, setExpectedStatuses as hostSetExpectedStatuses, lastTimings as hostLastTimings,
} from 'loadhost:plugin/http@0.1.0';
import { sleep as hostSleep } from 'loadhost:plugin/pause@0.1.0';
import { getEnvironment } from 'wasi:cli/environment@0.2.6';
import { U32_MAX, base64, bytes } from './values.js';

// ---------------------------------------------------------------------------------------------
// Task errors

/** Why a task did not pass: `kind` is 'retryable', 'failed' or 'abort' (the WIT `task-error`). */
export class TaskError extends Error {
  /** A task error of `kind` with `message`. */
  constructor(kind, message) {
    super(String(message));
    this.name = 'TaskError';
    this.kind = kind;
  }
}

/** A transient failure the host may retry (see `loadhost run --retries`); throw or return it. */
export function retryable(message) {
  return new TaskError('retryable', message);
}

/** A failure that must not be retried; throw or return it. */
export function failed(message) {
  return new TaskError('failed', message);
}

/** Stop the whole run (the host exits with code 4); throw or return it. */
export function abort(message) {
  return new TaskError('abort', message);
}

// ---------------------------------------------------------------------------------------------
// Metrics. Each call checks its arguments, because the host can only drop a sample it cannot use
// (a NaN trend, a counter of 2.5) and a threshold on that metric would then pass on no samples. A
// wrong argument throws a TypeError (wrong type) or RangeError (wrong value) naming the call:
// `metrics.trend('t', '6.4ms'): value must be a finite number, got string '6.4ms'`; uncaught, it
// fails the task with that text.

const NO_TAGS = Object.freeze([]);
const U64_MAX = 0xffffffffffffffffn;

// A value as the messages show it: strings quoted, BigInts with their `n`.
function show(value) {
  if (typeof value === 'string') return `'${value}'`;
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'symbol' || typeof value === 'function') return String(value);
  if (value !== null && typeof value === 'object') {
    try {
      return JSON.stringify(value) ?? String(value);
    } catch {
      return String(value);
    }
  }
  return String(value);
}

// `string '6.4ms'`: the type and the value.
function described(value) {
  return `${value === null ? 'null' : typeof value} ${show(value)}`;
}

// The error for a wrong argument of `metrics.KIND(name, value)`.
function metricError(ErrorType, kind, name, value, what) {
  return new ErrorType(`metrics.${kind}(${show(name)}, ${show(value)}): ${what}`);
}

function checkName(kind, name, value) {
  if (typeof name !== 'string' || name === '') {
    throw metricError(typeof name === 'string' ? RangeError : TypeError, kind, name, value,
      `name must be a non-empty string, got ${described(name)}`);
  }
}

function finite(kind, name, value) {
  if (typeof value !== 'number') {
    throw metricError(TypeError, kind, name, value, `value must be a finite number, got ${described(value)}`);
  }
  if (!Number.isFinite(value)) {
    throw metricError(RangeError, kind, name, value, `value must be a finite number, got ${described(value)}`);
  }
  return value;
}

// Tags as the WIT wants them (a list of [key, value] string pairs), from an object or such a list;
// values that are numbers, booleans or BigInts become strings.
function tagList(kind, name, value, tags) {
  if (tags === undefined || tags === null) return NO_TAGS;
  if (typeof tags !== 'object') {
    throw metricError(TypeError, kind, name, value, `tags must be an object or [key, value] pairs, got ${described(tags)}`);
  }
  const pairs = Array.isArray(tags) ? tags : Object.entries(tags);
  if (pairs.length === 0) return NO_TAGS;
  return pairs.map((pair) => {
    if (!Array.isArray(pair) || pair.length !== 2) {
      throw metricError(TypeError, kind, name, value, `tags must be an object or [key, value] pairs, got the item ${described(pair)}`);
    }
    const [key, tag] = pair;
    if (typeof key !== 'string' || key === '') {
      throw metricError(TypeError, kind, name, value, `a tag key must be a non-empty string, got ${described(key)}`);
    }
    if (typeof tag === 'string') return pair;
    if (typeof tag !== 'number' && typeof tag !== 'boolean' && typeof tag !== 'bigint') {
      throw metricError(TypeError, kind, name, value, `tag '${key}' must be a string (or a number), got ${described(tag)}`);
    }
    return [key, String(tag)];
  });
}

/** Add `delta` (a non-negative integer Number or BigInt below 2^64, default 1) to the counter `name`. */
export function counter(name, delta = 1, tags = undefined) {
  checkName('counter', name, delta);
  // The WIT type is u64, which the bindings take as a BigInt.
  let value = delta;
  if (typeof delta === 'number') {
    if (!Number.isSafeInteger(delta) || delta < 0) {
      throw metricError(RangeError, 'counter', name, delta, `delta must be a non-negative integer, got ${described(delta)}`);
    }
    value = BigInt(delta);
  } else if (typeof delta !== 'bigint') {
    throw metricError(TypeError, 'counter', name, delta, `delta must be a non-negative integer, got ${described(delta)}`);
  } else if (delta < 0n || delta > U64_MAX) {
    throw metricError(RangeError, 'counter', name, delta, `delta must be a non-negative integer below 2^64, got ${described(delta)}`);
  }
  hostMetrics.counter(name, value, tagList('counter', name, delta, tags));
}

/** Set the gauge `name` to `value`, a finite number (the summary keeps the latest value). */
export function gauge(name, value, tags = undefined) {
  checkName('gauge', name, value);
  hostMetrics.gauge(name, finite('gauge', name, value), tagList('gauge', name, value, tags));
}

/** Record `value`, a finite number, in the trend `name` (min, mean, percentiles and max). */
export function trend(name, value, tags = undefined) {
  checkName('trend', name, value);
  hostMetrics.trend(name, finite('trend', name, value), tagList('trend', name, value, tags));
}

/**
 * Record a pass or a fail of the check `name` and return `ok`: `if (!check('x', a === b, { tier })) …`.
 * Inside a `group` the check also carries the group's path as the tag `group` (unless `tags` names
 * one). A threshold judges one check, or one tagged case of it: `checks{check:x,tier:gold}`.
 */
export function check(name, ok, tags = undefined) {
  checkName('check', name, ok);
  let pairs = tagList('check', name, ok, tags);
  if (groupPath.length > 0 && !pairs.some(([key]) => key === GROUP_TAG)) {
    pairs = [...pairs, [GROUP_TAG, groupPath[groupPath.length - 1]]];
  }
  return hostMetrics.check(name, Boolean(ok), pairs);
}

// Groups (k6's steps): `group('checkout', () => …)` times the block as the trend `group_duration`
// (ms) tagged `group` with its path, `::checkout`, or `::checkout::pay` for `pay` inside it; the
// checks made inside carry the path. `group_duration{group:::checkout}:p(95)<500` needs no
// declaration.

const GROUP_DURATION = 'group_duration';
const GROUP_TAG = 'group';
// The host's cap on a tag value, which a group's path is.
const MAX_PATH = 256;
// The paths of the groups the code is in, innermost last.
const groupPath = [];

/** The path of the innermost group the code runs in ('::checkout::pay'), or undefined outside any. */
export function currentGroup() {
  return groupPath[groupPath.length - 1];
}

/**
 * Run `fn` as the group `name` and return what it returns. Its time goes to `group_duration`
 * when it returns or throws, or, when it returns a promise (an async function), when that settles.
 * `name` is a non-empty string without '::'; a bad one throws naming the call.
 */
export function group(name, fn) {
  const call = `group(${show(name)})`;
  if (typeof name !== 'string') throw new TypeError(`${call}: a group's name must be a string, got ${described(name)}`);
  if (name === '' || name.includes('::')) throw new RangeError(`${call}: a group's name must be non-empty and must not contain '::'`);
  if (typeof fn !== 'function') throw new TypeError(`${call}: the group's body must be a function, got ${described(fn)}`);
  const path = `${currentGroup() ?? ''}::${name}`;
  if (encoder.encode(path).length > MAX_PATH) throw new RangeError(`${call}: the group's path ${path} is longer than ${MAX_PATH} bytes`);
  groupPath.push(path);
  const started = performance.now();
  const end = () => {
    groupPath.splice(groupPath.lastIndexOf(path), 1);
    hostMetrics.trend(GROUP_DURATION, performance.now() - started, [[GROUP_TAG, path]]);
  };
  let result;
  try {
    result = fn();
  } catch (e) {
    end();
    throw e;
  }
  if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
    return result.then((value) => { end(); return value; }, (e) => { end(); throw e; });
  }
  end();
  return result;
}

const KINDS = ['trend', 'counter', 'gauge', 'check', 'rate'];

/**
 * Declare the metrics the plugin records, each as `NAME[{TAG,…}]:KIND`: the `--metric NAME:KIND`
 * syntax with the tag keys it records (`'orders{tier}:counter'`); KIND is trend, counter, gauge or
 * check. `loadhost inspect` lists them, and a threshold on one needs no `--metric`.
 *
 * Call it at the top level of plugin.js, at the start of a line, with string literals: build.sh
 * reads the calls from the source, without running it, into the component's `loadhost:metrics`
 * section. The build evaluates the module, so this call checks each declaration then, and a wrong
 * one fails the build.
 */
export function declareMetrics(...declarations) {
  for (const declaration of declarations) {
    const call = `declareMetrics(${show(declaration)})`;
    if (typeof declaration !== 'string') {
      throw new TypeError(`${call}: a declaration is a string NAME[{TAG,…}]:KIND, got ${described(declaration)}`);
    }
    const colon = declaration.lastIndexOf(':');
    if (colon < 1 || declaration.slice(0, colon).trim() === '') {
      throw new RangeError(`${call}: a declaration is NAME[{TAG,…}]:KIND, such as 'orders{tier}:counter'`);
    }
    const kind = declaration.slice(colon + 1).trim();
    if (!KINDS.includes(kind)) {
      throw new RangeError(`${call}: the kind after the last ':' is trend, counter, gauge or check, got '${kind}'`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Configuration: the environment holds only what the user passed with `loadhost run -e KEY=VALUE`.
// A value that is set but does not parse is the user's mistake, and every SDK treats it alike: the
// run is aborted (exit code 4) with `KEY=VALUE: expected WHAT` (`DELAY_MS=abc: expected an integer`).

let envMap = null;

// The first setting that did not parse during the current call. envOr throws it, but a plugin may
// catch that; lib/entry.js turns it into the call's abort regardless.
let badSetting = null;

/**
 * A setting that is set but does not parse, or a required option that is missing: an abort (the
 * run stops, exit code 4).
 */
export class ConfigError extends TaskError {
  /**
   * The error for `key=raw`, which should have been `expected`; with `raw` undefined, for the
   * required option `key` missing (`expected` then says its type and help: `int: how many users`).
   */
  constructor(key, raw, expected) {
    super('abort', raw === undefined ? `-e ${key} is required (${expected})` : `${key}=${raw}: expected ${expected}`);
    this.name = 'ConfigError';
  }
}

/** For lib/entry.js: the message of the first setting that did not parse in this call (and forget it). */
export function takeBadSetting() {
  const message = badSetting;
  badSetting = null;
  return message;
}

// Read once per instance, on first use (never at build time, see the note at the top).
function envVars() {
  if (envMap === null) envMap = new Map(getEnvironment());
  return envMap;
}

/**
 * The value of the environment variable `key`, or undefined when it is unset. An option the plugin
 * declared (declareOptions) is read by its declared type, with its declared default.
 */
export function env(key) {
  const option = declaredOptions.get(key);
  if (option !== undefined) return optionValue(option);
  return envVars().get(key);
}

/** The whole environment as a plain object. */
export function environment() {
  return Object.fromEntries(envVars());
}

const BOOLEAN = 'a boolean (true/false, 1/0, yes/no, on/off)';

/**
 * The value of `key` converted to the type of `fallback`, or `fallback` when `key` is unset: a
 * number (finite), a bigint (an integer), a boolean (true/false, 1/0, yes/no, on/off; empty is
 * false) or a string. A value that does not convert throws a ConfigError, which aborts the run
 * with `KEY=VALUE: expected WHAT`.
 */
export function envOr(key, fallback) {
  if (declaredOptions.has(key)) {
    throw new TypeError(`envOr(${show(key)}, ${show(fallback)}): ${key} is declared with declareOptions, which gives its default: call env(${show(key)})`);
  }
  const raw = env(key);
  if (raw === undefined) return fallback;
  const text = raw.trim();
  const bad = (expected) => refused(new ConfigError(key, raw, expected));
  switch (typeof fallback) {
    case 'number': {
      const value = text === '' ? NaN : Number(text);
      if (!Number.isFinite(value)) throw bad('a number');
      return value;
    }
    case 'boolean':
      if (/^(true|1|yes|on)$/i.test(text)) return true;
      if (/^(false|0|no|off|)$/i.test(text)) return false;
      throw bad(BOOLEAN);
    case 'bigint':
      // BigInt('') is 0n and BigInt accepts 0x…: only decimal digits with an optional sign here.
      if (!/^[+-]?\d+$/.test(text)) throw bad('an integer');
      return BigInt(text);
    default:
      return raw;
  }
}

// Remember `error` as this call's bad setting, unless one came first, and give it back to throw.
function refused(error) {
  badSetting ??= error.message;
  return error;
}

// ---------------------------------------------------------------------------------------------
// Options the plugin declares: the `-e` settings it reads, each with a type, a default or `!`
// (required) and a one-line help, as `NAME:TYPE[!][=DEFAULT] [HELP]`:
//
//   declareOptions(
//     'TARGET_URL:url=http://127.0.0.1:8080/ "the page to GET"',
//     'USERS:int! "how many users"',
//     'PAUSE:duration=250ms "the pause between two requests"',
//   );
//   ... env('USERS') is a number, env('PAUSE') milliseconds (250 unless -e PAUSE=... says otherwise)
//
// build.sh (or loadhost, for a script run as it is) reads the calls from the source into the
// component's `loadhost:options` section: `loadhost inspect` lists them, and `loadhost run` refuses
// before any load a run that lacks a required option or gives one a value of the wrong type, and
// warns about an `-e` no option has (`BLOB_BYTE`: did you mean BLOB_BYTES?).

const OPTION_TYPES = ['string', 'int', 'float', 'bool', 'duration', 'url'];

// What a value of each type looks like, in the words every SDK and the host use.
const EXPECTED = {
  string: 'a text',
  int: 'an integer',
  float: 'a number',
  bool: BOOLEAN,
  duration: 'a duration such as 500ms, 5s, 1.5m, 2h or 1m30s',
  url: 'an absolute URL such as http://127.0.0.1:8080/',
};

const DURATION_UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

// Every option declared so far, by name.
const declaredOptions = new Map();

// A value that is not one of its option's type.
class Unfit extends Error {
  constructor(expected) {
    super(expected);
    this.expected = expected;
  }
}

/**
 * Declare the `-e` options the plugin reads, each as `NAME:TYPE[!][=DEFAULT] [HELP]`: NAME an
 * environment variable's name; TYPE string, int, float, bool, duration or url; `!` for a required
 * option (it has no default); DEFAULT a word or quoted; HELP quoted, "…" or '…' (no escapes: a text
 * holds no quote of its own kind). `env(NAME)` then gives the value typed (a string, a number, a
 * boolean, milliseconds, a string), or undefined for an option neither required nor with a default
 * that is not given.
 *
 * Call it at the top level of plugin.js, at the start of a line, with string literals: build.sh
 * reads the calls from the source, without running it. The build evaluates the module, so this
 * call checks each declaration then, and a wrong one fails the build.
 */
export function declareOptions(...declarations) {
  for (const declaration of declarations) {
    const call = `declareOptions(${show(declaration)})`;
    if (typeof declaration !== 'string') {
      throw new TypeError(`${call}: a declaration is a string NAME:TYPE[!][=DEFAULT] [HELP], got ${described(declaration)}`);
    }
    let option;
    try {
      option = parseOption(declaration);
    } catch (error) {
      if (error instanceof RangeError) throw new RangeError(`${call}: ${error.message}`);
      throw error;
    }
    const known = declaredOptions.get(option.name);
    if (known !== undefined && JSON.stringify(known) !== JSON.stringify(option)) {
      throw new RangeError(`${call}: ${option.name} is declared already, differently`);
    }
    declaredOptions.set(option.name, option);
  }
}

// One declaration, checked by the rules the host applies (a RangeError says what is wrong).
function parseOption(line) {
  const colon = line.indexOf(':');
  if (colon < 0) throw new RangeError('expected NAME:TYPE[!][=DEFAULT] [HELP], such as \'USERS:int=10 "how many users"\'');
  const name = line.slice(0, colon).trim();
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || name.length > 128) {
    throw new RangeError("an option's name is 1 to 128 letters, digits or '_', not starting with a digit");
  }
  let rest = line.slice(colon + 1).trimStart();
  const type = /^[A-Za-z]*/.exec(rest)[0];
  if (!OPTION_TYPES.includes(type)) throw new RangeError(`unknown type '${type}' (${OPTION_TYPES.join(', ')})`);
  rest = rest.slice(type.length).trimStart();
  const required = rest.startsWith('!');
  if (required) rest = rest.slice(1).trimStart();
  let fallback;
  if (rest.startsWith('=')) {
    if (required) throw new RangeError("a required option ('!') has no default");
    [fallback, rest] = defaultText(rest.slice(1).trimStart());
    try {
      convertOption(type, fallback);
    } catch (error) {
      if (error instanceof Unfit) throw new RangeError(`its default is not ${error.expected}`);
      throw error;
    }
    rest = rest.trimStart();
  }
  let help = '';
  if (rest !== '') {
    const quoted = quotedText(rest);
    if (quoted === undefined) {
      throw new RangeError('the help goes last, in quotes ("…" or \'…\'), after the type or the default');
    }
    if (quoted[1].trim() !== '') throw new RangeError(`'${quoted[1].trim()}' after the help: the help goes last`);
    help = quoted[0].trim();
  }
  return { name, type, required, default: fallback, help };
}

// The text inside the quotes `text` starts with and what follows them, or undefined.
function quotedText(text) {
  const quote = text[0];
  if (quote !== '"' && quote !== "'") return undefined;
  const end = text.indexOf(quote, 1);
  return end < 0 ? undefined : [text.slice(1, end), text.slice(end + 1)];
}

// A default at the start of `text` (quoted, or a word) and what follows it.
function defaultText(text) {
  if (text[0] === '"' || text[0] === "'") {
    const quoted = quotedText(text);
    if (quoted === undefined) throw new RangeError("a default's quote is not closed");
    return quoted;
  }
  const word = /^\S*/.exec(text)[0];
  if (word === '') throw new RangeError('nothing after \'=\': write the default, or "" for an empty one');
  if (/['"]/.test(word)) throw new RangeError(`'${word}': a default with a quote in it is quoted as a whole`);
  return [word, text.slice(word.length)];
}

// `raw` as a value of `type`: the same rules in every SDK and the host (white space around it
// ignored, but for a string). Throws Unfit.
function convertOption(type, raw) {
  const text = raw.trim();
  switch (type) {
    case 'string':
      return raw;
    case 'int': {
      if (!/^[+-]?[0-9]+$/.test(text)) throw new Unfit(EXPECTED.int);
      const wide = BigInt(text);
      if (wide < -(2n ** 63n) || wide >= 2n ** 63n) throw new Unfit('an integer from -9223372036854775808 to 9223372036854775807');
      // A JavaScript number holds integers exactly up to 2^53 - 1.
      if (!Number.isSafeInteger(Number(wide))) throw new Unfit(`an integer from ${Number.MIN_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}`);
      return Number(wide);
    }
    case 'float': {
      const value = /^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/.test(text) ? Number(text) : NaN;
      if (!Number.isFinite(value)) throw new Unfit(EXPECTED.float);
      return value;
    }
    case 'bool':
      if (/^(true|1|yes|on)$/i.test(text)) return true;
      if (/^(false|0|no|off|)$/i.test(text)) return false;
      throw new Unfit(BOOLEAN);
    case 'duration': {
      const ms = durationMs(text);
      if (ms === undefined) throw new Unfit(EXPECTED.duration);
      return ms;
    }
    case 'url':
      if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#\s]+\S*$/.test(text)) throw new Unfit(EXPECTED.url);
      return text;
    default:
      throw new RangeError(`unknown type '${type}'`);
  }
}

/**
 * Milliseconds in a duration as loadhost's flags take it (`500ms`, `1.5m`, `1m30s`: numbers with
 * units ms, s, m, h, at most 10^9 seconds), or undefined.
 */
export function durationMs(text) {
  const part = /([0-9.]+)(ms|s|m|h)/y;
  let ms = 0;
  while (part.lastIndex < text.length) {
    const at = part.lastIndex;
    const match = part.exec(text);
    if (match === null || match.index !== at || !/^(?:[0-9]+\.?[0-9]*|\.[0-9]+)$/.test(match[1])) return undefined;
    ms += Number(match[1]) * DURATION_UNITS[match[2]];
  }
  return text !== '' && Number.isFinite(ms) && ms <= 1e12 ? ms : undefined;
}

// The value of a declared option: given, else its default, typed.
function optionValue(option) {
  const raw = envVars().get(option.name);
  if (raw === undefined) {
    if (option.required) {
      throw refused(new ConfigError(option.name, undefined, option.help ? `${option.type}: ${option.help}` : option.type));
    }
    return option.default === undefined ? undefined : convertOption(option.type, option.default);
  }
  try {
    return convertOption(option.type, raw);
  } catch (error) {
    if (error instanceof Unfit) throw refused(new ConfigError(option.name, raw, error.expected));
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Sleeping: think time in a journey, on the host's timer (`loadhost:plugin/pause`). The worker's
// instance waits; other workers run meanwhile. The time slept is in the task's duration, not in
// any request's.

/**
 * Wait `seconds` (a number, fractions allowed: `sleep(0.5)`), as k6's and Locust's `sleep` do. A
 * part of a millisecond counts as a whole one; a task's timeout still ends the task.
 */
export function sleep(seconds) {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) {
    throw new TypeError(`sleep(seconds): expected a finite number of seconds, at least 0, got ${show(seconds)}`);
  }
  hostSleep(Math.min(Math.ceil(seconds * 1000), U32_MAX));
}

// ---------------------------------------------------------------------------------------------
// HTTP over the host's one-call `loadhost:plugin/http` import. The host pools connections, enforces
// `--allow-host` and records http_reqs, http_req_duration and the rest for every request. As a
// browser or k6 does, it follows up to 10 redirects, keeps a cookie jar per worker and asks for and
// decodes gzip, deflate and br bodies (the WIT's `send-opts`); each request may turn these off:
//
//   get(url, { redirects: 0, cookies: false, decompress: false, name: 'login', auth: ['ada', 'pw'] }).send()
//   get(url).redirects(0).noCookies().rawBody().name('login').basicAuth('ada', 'pw').send()
//
// (Before `send-opts` existed the SDK sent raw HTTP: a plugin that relied on seeing a 302 or a
// compressed body now asks for `redirects: 0` or `decompress: false`.)

/** How many redirects a request follows unless told otherwise (k6's `maxRedirects`). */
export const DEFAULT_REDIRECTS = 10;

const encoder = new TextEncoder();
const decoder = new TextDecoder();


// The bindings throw the WIT error variant ({tag, val}) as the `payload` of an Error: an HttpError
// about `url` for it, anything else as it came.
function hostError(e, url) {
  const payload = e !== null && typeof e === 'object' ? e.payload : undefined;
  if (payload && typeof payload.tag === 'string') return new HttpError(payload.tag, url, String(payload.val));
  return e;
}

/** Why a request got no response: `kind` is 'invalid-request', 'denied' or 'network'. */
export class HttpError extends Error {
  /** An HTTP error of `kind` about `url`, with the host's `message`. */
  constructor(kind, url, message) {
    super(kind === 'denied' ? `request to ${url} denied: the host is not allowed (loadhost run --allow-host)` : message);
    this.name = 'HttpError';
    this.kind = kind;
    this.url = url;
  }
}

/**
 * A complete response: `status`, `headers` ([name, Uint8Array] pairs; empty after
 * `withoutHeaders()`), `body` (Uint8Array; empty after `discardBody()`), `finalUrl` (the URL that
 * answered: the request's, or the last redirect's) and `redirects` (how many were followed).
 */
export class Response {
  /**
   * Wraps the host's response; `elapsedMs` is from sending to the end of the body, `finalUrl` and
   * `redirects` as the host's `response-info` says.
   */
  constructor(raw, elapsedMs, finalUrl = '', redirects = 0) {
    this.status = raw.status;
    this.headers = raw.headers;
    this.body = raw.body;
    this.elapsedMs = elapsedMs;
    this.finalUrl = finalUrl;
    this.redirects = redirects;
  }

  /** The first value of header `name` (case-insensitive) as text, or undefined. */
  header(name) {
    const wanted = name.toLowerCase();
    const found = this.headers.find(([key]) => key.toLowerCase() === wanted);
    return found === undefined ? undefined : decoder.decode(found[1]);
  }

  /** The body as text (UTF-8). */
  text() {
    return decoder.decode(this.body);
  }

  /** The body parsed as JSON. */
  json() {
    return JSON.parse(this.text());
  }

  /** Whether the status is 2xx. */
  isSuccess() {
    return this.status >= 200 && this.status < 300;
  }
}

const OPTION_NAMES = ['headers', 'body', 'json', 'timeout', 'redirects', 'cookies', 'decompress', 'name', 'auth',
  'discardBody', 'withoutHeaders', 'expectedStatuses'];

// Statuses as the host's inclusive [from, to] ranges: each a status number or k6's `{ min, max }`.
function statusRanges(call, statuses) {
  return statuses.map((status) => {
    if (Number.isInteger(status) && status >= 0 && status <= 0xffff) return [status, status];
    if (status !== null && typeof status === 'object' && Number.isInteger(status.min) && Number.isInteger(status.max)
      && status.min >= 0 && status.min <= status.max && status.max <= 0xffff) {
      return [status.min, status.max];
    }
    throw new RangeError(`${call}: expected statuses (numbers) and { min, max } ranges with min <= max, got ${described(status)}`);
  });
}

/**
 * The phases of this worker's last response as the host timed them, in milliseconds (k6's
 * `res.timings`): `{ blocked, connecting, tlsHandshaking, sending, waiting, receiving, duration }`
 * (`duration` is sending + waiting + receiving, the run's `http_req_duration`), the same figures as
 * the run's `http_req_*` metrics; `undefined` before the first response or after a request that
 * got none. Read it right after the request: the next one replaces it.
 */
export function lastTimings() {
  return hostLastTimings();
}

/**
 * Judge every request of this worker from now on by `statuses` (numbers and k6's `{ min, max }`
 * ranges: `setExpectedStatuses({ min: 200, max: 299 }, 404)`): a response with one of them does not
 * count in `http_req_failed`, any other does (k6's `setResponseCallback(expectedStatuses(…))`).
 * No argument restores the default, every status below 400. Each worker starts with the default:
 * call it in `init` to set it for all of them.
 */
export function setExpectedStatuses(...statuses) {
  hostSetExpectedStatuses(statusRanges('setExpectedStatuses', statuses));
}

/**
 * A request being built; `send()` sends it and waits for the whole response.
 *
 * Options may be given at once, as `request(method, url, options)`, `get(url, options)` or
 * `.options(options)`: `{ headers: {name: value} or [[name, value]], body, json, timeout (ms),
 * redirects (default 10; 0: none), cookies (default true), decompress (default true), name,
 * auth: [user, password], discardBody, withoutHeaders, expectedStatuses: [statuses or { min, max }]
 * }`; or one by one with the methods below.
 */
export class Request {
  #method;
  #url;
  #headers = [];
  #body = new Uint8Array(0);
  #timeoutMs = undefined;
  // Which parts of the response come back into the plugin (the WIT `response-parts`).
  #keepHeaders = true;
  #keepBody = true;
  // What the host does beyond sending it (the WIT `request-options`).
  #redirects = DEFAULT_REDIRECTS;
  #cookies = true;
  #decompress = true;
  #name = undefined;
  // The statuses this request expects (the host's ranges); undefined: the worker's.
  #expected = undefined;

  /**
   * A request with `method` (e.g. 'GET') to `url` (http://host[:port]/path or https://…), with
   * `options` as for `options()`.
   */
  constructor(method, url, options = undefined) {
    this.#method = String(method).toUpperCase();
    this.#url = String(url);
    if (options !== undefined) this.options(options);
  }

  /**
   * Set several options at once (see the class); an unknown key throws a TypeError naming it, so
   * a typo is not silently ignored.
   */
  options(options) {
    if (options === null || typeof options !== 'object') throw new TypeError(`request options must be an object, got ${typeof options}`);
    for (const key of Object.keys(options)) {
      if (!OPTION_NAMES.includes(key)) throw new TypeError(`unknown request option '${key}' (known: ${OPTION_NAMES.join(', ')})`);
    }
    const o = options;
    if (o.headers !== undefined) {
      for (const [name, value] of Array.isArray(o.headers) ? o.headers : Object.entries(o.headers)) this.header(name, value);
    }
    if (o.body !== undefined) this.body(o.body);
    if (o.json !== undefined) this.json(o.json);
    if (o.timeout !== undefined) this.timeout(o.timeout);
    if (o.redirects !== undefined) this.redirects(o.redirects);
    if (o.cookies !== undefined) this.#cookies = Boolean(o.cookies);
    if (o.decompress !== undefined) this.#decompress = Boolean(o.decompress);
    if (o.name !== undefined) this.name(o.name);
    if (o.auth !== undefined) {
      if (!Array.isArray(o.auth) || o.auth.length !== 2) throw new TypeError('auth takes a [user, password] pair');
      this.basicAuth(o.auth[0], o.auth[1]);
    }
    if (o.discardBody) this.discardBody();
    if (o.withoutHeaders) this.withoutHeaders();
    if (o.expectedStatuses !== undefined) {
      if (!Array.isArray(o.expectedStatuses)) throw new TypeError('expectedStatuses takes an array of statuses and { min, max } ranges');
      this.expectedStatuses(...o.expectedStatuses);
    }
    return this;
  }

  /**
   * The statuses this request expects (numbers and k6's `{ min, max }` ranges:
   * `expectedStatuses({ min: 200, max: 299 }, 404)`) instead of the worker's (default: below 400): a
   * response with one of them does not count in `http_req_failed`, any other does, each redirect
   * hop too (k6's `responseCallback`).
   */
  expectedStatuses(...statuses) {
    this.#expected = statusRanges('expectedStatuses', statuses);
    return this;
  }

  /** Add a header (value: string or bytes). */
  header(name, value) {
    this.#headers.push([String(name), bytes(value)]);
    return this;
  }

  /** Set the body (string, typed array or ArrayBuffer). */
  body(body) {
    this.#body = bytes(body);
    return this;
  }

  /** Set a JSON body (a value is stringified; a string is sent as it is) and its content-type. */
  json(value) {
    return this.header('content-type', 'application/json').body(typeof value === 'string' ? value : JSON.stringify(value));
  }

  /** Give up when no response has started after `ms` milliseconds. */
  timeout(ms) {
    this.#timeoutMs = Math.min(Math.max(0, Math.round(ms)), U32_MAX);
    return this;
  }

  /**
   * Do not bring the response body into the plugin (`body` is empty), as k6's
   * `discardResponseBodies`: the host still reads it whole and counts it in the HTTP metrics.
   */
  discardBody() {
    this.#keepBody = false;
    return this;
  }

  /**
   * Do not bring the response headers into the plugin (`headers` is empty): a plugin that only
   * checks the status saves copying each header in.
   */
  withoutHeaders() {
    this.#keepHeaders = false;
    return this;
  }

  /**
   * Follow at most `n` redirects (default 10); 0 hands back the redirect itself. 303, and a POST's
   * 301 or 302, become a GET without a body; 307 and 308 keep the method and the body.
   */
  redirects(n) {
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new RangeError(`redirects must be an integer from 0 to 4294967295, got ${n}`);
    this.#redirects = n;
    return this;
  }

  /** Neither send the worker's cookies nor keep the response's `Set-Cookie`s. */
  noCookies() {
    this.#cookies = false;
    return this;
  }

  /** Hand the body back as it came: no `Accept-Encoding` is added and no body is decoded. */
  rawBody() {
    this.#decompress = false;
    return this;
  }

  /**
   * Name the endpoint in the per-endpoint HTTP metrics (k6's `name` tag), e.g. 'login' for every
   * `/login?user=…`; without it, the method and the URL's path with ids folded.
   */
  name(name) {
    if (typeof name !== 'string') throw new TypeError(`name must be a string, got ${typeof name}`);
    this.#name = name;
    return this;
  }

  /** HTTP basic authentication: `Authorization: Basic base64(user:password)`. */
  basicAuth(user, password) {
    return this.header('authorization', `Basic ${base64(encoder.encode(`${user}:${password}`))}`);
  }

  /** Send the request and read the whole response; throws an HttpError when none came. */
  send() {
    const started = performance.now();
    const request = {
      method: this.#method,
      url: this.#url,
      headers: this.#headers,
      body: this.#body,
      timeoutMs: this.#timeoutMs,
    };
    const options = {
      parts: { headers: this.#keepHeaders, body: this.#keepBody },
      redirects: this.#redirects,
      cookies: this.#cookies,
      decompress: this.#decompress,
      name: this.#name,
    };
    let info;
    try {
      info = this.#expected === undefined
        ? hostSendOpts(request, options)
        : hostSendExpecting(request, options, this.#expected);
    } catch (e) {
      throw hostError(e, this.#url);
    }
    return new Response(info.response, performance.now() - started, info.finalUrl, info.redirects);
  }
}

/** A request with any method (`options` as for `Request.options()`). */
export function request(method, url, options = undefined) {
  return new Request(method, url, options);
}

/** A GET request: `get(url).send()`, or `get(url, { redirects: 0 }).send()`. */
export function get(url, options = undefined) {
  return new Request('GET', url, options);
}

/** A POST request: `post(url).json({ id: 7 }).send()`. */
export function post(url, options = undefined) {
  return new Request('POST', url, options);
}

/** A PUT request. */
export function put(url, options = undefined) {
  return new Request('PUT', url, options);
}

/** A DELETE request (`delete` is a reserved word in JavaScript). */
export function del(url, options = undefined) {
  return new Request('DELETE', url, options);
}

/**
 * The worker's cookie jar: the host keeps one per worker (plugin instance), sends its cookies with
 * every request and keeps every `Set-Cookie` (RFC 6265), unless the request says `cookies: false`
 * (or `noCookies()`) or the run `--no-cookies`. A replaced instance starts with an empty jar.
 *
 *   cookies.set('http://127.0.0.1:8080/', 'session=abc; Path=/');
 *   cookies.get('http://127.0.0.1:8080/account'); // [['session', 'abc']]
 *   cookies.clear();
 */
export const cookies = Object.freeze({
  /** The [name, value] pairs of the cookies a request to `url` would carry; throws an HttpError. */
  get(url) {
    try {
      return hostCookiesFor(String(url)).map(([name, value]) => [name, value]);
    } catch (e) {
      throw hostError(e, String(url));
    }
  },
  /**
   * Store a cookie as a response from `url` with this `Set-Cookie` value would
   * ('name=value; Path=/; Max-Age=60'); throws an HttpError, also under `--no-cookies`.
   */
  set(url, setCookie) {
    try {
      hostAddCookie(String(url), String(setCookie));
    } catch (e) {
      throw hostError(e, String(url));
    }
  },
  /** Forget every cookie of the worker's jar. */
  clear() {
    hostClearCookies();
  },
});

// ---------------------------------------------------------------------------------------------
// Task input: the task's row of the data feed (`loadhost run --data FILE`), empty without one.

/** The task's input as text. */
export function inputText(task) {
  return decoder.decode(task.input);
}

/** The task's input parsed as JSON, or undefined when it is empty. */
export function inputJson(task) {
  return task.input.length === 0 ? undefined : JSON.parse(inputText(task));
}
