// A spread of statuses by the run's iteration number (the same 12 in both tools), each checked
// for itself and for being a success.
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';

const codes = [200, 201, 202, 400, 401, 403, 404, 429, 500, 503];

export default function () {
  const code = codes[exec.scenario.iterationInTest % codes.length];
  const res = http.get(`${__ENV.BASE}/status?code=${code}`);
  check(res, {
    'the status asked for': (r) => r.status === code,
    'a success': (r) => r.status >= 200 && r.status < 300,
  });
}
