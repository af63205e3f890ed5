// Checks carrying tags: the counts per check name are the same whatever the tags.
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';

export default function () {
  const tier = ['gold', 'silver', 'bronze'][exec.scenario.iterationInTest % 3];
  const res = http.get(`${__ENV.BASE}/?tier=${tier}`);
  check(res, { 'tiered ok': (r) => r.status === 200 }, { tier });
  check(res, { 'gold only': () => tier === 'gold' }, { tier });
}
