//! A latency histogram as an exponential histogram: Prometheus' native histograms and OTLP's
//! exponential histograms share one bucket layout, so the push outputs (issue 30: remote write,
//! OTLP) and the scrape endpoint convert the run's HDR histograms with this one function.
//!
//! The layout: at schema (OTLP: scale) `s`, bucket boundaries are powers of `base = 2^(2^-s)`;
//! Prometheus' bucket `i` holds `(base^(i-1), base^i]`, OTLP's bucket `i` holds `(base^i,
//! base^(i+1)]`, so an OTLP index is the Prometheus index minus one. [`SCHEMA`] 5 has
//! `base ≈ 1.0219`: a quantile read from the buckets is within 2.2% of the value (a bucket's
//! width), on top of the HDR histogram's 0.1%; a latency from 1 µs to a minute spans at most
//! 26 × 32 = 832 buckets, and a run fills only the ones its values fall in.
//!
//! Values are the HDR buckets' upper edges (the value the summary's percentiles report), in the
//! unit the output asks for (Prometheus' convention is seconds). The sum is the HDR mean × count:
//! HDR keeps no exact sum, and its mean is within its 0.1%.

use std::collections::BTreeMap;

use crate::histogram::LatencyHistogram;

/// The schema (OTLP scale) loadhost pushes: bucket width 2^(1/32) ≈ 2.2%.
pub const SCHEMA: i8 = 5;

/// A distribution in exponential buckets at [`SCHEMA`], Prometheus' indexing.
#[derive(Debug, Clone, PartialEq)]
pub struct ExponentialHistogram {
    /// The schema (OTLP: scale).
    pub schema: i8,
    /// Values of exactly zero.
    pub zero_count: u64,
    /// Every value.
    pub count: u64,
    /// Their sum, in the output's unit.
    pub sum: f64,
    /// Counts by bucket index (Prometheus': bucket `i` is `(base^(i-1), base^i]`); only buckets
    /// with values are present.
    pub positive: BTreeMap<i32, u64>,
}

/// A run of consecutive buckets, as Prometheus' protobuf spans them: `offset` buckets after the
/// previous span's end (the first: from index 0), `length` buckets long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The gap before it.
    pub offset: i32,
    /// Its buckets.
    pub length: u32,
}

impl ExponentialHistogram {
    /// `histogram` (microseconds) in exponential buckets, its values multiplied by `unit_per_us`
    /// (1e-6 for seconds, 1e-3 for milliseconds).
    pub fn of(histogram: &LatencyHistogram, unit_per_us: f64) -> Self {
        let mut out = ExponentialHistogram {
            schema: SCHEMA,
            zero_count: 0,
            count: histogram.count(),
            sum: histogram.hdr().mean() * histogram.count() as f64 * unit_per_us,
            positive: BTreeMap::new(),
        };
        for value in histogram.hdr().iter_recorded() {
            let (micros, n) = (value.value_iterated_to(), value.count_at_value());
            if micros == 0 {
                out.zero_count += n;
            } else {
                *out.positive.entry(index(micros as f64 * unit_per_us)).or_default() += n;
            }
        }
        out
    }

    /// Add `other`'s values (at the same schema) into this histogram.
    pub fn merge(&mut self, other: &ExponentialHistogram) {
        debug_assert_eq!(self.schema, other.schema, "histograms of one schema merge");
        self.zero_count += other.zero_count;
        self.count += other.count;
        self.sum += other.sum;
        for (&i, &n) in &other.positive {
            *self.positive.entry(i).or_default() += n;
        }
    }

    /// The bucket base: `2^(2^-schema)`.
    pub fn base(&self) -> f64 {
        2f64.powf(2f64.powi(-i32::from(self.schema)))
    }

    /// The upper edge of the bucket holding quantile `q` (0..=1): what a reader of the buckets
    /// can know of it, within one bucket's width.
    pub fn quantile(&self, q: f64) -> f64 {
        let rank = (q.clamp(0.0, 1.0) * self.count as f64).ceil().max(1.0) as u64;
        if rank <= self.zero_count {
            return 0.0;
        }
        let mut seen = self.zero_count;
        for (&i, &n) in &self.positive {
            seen += n;
            if seen >= rank {
                return self.base().powi(i);
            }
        }
        self.positive.keys().next_back().map_or(0.0, |&i| self.base().powi(i))
    }

    /// The filled buckets as Prometheus' protobuf has them: spans, and each bucket's count as
    /// the difference from the previous bucket's (the first from 0). Empty buckets between two
    /// filled ones closer than a few apart are written as zeros rather than a new span.
    pub fn spans_and_deltas(&self) -> (Vec<Span>, Vec<i64>) {
        let (mut spans, mut deltas) = (Vec::new(), Vec::new());
        let (mut next, mut previous) = (0i32, 0i64);
        for (&i, &n) in &self.positive {
            let gap = i - next;
            match spans.last_mut() {
                // Two zeros cost less than a new span (two varints of their own).
                Some(Span { length, .. }) if (0..=2).contains(&gap) => {
                    for _ in 0..gap {
                        deltas.push(-previous);
                        previous = 0;
                    }
                    *length += gap.unsigned_abs() + 1;
                }
                _ => spans.push(Span { offset: gap, length: 1 }),
            }
            let n = i64::try_from(n).unwrap_or(i64::MAX);
            deltas.push(n - previous);
            previous = n;
            next = i + 1;
        }
        (spans, deltas)
    }

    /// The filled range as OTLP has it: the index of its first bucket (OTLP's indexing) and the
    /// count of every bucket from there to the last filled one.
    pub fn dense_otlp(&self) -> (i32, Vec<u64>) {
        let (Some(&first), Some(&last)) = (self.positive.keys().next(), self.positive.keys().next_back()) else {
            return (0, Vec::new());
        };
        let mut counts = vec![0u64; usize::try_from(last - first).unwrap_or(0) + 1];
        for (&i, &n) in &self.positive {
            if let Some(slot) = usize::try_from(i - first).ok().and_then(|k| counts.get_mut(k)) {
                *slot = n;
            }
        }
        (first - 1, counts)
    }
}

/// The Prometheus bucket index of `value` (> 0) at [`SCHEMA`]: the smallest `i` with
/// `value ≤ base^i`, i.e. `⌈log2(value) × 2^schema⌉`. Exact powers of two land on their own upper
/// edge, as the layout's closed upper bound asks.
fn index(value: f64) -> i32 {
    let scaled = value.log2() * f64::from(1u32 << SCHEMA);
    // A value a rounding error above a boundary belongs below it.
    let nearest = scaled.round();
    let i = if (scaled - nearest).abs() < 1e-9 { nearest } else { scaled.ceil() };
    i as i32
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn histogram(micros: &[u64]) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        micros.iter().for_each(|&m| h.record_micros(m));
        h
    }

    #[test]
    fn values_land_in_the_bucket_whose_upper_edge_holds_them() {
        // Below 2,048 µs HDR keeps every microsecond exactly. At schema 5, 2^9 µs is the upper
        // edge of bucket 9 × 32, 2^10 of bucket 320, and 1,025 µs is just past it.
        let h = ExponentialHistogram::of(&histogram(&[512, 1024, 1025, 0]), 1.0);
        assert_eq!((h.zero_count, h.count), (1, 4));
        assert!((h.base() - 2f64.powf(1.0 / 32.0)).abs() < 1e-12);
        assert_eq!(h.positive, BTreeMap::from([(288, 1), (320, 1), (321, 1)]));
        assert!((h.sum - 2561.0).abs() < 1e-6, "the mean × count: {}", h.sum);
        // In milliseconds the same values move by log2(1000) × 32 buckets, rounded up.
        let ms = ExponentialHistogram::of(&histogram(&[1024]), 1e-3);
        assert_eq!(ms.positive.keys().copied().collect::<Vec<_>>(), [index(1.024)]);
        assert_eq!(index(1.024), 2, "1.024 ms: log2 × 32 = 1.095, so bucket 2");
        assert!((ms.quantile(0.5) - ms.base().powi(2)).abs() < 1e-12);
    }

    #[test]
    fn spans_and_deltas_are_prometheus_encoding_and_dense_is_otlps() {
        let mut h = ExponentialHistogram::of(&histogram(&[]), 1e-6);
        h.positive = BTreeMap::from([(-3, 2), (-2, 5), (0, 1), (10, 4)]);
        let (spans, deltas) = h.spans_and_deltas();
        // -3, -2, then 0 after one empty bucket (a zero, not a span), then 10 after nine.
        assert_eq!(spans, [Span { offset: -3, length: 4 }, Span { offset: 9, length: 1 }]);
        assert_eq!(deltas, [2, 3, -5, 1, 3]);
        let (offset, counts) = h.dense_otlp();
        assert_eq!(offset, -4, "OTLP's index is Prometheus' minus one");
        assert_eq!(counts.len(), 14);
        assert_eq!((counts[0], counts[1], counts[2], counts[3], counts[13]), (2, 5, 0, 1, 4));
    }

    proptest! {
        /// Any quantile read from the buckets is within one bucket width (2.2%) plus HDR's 0.1%
        /// of the HDR histogram's own, and no value is lost.
        #[test]
        fn quantiles_stay_within_a_bucket_of_the_hdr_histograms(
            micros in proptest::collection::vec(1u64..60_000_000, 1..400),
            q in 0.0f64..=1.0,
        ) {
            let hdr = histogram(&micros);
            let exp = ExponentialHistogram::of(&hdr, 1e-3);
            prop_assert_eq!(exp.positive.values().sum::<u64>() + exp.zero_count, exp.count);
            let truth = hdr.hdr().value_at_quantile(q) as f64 * 1e-3;
            let read = exp.quantile(q);
            let bound = exp.base() - 1.0 + 0.001;
            prop_assert!(read >= truth * (1.0 - 1e-9), "the upper edge is not below the value: {} < {}", read, truth);
            prop_assert!(read <= truth * (1.0 + bound) + 1e-12, "{} vs {} (q {})", read, truth, q);
        }
    }
}
