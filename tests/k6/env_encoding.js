// __ENV, __VU, k6/execution, k6/encoding and open() of a file beside the script, in a SharedArray.
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';
import encoding from 'k6/encoding';
import { SharedArray } from 'k6/data';

const users = new SharedArray('users', () => JSON.parse(open('./users.json')));

export default function () {
  const user = users[__ITER % users.length];
  const token = encoding.b64encode(`${user.name}:${user.pass}`);
  const res = http.get(`${__ENV.BASE}/?u=${user.name}`, { headers: { Authorization: `Basic ${token}` } });
  check(res, {
    'vu is numbered from 1': () => __VU >= 1 && exec.vu.idInTest === __VU,
    'base64 round trip': () => encoding.b64decode(token, 'std', 's') === `${user.name}:${user.pass}`,
    'mode from env': () => __ENV.MODE === 'conformance',
    'ok': (r) => r.status === 200,
  });
}
