//! Threshold expressions: any text parses or is refused with a message, and the error keeps
//! the expression for the caller to name (the message itself leaves it out, so a caller that names
//! the flag and the expression does not say them twice).
#![no_main]

use libfuzzer_sys::fuzz_target;
use loadhost_metrics::threshold::{Threshold, ThresholdError};

fuzz_target!(|text: &str| {
    match text.parse::<Threshold>() {
        Ok(t) => assert!(!t.metric.is_empty(), "{text:?} parsed with no metric"),
        Err(err) => {
            assert!(!err.to_string().is_empty(), "{text:?}: an empty message");
            assert!(matches!(&err, ThresholdError::Syntax { expr, .. } if expr == text.trim()), "{text:?}: {err:?}");
        }
    }
});
