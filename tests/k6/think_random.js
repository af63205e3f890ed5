// Random think time between steps, as most journeys have.
import http from 'k6/http';
import { check, sleep } from 'k6';

export default function () {
  check(http.get(`${__ENV.BASE}/`), { 'first step': (r) => r.status === 200 });
  sleep(Math.random() * 0.02);
  check(http.get(`${__ENV.BASE}/bytes?n=3`), { 'second step': (r) => r.body === r.body.slice(0, 3) });
  sleep(0.001 + Math.random() * 0.01);
}
