// A JSON body posted and read back with res.json(), an id from __ITER, a selector.
import http from 'k6/http';
import { check } from 'k6';

export default function () {
  const order = { id: __ITER, item: { name: 'tea', sizes: [1, 2, 3] } };
  const res = http.post(`${__ENV.BASE}/echo`, JSON.stringify(order), {
    headers: { 'Content-Type': 'application/json' },
    tags: { name: 'echo' },
  });
  check(res, {
    'echoed the id': (r) => r.json().id === __ITER,
    'selector reads a nested field': (r) => r.json('item.name') === 'tea',
    'selector counts an array': (r) => r.json('item.sizes.#') === 3,
    'content type header': (r) => String(r.headers['Content-Type']).startsWith('application/json'),
  });
}
