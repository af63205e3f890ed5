//! Durations, rates, stages and sizes: any text parses or is refused, and what parses prints as
//! text that parses to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loadhost_config::units::{Dur, Rate, Size, Stage};

fuzz_target!(|text: &str| {
    if let Ok(dur) = text.parse::<Dur>() {
        let back: Dur = dur.to_string().parse().expect("a printed duration parses");
        assert!(back.0.abs_diff(dur.0).as_micros() <= 1, "{text:?}: {dur} came back as {back:?}");
    }
    if let Ok(rate) = text.parse::<Rate>() {
        assert!(rate.0.is_finite() && rate.0 >= 0.0, "{text:?} gave the rate {}", rate.0);
    }
    let _ = text.parse::<Stage>();
    if let Ok(size) = text.parse::<Size>() {
        assert_eq!(size.to_string().parse::<Size>(), Ok(size), "{text:?}");
    }
});
