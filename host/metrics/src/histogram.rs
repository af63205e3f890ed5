//! Latency histograms: microseconds, 3 significant digits, mergeable (HDR).

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::count::Tally;

/// Significant decimal digits kept by every histogram: values are exact to 0.1%.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// A microsecond-resolution HDR histogram of durations.
///
/// It grows its range on demand (auto-resize) rather than reserving an hour's worth of buckets up
/// front, so an idle interval costs a few kilobytes.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    pub(crate) inner: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        let mut inner = Histogram::new(SIGNIFICANT_DIGITS).expect("3 significant digits is valid");
        inner.auto(true);
        Self { inner }
    }

    /// Record one duration (saturating at `u64::MAX` microseconds).
    pub fn record(&mut self, d: Duration) {
        self.record_micros(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    }

    /// Record a raw value in microseconds.
    pub fn record_micros(&mut self, micros: u64) {
        // `record` grows the range (auto-resize); `saturating_record` would clamp instead.
        if self.inner.record(micros).is_err() {
            self.inner.saturating_record(micros);
        }
    }

    /// Add every value of `other` into this histogram.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        self.add_to(other, &mut Tally::default(), "a histogram's count");
    }

    /// [`LatencyHistogram::merge`], its count (`what`) at most [`crate::count::MAX_COUNT`]: past
    /// it, nothing is added.
    pub(crate) fn add_to(&mut self, other: &LatencyHistogram, t: &mut Tally, what: impl std::fmt::Display) {
        let mut count = self.count();
        t.add(&mut count, other.count(), what);
        if count == self.count().saturating_add(other.count()) {
            // Both auto-resize, so adding can only fail on allocation, which aborts anyway.
            let _ = self.inner.add(&other.inner);
        }
    }

    /// This histogram's values less `part`'s, which must be among them (what is not is ignored):
    /// the share of a whole that no part accounts for.
    pub fn without(&self, part: &LatencyHistogram) -> LatencyHistogram {
        let mut rest = self.clone();
        // Fails only when a value of `part` is not in `self` (counts then stay as they were).
        let _ = rest.inner.subtract(&part.inner);
        rest
    }

    /// Forget every value, keeping the allocated buckets.
    pub fn reset(&mut self) {
        self.inner.reset();
    }

    /// How many values were recorded.
    pub fn count(&self) -> u64 {
        self.inner.len()
    }

    /// The value at `quantile` (0.0..=1.0), in microseconds; 0 when empty.
    pub fn quantile_micros(&self, quantile: f64) -> u64 {
        if self.inner.is_empty() { 0 } else { self.inner.value_at_quantile(quantile) }
    }

    /// The min/mean/percentiles/max summary, in milliseconds.
    pub fn percentiles(&self) -> Percentiles {
        if self.inner.is_empty() {
            return Percentiles::default();
        }
        let ms = |micros: u64| micros as f64 / 1000.0;
        Percentiles {
            min: ms(self.inner.min()),
            mean: self.inner.mean() / 1000.0,
            p50: ms(self.inner.value_at_quantile(0.50)),
            p90: ms(self.inner.value_at_quantile(0.90)),
            p95: ms(self.inner.value_at_quantile(0.95)),
            p99: ms(self.inner.value_at_quantile(0.99)),
            p999: ms(self.inner.value_at_quantile(0.999)),
            max: ms(self.inner.max()),
        }
    }

    /// The underlying HDR histogram, for callers that need more than the summary.
    pub fn hdr(&self) -> &Histogram<u64> {
        &self.inner
    }
}

/// The summary of a distribution: the keys of `latency_ms`, `service_ms` and `wait_ms`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Smallest value.
    pub min: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest value.
    pub max: f64,
}

impl Percentiles {
    /// Every figure multiplied by `factor` (another unit).
    pub fn scaled(&self, factor: f64) -> Percentiles {
        Percentiles {
            min: self.min * factor,
            mean: self.mean * factor,
            p50: self.p50 * factor,
            p90: self.p90 * factor,
            p95: self.p95 * factor,
            p99: self.p99 * factor,
            p999: self.p999 * factor,
            max: self.max * factor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_in_milliseconds_within_three_digits() {
        let mut h = LatencyHistogram::new();
        for micros in 1..=10_000u64 {
            h.record_micros(micros);
        }
        let p = h.percentiles();
        assert!((p.p50 - 5.0).abs() < 0.01, "p50 {}", p.p50);
        assert!((p.p99 - 9.9).abs() < 0.01, "p99 {}", p.p99);
        assert!((p.max - 10.0).abs() < 0.01, "max {}", p.max);
        assert!((p.min - 0.001).abs() < 1e-9, "min {}", p.min);
        assert!((p.mean - 5.0005).abs() < 0.01, "mean {}", p.mean);
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let (mut a, mut b, mut all) = (LatencyHistogram::new(), LatencyHistogram::new(), LatencyHistogram::new());
        for v in 0..5_000u64 {
            let micros = v * v % 97_003;
            if v % 3 == 0 {
                a.record_micros(micros)
            } else {
                b.record_micros(micros)
            }
            all.record_micros(micros);
        }
        a.merge(&b);
        assert_eq!(a.count(), all.count());
        assert_eq!(a.percentiles(), all.percentiles());
    }

    #[test]
    fn empty_histogram_summarises_to_zeroes() {
        assert_eq!(LatencyHistogram::new().percentiles(), Percentiles::default());
    }
}
