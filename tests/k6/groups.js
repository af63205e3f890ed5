// Groups, nested, with checks inside: k6 reports the checks under their groups.
import http from 'k6/http';
import { check, group } from 'k6';

export default function () {
  group('home', () => {
    const res = http.get(`${__ENV.BASE}/`);
    check(res, { 'home ok': (r) => r.status === 200 });
    group('details', () => {
      check(http.get(`${__ENV.BASE}/bytes?n=10`), { 'ten bytes': (r) => r.body.length === 10 });
    });
  });
  group('checkout', () => {
    check(http.post(`${__ENV.BASE}/echo`, 'pay'), { 'paid': (r) => r.body === 'pay' });
  });
}
