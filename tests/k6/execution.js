// k6/execution: the VU's ids and iterations, the scenario's name.
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';

export default function () {
  http.get(`${__ENV.BASE}/`);
  check(exec, {
    'scenario is default': (e) => e.scenario.name === 'default',
    'vu id matches __VU': (e) => e.vu.idInTest === __VU && e.vu.idInTest >= 1,
    'iteration in instance matches __ITER': (e) => e.vu.iterationInInstance === __ITER,
    'iteration in test is the run\'s': (e) => e.scenario.iterationInTest >= 0 && e.scenario.iterationInTest < 12,
  });
}
