// JSON arrays: a selector's index and length, nested objects, numbers and booleans.
import http from 'k6/http';
import { check } from 'k6';

export default function () {
  const list = [{ id: 1, ok: true }, { id: 2, ok: false }, { id: 3, tags: ['a', 'b'] }];
  const res = http.post(`${__ENV.BASE}/echo`, JSON.stringify({ list }), { headers: { 'Content-Type': 'application/json' } });
  check(res, {
    'length': (r) => r.json('list.#') === 3,
    'index': (r) => r.json('list.1.id') === 2,
    'boolean': (r) => r.json('list.0.ok') === true,
    'nested array': (r) => r.json('list.2.tags.1') === 'b',
    'whole': (r) => r.json().list.length === 3,
  });
}
