// A body that is not JSON: json() throws, the script catches it, as defensive scripts do.
import http from 'k6/http';
import { check } from 'k6';

export default function () {
  const res = http.get(`${__ENV.BASE}/bytes?n=5`);
  let parsed = true;
  try {
    res.json();
  } catch (e) {
    parsed = false;
  }
  check(parsed, { 'not json': (p) => p === false });
  const ok = http.post(`${__ENV.BASE}/echo`, '{"a":[1,2]}');
  check(ok, { 'json text parses': (r) => r.json('a.#') === 2 });
}
