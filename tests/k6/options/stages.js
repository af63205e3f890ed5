// Top-level stages ramp the VUs: up to 2 over a second, back to 0 over the next.
import http from 'k6/http';
import { sleep } from 'k6';

export const options = {
  stages: [
    { duration: '1s', target: 2 },
    { duration: '1s', target: 0 },
  ],
  thresholds: { http_req_failed: ['rate==0'] },
};

export default function () {
  http.get(`${__ENV.BASE}/`);
  sleep(0.1);
}
