// Bodies of a few sizes: the length as text and as bytes.
import http from 'k6/http';
import { check } from 'k6';

export default function () {
  for (const n of [0, 1, 1000, 100000]) {
    const res = http.get(`${__ENV.BASE}/bytes?n=${n}`);
    check(res, { [`${n} bytes`]: (r) => r.status === 200 && r.body.length === n });
  }
  const bin = http.get(`${__ENV.BASE}/bytes?n=4096`, { responseType: 'binary' });
  check(bin, { 'binary 4096': (r) => r.body.byteLength === 4096 });
}
