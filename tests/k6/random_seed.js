// randomSeed makes Math.random repeatable within a VU; values stay in [0, 1).
import http from 'k6/http';
import { check, randomSeed } from 'k6';

export default function () {
  randomSeed(7);
  const a = [Math.random(), Math.random()];
  randomSeed(7);
  const b = [Math.random(), Math.random()];
  http.get(`${__ENV.BASE}/`);
  check(a, {
    'repeatable': () => a[0] === b[0] && a[1] === b[1],
    'in range': () => a.every((x) => x >= 0 && x < 1),
  });
}
