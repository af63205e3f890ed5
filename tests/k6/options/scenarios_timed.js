// The timed executors side by side: two looping VUs for 2 s, and VUs ramped up to 2 and back
// over 2 s starting half a second in, each iteration sleeping 200 ms.
import http from 'k6/http';
import { sleep } from 'k6';
import { Counter } from 'k6/metrics';

const steady = new Counter('steady_runs');
const ramped = new Counter('ramped_runs');

export const options = {
  scenarios: {
    steady: { executor: 'constant-vus', vus: 2, duration: '2s', exec: 'steadyRun' },
    ramped: {
      executor: 'ramping-vus', startVUs: 0, startTime: '500ms', exec: 'rampedRun', gracefulRampDown: '0s',
      stages: [{ duration: '1s', target: 2 }, { duration: '1s', target: 0 }],
    },
  },
  thresholds: { http_req_failed: ['rate==0'] },
};

export function steadyRun() {
  http.get(`${__ENV.BASE}/`);
  steady.add(1);
  sleep(0.2);
}

export function rampedRun() {
  http.get(`${__ENV.BASE}/`);
  ramped.add(1);
  sleep(0.2);
}
