// handleSummary with k6-summary's textSummary and jUnit and k6-reporter's htmlReport (loadhost
// ships its own copies; k6 would fetch them from the network, which tests may not reach), and
// files a script must not write:
// one outside the working directory and one by an absolute path.
import http from 'k6/http';
import { check } from 'k6';
import { jUnit, textSummary } from 'https://jslib.k6.io/k6-summary/0.0.2/index.js';
import { htmlReport } from 'https://raw.githubusercontent.com/benc-uk/k6-reporter/2.4.0/dist/bundle.js';

export const options = { vus: 1, iterations: 3, thresholds: { http_req_duration: ['p(95)<60000'] } };

export default function () {
  check(http.get(`${__ENV.BASE}/`), { 'status is 200': (r) => r.status === 200 });
}

export function handleSummary(data) {
  return {
    stdout: textSummary(data, { indent: ' ', enableColors: false }),
    'junit.xml': jUnit(data),
    'report.html': htmlReport(data, { title: 'shop <journey>' }),
    'data.json': JSON.stringify(data),
    '../escaped.json': '{}',
    '/tmp/loadhost-absolute-summary.json': '{}',
  };
}
