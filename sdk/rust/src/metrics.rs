//! Plugin metrics: the host aggregates them per name and tag set and reports them in the summary.
//!
//! Names and tag keys should be short `snake_case` words; tags are `(key, value)` pairs.

use crate::bindings::loadhost::plugin::metrics as host;

fn owned(tags: &[(&str, &str)]) -> Vec<(String, String)> {
    tags.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

/// Add `delta` to the counter `name`.
pub fn counter(name: &str, delta: u64, tags: &[(&str, &str)]) {
    host::counter(name, delta, &owned(tags));
}

/// Set the gauge `name` to `value` (the summary keeps the latest value).
pub fn gauge(name: &str, value: f64, tags: &[(&str, &str)]) {
    host::gauge(name, value, &owned(tags));
}

/// Record one value of the trend `name` (the summary shows min, mean, percentiles and max).
pub fn trend(name: &str, value: f64, tags: &[(&str, &str)]) {
    host::trend(name, value, &owned(tags));
}

/// Record a pass or a fail of the check `name`, and return `ok` so it can be used inline:
/// `if !check("status is 200", status == 200, &[]) { ... }`.
pub fn check(name: &str, ok: bool, tags: &[(&str, &str)]) -> bool {
    host::check(name, ok, &owned(tags))
}
