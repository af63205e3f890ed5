//! Plugin metrics: the host aggregates them per name and tag set and reports them in the summary.
//!
//! Names and tag keys should be short `snake_case` words; tags are `(key, value)` pairs. A call
//! the host could only drop (an empty name, a gauge or trend value that is NaN or infinite) is a
//! bug in the plugin, so it panics naming the call and the value:
//! `metrics::trend("t", NaN): value must be a finite number`, at the plugin's line that called.

use crate::bindings::loadhost::plugin::metrics as host;

fn owned(tags: &[(&str, &str)]) -> Vec<(String, String)> {
    tags.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

/// Panics unless `name` and `tags` are usable; `call` and `value` say which call it was.
#[track_caller]
fn check_call(call: &str, name: &str, value: &dyn std::fmt::Debug, tags: &[(&str, &str)]) {
    if name.is_empty() {
        panic!("metrics::{call}({name:?}, {value:?}): name must not be empty");
    }
    if let Some((key, _)) = tags.iter().find(|(key, _)| key.is_empty()) {
        panic!("metrics::{call}({name:?}, {value:?}): tag keys must not be empty, got {key:?}");
    }
}

/// Panics unless `value` is finite (the host drops NaN and infinities).
#[track_caller]
fn check_finite(call: &str, name: &str, value: f64) {
    if !value.is_finite() {
        panic!("metrics::{call}({name:?}, {value:?}): value must be a finite number");
    }
}

/// Add `delta` to the counter `name`.
#[track_caller]
pub fn counter(name: &str, delta: u64, tags: &[(&str, &str)]) {
    check_call("counter", name, &delta, tags);
    host::counter(name, delta, &owned(tags));
}

/// Set the gauge `name` to `value` (the summary keeps the latest value); `value` must be finite.
#[track_caller]
pub fn gauge(name: &str, value: f64, tags: &[(&str, &str)]) {
    check_call("gauge", name, &value, tags);
    check_finite("gauge", name, value);
    host::gauge(name, value, &owned(tags));
}

/// Record one value of the trend `name` (the summary shows min, mean, percentiles and max);
/// `value` must be finite.
#[track_caller]
pub fn trend(name: &str, value: f64, tags: &[(&str, &str)]) {
    check_call("trend", name, &value, tags);
    check_finite("trend", name, value);
    host::trend(name, value, &owned(tags));
}

/// Record a pass or a fail of the check `name`, and return `ok` so it can be used inline:
/// `if !check("status is 200", status == 200, &[]) { ... }`.
#[track_caller]
pub fn check(name: &str, ok: bool, tags: &[(&str, &str)]) -> bool {
    check_call("check", name, &ok, tags);
    host::check(name, ok, &owned(tags))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let payload = std::panic::catch_unwind(f).expect_err("the call panics");
        payload.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    #[test]
    fn a_call_the_host_would_drop_panics_naming_it() {
        assert_eq!(message(|| trend("t", f64::NAN, &[])), "metrics::trend(\"t\", NaN): value must be a finite number");
        assert_eq!(
            message(|| gauge("g", f64::INFINITY, &[])),
            "metrics::gauge(\"g\", inf): value must be a finite number"
        );
        assert_eq!(message(|| counter("", 1, &[])), "metrics::counter(\"\", 1): name must not be empty");
        assert_eq!(
            message(|| {
                check("ok", true, &[("", "v")]);
            }),
            "metrics::check(\"ok\", true): tag keys must not be empty, got \"\""
        );
    }
}
