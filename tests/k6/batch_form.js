// http.batch in its three forms, a form body from an object, params timeout and redirects.
import http from 'k6/http';
import { check } from 'k6';

export default function () {
  const responses = http.batch([
    `${__ENV.BASE}/`,
    ['GET', `${__ENV.BASE}/bytes?n=3`],
    { method: 'POST', url: `${__ENV.BASE}/echo`, body: { b: 'two words', a: 1 } },
  ]);
  check(responses, {
    'three answers': (r) => r.length === 3 && r.every((x) => x.status === 200),
    'form encoded': (r) => r[2].body === 'a=1&b=two+words',
  });
  const slow = http.get(`${__ENV.BASE}/delay?ms=5`, { timeout: '10s', redirects: 0 });
  check(slow, { 'waited': (r) => r.timings.duration >= 5 });
}
