// A GET, two checks on its response and a short sleep: the shape of most k6 scripts.
import http from 'k6/http';
import { check, sleep } from 'k6';

export default function () {
  const res = http.get(`${__ENV.BASE}/`);
  check(res, {
    'status is 200': (r) => r.status === 200,
    'has a body': (r) => r.body.length > 0,
  });
  sleep(0.01);
}
