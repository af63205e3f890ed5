// Checks that fail on purpose (a 404 checked for 200), and what k6 gives for a 204, a HEAD and a
// refused connection (port 1 on loopback: the test grants 127.0.0.1:1 too).
import http from 'k6/http';
import { check } from 'k6';

export default function () {
  const missing = http.get(`${__ENV.BASE}/status?code=404`);
  check(missing, { 'is 404': (r) => r.status === 404, 'is 200': (r) => r.status === 200 });
  const ok = http.get(`${__ENV.BASE}/status?code=204`);
  check(ok, { '204 body is null': (r) => r.status === 204 && r.body === null, 'status text': (r) => r.status_text === '204 No Content' });
  const head = http.head(`${__ENV.BASE}/`);
  check(head, { 'head body is empty': (r) => r.body === '' });
  const refused = http.get('http://127.0.0.1:1/');
  check(refused, {
    'refused is status 0': (r) => r.status === 0 && r.body === null,
    'refused has error code 1212': (r) => r.error_code === 1212 && r.error !== '',
  });
}
