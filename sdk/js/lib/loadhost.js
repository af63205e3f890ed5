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
// Layout: task errors (retryable/failed/abort), metrics (counter/gauge/trend/check), configuration
// from the environment (env/envOr/environment), HTTP (get/post/put/del/request, with
// withoutHeaders()/discardBody() for a plugin that reads only the status), task input helpers.
//
// The module's top level runs at BUILD time (the engine is snapshotted after evaluating it), when no
// host function may be called: read the environment, send requests and record metrics inside
// doTask/init/setup, never at the top level.

import * as hostMetrics from 'loadhost:plugin/metrics@0.1.0';
import { sendWith as hostSendWith } from 'loadhost:plugin/http@0.1.0';
import { getEnvironment } from 'wasi:cli/environment@0.2.6';

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
// Metrics

const NO_TAGS = Object.freeze([]);

// Tags as the WIT wants them (a list of [key, value] string pairs), from an object or such a list.
function tagList(tags) {
  if (tags === undefined || tags === null) return NO_TAGS;
  const pairs = Array.isArray(tags) ? tags : Object.entries(tags);
  if (pairs.length === 0) return NO_TAGS;
  return pairs.map(([key, value]) => [String(key), String(value)]);
}

/** Add `delta` (a non-negative integer Number or BigInt, default 1) to the counter `name`. */
export function counter(name, delta = 1, tags = undefined) {
  // The WIT type is u64, which the bindings take as a BigInt; wrap-around of a negative number
  // would record 2^64 - n, so refuse it.
  if (typeof delta !== 'bigint') {
    if (!Number.isInteger(delta) || delta < 0) {
      throw new TypeError(`counter ${name}: delta must be a non-negative integer, got ${delta}`);
    }
    delta = BigInt(delta);
  } else if (delta < 0n) {
    throw new TypeError(`counter ${name}: delta must be non-negative, got ${delta}`);
  }
  hostMetrics.counter(name, delta, tagList(tags));
}

/** Set the gauge `name` to `value` (the summary keeps the latest value). */
export function gauge(name, value, tags = undefined) {
  hostMetrics.gauge(name, Number(value), tagList(tags));
}

/** Record one value of the trend `name` (the summary shows min, mean, percentiles and max). */
export function trend(name, value, tags = undefined) {
  hostMetrics.trend(name, Number(value), tagList(tags));
}

/** Record a pass or a fail of the check `name` and return `ok`: `if (!check('x', a === b)) …`. */
export function check(name, ok, tags = undefined) {
  return hostMetrics.check(name, Boolean(ok), tagList(tags));
}

// ---------------------------------------------------------------------------------------------
// Configuration: the environment holds only what the user passed with `loadhost run -e KEY=VALUE`.

let envMap = null;

// Read once per instance, on first use (never at build time, see the note at the top).
function envVars() {
  if (envMap === null) envMap = new Map(getEnvironment());
  return envMap;
}

/** The value of the environment variable `key`, or undefined when it is unset. */
export function env(key) {
  return envVars().get(key);
}

/** The whole environment as a plain object. */
export function environment() {
  return Object.fromEntries(envVars());
}

/**
 * The value of `key` converted to the type of `fallback` (string, number, boolean or bigint), or
 * `fallback` when `key` is unset. A value that does not convert throws, naming the key: that is a
 * configuration mistake, and the task fails with the message.
 */
export function envOr(key, fallback) {
  const raw = env(key);
  if (raw === undefined) return fallback;
  const text = raw.trim();
  const bad = () => new Error(`environment variable ${key}=${JSON.stringify(raw)} does not parse as a ${typeof fallback}`);
  switch (typeof fallback) {
    case 'number': {
      const value = text === '' ? NaN : Number(text);
      if (!Number.isFinite(value)) throw bad();
      return value;
    }
    case 'boolean':
      if (/^(true|1|yes|on)$/i.test(text)) return true;
      if (/^(false|0|no|off)$/i.test(text)) return false;
      throw bad();
    case 'bigint':
      try {
        return BigInt(text);
      } catch {
        throw bad();
      }
    default:
      return raw;
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP over the host's one-call `loadhost:plugin/http` import. The host pools connections, enforces
// `--allow-host` and records http_reqs, http_req_duration and the rest for every request.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// Bytes for a header value or a body given as a string (UTF-8), a typed array or an ArrayBuffer.
function bytes(value) {
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'string') return encoder.encode(value);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError(`expected a string or bytes, got ${typeof value}`);
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
 * `withoutHeaders()`), `body` (Uint8Array; empty after `discardBody()`).
 */
export class Response {
  /** Wraps the host's response; `elapsedMs` is from sending to the end of the body. */
  constructor(raw, elapsedMs) {
    this.status = raw.status;
    this.headers = raw.headers;
    this.body = raw.body;
    this.elapsedMs = elapsedMs;
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

/** A request being built; `send()` sends it and waits for the whole response. */
export class Request {
  #method;
  #url;
  #headers = [];
  #body = new Uint8Array(0);
  #timeoutMs = undefined;
  // Which parts of the response come back into the plugin (the WIT `response-parts`).
  #keepHeaders = true;
  #keepBody = true;

  /** A request with `method` (e.g. 'GET') to `url` (http://host[:port]/path or https://…). */
  constructor(method, url) {
    this.#method = String(method).toUpperCase();
    this.#url = String(url);
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
    this.#timeoutMs = Math.min(Math.max(0, Math.round(ms)), 0xffffffff);
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

  /** Send the request and read the whole response; throws an HttpError when none came. */
  send() {
    const started = performance.now();
    let raw;
    try {
      raw = hostSendWith(
        {
          method: this.#method,
          url: this.#url,
          headers: this.#headers,
          body: this.#body,
          timeoutMs: this.#timeoutMs,
        },
        { headers: this.#keepHeaders, body: this.#keepBody },
      );
    } catch (e) {
      // The bindings throw the WIT error variant ({tag, val}) as the `payload` of an Error.
      const payload = e !== null && typeof e === 'object' ? e.payload : undefined;
      if (payload && typeof payload.tag === 'string') throw new HttpError(payload.tag, this.#url, String(payload.val));
      throw e;
    }
    return new Response(raw, performance.now() - started);
  }
}

/** A request with any method. */
export function request(method, url) {
  return new Request(method, url);
}

/** A GET request: `get(url).send()`. */
export function get(url) {
  return new Request('GET', url);
}

/** A POST request: `post(url).json({ id: 7 }).send()`. */
export function post(url) {
  return new Request('POST', url);
}

/** A PUT request. */
export function put(url) {
  return new Request('PUT', url);
}

/** A DELETE request (`delete` is a reserved word in JavaScript). */
export function del(url) {
  return new Request('DELETE', url);
}

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
