// k6's options that shape every request: discardResponseBodies (a null body unless a request asks
// for one), userAgent (unless a request sets its own), maxRedirects and noConnectionReuse (each
// request on a connection of its own: the test compares the connections the target saw). Past
// maxRedirects k6 hands back the last redirect and loadhost fails the request
// (docs/migrating.md), so no request here goes past it.
import http from 'k6/http';
import { check } from 'k6';

export const options = {
  discardResponseBodies: true,
  userAgent: 'conformance/1.0',
  maxRedirects: 1,
  noConnectionReuse: true,
};

export default function () {
  check(http.get(`${__ENV.BASE}/`), { 'body discarded': (r) => r.status === 200 && r.body === null });
  const seen = http.get(`${__ENV.BASE}/headers`, { responseType: 'text' });
  check(seen, { 'user agent sent': (r) => r.json()['user-agent'] === 'conformance/1.0' });
  const own = http.get(`${__ENV.BASE}/headers`, { responseType: 'text', headers: { 'User-Agent': 'mine' } });
  check(own, { 'own user agent wins': (r) => r.json()['user-agent'] === 'mine' });
  check(http.get(`${__ENV.BASE}/redirect?n=1`), { 'one redirect followed': (r) => r.status === 200 });
}
