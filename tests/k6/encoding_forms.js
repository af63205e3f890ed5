// k6/encoding's four alphabets, and a form body with characters Go escapes.
import http from 'k6/http';
import { check } from 'k6';
import encoding from 'k6/encoding';

export default function () {
  const text = 'k6?>loadhost~ &!';
  const res = http.post(`${__ENV.BASE}/echo`, { q: text, 'a b': "it's" });
  check(res, {
    'form escapes as Go': (r) => r.body === 'a+b=it%27s&q=k6%3F%3Eloadhost~+%26%21',
  });
  check(text, {
    'std': (t) => encoding.b64encode(t) === 'azY/PmxvYWRob3N0fiAmIQ==',
    'rawstd': (t) => encoding.b64encode(t, 'rawstd') === 'azY/PmxvYWRob3N0fiAmIQ',
    'url': (t) => encoding.b64encode(t, 'url') === 'azY_PmxvYWRob3N0fiAmIQ==',
    'rawurl': (t) => encoding.b64encode(t, 'rawurl') === 'azY_PmxvYWRob3N0fiAmIQ',
    'round trip': (t) => encoding.b64decode(encoding.b64encode(t, 'rawurl'), 'rawurl', 's') === t,
  });
}
