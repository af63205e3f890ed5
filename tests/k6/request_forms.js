// http.request with a null body, delete without a body, options and head.
import http from 'k6/http';
import { check } from 'k6';

export default function () {
  check(http.request('GET', `${__ENV.BASE}/`, null, { tags: { name: 'home' } }), { 'request GET': (r) => r.status === 200 });
  check(http.del(`${__ENV.BASE}/echo`), { 'delete answered': (r) => r.status > 0 });
  check(http.options(`${__ENV.BASE}/`), { 'options answered': (r) => r.status > 0 });
  check(http.head(`${__ENV.BASE}/bytes?n=9`), { 'head answered': (r) => r.status === 200 && typeof r.headers === 'object' });
}
