// options give the load (2 VUs sharing 10 iterations) and thresholds that hold: exit 0 in both.
import http from 'k6/http';
import { check } from 'k6';

export const options = {
  vus: 2,
  iterations: 10,
  thresholds: {
    http_req_failed: ['rate<0.01'],
    http_req_duration: ['p(95)<5000', { threshold: 'max<10000', abortOnFail: false }],
    http_reqs: ['count>=10'],
  },
};

export default function () {
  check(http.get(`${__ENV.BASE}/`), { 'ok': (r) => r.status === 200 });
}
