// options give a timed load: 2 VUs for 2 seconds, each iteration sleeping 100 ms.
import http from 'k6/http';
import { sleep } from 'k6';

export const options = { vus: 2, duration: '2s' };

export default function () {
  http.get(`${__ENV.BASE}/`);
  sleep(0.1);
}
