// A time Trend of the request's duration, a Rate of good answers, a Counter of bytes.
import http from 'k6/http';
import { Counter, Rate, Trend } from 'k6/metrics';

const latency = new Trend('page_latency', true);
const good = new Rate('good_answers');
const bytes = new Counter('page_bytes');

export default function () {
  const code = __ITER % 4 === 0 ? 500 : 200;
  const res = http.get(`${__ENV.BASE}/status?code=${code}`);
  latency.add(res.timings.duration, { code: String(res.status) });
  good.add(res.status === 200);
  bytes.add(res.body === null ? 0 : res.body.length);
}
