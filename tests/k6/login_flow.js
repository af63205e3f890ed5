// A login that returns a token, reused on the next requests: the correlation most journeys have.
import http from 'k6/http';
import { check, group, sleep } from 'k6';

export default function () {
  let token;
  group('login', () => {
    const res = http.post(`${__ENV.BASE}/echo`, JSON.stringify({ token: `t-${__VU}-${__ITER}` }), {
      headers: { 'Content-Type': 'application/json' },
    });
    token = res.json('token');
    check(res, { 'logged in': () => typeof token === 'string' && token.startsWith('t-') });
  });
  group('browse', () => {
    const res = http.get(`${__ENV.BASE}/bytes?n=32`, { headers: { Authorization: `Bearer ${token}` } });
    check(res, { 'page with token': (r) => r.status === 200 && r.body.length === 32 });
  });
  sleep(0.01);
}
