// Fakes of the host's imports for the unit tests, scripted by the tests through `fake`. An error
// result is thrown as the bindings throw it: an Error whose `payload` is the WIT variant.

export const fake = {
  connections: [],
  calls: [],
  streams: [],
  env: [],
  metrics: [],
  sent: [],
  workerExpected: [],
  slept: [],
};

export function hostError(tag, val) {
  const e = new Error(`host error ${tag}`);
  e.payload = val === undefined ? { tag } : { tag, val };
  return e;
}

const DISPOSE = Symbol.dispose ?? Symbol.for('dispose');

// loadhost:plugin/websocket: an echo peer; 'break' fails the send, URLs with 'denied' or 'many'
// fail the connect.
export class Connection {
  static connect(url, headers, timeoutMs) {
    if (url.includes('denied')) throw hostError('denied', url);
    if (url.includes('many')) throw hostError('too-many-connections', 8);
    const conn = new Connection();
    Object.assign(conn, { url, headers, timeoutMs, inbox: [], sent: [], closedWith: undefined, disposed: false });
    fake.connections.push(conn);
    return conn;
  }
  sendText(text) {
    if (text === 'break') throw hostError('network', 'connection reset');
    this.sent.push(text);
    this.inbox.push({ tag: 'text', val: text });
  }
  sendBinary(data) {
    this.sent.push(data);
    this.inbox.push({ tag: 'binary', val: data });
  }
  receive(timeoutMs) {
    this.receiveTimeoutMs = timeoutMs;
    if (this.inbox.length === 0) throw hostError('timeout');
    return this.inbox.shift();
  }
  ping(timeoutMs) {
    this.pingTimeoutMs = timeoutMs;
    return 2.5;
  }
  close(code, reason) {
    this.closedWith = [code, reason];
  }
  [DISPOSE]() {
    this.disposed = true;
  }
}

// loadhost:plugin/grpc: echoes the message; metadata x-loadhost-status ends the call with it.
export function call(target, method, metadata, message, timeoutMs) {
  fake.calls.push({ target, method, metadata, message, timeoutMs });
  if (target.includes('denied')) throw hostError('denied', target);
  if (target.includes('down')) throw hostError('network', 'connection refused');
  const status = metadata.find(([name]) => name === 'x-loadhost-status');
  if (status !== undefined) {
    const code = Number(new TextDecoder().decode(status[1]));
    throw hostError('status', { code, message: 'injected', trailers: [['x-why', new TextEncoder().encode('test')]] });
  }
  return { message, headers: [['content-type', new TextEncoder().encode('application/grpc')]], trailers: [] };
}

export class StreamingCall {
  static open(target, method, metadata, timeoutMs) {
    const stream = new StreamingCall();
    Object.assign(stream, { opened: { target, method, metadata, timeoutMs }, queue: [], halfClosed: false, disposed: false });
    fake.streams.push(stream);
    return stream;
  }
  send(message) {
    this.queue.push(message);
  }
  closeSend() {
    this.halfClosed = true;
  }
  receive(timeoutMs) {
    if (this.queue.length > 0) return this.queue.shift();
    if (this.halfClosed) return undefined;
    throw hostError('timeout');
  }
  trailers() {
    return this.halfClosed ? [['grpc-status', new TextEncoder().encode('0')]] : [];
  }
  [DISPOSE]() {
    this.disposed = true;
  }
}

// loadhost:plugin/metrics, loadhost:plugin/http and wasi:cli/environment, for loadhost.js.
export function counter(...args) {
  fake.metrics.push(['counter', ...args]);
}
export function gauge(...args) {
  fake.metrics.push(['gauge', ...args]);
}
export function trend(...args) {
  fake.metrics.push(['trend', ...args]);
}
export function check(name, ok, tags) {
  fake.metrics.push(['check', name, ok, tags]);
  return ok;
}
export function sendOpts(request, options) {
  fake.sent.push({ request, options });
  return { response: { status: 404, headers: [], body: new Uint8Array(0) }, finalUrl: request.url, redirects: 0 };
}
export function sendExpecting(request, options, statuses) {
  fake.sent.push({ request, options, statuses });
  return { response: { status: 404, headers: [], body: new Uint8Array(0) }, finalUrl: request.url, redirects: 0 };
}
export function setExpectedStatuses(statuses) {
  fake.workerExpected.push(statuses);
}
// The phases of the last response, as the host gives them (ms).
export function lastTimings() {
  return { blocked: 0.1, connecting: 0, tlsHandshaking: 0, sending: 0.02, waiting: 1.5, receiving: 0.03, duration: 1.55 };
}
export function cookiesFor() {
  return [];
}
export function addCookie() {}
export function clearCookies() {}
// loadhost:plugin/pause: what was slept, in ms.
export function sleep(ms) {
  fake.slept.push(ms);
}
export function getEnvironment() {
  return fake.env;
}
