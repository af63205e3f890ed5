//! Plugin metrics: the host aggregates them per name and tag set and reports them in the summary.
//!
//! Names and tag keys should be short `snake_case` words; tags are `(key, value)` pairs. A call
//! the host could only drop (an empty name, a gauge or trend value that is NaN or infinite) is a
//! bug in the plugin, so it panics naming the call and the value:
//! `metrics::trend("t", NaN): value must be a finite number`, at the plugin's line that called.
//!
//! [`declare_metrics!`](crate::declare_metrics) states, in the component, the metrics a plugin
//! records: `loadhost inspect` lists them, and `loadhost run` checks thresholds on them before
//! any load without a `--metric` flag.

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
/// `if !check("status is 200", status == 200, &[("tier", tier)]) { ... }`. Inside a
/// [`group`](crate::group) the check also carries the group's path as the tag `group`. A
/// threshold judges one check, or one tagged case of it: `checks{check:status is 200,tier:gold}`.
#[track_caller]
pub fn check(name: &str, ok: bool, tags: &[(&str, &str)]) -> bool {
    check_call("check", name, &ok, tags);
    host::check(name, ok, &crate::steps::with_group(owned(tags)))
}

/// Declare the metrics the plugin records, each as `NAME[{TAG,…}]:KIND` (the `--metric NAME:KIND`
/// syntax, with the tag keys it records): `loadhost inspect` lists them, and a threshold on one
/// needs no `--metric` (its kind comes from here). KIND is `trend`, `counter`, `gauge` or `check`
/// (`rate`, as thresholds name checks, also works). Write it once, at the top level of the crate:
///
/// ```ignore
/// loadhost_sdk::declare_metrics!("journey_ms:trend", "orders{tier}:counter", "status is 200:check");
/// ```
///
/// The declarations go into a `loadhost:metrics` custom section of the core module, which
/// wit-component keeps inside the component, so loadhost reads them without running the plugin.
/// A malformed one fails the build (kind and name) or the load (the host's naming rules).
#[macro_export]
macro_rules! declare_metrics {
    ($($declaration:literal),+ $(,)?) => {
        const _: () = {
            const TEXT: &str = ::core::concat!($($declaration, "\n"),+);
            const _: () = $crate::metrics::__check_declarations(TEXT);
            #[used]
            #[cfg_attr(target_family = "wasm", unsafe(link_section = "loadhost:metrics"))]
            static DECLARED: [u8; TEXT.len()] = {
                let text = TEXT.as_bytes();
                let mut bytes = [0u8; TEXT.len()];
                let mut i = 0;
                while i < text.len() {
                    bytes[i] = text[i];
                    i += 1;
                }
                bytes
            };
        };
    };
}

/// Panics (at compile time, in [`declare_metrics!`](crate::declare_metrics)) unless every line of
/// `text` is `NAME[{TAG,…}]:KIND` with a known kind and a name; the host checks the rest.
#[doc(hidden)]
pub const fn __check_declarations(text: &str) {
    let text = text.as_bytes();
    let mut start = 0;
    while start < text.len() {
        let mut end = start;
        let mut colon = usize::MAX;
        while end < text.len() && text[end] != b'\n' {
            if text[end] == b':' {
                colon = end;
            }
            end += 1;
        }
        if colon == usize::MAX {
            panic!("declare_metrics!: a declaration is NAME[{{TAG,…}}]:KIND, such as \"orders{{tier}}:counter\"");
        }
        if colon == start {
            panic!("declare_metrics!: a declaration needs a name before its ':'");
        }
        let kind = text.split_at(colon + 1).1.split_at(end - colon - 1).0;
        if !is_any(kind, &[b"trend", b"counter", b"gauge", b"check", b"rate"]) {
            panic!("declare_metrics!: the kind after the last ':' is trend, counter, gauge or check");
        }
        start = end + 1;
    }
}

/// Whether `word` is one of `words` (a `const` string comparison).
const fn is_any(word: &[u8], words: &[&[u8]]) -> bool {
    let mut w = 0;
    while w < words.len() {
        let candidate = words[w];
        let mut same = candidate.len() == word.len();
        let mut i = 0;
        while same && i < word.len() {
            same = word[i] == candidate[i];
            i += 1;
        }
        if same {
            return true;
        }
        w += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let payload = std::panic::catch_unwind(f).expect_err("the call panics");
        payload.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    crate::declare_metrics!("journey_ms:trend", "orders{tier}:counter", "status is 200:check");

    #[test]
    fn declarations_are_checked_for_a_name_and_a_kind() {
        __check_declarations("journey_ms:trend\norders{tier}:counter\nstatus is 200:check\neven:rate\nq:gauge\n");
        for (bad, says) in [
            ("orders\n", "a declaration is NAME[{TAG,…}]:KIND"),
            (":trend\n", "needs a name"),
            ("orders:histogram\n", "the kind after the last ':'"),
            ("orders:trends\n", "the kind after the last ':'"),
        ] {
            let payload = std::panic::catch_unwind(|| __check_declarations(bad)).expect_err(bad);
            let message = payload.downcast_ref::<&str>().copied().unwrap_or_default();
            assert!(message.contains(says), "{bad:?}: {message}");
        }
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
