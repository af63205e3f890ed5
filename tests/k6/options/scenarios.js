// Every iteration-exact executor at once, each running its own function (exec) with its own
// env: the counters say how many iterations each scenario ran, and a check that each saw its
// scenario's env and name.
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';

const shared = new Counter('shared_runs');
const perVu = new Counter('per_vu_runs');
const arrival = new Counter('arrival_runs');
const ramp = new Counter('ramp_runs');

export const options = {
  scenarios: {
    shared: { executor: 'shared-iterations', vus: 2, iterations: 6, exec: 'sharedRun' },
    per_vu: { executor: 'per-vu-iterations', vus: 2, iterations: 3, exec: 'perVuRun', startTime: '500ms' },
    arrival: {
      executor: 'constant-arrival-rate', rate: 20, timeUnit: '2s', duration: '2s',
      preAllocatedVUs: 2, maxVUs: 4, exec: 'arrivalRun', env: { WHO: 'arrival' },
    },
    ramp: {
      executor: 'ramping-arrival-rate', startRate: 0, timeUnit: '1s', preAllocatedVUs: 2,
      stages: [{ duration: '1s', target: 10 }, { duration: '1s', target: 10 }],
      exec: 'rampRun', gracefulStop: '5s',
    },
  },
  thresholds: { checks: ['rate==1'] },
};

function visit(counter, scenario) {
  http.get(`${__ENV.BASE}/`);
  counter.add(1);
  check(exec.scenario.name, { 'the scenario is named': (n) => n === scenario });
}

export function sharedRun() { visit(shared, 'shared'); }
export function perVuRun() { visit(perVu, 'per_vu'); }
export function arrivalRun() {
  visit(arrival, 'arrival');
  check(__ENV.WHO, { "the scenario's env": (w) => w === 'arrival' });
}
export function rampRun() { visit(ramp, 'ramp'); }
