// res.timings: the phases of each response, as k6 reports them (a journey's second request goes
// over the connection the first opened).
import http from 'k6/http';
import { check } from 'k6';
import { Trend } from 'k6/metrics';

const ttfb = new Trend('ttfb');

export default function () {
  const first = http.get(`${__ENV.BASE}/`);
  const second = http.get(`${__ENV.BASE}/`);
  const t = second.timings;
  ttfb.add(t.waiting);
  check(first, {
    'waiting is positive': (r) => r.timings.waiting > 0,
    'no phase is negative': (r) => ['blocked', 'connecting', 'tls_handshaking', 'sending', 'waiting', 'receiving']
      .every((phase) => r.timings[phase] >= 0),
    'duration is sending + waiting + receiving': (r) =>
      Math.abs(r.timings.duration - (r.timings.sending + r.timings.waiting + r.timings.receiving)) < 0.001,
    'plain http has no TLS handshake': (r) => r.timings.tls_handshaking === 0,
  });
  check(second, {
    'a kept-alive connection is not connected again': (r) => r.timings.connecting === 0,
    'the duration is under a second': (r) => r.timings.duration < 1000,
  });
}
