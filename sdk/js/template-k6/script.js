// __NAME__: a k6 script. loadhost runs it unchanged (`loadhost run script.js`), and so does k6
// (`k6 run script.js`): see README.md.
import http from 'k6/http';
import { check, group, sleep } from 'k6';
import { Trend } from 'k6/metrics';

// Read by loadhost as by k6 (flags win): 5 VUs for 10 s, and the run fails if too many requests
// fail or the slow ones get slower than 500 ms.
export const options = {
  vus: 5,
  duration: '10s',
  thresholds: {
    http_req_failed: ['rate<0.01'],
    http_req_duration: ['p(95)<500'],
  },
};

// The target: `-e BASE_URL=http://HOST:PORT` (loadhost's built-in target by default).
const BASE = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const pageSize = new Trend('page_bytes');

export default function () {
  group('home', () => {
    const res = http.get(`${BASE}/`, { tags: { name: 'home' } });
    check(res, { 'status is 200': (r) => r.status === 200 });
  });
  group('page', () => {
    const res = http.get(`${BASE}/bytes?n=512`, { tags: { name: 'page' } });
    check(res, { 'page has 512 bytes': (r) => r.body.length === 512 });
    pageSize.add(res.body.length);
  });
  sleep(1);
}
