// gRPC calls over the host's `loadhost:plugin/grpc` import.
//
//   import * as grpc from './lib/grpc.js';
//
//   try {
//     const response = grpc.call('http://127.0.0.1:8080', '/pkg.Service/Method', requestBytes, { timeout: 5000 });
//     const reply = response.message; // a Uint8Array: decode it (protobufjs, or by hand)
//   } catch (e) {
//     if (e instanceof grpc.GrpcError && e.code === grpc.UNAVAILABLE) throw retryable(e.message);
//     throw e;
//   }
//
// The host owns the HTTP/2 connections (h2c for http://, TLS for https://), deadlines, status and
// trailers, and records grpc_reqs (tagged with the status code), grpc_req_duration, grpc_streams,
// … by itself. Messages stay protobuf bytes, so the host needs no schema.
//
// Every failure is a GrpcError with the status `code` a gRPC client would report: the server's
// (or the deadline's, 4) when the call ended with a status other than OK (kind 'status'), and for
// the host's own reasons kind 'network' (14 UNAVAILABLE, as grpc_reqs counts it), 'denied' (7, not
// on --allow-host; no connection was made), 'invalid-request' (3), 'too-many-connections' and
// 'too-large' (8 RESOURCE_EXHAUSTED), and for a stream's receive 'timeout' (4). Like grpc-js,
// `details` is the status message and `trailers` the server's trailers.
//
// A module of its own beside loadhost.js, as Python's `loadhost.grpc`. (componentize-js makes every
// component import the whole world, this interface included, whether the plugin uses it or not.)

import { call as hostCall, StreamingCall as HostStreamingCall } from 'loadhost:plugin/grpc@0.1.0';
import { bytes, ownBytes, timeoutMs } from './values.js';

// Releases an imported resource now rather than when the engine collects it.
const DISPOSE = Symbol.dispose ?? Symbol.for('dispose');

// The gRPC status codes.
export const OK = 0;
export const CANCELLED = 1;
export const UNKNOWN = 2;
export const INVALID_ARGUMENT = 3;
export const DEADLINE_EXCEEDED = 4;
export const NOT_FOUND = 5;
export const ALREADY_EXISTS = 6;
export const PERMISSION_DENIED = 7;
export const RESOURCE_EXHAUSTED = 8;
export const FAILED_PRECONDITION = 9;
export const ABORTED = 10;
export const OUT_OF_RANGE = 11;
export const UNIMPLEMENTED = 12;
export const INTERNAL = 13;
export const UNAVAILABLE = 14;
export const DATA_LOSS = 15;
export const UNAUTHENTICATED = 16;

const decoder = new TextDecoder();

// The first value of `name` (case-insensitive) among [name, Uint8Array] pairs, as text.
function find(pairs, name) {
  const wanted = String(name).toLowerCase();
  const found = pairs.find(([key]) => key.toLowerCase() === wanted);
  return found === undefined ? undefined : decoder.decode(found[1]);
}

/**
 * A call that ended without a response: `code` (the gRPC status code), `details` (its message),
 * `trailers` ([name, Uint8Array] pairs; empty when the host gave up itself) and `kind` (the WIT
 * case: 'status', 'network', 'denied', 'invalid-request', 'too-many-connections', 'too-large' or
 * 'timeout'). `message` is `gRPC status CODE: DETAILS`.
 */
export class GrpcError extends Error {
  /** An error of `kind` with `code`, `details` and `trailers`. */
  constructor(kind, code, details, trailers = []) {
    super(details === '' ? `gRPC status ${code}` : `gRPC status ${code}: ${details}`);
    this.name = 'GrpcError';
    this.kind = kind;
    this.code = code;
    this.details = details;
    this.trailers = trailers;
  }

  /** The first value of trailer `name` (case-insensitive) as text, or undefined. */
  trailer(name) {
    return find(this.trailers, name);
  }
}

// The WIT error variant ({tag, val}), thrown by the bindings as an Error's `payload`, as a
// GrpcError; anything else as it came.
function hostError(e, target) {
  const payload = e !== null && typeof e === 'object' ? e.payload : undefined;
  if (!payload || typeof payload.tag !== 'string') return e;
  const { tag, val } = payload;
  switch (tag) {
    case 'status':
      return new GrpcError(tag, val.code, val.message, val.trailers);
    case 'denied': {
      const message = `gRPC call to ${target} denied: the host is not allowed (loadhost run --allow-host)`;
      return new GrpcError(tag, PERMISSION_DENIED, message);
    }
    case 'network':
      return new GrpcError(tag, UNAVAILABLE, String(val));
    case 'invalid-request':
      return new GrpcError(tag, INVALID_ARGUMENT, String(val));
    case 'too-many-connections': {
      const error = new GrpcError(tag, RESOURCE_EXHAUSTED, `too many connections: this instance already has ${val} open`);
      error.limit = val;
      return error;
    }
    case 'too-large': {
      const error = new GrpcError(tag, RESOURCE_EXHAUSTED, `a message is larger than ${val} bytes`);
      error.limit = Number(val);
      return error;
    }
    case 'timeout':
      return new GrpcError(tag, DEADLINE_EXCEEDED, 'nothing arrived within the timeout');
    default:
      return new GrpcError(tag, UNKNOWN, String(val));
  }
}

/** A unary call's answer: `message` (Uint8Array), `headers` and `trailers` ([name, Uint8Array] pairs), `elapsedMs`. */
export class Response {
  /** Wraps the host's response. */
  constructor(raw, elapsedMs) {
    this.message = ownBytes(raw.message);
    this.headers = raw.headers;
    this.trailers = raw.trailers;
    this.elapsedMs = elapsedMs;
  }

  /** The first value of header `name` (case-insensitive) as text, or undefined. */
  header(name) {
    return find(this.headers, name);
  }

  /** The first value of trailer `name` (case-insensitive) as text, or undefined. */
  trailer(name) {
    return find(this.trailers, name);
  }
}

// A message as protobuf bytes: a Uint8Array (protobufjs's `encode(...).finish()`), another typed
// array or an ArrayBuffer. A string is refused: it is not an encoded message.
function messageBytes(message) {
  if (message instanceof Uint8Array) return message;
  if (message instanceof ArrayBuffer) return new Uint8Array(message);
  if (ArrayBuffer.isView(message)) return new Uint8Array(message.buffer, message.byteOffset, message.byteLength);
  throw new TypeError(`a gRPC message is protobuf bytes (a Uint8Array), got ${typeof message}`);
}

// Metadata as the host takes it: lower-case names, values as bytes (strings UTF-8 encoded).
function metadataPairs(metadata) {
  if (metadata === undefined || metadata === null) return [];
  if (typeof metadata !== 'object') {
    throw new TypeError(`metadata must be an object or [name, value] pairs, got ${typeof metadata}`);
  }
  return (Array.isArray(metadata) ? metadata : Object.entries(metadata)).map(([name, value]) => [
    String(name).toLowerCase(),
    bytes(value),
  ]);
}

const OPTIONS = ['metadata', 'timeout'];

function checkOptions(what, options) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${what} options must be an object, got ${typeof options}`);
  }
  for (const key of Object.keys(options)) {
    if (!OPTIONS.includes(key)) throw new TypeError(`unknown ${what} option '${key}' (known: ${OPTIONS.join(', ')})`);
  }
}

/**
 * One unary call of `method` ('/package.Service/Method') on `target` ('http://host:port', h2c, or
 * 'https://host:port') with `message` (protobuf bytes). Options: `metadata` (an object or
 * [name, value] pairs, values strings or bytes; a name ending in `-bin` carries bytes) and
 * `timeout` in ms, sent as the deadline and enforced by the host. Throws a GrpcError unless the
 * status is OK.
 */
export function call(target, method, message, options = {}) {
  checkOptions('call', options);
  const to = String(target);
  const body = messageBytes(message);
  const metadata = metadataPairs(options.metadata);
  const started = performance.now();
  let raw;
  try {
    raw = hostCall(to, String(method), metadata, body, timeoutMs(options.timeout));
  } catch (e) {
    throw hostError(e, to);
  }
  return new Response(raw, performance.now() - started);
}

/**
 * A streaming call (client, server or bidirectional: the method decides how many messages each
 * side sends), from `stream`. It counts once in grpc_reqs, with its final status.
 */
export class Stream {
  #resource;

  /** Wraps the host's resource; use `stream`. */
  constructor(target, method, resource) {
    this.target = target;
    this.method = method;
    this.#resource = resource;
  }

  #live() {
    if (this.#resource === undefined) {
      throw new GrpcError('invalid-request', INVALID_ARGUMENT, `the stream ${this.method} was dropped`);
    }
    return this.#resource;
  }

  /** Send one message (protobuf bytes). */
  send(message) {
    const body = messageBytes(message);
    try {
      this.#live().send(body);
    } catch (e) {
      throw hostError(e, this.target);
    }
  }

  /** Say that no more messages will be sent (half-close). */
  closeSend() {
    try {
      this.#live().closeSend();
    } catch (e) {
      throw hostError(e, this.target);
    }
  }

  /**
   * The next message from the server (a Uint8Array), waiting at most `timeout` ms (then kind
   * 'timeout', the stream still open); undefined once the server has ended the call with OK. A
   * status other than OK throws a GrpcError of kind 'status'.
   */
  receive(timeout = undefined) {
    try {
      const message = this.#live().receive(timeoutMs(timeout));
      return message === undefined || message === null ? undefined : ownBytes(message);
    } catch (e) {
      throw hostError(e, this.target);
    }
  }

  /** The trailers ([name, Uint8Array] pairs), once `receive` has returned undefined (empty before). */
  trailers() {
    return this.#live().trailers();
  }

  /** Release the stream; a call still running is cancelled by the host. */
  drop() {
    const resource = this.#resource;
    this.#resource = undefined;
    if (resource !== undefined && typeof resource[DISPOSE] === 'function') resource[DISPOSE]();
  }
}

/**
 * Start a streaming call of `method` on `target` (as for `call`); `timeout` (ms) is the whole
 * call's deadline. Throws a GrpcError.
 */
export function stream(target, method, options = {}) {
  checkOptions('stream', options);
  const to = String(target);
  let resource;
  try {
    resource = HostStreamingCall.open(to, String(method), metadataPairs(options.metadata), timeoutMs(options.timeout));
  } catch (e) {
    throw hostError(e, to);
  }
  return new Stream(to, String(method), resource);
}
