//! The `loadhost:plugin/metrics` import: each call goes straight into the run's recorder.

use crate::bindings::loadhost::plugin::{metrics, types};
use crate::ctx::DoerCtx;

impl types::Host for DoerCtx {}

impl metrics::Host for DoerCtx {
    fn counter(&mut self, name: String, delta: u64, tags: types::Tags) {
        let (name, tags) = self.tidy(name, tags);
        self.metrics.counter(name, delta, tags);
    }

    fn gauge(&mut self, name: String, value: f64, tags: types::Tags) {
        let (name, tags) = self.tidy(name, tags);
        self.metrics.gauge(name, value, tags);
    }

    fn trend(&mut self, name: String, value: f64, tags: types::Tags) {
        let (name, tags) = self.tidy(name, tags);
        self.metrics.trend(name, value, tags);
    }

    fn check(&mut self, name: String, ok: bool, tags: types::Tags) -> bool {
        let (name, tags) = self.tidy(name, tags);
        self.metrics.check(name, ok, tags)
    }
}

impl DoerCtx {
    /// A metric's name (a check's is free text) and tag values with the run's secrets redacted;
    /// their lengths are the metrics' to bound. Free when the run has no secrets.
    fn tidy(&self, name: String, mut tags: types::Tags) -> (String, types::Tags) {
        let text = &self.text;
        for (_, value) in &mut tags {
            *value = text.redact_owned(std::mem::take(value));
        }
        (text.redact_owned(name), tags)
    }
}
