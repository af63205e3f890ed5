// k6/crypto for k6 scripts: MD5 (RFC 1321), SHA-1, SHA-256, SHA-384 and SHA-512 (FIPS 180-4),
// their HMACs (RFC 2104) and random bytes, synchronous as k6's are (the engine's WebCrypto is
// asynchronous). Written from the specifications; the SHA-2 constants are derived here as the
// standard defines them (the fractional parts of the primes' square and cube roots), once, when
// the runner is built. Slow beside native code, but a script hashes a few values per iteration.

import { base64 } from '../values.js';

const encoder = new TextEncoder();
const MASK64 = (1n << 64n) - 1n;

// ---------------------------------------------------------------------------------------------
// Constants

function firstPrimes(n) {
  const out = [];
  for (let c = 2; out.length < n; c++) {
    if (out.every((p) => p * p > c || c % p !== 0)) out.push(c);
  }
  return out;
}

// The integer k-th root of a non-negative BigInt (the largest r with r^k <= x).
function integerRoot(x, k) {
  let lo = 0n;
  let hi = 1n << (BigInt(x.toString(2).length) / k + 2n);
  while (lo < hi) {
    const mid = (lo + hi + 1n) >> 1n;
    if (mid ** k <= x) lo = mid;
    else hi = mid - 1n;
  }
  return lo;
}

// The first `bits` bits of the fractional part of the k-th root of each prime.
function fractions(primes, k, bits) {
  const mask = (1n << BigInt(bits)) - 1n;
  return primes.map((p) => integerRoot(BigInt(p) << (BigInt(bits) * k), k) & mask);
}

// Derived at the first hash, not when the runner is built: the BigInt work left in the snapshot
// made the runner 0.6 MB larger, for scripts that mostly never hash.
let derived;
function constants() {
  if (derived === undefined) {
    const primes = firstPrimes(80);
    derived = {
      K256: fractions(primes.slice(0, 64), 3n, 32).map(Number),
      H256: fractions(primes.slice(0, 8), 2n, 32).map(Number),
      K512: fractions(primes, 3n, 64),
      H512: fractions(primes.slice(0, 8), 2n, 64),
      H384: fractions(primes.slice(8, 16), 2n, 64),
      // MD5's table: the integer part of 2^32 × |sin(i + 1)|.
      MD5_K: Array.from({ length: 64 }, (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) >>> 0),
    };
  }
  return derived;
}
const MD5_S = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];

// ---------------------------------------------------------------------------------------------
// The hashes, each over a whole Uint8Array

// The message padded to a multiple of `block` bytes: 0x80, zeros, and the length in bits in
// `lengthBytes` bytes (big-endian for SHA, little-endian for MD5).
function padded(data, block, lengthBytes, littleEndian) {
  const total = Math.ceil((data.length + 1 + lengthBytes) / block) * block;
  const out = new Uint8Array(total);
  out.set(data);
  out[data.length] = 0x80;
  let bits = BigInt(data.length) * 8n;
  for (let i = 0; i < 8; i++) {
    const at = littleEndian ? total - lengthBytes + i : total - 1 - i;
    out[at] = Number(bits & 0xffn);
    bits >>= 8n;
  }
  return out;
}

// Each word of the state plus the block's result, once a block (an array per block is cheap; per
// round it would not be).
function add32(h, words) {
  words.forEach((v, i) => { h[i] = (h[i] + v) >>> 0; });
}

const rotl32 = (x, n) => ((x << n) | (x >>> (32 - n))) >>> 0;
const rotr32 = (x, n) => ((x >>> n) | (x << (32 - n))) >>> 0;

function md5(data) {
  const { MD5_K } = constants();
  const m = padded(data, 64, 8, true);
  const view = new DataView(m.buffer);
  let a0 = 0x67452301;
  let b0 = 0xefcdab89;
  let c0 = 0x98badcfe;
  let d0 = 0x10325476;
  const w = new Array(16);
  for (let off = 0; off < m.length; off += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(off + i * 4, true);
    // Plain temporaries, not destructuring: each [x, y] = [...] makes an array, and this loop runs
    // 64 times a block in an interpreter.
    let a = a0;
    let b = b0;
    let c = c0;
    let d = d0;
    for (let i = 0; i < 64; i++) {
      const round = i >> 4;
      let f;
      let g;
      if (round === 0) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (round === 1) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) % 16;
      } else if (round === 2) {
        f = b ^ c ^ d;
        g = (3 * i + 5) % 16;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) % 16;
      }
      const sum = (a + (f >>> 0) + MD5_K[i] + w[g]) >>> 0;
      a = d;
      d = c;
      c = b;
      b = (b + rotl32(sum, MD5_S[round * 4 + (i % 4)])) >>> 0;
    }
    a0 = (a0 + a) >>> 0;
    b0 = (b0 + b) >>> 0;
    c0 = (c0 + c) >>> 0;
    d0 = (d0 + d) >>> 0;
  }
  const out = new DataView(new ArrayBuffer(16));
  [a0, b0, c0, d0].forEach((v, i) => out.setUint32(i * 4, v, true));
  return new Uint8Array(out.buffer);
}

function sha1(data) {
  const m = padded(data, 64, 8, false);
  const view = new DataView(m.buffer);
  const h = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0];
  const w = new Array(80);
  for (let off = 0; off < m.length; off += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(off + i * 4);
    for (let i = 16; i < 80; i++) w[i] = rotl32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    let [a, b, c, d, e] = h;
    for (let i = 0; i < 80; i++) {
      let f;
      let k;
      if (i < 20) {
        f = (b & c) | (~b & d);
        k = 0x5a827999;
      } else if (i < 40) {
        f = b ^ c ^ d;
        k = 0x6ed9eba1;
      } else if (i < 60) {
        f = (b & c) | (b & d) | (c & d);
        k = 0x8f1bbcdc;
      } else {
        f = b ^ c ^ d;
        k = 0xca62c1d6;
      }
      const t = (rotl32(a, 5) + (f >>> 0) + e + k + w[i]) >>> 0;
      e = d;
      d = c;
      c = rotl32(b, 30);
      b = a;
      a = t;
    }
    add32(h, [a, b, c, d, e]);
  }
  const out = new DataView(new ArrayBuffer(20));
  h.forEach((v, i) => out.setUint32(i * 4, v));
  return new Uint8Array(out.buffer);
}

function sha256(data) {
  const { K256, H256 } = constants();
  const m = padded(data, 64, 8, false);
  const view = new DataView(m.buffer);
  const h = [...H256];
  const w = new Array(64);
  for (let off = 0; off < m.length; off += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(off + i * 4);
    for (let i = 16; i < 64; i++) {
      const s0 = rotr32(w[i - 15], 7) ^ rotr32(w[i - 15], 18) ^ (w[i - 15] >>> 3);
      const s1 = rotr32(w[i - 2], 17) ^ rotr32(w[i - 2], 19) ^ (w[i - 2] >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, hh] = h;
    for (let i = 0; i < 64; i++) {
      const s1 = rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25);
      const ch = (e & f) ^ (~e & g);
      const t1 = (hh + s1 + ch + K256[i] + w[i]) >>> 0;
      const s0 = rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22);
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (s0 + maj) >>> 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    add32(h, [a, b, c, d, e, f, g, hh]);
  }
  const out = new DataView(new ArrayBuffer(32));
  h.forEach((v, i) => out.setUint32(i * 4, v));
  return new Uint8Array(out.buffer);
}

const rotr64 = (x, n) => ((x >> n) | (x << (64n - n))) & MASK64;

// SHA-512 from the initial values named `initial` (H512, H384), cut to `outBytes` bytes.
function sha512From(initial, outBytes) {
  return (data) => {
    const { K512 } = constants();
    const m = padded(data, 128, 16, false);
    const view = new DataView(m.buffer);
    const h = [...constants()[initial]];
    const w = new Array(80);
    for (let off = 0; off < m.length; off += 128) {
      for (let i = 0; i < 16; i++) w[i] = view.getBigUint64(off + i * 8);
      for (let i = 16; i < 80; i++) {
        const s0 = rotr64(w[i - 15], 1n) ^ rotr64(w[i - 15], 8n) ^ (w[i - 15] >> 7n);
        const s1 = rotr64(w[i - 2], 19n) ^ rotr64(w[i - 2], 61n) ^ (w[i - 2] >> 6n);
        w[i] = (w[i - 16] + s0 + w[i - 7] + s1) & MASK64;
      }
      let [a, b, c, d, e, f, g, hh] = h;
      for (let i = 0; i < 80; i++) {
        const s1 = rotr64(e, 14n) ^ rotr64(e, 18n) ^ rotr64(e, 41n);
        const ch = (e & f) ^ (~e & MASK64 & g);
        const t1 = (hh + s1 + ch + K512[i] + w[i]) & MASK64;
        const s0 = rotr64(a, 28n) ^ rotr64(a, 34n) ^ rotr64(a, 39n);
        const maj = (a & b) ^ (a & c) ^ (b & c);
        const t2 = (s0 + maj) & MASK64;
        hh = g;
        g = f;
        f = e;
        e = (d + t1) & MASK64;
        d = c;
        c = b;
        b = a;
        a = (t1 + t2) & MASK64;
      }
      [a, b, c, d, e, f, g, hh].forEach((v, i) => { h[i] = (h[i] + v) & MASK64; });
    }
    const out = new DataView(new ArrayBuffer(64));
    h.forEach((v, i) => out.setBigUint64(i * 8, v));
    return new Uint8Array(out.buffer, 0, outBytes).slice();
  };
}

// Each algorithm: the hash, and its block size in bytes (for HMAC).
const ALGORITHMS = {
  md5: [md5, 64],
  sha1: [sha1, 64],
  sha256: [sha256, 64],
  sha384: [sha512From('H384', 48), 128],
  sha512: [sha512From('H512', 64), 128],
};

// ---------------------------------------------------------------------------------------------
// k6's API

function algorithm(name) {
  const found = ALGORITHMS[String(name).toLowerCase().replace('-', '')];
  if (found === undefined) {
    throw new Error(`k6/crypto: '${name}' is not among loadhost's hashes (${Object.keys(ALGORITHMS).join(', ')})`);
  }
  return found;
}

function input(data) {
  if (typeof data === 'string') return encoder.encode(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError(`k6/crypto: expected a string or an ArrayBuffer, got ${data === null ? 'null' : typeof data}`);
}

// A digest in k6's output encodings: hex, base64, base64url (padded), base64rawurl, or binary
// (an ArrayBuffer, also when none is named).
function encoded(digest, encoding) {
  switch (encoding) {
    case 'hex':
      return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
    case 'base64':
      return base64(digest);
    case 'base64url':
      return base64(digest).replaceAll('+', '-').replaceAll('/', '_');
    case 'base64rawurl':
      return base64(digest).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
    case undefined:
    case 'binary':
      return digest.buffer.slice(digest.byteOffset, digest.byteOffset + digest.byteLength);
    default:
      throw new Error(`k6/crypto: unknown output encoding '${encoding}' (hex, base64, base64url, base64rawurl, binary)`);
  }
}

function hmacBytes(name, secret, data) {
  const [hash, block] = algorithm(name);
  let key = input(secret);
  if (key.length > block) key = hash(key);
  const inner = new Uint8Array(block + data.length);
  const outer = new Uint8Array(block + hash(new Uint8Array(0)).length);
  for (let i = 0; i < block; i++) {
    inner[i] = (key[i] ?? 0) ^ 0x36;
    outer[i] = (key[i] ?? 0) ^ 0x5c;
  }
  inner.set(data, block);
  outer.set(hash(inner), block);
  return hash(outer);
}

// A hasher that takes its input in parts (k6's createHash / createHMAC).
function hasher(finish) {
  const parts = [];
  return {
    update(data) {
      parts.push(input(data));
    },
    digest(encoding) {
      const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) {
        all.set(p, at);
        at += p.length;
      }
      return encoded(finish(all), encoding);
    },
  };
}

const api = {
  md5: (data, encoding) => encoded(md5(input(data)), encoding),
  sha1: (data, encoding) => encoded(sha1(input(data)), encoding),
  sha256: (data, encoding) => encoded(sha256(input(data)), encoding),
  sha384: (data, encoding) => encoded(ALGORITHMS.sha384[0](input(data)), encoding),
  sha512: (data, encoding) => encoded(ALGORITHMS.sha512[0](input(data)), encoding),
  hmac: (name, secret, data, encoding) => encoded(hmacBytes(name, secret, input(data)), encoding),
  createHash: (name) => hasher((data) => algorithm(name)[0](data)),
  createHMAC: (name, secret) => hasher((data) => hmacBytes(name, secret, data)),
  randomBytes(n) {
    const out = new Uint8Array(n);
    globalThis.crypto.getRandomValues(out);
    return out.buffer;
  },
};
for (const name of ['md4', 'ripemd160', 'sha512_224', 'sha512_256']) {
  api[name] = () => {
    throw new Error(`k6/crypto: ${name} is not among loadhost's hashes (${Object.keys(ALGORITHMS).join(', ')})`);
  };
}

export const k6crypto = { ...api, default: api };
