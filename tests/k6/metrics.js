// k6/metrics: a Counter, a Trend, a Rate and a Gauge, with tags.
import http from 'k6/http';
import { Counter, Gauge, Rate, Trend } from 'k6/metrics';

const orders = new Counter('orders');
const size = new Trend('order_size');
const even = new Rate('even_iterations');
const last = new Gauge('last_iteration');

export default function () {
  http.get(`${__ENV.BASE}/bytes?n=64`);
  orders.add(2, { shop: 'north' });
  size.add(10 + (__ITER % 5));
  even.add(__ITER % 2 === 0);
  last.add(__ITER);
}
