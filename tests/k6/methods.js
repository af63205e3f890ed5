// put, patch, del and http.request with bodies, each echoed back.
import http from 'k6/http';
import { check } from 'k6';

export default function () {
  const url = `${__ENV.BASE}/echo`;
  check(http.put(url, 'put body'), { 'put echoed': (r) => r.status === 200 && r.body === 'put body' });
  check(http.patch(url, JSON.stringify({ n: __ITER })), { 'patch echoed json': (r) => r.json().n === __ITER });
  check(http.del(url, 'gone'), { 'del with a body': (r) => r.body === 'gone' });
  check(http.request('POST', url, 'via request', { tags: { name: 'echo-request' } }), {
    'request echoed': (r) => r.body === 'via request',
    'request url': (r) => r.url === url,
  });
}
