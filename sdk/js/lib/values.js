// Values as the WIT carries them, shared by the SDK's modules (loadhost.js, ws.js, grpc.js): bytes,
// optional millisecond timeouts, base64. It imports no host interface, so any module may use it.

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

/** The standard base64 alphabet (RFC 4648). */
export const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Standard base64 with padding (RFC 4648) of bytes: basic authentication, k6/encoding. */
export function base64(data) {
  let out = '';
  for (let i = 0; i < data.length; i += 3) {
    const n = (data[i] << 16) | ((data[i + 1] ?? 0) << 8) | (data[i + 2] ?? 0);
    out += BASE64[(n >> 18) & 63] + BASE64[(n >> 12) & 63];
    out += i + 1 < data.length ? BASE64[(n >> 6) & 63] : '=';
    out += i + 2 < data.length ? BASE64[n & 63] : '=';
  }
  return out;
}
