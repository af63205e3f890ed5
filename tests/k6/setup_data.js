// setup() returns data that every iteration and teardown receive.
import http from 'k6/http';
import { check } from 'k6';

export function setup() {
  const res = http.post(`${__ENV.BASE}/echo`, JSON.stringify({ token: 'abc', items: [1, 2] }));
  return res.json();
}

export default function (data) {
  check(data, {
    'setup data arrives': (d) => d.token === 'abc',
    'arrays survive': (d) => d.items.length === 2,
  });
  http.get(`${__ENV.BASE}/?token=${data.token}`);
}

export function teardown(data) {
  http.get(`${__ENV.BASE}/?teardown=${data.token}`);
}
