// Credentials in the URL are basic authentication; the response's url is the URL as requested.
import http from 'k6/http';
import { check } from 'k6';

export default function () {
  const base = __ENV.BASE.replace('http://', 'http://ada:lovelace@');
  const res = http.get(`${base}/`);
  check(res, {
    'answered': (r) => r.status === 200,
    'url as requested': (r) => r.url === `${base}/`,
  });
}
