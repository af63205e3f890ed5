// handleSummary gets k6's summary data and writes the files it returns: here a JSON of the counts
// a CI job would read, the same from k6 and from loadhost, and a text summary on stdout.
import http from 'k6/http';
import { check } from 'k6';
import { Counter, Rate, Trend } from 'k6/metrics';

const orders = new Counter('orders');
const good = new Rate('good');
const size = new Trend('size');

export const options = {
  vus: 2,
  iterations: 10,
  thresholds: { http_req_failed: ['rate==0'], orders: ['count==20'] },
};

export default function () {
  const res = http.get(`${__ENV.BASE}/`);
  check(res, { 'status is 200': (r) => r.status === 200 });
  orders.add(2);
  good.add(res.status === 200);
  size.add(res.body.length);
}

export function handleSummary(data) {
  const m = data.metrics;
  const counts = {
    iterations: m.iterations.values.count,
    http_reqs: m.http_reqs.values.count,
    http_req_failed: [m.http_req_failed.values.passes, m.http_req_failed.values.fails],
    orders: m.orders.values.count,
    good: [m.good.type, m.good.values.passes, m.good.values.fails],
    size: [m.size.type, Object.keys(m.size.values).includes('p(95)')],
    duration: [m.http_req_duration.type, m.http_req_duration.contains, 'p(95)' in m.http_req_duration.values],
    checks: data.root_group.checks.map((c) => [c.name, c.passes, c.fails]),
    thresholds: [m.http_req_failed.thresholds['rate==0'].ok, m.orders.thresholds['count==20'].ok],
  };
  return {
    'counts.json': JSON.stringify(counts, null, 1),
    stdout: `handled: ${counts.iterations} iterations\n`,
  };
}
