// A gRPC echo workload against the built-in target's `loadhost.target.Echo` service.
//
// MODE=unary (the default): each task calls /loadhost.target.Echo/Unary on TARGET_URL (default
// http://127.0.0.1:8080) with `EchoRequest { string message = 1; }` where message is
// `w{worker}-i{iteration}`, decodes the echo and checks it is what was sent (`echo matches`).
// MODE=stream: each task opens the bidirectional /loadhost.target.Echo/Stream, sends MESSAGES
// (default 100) messages `w{worker}-i{iteration}-m{k}`, k from 0, each followed by one receive and
// the same check, then half-closes and waits for the end of the call.
//
// GRPC_STATUS, when set, is sent as the metadata `x-loadhost-status`, which makes the target end
// the call with that status. Status 14 (UNAVAILABLE, also what a failed connection counts as) is
// retryable; any other status other than OK fails the task, and so does a denied host (the message
// says "denied") or a wrong echo. The host records grpc_reqs{status}, grpc_req_duration and the
// rest by itself. The Python version behaves the same.
//
// The message is encoded and decoded by hand (one string field): protobufjs ships CommonJS only,
// and build.sh loads ES modules as they are, without a bundler.

import {
  abort, check, declareMetrics, declareOptions, env, failed, retryable,
} from './lib/loadhost.js';
import * as grpc from './lib/grpc.js';

declareMetrics('echo matches:check');
declareOptions(
  'TARGET_URL:url=http://127.0.0.1:8080 "the gRPC server"',
  'MODE:string=unary "unary: one unary call per task; stream: one bidi stream of MESSAGES echoes"',
  'GRPC_STATUS:string "ask the target to end each call with this status"',
  'MESSAGES:int=100 "messages per stream (MODE=stream)"',
);

const UNARY = '/loadhost.target.Echo/Unary';
const STREAM = '/loadhost.target.Echo/Stream';
// Milliseconds: the call's deadline, short of the host's 60 s task timeout.
const TIMEOUT_MS = 10000;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

function varint(n) {
  const out = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
}

/** `EchoRequest { message }` in protobuf: field 1, wire type 2 (length-delimited). */
export function encodeEcho(message) {
  const data = encoder.encode(message);
  const head = [0x0a, ...varint(data.length)];
  const out = new Uint8Array(head.length + data.length);
  out.set(head);
  out.set(data, head.length);
  return out;
}

/** The `message` field of an echo ('' when absent); other fields skipped; throws on bad input. */
export function decodeEcho(data) {
  let at = 0;
  let message = '';
  const readVarint = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      if (at >= data.length || shift > 63) throw new RangeError('truncated or overlong varint');
      const byte = data[at++];
      // Lengths here fit in 2^53: plain arithmetic rather than bit operations (32-bit in JS).
      value += (byte & 0x7f) * 2 ** shift;
      if (!(byte & 0x80)) return value;
    }
  };
  while (at < data.length) {
    const key = readVarint();
    const field = Math.floor(key / 8);
    const wire = key % 8;
    if (wire === 0) readVarint();
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const length = readVarint();
      if (at + length > data.length) throw new RangeError('truncated field');
      if (field === 1) message = decoder.decode(data.subarray(at, at + length));
      at += length;
    } else throw new RangeError(`unsupported wire type ${wire}`);
  }
  if (at > data.length) throw new RangeError('truncated field');
  return message;
}

// Read on the first task: the environment is not there when the build evaluates the module.
let settings;

function readSettings() {
  const mode = env('MODE').trim().toLowerCase();
  if (mode !== 'unary' && mode !== 'stream') throw abort(`MODE=${mode}: expected unary or stream`);
  const status = env('GRPC_STATUS')?.trim();
  return {
    target: env('TARGET_URL'),
    mode,
    metadata: status ? [['x-loadhost-status', status]] : [],
    messages: env('MESSAGES'),
  };
}

// The task error for a call that ended without OK: UNAVAILABLE may be retried.
function outcome(e) {
  if (!(e instanceof grpc.GrpcError)) return e;
  if (e.kind !== 'denied' && e.code === grpc.UNAVAILABLE) return retryable(e.message);
  return failed(e.message);
}

function judge(sent, reply) {
  let echoed;
  try {
    echoed = decodeEcho(reply);
  } catch (e) {
    echoed = `<undecodable: ${e.message}>`;
  }
  if (!check('echo matches', echoed === sent)) throw failed(`sent '${sent}', received '${echoed}'`);
}

function unary(task) {
  const sent = `w${task.workerId}-i${task.iteration}`;
  let response;
  try {
    const options = { metadata: settings.metadata, timeout: TIMEOUT_MS };
    response = grpc.call(settings.target, UNARY, encodeEcho(sent), options);
  } catch (e) {
    throw outcome(e);
  }
  judge(sent, response.message);
}

function stream(task) {
  let call;
  try {
    call = grpc.stream(settings.target, STREAM, { metadata: settings.metadata, timeout: TIMEOUT_MS });
    for (let k = 0; k < settings.messages; k++) {
      const sent = `w${task.workerId}-i${task.iteration}-m${k}`;
      call.send(encodeEcho(sent));
      const reply = call.receive();
      if (reply === undefined) throw failed(`the call ended after ${k} of ${settings.messages} echoes`);
      judge(sent, reply);
    }
    call.closeSend();
    const extra = call.receive();
    if (extra !== undefined) throw failed(`an echo nobody sent: ${extra.length} bytes`);
  } catch (e) {
    throw outcome(e);
  } finally {
    call?.drop();
  }
}

export function doTask(task) {
  settings ??= readSettings();
  if (settings.mode === 'unary') unary(task);
  else stream(task);
}
