// A response's fields as k6 gives them, each read after the next request was made (loadhost
// makes headers, cookies, body and status_text when first read): canonical header keys, the
// cookies a response set, the body, JSON.stringify of a whole response, and a field a script
// sets itself.
import http from 'k6/http';
import { check } from 'k6';

export default function () {
  const set = http.get(`${__ENV.BASE}/cookies/set?flavour=oat`, { redirects: 0 });
  const echoed = http.post(`${__ENV.BASE}/echo`, JSON.stringify({ n: 7 }), { headers: { 'Content-Type': 'application/json' } });
  const teapot = http.get(`${__ENV.BASE}/status?code=418`);
  check(set, {
    'set-cookie read later': (r) => r.cookies.flavour !== undefined && r.cookies.flavour[0].value === 'oat',
    'headers are canonical': (r) => typeof r.headers['Set-Cookie'] === 'string' && r.headers['set-cookie'] === undefined,
  });
  check(echoed, {
    'json read later': (r) => r.json('n') === 7,
    'content type header': (r) => r.headers['Content-Type'] === 'application/json',
    'stringified whole': (r) => JSON.parse(JSON.stringify(r)).body === '{"n":7}',
  });
  teapot.body = 'replaced';
  check(teapot, {
    'status text': (r) => r.status_text.startsWith('418'),
    'a field set by the script': (r) => r.body === 'replaced',
  });
}
