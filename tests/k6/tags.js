// Tags on checks and on custom metrics, a tagged URL template, and tags.name on requests.
import http from 'k6/http';
import { check } from 'k6';
import { Counter, Trend } from 'k6/metrics';

const hits = new Counter('hits');
const waits = new Trend('waits', true);

export default function () {
  const id = __ITER % 3;
  const res = http.get(http.url`${__ENV.BASE}/?item=${id}`, { tags: { name: 'item' } });
  check(res, { 'item ok': (r) => r.status === 200 }, { kind: id === 0 ? 'first' : 'other' });
  hits.add(1, { kind: id === 0 ? 'first' : 'other' });
  waits.add(res.timings.duration);
}
