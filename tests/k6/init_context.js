// Init code runs with __VU 0 and reads __ENV; its values reach every iteration.
import http from 'k6/http';
import { check, sleep } from 'k6';

const initVu = __VU;
const base = __ENV.BASE || 'http://127.0.0.1:9';
const pages = ['/', '/bytes?n=5', '/status?code=201'];

export default function () {
  const page = pages[__ITER % pages.length];
  const res = http.get(`${base}${page}`);
  check(res, {
    'init ran as VU 0': () => initVu === 0,
    'a page answered': (r) => r.status === 200 || r.status === 201,
    'iteration counts from 0': () => __ITER >= 0 && __ITER < 12,
  });
  sleep(0.005);
}
