// http.batch with named requests: the responses come back under the same names.
import http from 'k6/http';
import { check } from 'k6';

export default function () {
  const r = http.batch({
    home: `${__ENV.BASE}/`,
    small: ['GET', `${__ENV.BASE}/bytes?n=7`],
    echo: { method: 'POST', url: `${__ENV.BASE}/echo`, body: 'named' },
  });
  check(r, {
    'three names': (x) => Object.keys(x).sort().join(',') === 'echo,home,small',
    'echo by name': (x) => x.echo.body === 'named',
    'small by name': (x) => x.small.body.length === 7,
  });
}
