// One check name in two groups: each tool counts it in both places.
import http from 'k6/http';
import { check, group } from 'k6';

export default function () {
  group('catalog', () => {
    check(http.get(`${__ENV.BASE}/`), { 'page ok': (r) => r.status === 200 });
  });
  group('cart', () => {
    check(http.get(`${__ENV.BASE}/status?code=500`), { 'page ok': (r) => r.status === 200 });
  });
}
