// Values as the WIT carries them, shared by the SDK's modules (loadhost.js, ws.js, grpc.js): bytes,
// optional millisecond timeouts. It imports no host interface, so any module may use it.

/** The largest u32, the WIT's limit for milliseconds and counts. */
export const U32_MAX = 0xffffffff;

const encoder = new TextEncoder();

/** Bytes for a header value, a body or a message given as a string (UTF-8), a typed array or an ArrayBuffer. */
export function bytes(value) {
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'string') return encoder.encode(value);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError(`expected a string or bytes, got ${typeof value}`);
}

/**
 * The bindings' byte lists are typed arrays that fail `instanceof Uint8Array` in the plugin's code;
 * a view of the same memory that passes it costs no copy.
 */
export function ownBytes(data) {
  return data instanceof Uint8Array ? data : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** Milliseconds as the WIT's option<u32> (undefined: none). */
export function timeoutMs(ms) {
  if (ms === undefined || ms === null) return undefined;
  if (typeof ms !== 'number' || Number.isNaN(ms)) throw new TypeError(`timeout must be a number of milliseconds, got ${typeof ms}`);
  return Math.min(Math.max(0, Math.round(ms)), U32_MAX);
}
