// Test data from a file, picked per VU and iteration, sent as JSON.
import http from 'k6/http';
import { check } from 'k6';
import { SharedArray } from 'k6/data';

const users = new SharedArray('users', function () {
  return JSON.parse(open('./users.json')).filter((u) => u.name.length > 2);
});

export default function () {
  const user = users[(__VU * 7 + __ITER) % users.length];
  const res = http.post(`${__ENV.BASE}/echo`, JSON.stringify(user), { headers: { 'Content-Type': 'application/json' } });
  check(res, {
    'a user was sent': (r) => r.json('name') === user.name,
    'three users': () => users.length === 3,
  });
}
