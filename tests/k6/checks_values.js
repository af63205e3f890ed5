// check on values that are not responses, truthy and falsy results, and its return value.
import http from 'k6/http';
import { check, fail } from 'k6';

export default function () {
  http.get(`${__ENV.BASE}/`);
  const all = check(__ITER, {
    'a number': (n) => typeof n === 'number',
    'not negative': (n) => n >= 0,
    'truthy object': () => ({}),
    'zero is falsy': () => 0,
  });
  check(all, { 'check returned false': (v) => v === false });
  check(null, { 'null passes through': (v) => v === null });
  if (typeof fail !== 'function') throw new Error('fail is missing');
}
