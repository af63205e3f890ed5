//! Classic (`le`) histogram buckets, for the receivers that take no native histograms: remote
//! write with `HistogramStyle::Classic` and the scrape endpoint's text format both use this one
//! definition, so a series has the same buckets however it reached Prometheus.
//!
//! The boundaries are fixed, the same for every series and every snapshot (so `rate()` and
//! `histogram_quantile` can add buckets across time, runs and segments): the powers of `2^(1/4)`
//! from `2^-14` (61 µs for a duration in seconds) to `2^6` (64 s), 81 of them, then `+Inf`. Each
//! is a boundary of the exponential buckets (at schema 5 every power of `2^(1/32)` is one), so a
//! classic bucket's count is exactly the values in the exponential buckets wholly below its `le`:
//! the conversion loses nothing the classic layout can say.
//!
//! What a reader can get back: `histogram_quantile` interpolates linearly inside the bucket
//! holding the quantile, `(l, l × 2^(1/4)]`, so its answer is within `2^(1/4) - 1` ≈ 18.9% of the
//! value (on top of the HDR histogram's 0.1%), against 2.2% from a native histogram. Below 61 µs
//! it interpolates from 0 (an answer anywhere in `[0, 61 µs]`), and past 64 s it can only say
//! 64 s. A plugin's trend (`Unit::None`) gets the same boundaries in its own unit.

use std::ops::RangeInclusive;

use loadhost_metrics::exponential::ExponentialHistogram;

/// The boundaries' exponents in quarters: the boundary `k` is `2^(k/4)`.
pub const QUARTERS: RangeInclusive<i32> = -56..=24;

/// The buckets of `histogram` on the fixed boundaries, each as (`le`, the number of values at or
/// below it), ending with `(+Inf, count)`.
pub fn buckets(histogram: &ExponentialHistogram) -> Vec<(f64, u64)> {
    let mut filled = histogram.positive.iter().peekable();
    // Values of exactly zero are at or below every boundary.
    let mut at_or_below = histogram.zero_count;
    let mut out = Vec::with_capacity(QUARTERS.count() + 1);
    for k in QUARTERS {
        while let Some((_, &n)) = filled.next_if(|(i, _)| wholly_below(**i, histogram.schema, k)) {
            at_or_below += n;
        }
        out.push((boundary(k), at_or_below));
    }
    out.push((f64::INFINITY, histogram.count));
    out
}

/// `2^(k/4)`, exactly as the same `f64` everywhere: a power of two (exact) times one of four
/// constants, rather than `powf`, whose last bit may differ between platforms' maths libraries
/// and would then change the `le` label.
pub fn boundary(k: i32) -> f64 {
    const QUARTER_POWERS: [f64; 4] = [1.0, 1.189_207_115_002_721, std::f64::consts::SQRT_2, 1.681_792_830_507_429];
    let quarter = QUARTER_POWERS.get(k.rem_euclid(4) as usize).copied().unwrap_or(1.0);
    quarter * 2f64.powi(k.div_euclid(4))
}

/// An `le` label's value as Prometheus spells it: the text formats' `le` values are normalised on
/// scrape to Go's shortest `%g` with `.0` on a whole number (`6.103515625e-05`, `0.5`, `64.0`,
/// `+Inf`), so a pushed bucket written the same way is the same series as a scraped one.
pub fn le(bound: f64) -> String {
    if bound.is_infinite() {
        return if bound > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    if bound.is_nan() {
        return "NaN".to_owned();
    }
    // Rust's `{:e}` has the shortest digits that read back as `bound`, as Go's `%g` does.
    let scientific = format!("{bound:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if go_exponent_form(exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs());
    }
    let plain = format!("{bound}");
    if plain.contains('.') { plain } else { plain + ".0" }
}

/// Whether Go's `strconv.FormatFloat(f, 'g', -1, 64)` writes a number of this decimal exponent
/// with an exponent: below -4, or from 6 on (the precision Go's shortest `%g` decides with).
fn go_exponent_form(exponent: i32) -> bool {
    !(-4..6).contains(&exponent)
}

/// Whether exponential bucket `index` (upper edge `2^(index / 2^schema)`) lies wholly at or below
/// the boundary `2^(k/4)`: `index × 4 ≤ k × 2^schema`, in integers so no rounding decides it.
fn wholly_below(index: i32, schema: i8, k: i32) -> bool {
    let (index, k, schema) = (i64::from(index), i64::from(k), i32::from(schema));
    if schema >= 0 { index * 4 <= k << schema } else { (index * 4) << -schema <= k }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn histogram(zero_count: u64, positive: &[(i32, u64)]) -> ExponentialHistogram {
        let positive: BTreeMap<i32, u64> = positive.iter().copied().collect();
        let count = zero_count + positive.values().sum::<u64>();
        ExponentialHistogram { schema: 5, zero_count, count, sum: 0.0, positive }
    }

    #[test]
    fn boundaries_are_the_quarter_powers_of_two_from_61_microseconds_to_64_seconds() {
        let bounds: Vec<f64> = buckets(&histogram(0, &[])).iter().map(|&(le, _)| le).collect();
        assert_eq!(bounds.len(), 82);
        assert_eq!((bounds[0], bounds[80], bounds[81]), (2f64.powi(-14), 64.0, f64::INFINITY));
        for (k, bound) in QUARTERS.zip(&bounds) {
            let exact = 2f64.powf(f64::from(k) / 4.0);
            assert!((bound / exact - 1.0).abs() < 1e-15, "2^({k}/4): {bound} vs {exact}");
        }
    }

    #[test]
    fn a_bucket_counts_the_exponential_buckets_wholly_below_its_bound() {
        // At schema 5 the boundary 2^(k/4) is the upper edge of exponential bucket 8k: bucket -8
        // (upper edge 2^(-1/4)) is at or below le 2^(-1/4), bucket -7 only below le 1 (k = 0).
        let h = histogram(2, &[(-8, 3), (-7, 4), (0, 1), (1, 5), (400, 6)]);
        let buckets = buckets(&h);
        let at = |k: i32| buckets[usize::try_from(k - QUARTERS.start()).unwrap()].1;
        assert_eq!(at(-56), 2, "only the zeros below 61 µs");
        assert_eq!((at(-2), at(-1), at(0), at(1)), (2, 5, 10, 15));
        assert_eq!(at(24), 15, "bucket 400 (2^12.5) is past 64 s");
        assert_eq!(buckets.last(), Some(&(f64::INFINITY, 21)), "+Inf is the count");
        assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "cumulative");
    }

    #[test]
    fn coarser_schemas_count_a_straddling_bucket_in_the_next_bound() {
        // Schema 1: bucket 1's upper edge is 2^(1/2) (k = 2); bucket -1's is 2^(-1/2) (k = -2).
        let mut h = histogram(0, &[(-1, 1), (1, 2)]);
        h.schema = 1;
        let b = buckets(&h);
        let at = |k: i32| b[usize::try_from(k - QUARTERS.start()).unwrap()].1;
        assert_eq!((at(-3), at(-2), at(1), at(2)), (0, 1, 1, 3));
        // Schema -1: bucket 1's upper edge is 2^2 (k = 8).
        h.schema = -1;
        h.positive = BTreeMap::from([(1, 7)]);
        let b = buckets(&h);
        let at = |k: i32| b[usize::try_from(k - QUARTERS.start()).unwrap()].1;
        assert_eq!((at(7), at(8)), (0, 7));
    }

    #[test]
    fn le_is_spelled_as_prometheus_normalises_it() {
        assert_eq!(le(2f64.powi(-14)), "6.103515625e-05");
        assert_eq!(le(2f64.powi(-13)), "0.0001220703125");
        assert_eq!(le(0.5), "0.5");
        assert_eq!(le(1.0), "1.0");
        assert_eq!(le(64.0), "64.0");
        assert_eq!(le(boundary(1)), "1.189207115002721");
        assert_eq!(le(999_999.5), "999999.5");
        assert_eq!(le(1e6), "1e+06");
        assert_eq!(le(1.5e-300), "1.5e-300");
        assert_eq!(le(f64::INFINITY), "+Inf");
    }
}
