// options computed when the script runs, beyond what the host reads from the text: a profile
// looked up by name, a spread, a ternary and a function's result (the test passes VUS=2 and
// ITERS=8). Both tools run 2 VUs sharing 8 iterations, and the thresholds hold.
import http from 'k6/http';
import { check } from 'k6';

const profiles = {
  smoke: { vus: 1, iterations: 3 },
  ci: { vus: Number(__ENV.VUS), iterations: Number(__ENV.ITERS) },
};

function thresholdsFor(strict) {
  const limit = 5 * 1000;
  return { checks: [strict ? 'rate==1' : 'rate>0.9'], http_req_duration: [`p(95)<${limit}`] };
}

export const options = {
  ...profiles[__ENV.ITERS ? 'ci' : 'smoke'],
  thresholds: thresholdsFor(__ENV.STRICT !== 'no'),
};

export default function () {
  check(http.get(`${__ENV.BASE}/`), { 'ok': (r) => r.status === 200 });
}
