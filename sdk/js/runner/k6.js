// k6's JavaScript API, written for loadhost on its SDK, so that a script written for k6 runs on the
// JavaScript runner unchanged (issue 42; docs/migrating.md says what maps and what does not). No
// k6 code is copied: this follows k6's documented behaviour.
//
// The runner offers these namespaces as the modules `k6`, `k6/http`, `k6/metrics`,
// `k6/execution`, `k6/data`, `k6/encoding` and `k6/timers`, sets the globals a k6 script reads
// (`__ENV`, `__VU`, `__ITER`, `open`), and `adapt()` turns a script's `default` function (with its
// `setup` and `teardown`) into the plugin functions the runner's adapter calls.
//
// What differs from k6, on purpose: a VU is a loadhost worker (an instance of the runner), its
// iterations are loadhost's tasks; `__ENV` holds only the `-e` values (the sandbox passes no other
// environment); `http.batch` sends its requests one after another; Counter deltas are whole numbers.

import * as sdk from '../loadhost.js';
import { BASE64, base64, bytes } from '../values.js';
import { readScriptBytes, readScriptFile } from './files.js';
import { summaryData } from './k6summary.js';

// ---------------------------------------------------------------------------------------------
// The VU: which worker this instance is, and its iterations.

const vu = {
  // k6's VU ids start at 1; 0 is the init context (before the worker's init, and in setup).
  id: 0,
  iteration: 0,
  // The task's number in the run (k6's iterationInTest: unique across VUs).
  inTest: 0,
  scenario: 'default',
  startedAt: Date.now(),
};

// The script's `options.scenarios` (set by adapt): each scenario's `exec` and `env`.
let scenarios = {};
// `__ENV` per scenario: the `-e` values under the scenario's own `env`, as in k6.
const envs = new Map();

function envOf(name) {
  let env = envs.get(name);
  if (env === undefined) {
    env = Object.freeze({ ...sdk.environment(), ...(scenarios[name]?.env ?? {}) });
    envs.set(name, env);
  }
  return env;
}

function defineGlobals() {
  Object.defineProperty(globalThis, '__ENV', { get: () => envOf(vu.scenario), configurable: true, enumerable: false });
  Object.defineProperty(globalThis, '__VU', { get: () => vu.id, configurable: true });
  Object.defineProperty(globalThis, '__ITER', { get: () => vu.iteration, configurable: true });
  globalThis.open = open;
}

/**
 * k6's `open(path, mode)`: a file of the script's folder (the only one a script may read), as text,
 * or as an ArrayBuffer with mode 'b'. Paths are relative to the entry script's folder.
 */
function open(path, mode = undefined) {
  const name = String(path).replace(/^\.\//, '');
  try {
    if (mode === 'b') {
      const bytes = readScriptBytes(name);
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    }
    return readScriptFile(name);
  } catch (e) {
    throw new Error(`open(${JSON.stringify(String(path))}): ${e.message} (a script reads files of its own folder only)`);
  }
}

// ---------------------------------------------------------------------------------------------
// k6

/** k6's `check(value, { name: fn }, tags)`: each condition is recorded; true when all passed. */
function check(value, sets, tags = undefined) {
  let all = true;
  for (const [name, condition] of Object.entries(sets ?? {})) {
    const ok = Boolean(typeof condition === 'function' ? condition(value) : condition);
    sdk.check(name, ok, tags);
    all &&= ok;
  }
  return all;
}

/** k6's `fail(message)`: the iteration ends failed with `message`. */
function fail(message = '') {
  throw sdk.failed(message);
}

/** k6's `sleep(seconds)`: on the host's timer. */
function sleep(seconds) {
  sdk.sleep(Number(seconds));
}

// k6's randomSeed: Math.random becomes a seeded generator (xorshift128+) in this VU.
function randomSeed(seed) {
  let a = BigInt.asUintN(64, BigInt(Math.trunc(Number(seed))) ^ 0x9e3779b97f4a7c15n) || 1n;
  let b = BigInt.asUintN(64, a * 0xbf58476d1ce4e5b9n) || 2n;
  Math.random = () => {
    let s1 = a;
    const s0 = b;
    a = s0;
    s1 = BigInt.asUintN(64, s1 ^ (s1 << 23n));
    b = s1 ^ s0 ^ (s1 >> 17n) ^ (s0 >> 26n);
    return Number(BigInt.asUintN(53, b + s0)) / 2 ** 53;
  };
}

export const k6 = {
  check,
  fail,
  group: (name, fn) => sdk.group(name, fn),
  sleep,
  randomSeed,
};

// ---------------------------------------------------------------------------------------------
// k6/http

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// Go's canonical header key, as k6's response headers are: `content-type` → `Content-Type`.
function canonical(name) {
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_, dash, c) => dash + c.toUpperCase());
}

// A k6 duration (`'30s'`, `'1m'`, or milliseconds as a number) in milliseconds.
function millis(value, what) {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return value;
  const ms = typeof value === 'string' ? sdk.durationMs(value) : undefined;
  if (ms === undefined) throw new TypeError(`${what}: expected a duration such as '30s' or milliseconds, got ${JSON.stringify(value)}`);
  return ms;
}

// A request body as k6 sends it: a string or bytes as they are, an object as a URL-encoded form.
function bodyOf(body, headers) {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return body;
  if (typeof body === 'object') {
    if (!Object.keys(headers).some((k) => k.toLowerCase() === 'content-type')) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
    }
    // As Go's url.Values.Encode, which k6 uses: keys sorted, spaces as '+', only A-Z a-z 0-9 - _ . ~ bare.
    const escape = (text) => encodeURIComponent(text)
      .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
      .replaceAll('%20', '+');
    return Object.keys(body).sort()
      .map((k) => `${escape(k)}=${escape(String(body[k]))}`)
      .join('&');
  }
  return String(body);
}

// k6's error codes for a request that got no response (k6's documented table, the common ones).
function errorCode(error) {
  if (error.kind === 'denied') return 1000;
  const text = error.message.toLowerCase();
  if (text.includes('timed out') || text.includes('timeout')) return 1050;
  if (text.includes('refused')) return 1212;
  if (text.includes('resolve') || text.includes('lookup')) return 1100;
  if (text.includes('tls') || text.includes('certificate')) return 1300;
  return 1000;
}

// The value at a k6 JSON selector (`a.b.0.c`; `#` is an array's length) in `value`.
function select(value, selector) {
  let at = value;
  for (const part of String(selector).split('.')) {
    if (at === undefined || at === null) return undefined;
    if (part === '#' && Array.isArray(at)) at = at.length;
    else at = at[part];
  }
  return at;
}

// The reason phrases of k6's `status_text` ('200 OK'), for the statuses scripts meet.
const REASONS = {
  200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 301: 'Moved Permanently', 302: 'Found',
  303: 'See Other', 304: 'Not Modified', 307: 'Temporary Redirect', 308: 'Permanent Redirect',
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed',
  409: 'Conflict', 410: 'Gone', 422: 'Unprocessable Entity', 429: 'Too Many Requests',
  500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout',
};

const PARAMS = new Set(['headers', 'tags', 'timeout', 'redirects', 'auth', 'responseType', 'cookies', 'jar',
  'compression', 'responseCallback']);

// What a response's lazy fields are made from (K6Response): the host's response and how the
// script asked for its body.
const RAW = Symbol('raw');

// A k6 response's fields that cost work to make (each header decoded, the body decoded), made
// when a script first reads them: most read `status` alone (measured: making them all for every
// response was a third of the k6 layer's CPU per request).
const LAZY = {
  headers(raw) {
    const out = {};
    for (const [name, value] of raw.response.headers) {
      const key = canonical(name);
      const text = decoder.decode(value);
      out[key] = out[key] === undefined ? text : `${out[key]}, ${text}`;
    }
    return out;
  },
  cookies(raw) {
    const out = {};
    for (const [name, value] of raw.response.headers) {
      if (name.toLowerCase() !== 'set-cookie') continue;
      const [pair] = decoder.decode(value).split(';');
      const eq = pair.indexOf('=');
      if (eq > 0) out[pair.slice(0, eq).trim()] = [{ name: pair.slice(0, eq).trim(), value: pair.slice(eq + 1).trim() }];
    }
    return out;
  },
  body(raw) {
    const { response, responseType } = raw;
    // k6 has no body for a 204 or 304 (null), and an empty string for any other empty one.
    if (response.status === 204 || response.status === 304 || responseType === 'none') return null;
    if (responseType === 'binary') {
      return response.body.buffer.slice(response.body.byteOffset, response.body.byteOffset + response.body.byteLength);
    }
    return decoder.decode(response.body);
  },
  status_text(raw) {
    const status = raw.response.status;
    return `${status} ${REASONS[status] ?? ''}`.trimEnd();
  },
};

/** A k6 response: what k6 scripts read of one. */
class K6Response {
  constructor(fields, raw = undefined) {
    Object.assign(this, fields);
    if (raw !== undefined) Object.defineProperty(this, RAW, { value: raw });
  }

  /** The body parsed as JSON, or the value at `selector` in it. */
  json(selector = undefined) {
    if (typeof this.body !== 'string') throw new Error('json(): the response has no text body (responseType)');
    const value = JSON.parse(this.body);
    return selector === undefined ? value : select(value, selector);
  }

  /** Every field, the lazy ones made (JSON.stringify and console.log show them all). */
  toJSON() {
    const out = {};
    for (const key of Object.keys(this)) out[key] = this[key];
    for (const key of Object.keys(LAZY)) out[key] = this[key];
    return out;
  }
}

// Each lazy field: made at its first read, then an own property like any other (a script may
// set it, as it may set any field of a k6 response).
for (const [key, make] of Object.entries(LAZY)) {
  Object.defineProperty(K6Response.prototype, key, {
    configurable: true,
    get() {
      const raw = this[RAW];
      const value = raw === undefined ? undefined : make(raw);
      Object.defineProperty(this, key, { value, writable: true, enumerable: true, configurable: true });
      return value;
    },
    set(value) {
      Object.defineProperty(this, key, { value, writable: true, enumerable: true, configurable: true });
    },
  });
}

// The script's options that apply to each request (set by `adapt`): k6's `discardResponseBodies`,
// `userAgent`, `noConnectionReuse` and `maxRedirects`.
const requestDefaults = { responseType: undefined, userAgent: undefined, close: false, redirects: undefined };

function readRequestDefaults(options) {
  const o = options ?? {};
  requestDefaults.responseType = o.discardResponseBodies === true ? 'none' : undefined;
  requestDefaults.userAgent = typeof o.userAgent === 'string' && o.userAgent !== '' ? o.userAgent : undefined;
  requestDefaults.close = o.noConnectionReuse === true;
  requestDefaults.redirects = Number.isInteger(o.maxRedirects) && o.maxRedirects >= 0 ? o.maxRedirects : undefined;
}

// Whether `headers` (an object) has `name`, in any case.
function hasHeader(headers, name) {
  return Object.keys(headers).some((k) => k.toLowerCase() === name);
}

function request(method, url, body = undefined, params = undefined) {
  const p = params ?? {};
  for (const key of Object.keys(p)) {
    if (!PARAMS.has(key)) throw new TypeError(`http.request: unknown param '${key}' (known: ${[...PARAMS].join(', ')})`);
  }
  const headers = p.headers === undefined ? {} : { ...p.headers };
  if (requestDefaults.userAgent !== undefined && !hasHeader(headers, 'user-agent')) {
    headers['User-Agent'] = requestDefaults.userAgent;
  }
  // k6's noConnectionReuse: every request on a connection of its own, which the server closes.
  if (requestDefaults.close && !hasHeader(headers, 'connection')) headers.Connection = 'close';
  const responseType = p.responseType ?? requestDefaults.responseType;
  const sent = bodyOf(body, headers);
  const asGiven = String(url);
  let target = asGiven;
  const options = { headers, redirects: p.redirects ?? requestDefaults.redirects ?? sdk.DEFAULT_REDIRECTS };
  if (sent !== undefined) options.body = sent;
  if (p.timeout !== undefined) options.timeout = millis(p.timeout, 'params.timeout');
  if (p.tags?.name !== undefined) options.name = String(p.tags.name);
  if (responseType === 'none') options.discardBody = true;
  // Credentials in the URL (k6's way of giving them) become basic authentication.
  const creds = asGiven.includes('@') ? /^(https?:\/\/)([^/@:]+):([^/@]*)@/.exec(target) : null;
  if (creds !== null && (p.auth === undefined || p.auth === 'basic')) {
    options.auth = [decodeURIComponent(creds[2]), decodeURIComponent(creds[3])];
    target = creds[1] + target.slice(creds[0].length);
  }
  if (p.cookies !== undefined) {
    const pairs = Object.entries(p.cookies).map(([k, v]) => `${k}=${typeof v === 'object' ? v.value : v}`);
    if (pairs.length > 0) headers.Cookie = pairs.join('; ');
  }
  const started = performance.now();
  // As k6: the URL as the script gave it (credentials and all), unless a redirect moved it.
  const sentRequest = { method: method.toUpperCase(), url: target, headers, body: sent ?? '' };
  let response;
  try {
    response = sdk.request(method, target, options).send();
  } catch (e) {
    if (!(e instanceof sdk.HttpError)) throw e;
    const duration = performance.now() - started;
    return new K6Response({
      url: asGiven,
      request: sentRequest,
      proto: 'HTTP/1.1',
      status: 0,
      status_text: '',
      body: null,
      headers: {},
      cookies: {},
      error: e.message,
      error_code: errorCode(e),
      timings: { duration, blocked: 0, connecting: 0, tls_handshaking: 0, sending: 0, waiting: duration, receiving: 0 },
    });
  }
  // The host's phases of this response (the last hop's), as k6's timings are: read now, as the
  // next request replaces them.
  const t = sdk.lastTimings();
  const timings = t === undefined
    ? { duration: response.elapsedMs, blocked: 0, connecting: 0, tls_handshaking: 0, sending: 0, waiting: response.elapsedMs, receiving: 0 }
    : {
      duration: t.duration, blocked: t.blocked, connecting: t.connecting, tls_handshaking: t.tlsHandshaking,
      sending: t.sending, waiting: t.waiting, receiving: t.receiving,
    };
  return new K6Response({
    url: response.finalUrl && response.finalUrl !== target ? response.finalUrl : asGiven,
    request: sentRequest,
    proto: 'HTTP/1.1',
    status: response.status,
    error: '',
    error_code: 0,
    timings,
  }, { response, responseType });
}

// A batch entry in k6's forms: a URL, [method, url, body, params], or { method, url, body, params }.
function batchOne(entry) {
  if (typeof entry === 'string') return request('GET', entry);
  if (Array.isArray(entry)) return request(entry[0], entry[1], entry[2], entry[3]);
  return request(entry.method ?? 'GET', entry.url, entry.body, entry.params);
}

const http = {
  request,
  get: (url, params) => request('GET', url, undefined, params),
  head: (url, params) => request('HEAD', url, undefined, params),
  post: (url, body, params) => request('POST', url, body, params),
  put: (url, body, params) => request('PUT', url, body, params),
  patch: (url, body, params) => request('PATCH', url, body, params),
  del: (url, body, params) => request('DELETE', url, body, params),
  options: (url, body, params) => request('OPTIONS', url, body, params),
  /** k6's `http.batch`: every request, one after another (loadhost's sync tasks do not overlap). */
  batch(requests) {
    if (Array.isArray(requests)) return requests.map(batchOne);
    return Object.fromEntries(Object.entries(requests).map(([k, v]) => [k, batchOne(v)]));
  },
  /** k6's `http.expectedStatuses(...)`: what `setResponseCallback` takes. */
  expectedStatuses: (...statuses) => ({ expectedStatuses: statuses }),
  setResponseCallback(callback) {
    sdk.setExpectedStatuses(...(callback?.expectedStatuses ?? []));
  },
  url: (strings, ...values) => strings.reduce((out, s, i) => out + s + (i < values.length ? values[i] : ''), ''),
  cookieJar: () => ({
    cookiesForURL: (url) => Object.fromEntries(sdk.cookies.get(url).map(([k, v]) => [k, [v]])),
    set: (url, name, value) => sdk.cookies.set(url, `${name}=${value}`),
    clear: () => sdk.cookies.clear(),
  }),
};
export const k6http = { ...http, default: http };

// ---------------------------------------------------------------------------------------------
// k6/metrics

class Metric {
  constructor(name) {
    if (typeof name !== 'string' || name === '') throw new TypeError('a metric needs a name');
    this.name = name;
  }
}

class Trend extends Metric {
  add(value, tags = undefined) {
    sdk.trend(this.name, Number(value), tags);
  }
}

class Counter extends Metric {
  add(value, tags = undefined) {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) {
      throw new RangeError(`Counter '${this.name}'.add(${value}): loadhost's counters count whole numbers, at least 0`);
    }
    sdk.counter(this.name, n, tags);
  }
}

// A Rate is the share of non-zero values added: loadhost records each as a pass or a fail.
// The names of the script's Rates (made by its init code in every instance): loadhost records a
// Rate as a check of its name, and handleSummary's data keeps them out of k6's checks.
const rateNames = new Set();

class Rate extends Metric {
  constructor(name, ...rest) {
    super(name, ...rest);
    rateNames.add(this.name);
  }

  add(value, tags = undefined) {
    sdk.check(this.name, Boolean(value), tags);
  }
}

class Gauge extends Metric {
  add(value, tags = undefined) {
    sdk.gauge(this.name, Number(value), tags);
  }
}

export const k6metrics = { Trend, Counter, Rate, Gauge, default: { Trend, Counter, Rate, Gauge } };

// ---------------------------------------------------------------------------------------------
// k6/execution, k6/data, k6/encoding, k6/timers

const execution = {
  get vu() {
    return { idInTest: vu.id, idInInstance: vu.id, iterationInInstance: vu.iteration, iterationInScenario: vu.iteration };
  },
  get scenario() {
    return { name: vu.scenario, startTime: vu.startedAt, iterationInTest: vu.inTest };
  },
  get instance() {
    return { iterationsCompleted: vu.iteration, vusActive: undefined, currentTestRunDuration: Date.now() - vu.startedAt };
  },
  test: {
    abort(message = 'test aborted') {
      throw sdk.abort(message);
    },
  },
};
export const k6execution = { ...execution, default: execution };

/** k6's SharedArray: the array `make` returns (each worker holds its own copy in loadhost). */
class SharedArray {
  constructor(name, make) {
    const values = make();
    if (!Array.isArray(values)) throw new TypeError(`SharedArray '${name}': the function must return an array`);
    return Object.freeze(values);
  }
}
export const k6data = { SharedArray, default: { SharedArray } };

function b64encode(input, encoding = 'std') {
  let out = base64(typeof input === 'string' ? encoder.encode(input) : new Uint8Array(input));
  if (encoding === 'url' || encoding === 'rawurl') out = out.replaceAll('+', '-').replaceAll('/', '_');
  if (encoding === 'rawstd' || encoding === 'rawurl') out = out.replace(/=+$/, '');
  return out;
}

function b64decode(input, encoding = 'std', format = undefined) {
  const text = String(input).replaceAll('-', '+').replaceAll('_', '/').replace(/=+$/, '');
  const bytes = [];
  let bits = 0;
  let value = 0;
  for (const c of text) {
    const v = BASE64.indexOf(c);
    if (v < 0) throw new Error(`b64decode: '${c}' is not base64 (${encoding})`);
    value = (value << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push((value >> bits) & 0xff);
    }
  }
  const out = new Uint8Array(bytes);
  return format === 's' ? decoder.decode(out) : out.buffer;
}
export const k6encoding = { b64encode, b64decode, default: { b64encode, b64decode } };

// k6/timers: sync tasks cannot yield, so a timer runs its callback after a host sleep, at once.
const timers = {
  setTimeout(callback, ms = 0, ...args) {
    sdk.sleep(Number(ms) / 1000);
    callback(...args);
    return 0;
  },
  clearTimeout() {},
};
export const k6timers = { ...timers, default: timers };

// ---------------------------------------------------------------------------------------------
// The script: k6's functions as the plugin's.

/**
 * Whether the entry module `ns` is a k6 script: no doTask, and a default function or scenarios
 * (whose `exec` name the functions).
 */
export function isK6Script(ns) {
  if (typeof ns.doTask === 'function') return false;
  return typeof ns.default === 'function' || (typeof ns.options === 'object' && typeof ns.options?.scenarios === 'object');
}

/** Set the globals a k6 script's init code reads, before it is evaluated. */
export function prepare() {
  defineGlobals();
}

/**
 * This instance is worker `workerId`'s: k6's `__VU` is its id + 1 from now on, in the script's init
 * code too (which runs at the worker's first call), as k6 runs init code once per VU. The
 * instance that runs `setup` and `teardown` is never a worker's: its `__VU` stays 0.
 */
export function enterVu(workerId) {
  vu.id = Number(workerId) + 1;
}

function parsed(data) {
  return data === undefined || data === '' ? undefined : JSON.parse(data);
}

/**
 * The plugin functions of the k6 script `ns`: setup's return value goes, as JSON, to every
 * iteration and to teardown, as in k6; the worker's id + 1 is `__VU`. Each task runs its
 * scenario's `exec` function (`options.scenarios`; the host names the scenario), `default`
 * without one.
 */
export function adapt(ns) {
  readRequestDefaults(ns.options);
  scenarios = (ns.options && typeof ns.options.scenarios === 'object' && ns.options.scenarios) || {};
  // Each scenario's function, found now: a missing one stops the run before any load.
  const execs = new Map();
  for (const [scenario, config] of Object.entries(scenarios)) {
    const name = config?.exec ?? 'default';
    if (typeof ns[name] !== 'function') {
      throw sdk.abort(`scenario '${scenario}': the script exports no function '${name}' (its exec)`);
    }
    execs.set(scenario, ns[name]);
  }
  function execOf(scenario) {
    const fn = execs.get(scenario) ?? ns.default;
    if (typeof fn !== 'function') throw sdk.abort(`the script exports no default function for scenario '${scenario}'`);
    return fn;
  }
  let data;
  return {
    setup() {
      if (typeof ns.setup !== 'function') return '';
      const value = ns.setup();
      return value === undefined ? '' : JSON.stringify(value);
    },
    init(workerId, setupData) {
      enterVu(workerId);
      data = parsed(setupData);
    },
    doTask(task) {
      vu.scenario = task.scenario;
      vu.inTest = Number(task.iteration);
      const iterate = execOf(task.scenario);
      try {
        return iterate(data);
      } finally {
        vu.iteration += 1;
      }
    },
    teardown(setupData) {
      if (typeof ns.teardown === 'function') ns.teardown(parsed(setupData));
    },
    /**
     * k6's handleSummary with k6's summary data, its returned files as [name, bytes] (strings as
     * UTF-8, ArrayBuffers as they are; anything else is an error, as in k6); undefined when the
     * script has none.
     */
    handleSummary(summaryJson) {
      if (typeof ns.handleSummary !== 'function') return undefined;
      const files = (returned) => Object.entries(returned ?? {}).map(([name, value]) => [name, bytes(value)]);
      const returned = ns.handleSummary(summaryData(JSON.parse(summaryJson), rateNames));
      return returned !== null && typeof returned?.then === 'function' ? returned.then(files) : files(returned);
    },
    /**
     * The script's `options` as JSON, as its init code computed them with the run's `-e` values
     * (k6 reads them the same way); undefined when it exports none. The host asks only when it
     * cannot read them from the script's text.
     */
    k6Options() {
      if (ns.options === undefined || ns.options === null) return undefined;
      if (typeof ns.options !== 'object') throw sdk.abort(`the script's options are a ${typeof ns.options}, not an object`);
      return JSON.stringify(ns.options);
    },
  };
}
