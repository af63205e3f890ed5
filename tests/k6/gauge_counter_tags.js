// Counters and gauges with tags, added several times an iteration.
import http from 'k6/http';
import { check } from 'k6';
import { Counter, Gauge } from 'k6/metrics';

const items = new Counter('items_seen');
const depth = new Gauge('queue_depth');

export default function () {
  const res = http.get(`${__ENV.BASE}/bytes?n=4`);
  for (let i = 0; i < 3; i += 1) items.add(1, { source: i === 0 ? 'head' : 'tail' });
  depth.add(res.body.length, { queue: 'main' });
  check(res, { 'four bytes': (r) => r.body.length === 4 });
}
