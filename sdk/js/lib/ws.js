// WebSocket connections over the host's `loadhost:plugin/websocket` import.
//
//   import * as ws from './lib/ws.js';
//
//   const conn = ws.connect('ws://127.0.0.1:8080/ws/echo', { timeout: 5000 });
//   conn.sendText('hello');
//   const message = conn.receive(5000); // 'hello' (a string); a Uint8Array for a binary message; a ws.Close
//   conn.close();
//
// The host does the handshake, TLS, framing, pings and the close handshake, and records
// ws_sessions, ws_connecting, ws_session_duration, ws_msgs_sent, ws_msgs_received and ws_ping by
// itself. A connection may outlive the task that opened it: keep it in a module variable (each
// worker is its own instance) and later tasks of the same worker reuse it; the host drops it with
// the instance when that is replaced. A host not on `--allow-host` throws a WebSocketError of
// kind 'denied' without any connection being made.
//
// A module of its own beside loadhost.js, as Python's `loadhost.ws`. (componentize-js makes every
// component import the whole world, this interface included, whether the plugin uses it or not.)

import { Connection as HostConnection } from 'loadhost:plugin/websocket@0.1.0';
import { bytes, ownBytes, timeoutMs } from './values.js';

// Releases an imported resource now rather than when the engine collects it.
const DISPOSE = Symbol.dispose ?? Symbol.for('dispose');

/**
 * Why a connection could not be opened or used. `kind` is the WIT case: 'invalid-request',
 * 'denied', 'network', 'too-many-connections', 'timeout', 'closed' or 'too-large'; `limit` is the
 * number of the last two (connections open, bytes).
 */
export class WebSocketError extends Error {
  /** An error of `kind` about `url`, with the host's `message`. */
  constructor(kind, url, message, limit = undefined) {
    super(message);
    this.name = 'WebSocketError';
    this.kind = kind;
    this.url = url;
    if (limit !== undefined) this.limit = limit;
  }
}

/** The peer closed the connection (the host answered the close handshake): `code` (1005 when the peer sent none) and `reason`. */
export class Close {
  /** A close frame. */
  constructor(code, reason = '') {
    this.code = code;
    this.reason = reason;
  }
}

// The WIT error variant ({tag, val}), thrown by the bindings as an Error's `payload`, as a
// WebSocketError about `url`; anything else as it came.
function hostError(e, url) {
  const payload = e !== null && typeof e === 'object' ? e.payload : undefined;
  if (!payload || typeof payload.tag !== 'string') return e;
  switch (payload.tag) {
    case 'denied':
      return new WebSocketError('denied', url, `WebSocket to ${url} denied: the host is not allowed (loadhost run --allow-host)`);
    case 'too-many-connections': {
      const message = `too many connections: this instance already has ${payload.val} open (close or drop one)`;
      return new WebSocketError(payload.tag, url, message, payload.val);
    }
    case 'timeout':
      return new WebSocketError(payload.tag, url, `WebSocket ${url}: nothing arrived within the timeout`);
    case 'closed':
      return new WebSocketError(payload.tag, url, `WebSocket ${url} is closed`);
    case 'too-large': {
      const message = `WebSocket ${url}: a message is larger than ${payload.val} bytes`;
      return new WebSocketError(payload.tag, url, message, Number(payload.val));
    }
    default:
      return new WebSocketError(payload.tag, url, String(payload.val));
  }
}

// The WIT `message` ({tag, val}) as a string, a Uint8Array or a Close.
function message(raw) {
  if (raw.tag === 'text') return raw.val;
  if (raw.tag === 'binary') return ownBytes(raw.val);
  return new Close(raw.val.code, raw.val.reason);
}

const CONNECT_OPTIONS = ['headers', 'timeout'];

/** An open WebSocket connection, from `connect`. */
export class Connection {
  #resource;

  /** Wraps the host's resource; use `connect`. */
  constructor(url, resource) {
    /** The URL it was opened with. */
    this.url = url;
    this.#resource = resource;
  }

  // A released connection is 'closed', as the host says of one closed by either side, so that
  // one handling covers both.
  #live() {
    if (this.#resource === undefined) throw new WebSocketError('closed', this.url, `WebSocket ${this.url} is closed`);
    return this.#resource;
  }

  /** Send a text message. */
  sendText(text) {
    if (typeof text !== 'string') throw new TypeError(`sendText takes a string, got ${typeof text}`);
    try {
      this.#live().sendText(text);
    } catch (e) {
      throw hostError(e, this.url);
    }
  }

  /** Send a binary message (a Uint8Array, another typed array or an ArrayBuffer). */
  sendBinary(data) {
    if (typeof data === 'string') throw new TypeError('sendBinary takes bytes, not a string (sendText sends text)');
    const payload = bytes(data);
    try {
      this.#live().sendBinary(payload);
    } catch (e) {
      throw hostError(e, this.url);
    }
  }

  /** Send a string as a text message, bytes as a binary one. */
  send(data) {
    if (typeof data === 'string') this.sendText(data);
    else this.sendBinary(data);
  }

  /**
   * The next message: a string (text), a Uint8Array (binary) or a Close (the peer closed; later
   * calls throw kind 'closed'). Waits at most `timeout` milliseconds (default: until one comes or the
   * connection ends), then throws kind 'timeout' with the connection still open. Pings are
   * answered by the host and never returned.
   */
  receive(timeout = undefined) {
    try {
      return message(this.#live().receive(timeoutMs(timeout)));
    } catch (e) {
      throw hostError(e, this.url);
    }
  }

  /**
   * Send a ping and wait for its pong, at most `timeout` ms (none: the host's 10 s); the round
   * trip in ms (the host records it as ws_ping). Messages that arrive meanwhile are kept for
   * `receive`.
   */
  ping(timeout = undefined) {
    try {
      return this.#live().ping(timeoutMs(timeout));
    } catch (e) {
      throw hostError(e, this.url);
    }
  }

  /**
   * Start the close handshake with `code` (1000: normal) and `reason`, and release the connection
   * (the host awaits the peer's close on the side, at most 1 s). Closing one already released does
   * nothing; a failed handshake throws after the connection is released.
   */
  close(code = 1000, reason = '') {
    if (this.#resource === undefined) return;
    if (!Number.isInteger(code) || code < 0 || code > 0xffff) {
      throw new RangeError(`close code must be an integer from 0 to 65535, got ${code}`);
    }
    try {
      this.#resource.close(code, String(reason));
    } catch (e) {
      const error = hostError(e, this.url);
      if (!(error instanceof WebSocketError && error.kind === 'closed')) throw error;
    } finally {
      this.drop();
    }
  }

  /** Release the connection without the close handshake (the host ends it): what to do with one that failed. */
  drop() {
    const resource = this.#resource;
    this.#resource = undefined;
    if (resource !== undefined && typeof resource[DISPOSE] === 'function') resource[DISPOSE]();
  }

  /** Whether `close` or `drop` has released the connection. */
  get closed() {
    return this.#resource === undefined;
  }
}

/**
 * Open a WebSocket connection to `url` (`ws://` or `wss://`, with the run's TLS settings).
 * Options: `headers` (an object or [name, value] pairs, values strings or bytes) sent with the
 * handshake, `timeout` in ms (default: the host's 60 s). Throws a WebSocketError.
 */
export function connect(url, options = {}) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`connect options must be an object, got ${typeof options}`);
  }
  for (const key of Object.keys(options)) {
    if (!CONNECT_OPTIONS.includes(key)) {
      throw new TypeError(`unknown connect option '${key}' (known: ${CONNECT_OPTIONS.join(', ')})`);
    }
  }
  const target = String(url);
  const { headers = [] } = options;
  const pairs = (Array.isArray(headers) ? headers : Object.entries(headers)).map(([name, value]) => [String(name), bytes(value)]);
  let resource;
  try {
    resource = HostConnection.connect(target, pairs, timeoutMs(options.timeout));
  } catch (e) {
    throw hostError(e, target);
  }
  return new Connection(target, resource);
}
