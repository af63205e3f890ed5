// options computed from the run's -e values (the test passes VUS=2 and ITERS=8): 2 VUs sharing 8
// iterations in both tools; without them, 1 VU and 3 iterations.
import http from 'k6/http';
import { check } from 'k6';

const VUS = parseInt(__ENV.VUS) || 1;

export const options = {
  vus: VUS,
  iterations: Number(__ENV.ITERS || '3'),
  thresholds: {
    http_req_failed: [__ENV.FAILED_RATE ?? 'rate<0.01'],
  },
};

export default function () {
  check(http.get(`${__ENV.BASE}/`), { 'ok': (r) => r.status === 200 });
}
