//! The `loadhost:plugin/metrics` import: each call goes straight into the run's recorder.

use crate::bindings::loadhost::plugin::{metrics, types};
use crate::ctx::DoerCtx;

impl types::Host for DoerCtx {}

impl metrics::Host for DoerCtx {
    fn counter(&mut self, name: String, delta: u64, tags: types::Tags) {
        self.metrics.counter(name, delta, tags);
    }

    fn gauge(&mut self, name: String, value: f64, tags: types::Tags) {
        self.metrics.gauge(name, value, tags);
    }

    fn trend(&mut self, name: String, value: f64, tags: types::Tags) {
        self.metrics.trend(name, value, tags);
    }

    fn check(&mut self, name: String, ok: bool, tags: types::Tags) -> bool {
        self.metrics.check(name, ok, tags)
    }
}
