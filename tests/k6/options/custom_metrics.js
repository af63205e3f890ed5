// thresholds over the script's own metrics (a Rate, a Trend, a Counter), which need no --metric:
// 2 VUs sharing 6 iterations; every threshold holds, exit 0 in both.
import http from 'k6/http';
import { Counter, Rate, Trend } from 'k6/metrics';

const errors = new Rate('errors');
const pageTime = new Trend('page_time', true);
const pages = new Counter("pages");

export const options = {
  vus: 2,
  iterations: 6,
  thresholds: {
    errors: ['rate<0.1'],
    page_time: ['p(95)<5000'],
    pages: ['count==6'],
  },
};

export default function () {
  const res = http.get(`${__ENV.BASE}/`);
  errors.add(res.status !== 200);
  pageTime.add(res.timings.duration);
  pages.add(1);
}
