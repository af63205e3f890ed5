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
    /// A metric's name (a check's is free text), tag keys and tag values with the run's secrets
    /// redacted; their lengths are the metrics' to bound. A key is text the plugin makes as much
    /// as a value is: a secret once went out verbatim as a tag key. A redacted key or metric name
    /// is no longer a well-formed one, so that sample is refused and counted as invalid. Free
    /// when the run has no secrets.
    fn tidy(&self, name: String, mut tags: types::Tags) -> (String, types::Tags) {
        let text = &self.text;
        for (key, value) in &mut tags {
            *key = text.redact_owned(std::mem::take(key));
            *value = text.redact_owned(std::mem::take(value));
        }
        (text.redact_owned(name), tags)
    }
}
