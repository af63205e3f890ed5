//! Classic histogram buckets (`NAME_bucket{le}`) for the receivers that take no native
//! histograms: the scrape endpoint's OpenMetrics text, remote write's classic option.
//!
//! The boundaries are fixed, the same in every snapshot of every run: a bucket series that
//! appeared mid-run would lose its first increase to `rate()`, and segments' buckets must share
//! their `le` values to add up. They are the powers of 2^(1/4) (≈ 1.19, four per doubling) from
//! 2^-17 s (7.6 µs, below which a latency is instant) to 2^7 s (128 s), then `+Inf`: 97 finite
//! boundaries, a quantile read from them by `histogram_quantile` within a bucket's width (19%).
//! Each is a boundary of the exponential layout too (schema 2's, and every schema-5 eighth), so the
//! cumulative counts are exact sums of [`ExponentialHistogram`] buckets, not interpolations.
//!
//! The boundaries are in seconds: a plugin trend in another unit whose values pass 128 counts
//! them in `+Inf` only; its quantiles are in the native histogram (the protobuf exposition).

use loadhost_metrics::exponential::ExponentialHistogram;

/// The quarter-doublings per doubling: boundaries are `2^(k / STEPS)`.
const STEPS: i64 = 4;
/// The smallest boundary's `k`: 2^-17 s.
const FIRST: i64 = -17 * STEPS;
/// The largest finite boundary's `k`: 2^7 s.
const LAST: i64 = 7 * STEPS;

/// Each boundary (`le`) and the count of values at or below it, ascending, ending with
/// `(+Inf, count)`.
pub fn buckets(histogram: &ExponentialHistogram) -> Vec<(f64, u64)> {
    let mut out = Vec::with_capacity(usize::try_from(LAST - FIRST + 2).unwrap_or(0));
    let mut filled = histogram.positive.iter().peekable();
    let mut cumulative = histogram.zero_count;
    for k in FIRST..=LAST {
        // An exponential bucket is at or below the boundary when its upper edge is.
        while let Some((_, n)) = filled.next_if(|(i, _)| at_or_below(**i, histogram.schema, k)) {
            cumulative += n;
        }
        out.push((2f64.powf(k as f64 / STEPS as f64), cumulative));
    }
    out.push((f64::INFINITY, histogram.count));
    out
}

/// Whether the exponential bucket `index` at `schema` (upper edge `2^(index / 2^schema)`) ends
/// at or below `2^(k / STEPS)`: compared in integers, so a shared boundary is never a rounding
/// error apart.
fn at_or_below(index: i32, schema: i8, k: i64) -> bool {
    let index = i64::from(index) * STEPS;
    if schema >= 0 { index <= k << schema } else { index << -i32::from(schema) <= k }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use loadhost_metrics::exponential::SCHEMA;

    use super::*;

    fn histogram(zero_count: u64, positive: &[(i32, u64)]) -> ExponentialHistogram {
        let positive: BTreeMap<i32, u64> = positive.iter().copied().collect();
        let count = zero_count + positive.values().sum::<u64>();
        ExponentialHistogram { schema: SCHEMA, zero_count, count, sum: 0.0, positive }
    }

    #[test]
    fn boundaries_are_fixed_quarter_doublings_ending_at_infinity() {
        let empty = buckets(&histogram(0, &[]));
        assert_eq!(empty.len(), 98);
        assert_eq!(empty[0], (2f64.powi(-17), 0));
        assert!((empty[1].0 / empty[0].0 - 2f64.powf(0.25)).abs() < 1e-12);
        assert_eq!(empty[96], (128.0, 0));
        assert_eq!(empty[97], (f64::INFINITY, 0));
        let full = buckets(&histogram(3, &[(-500, 1), (0, 2), (300, 4)]));
        let les: Vec<f64> = full.iter().map(|b| b.0).collect();
        assert_eq!(les, empty.iter().map(|b| b.0).collect::<Vec<_>>(), "the same boundaries whatever the values");
    }

    #[test]
    fn counts_are_cumulative_and_a_shared_boundary_holds_its_own_bucket() {
        // Schema 5: bucket 0 is (2^(-1/32), 1], bucket 1 is (1, 2^(1/32)]; 1 s is boundary k = 0,
        // 2^(1/4) s is k = 1 (bucket 8). Bucket -600 is below 2^-17 s, bucket 300 above 128 s.
        let h = histogram(2, &[(-600, 1), (0, 5), (1, 7), (8, 11), (300, 13)]);
        let b = buckets(&h);
        let at = |le: f64| b.iter().find(|(l, _)| (*l - le).abs() < 1e-12).map(|(_, n)| *n);
        assert_eq!(b[0].1, 3, "zeros and values below the first boundary are in it");
        assert_eq!(at(2f64.powf(-0.25)), Some(3));
        assert_eq!(at(1.0), Some(8), "bucket 0's upper edge is 1 s exactly");
        assert_eq!(at(2f64.powf(0.25)), Some(26));
        assert_eq!(at(128.0), Some(26), "bucket 300 is past the last boundary");
        assert_eq!(b.last(), Some(&(f64::INFINITY, 39)), "+Inf is the count");
        assert!(b.windows(2).all(|w| w[0].1 <= w[1].1), "cumulative");
    }

    #[test]
    fn a_coarser_schema_compares_on_the_same_boundaries() {
        assert!(at_or_below(1, 2, 1), "schema 2's bucket 1 ends at 2^(1/4)");
        assert!(!at_or_below(2, 2, 1));
        assert!(at_or_below(-1, -1, -8), "schema -1's bucket -1 ends at 2^-2");
        assert!(!at_or_below(0, -1, -1));
    }
}
