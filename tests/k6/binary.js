// responseType binary gives an ArrayBuffer; 'none' gives no body; headers read by canonical name.
import http from 'k6/http';
import { check } from 'k6';

export default function () {
  const bin = http.get(`${__ENV.BASE}/bytes?n=100`, { responseType: 'binary' });
  check(bin, {
    'binary is an ArrayBuffer': (r) => r.body instanceof ArrayBuffer && r.body.byteLength === 100,
    'content length header': (r) => r.headers['Content-Length'] === '100',
  });
  const none = http.get(`${__ENV.BASE}/bytes?n=100`, { responseType: 'none' });
  check(none, { 'none has no body': (r) => r.body === null && r.status === 200 });
}
