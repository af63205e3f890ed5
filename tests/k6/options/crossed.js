// A threshold that fails (every request fails it): exit 99 in both, after the whole load.
import http from 'k6/http';

export const options = {
  vus: 1,
  iterations: 6,
  thresholds: {
    'http_req_failed': ['rate<0.5'],
  },
};

export default function () {
  http.get(`${__ENV.BASE}/status?code=503`);
}
