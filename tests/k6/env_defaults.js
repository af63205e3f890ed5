// Settings from __ENV with defaults, the way most scripts read their base URL and knobs.
import http from 'k6/http';
import { check } from 'k6';

const BASE = __ENV.BASE || 'http://127.0.0.1:9';
const PAGE_SIZE = parseInt(__ENV.PAGE_SIZE || '25', 10);
const MODE = __ENV.MODE ?? 'none';

export default function () {
  const res = http.get(`${BASE}/bytes?n=${PAGE_SIZE}`);
  check(res, {
    'default page size': (r) => r.body.length === 25,
    'mode given': () => MODE === 'conformance',
    'unset is undefined': () => __ENV.SURELY_UNSET === undefined,
  });
}
