//! Threshold expressions: any text parses or is refused with a message naming it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loadhost_metrics::threshold::Threshold;

fuzz_target!(|text: &str| {
    match text.parse::<Threshold>() {
        Ok(t) => assert!(!t.metric.is_empty(), "{text:?} parsed with no metric"),
        Err(err) => assert!(err.to_string().starts_with("threshold '"), "{text:?}: {err}"),
    }
});
