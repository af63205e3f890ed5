// Module state lives per VU: a counter at the top level counts that VU's iterations.
import http from 'k6/http';
import { check } from 'k6';

let mine = 0;
const seen = [];

export default function () {
  mine += 1;
  seen.push(__ITER);
  http.get(`${__ENV.BASE}/`);
  check(mine, {
    'one per iteration of this VU': (n) => n === __ITER + 1,
    'iterations in order': () => seen.every((it, i) => it === i),
  });
}
