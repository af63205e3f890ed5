// k6's jslib modules by their URLs (loadhost ships its own copies; nothing is fetched): the
// helpers most scripts use, checked for what they promise. k6 itself fetches these modules from
// the network, which tests may not reach, so this script is checked against their documentation.
import http from 'k6/http';
import { check } from 'k6';
import { findBetween, randomIntBetween, randomItem, randomString, uuidv4 } from 'https://jslib.k6.io/k6-utils/1.4.0/index.js';
import { URL, URLSearchParams } from 'https://jslib.k6.io/url/1.0.0/index.js';

const COLOURS = ['red', 'green', 'blue'];

export default function () {
  const n = randomIntBetween(3, 5);
  const url = new URL(`${__ENV.BASE}/echo`);
  url.searchParams.append('n', String(n));
  url.searchParams.append('colour', randomItem(COLOURS));
  const res = http.get(url.toString());
  const query = new URLSearchParams(url.search);
  check(res, {
    'the target answered': (r) => r.status === 200,
    'randomIntBetween stays within its bounds': () => n >= 3 && n <= 5 && Number.isInteger(n),
    'randomItem picks one of the items': () => COLOURS.includes(query.get('colour')),
  });
  const id = uuidv4();
  check(id, {
    'uuidv4 is a version 4 UUID': (u) => /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(u),
  });
  check(randomString(12), { 'randomString has the length asked': (s) => /^[a-z0-9]{12}$/.test(s) });
  check(randomString(6, 'xy'), { 'randomString draws from the charset': (s) => /^[xy]{6}$/.test(s) });
  const page = '<li>a</li><li>b</li><li>c</li>';
  check(page, {
    'findBetween finds the first span': (p) => findBetween(p, '<li>', '</li>') === 'a',
    'findBetween with repeat finds every span': (p) => findBetween(p, '<li>', '</li>', true).join() === 'a,b,c',
    'findBetween finds nothing where there is nothing': (p) => findBetween(p, '<p>', '</p>') === null,
  });
}
