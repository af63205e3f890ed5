// setup logs in once; every iteration uses the token; teardown logs out.
import http from 'k6/http';
import { check, sleep } from 'k6';

export function setup() {
  const res = http.post(`${__ENV.BASE}/echo`, JSON.stringify({ token: 'session-1', user: { id: 7 } }), {
    headers: { 'Content-Type': 'application/json' },
  });
  check(res, { 'setup logged in': (r) => r.status === 200 });
  return { token: res.json('token'), userId: res.json('user.id') };
}

export default function (data) {
  const res = http.get(`${__ENV.BASE}/?user=${data.userId}`, { headers: { Authorization: `Bearer ${data.token}` } });
  check(res, { 'with the session': () => data.token === 'session-1' && data.userId === 7 });
  sleep(0.002);
}

export function teardown(data) {
  http.post(`${__ENV.BASE}/echo`, `logout ${data.token}`);
}
