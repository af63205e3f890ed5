// http.batch entries with params (tags, headers) and bodies.
import http from 'k6/http';
import { check } from 'k6';

export default function () {
  const res = http.batch([
    ['GET', `${__ENV.BASE}/`, null, { tags: { name: 'home' } }],
    ['POST', `${__ENV.BASE}/echo`, JSON.stringify({ n: __ITER }), { headers: { 'Content-Type': 'application/json' } }],
    { method: 'PUT', url: `${__ENV.BASE}/echo`, body: 'put', params: { tags: { name: 'put' } } },
  ]);
  check(res, {
    'all answered': (r) => r.every((x) => x.status === 200),
    'json in a batch': (r) => r[1].json('n') === __ITER,
    'put in a batch': (r) => r[2].body === 'put',
  });
}
