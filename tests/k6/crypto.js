// k6/crypto: digests and HMACs in k6's output encodings, against known answers (the same
// checks pass in k6), a hash fed in parts, random bytes of the asked length.
import http from 'k6/http';
import crypto from 'k6/crypto';
import { sha256 } from 'k6/crypto';
import { check } from 'k6';

export default function () {
  const body = http.get(`${__ENV.BASE}/`).body;
  check(body, {
    'md5 hex': (b) => crypto.md5(b, 'hex') === 'eff5bc1ef8ec9d03e640fc4370f5eacd',
    'sha1 hex': (b) => crypto.sha1(b, 'hex') === '92a949fd41844e1bb8c6812cdea102708fde23a4',
    'sha256 base64': (b) => sha256(b, 'base64') === '3FG4yWwtdF3zvVWQ2ZAjCkgv0kcSNZlUjgYy/b+X/CI=',
    'sha384 hex prefix': (b) => crypto.sha384(b, 'hex').startsWith('1b9ca5ca'),
    'sha512 base64rawurl': (b) => !crypto.sha512(b, 'base64rawurl').includes('='),
  });
  const signed = crypto.hmac('sha256', 'key', 'The quick brown fox jumps over the lazy dog', 'hex');
  check(signed, { 'hmac sha256': (s) => s === 'f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8' });
  const hasher = crypto.createHash('sha1');
  hasher.update('ab');
  hasher.update('c');
  check(hasher.digest('hex'), { 'hash in parts': (h) => h === 'a9993e364706816aba3e25717850c26c9cd0d89d' });
  const hmacer = crypto.createHMAC('sha512', 'k'.repeat(200));
  hmacer.update('data');
  check(hmacer.digest('base64'), { 'hmac long key': (h) => h.length === 88 });
  check(crypto.randomBytes(16), { 'random bytes': (b) => b.byteLength === 16 });
}
