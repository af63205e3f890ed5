// An arrow function as the default export, named imports of http's functions.
import { get, post } from 'k6/http';
import { check, sleep } from 'k6';

export default () => {
  const a = get(`${__ENV.BASE}/`);
  const b = post(`${__ENV.BASE}/echo`, 'x');
  check([a, b], { 'both answered': ([x, y]) => x.status === 200 && y.body === 'x' });
  sleep(0.001);
};
