// A request that takes longer than its timeout: status 0, error_code 1050, as k6 reports it.
import http from 'k6/http';
import { check } from 'k6';

export default function () {
  const res = http.get(`${__ENV.BASE}/delay?ms=400`, { timeout: '50ms' });
  check(res, {
    'timed out': (r) => r.status === 0,
    'timeout code': (r) => r.error_code === 1050,
    'has an error': (r) => typeof r.error === 'string' && r.error.length > 0,
  });
  const fine = http.get(`${__ENV.BASE}/delay?ms=5`, { timeout: 2000 });
  check(fine, { 'a number timeout in ms': (r) => r.status === 200 });
}
