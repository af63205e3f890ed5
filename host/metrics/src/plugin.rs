//! Metrics recorded by plugins through the `loadhost:plugin/metrics` import: counters, gauges,
//! trends and checks, each aggregated per name and tag set.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::count::Tally;
use crate::histogram::{LatencyHistogram, Percentiles};

/// One series: a metric name and its tags, sorted by key so order does not make a new series.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SeriesKey {
    /// The metric name.
    pub name: String,
    /// Tags, sorted by key then value.
    pub tags: Vec<(String, String)>,
}

impl SeriesKey {
    /// A series key; sorts `tags` in place (no copy).
    pub fn new(name: String, mut tags: Vec<(String, String)>) -> Self {
        tags.sort_unstable();
        Self { name, tags }
    }
}

impl fmt::Display for SeriesKey {
    /// `name` without tags, `name{k:v,k2:v2}` with them: the syntax of k6 sub-metrics.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if !self.tags.is_empty() {
            f.write_str("{")?;
            for (i, (k, v)) in self.tags.iter().enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                write!(f, "{k}:{v}")?;
            }
            f.write_str("}")?;
        }
        Ok(())
    }
}

/// Trend values are kept in an HDR histogram at this scale (1/1000 of the plugin's unit), so a
/// trend in milliseconds keeps microsecond resolution.
const TREND_SCALE: f64 = 1000.0;

/// The largest trend (and gauge) value a plugin may record, either sign. A histogram's size grows
/// with the range of its values; past this (a thousand billion, in the recorded unit) a value is
/// no measurement but a bug or an attack, and is counted as an invalid sample instead.
pub const MAX_SAMPLE: f64 = 1e15;

/// Whether a trend or gauge value can be recorded: finite and within [`MAX_SAMPLE`].
pub fn valid_sample(value: f64) -> bool {
    value.is_finite() && value.abs() <= MAX_SAMPLE
}

/// The aggregate of one trend series: exact count, sum, min and max, and HDR percentiles.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TrendStats {
    pub(crate) hist: LatencyHistogram,
    pub(crate) count: u64,
    #[serde(with = "crate::nonfinite::float")]
    pub(crate) sum: f64,
    #[serde(with = "crate::nonfinite::float")]
    pub(crate) min: f64,
    #[serde(with = "crate::nonfinite::float")]
    pub(crate) max: f64,
}

impl TrendStats {
    fn record(&mut self, value: f64) {
        if !value.is_finite() {
            return;
        }
        if self.count == 0 {
            self.min = value;
            self.max = value;
        } else {
            self.min = self.min.min(value);
            self.max = self.max.max(value);
        }
        self.count += 1;
        self.sum += value;
        // Percentiles cover values >= 0 (durations, sizes); negatives count as 0 there, while
        // min, max and mean stay exact.
        self.hist.record_micros((value.max(0.0) * TREND_SCALE).round() as u64);
    }

    fn merge(&mut self, other: &TrendStats, t: &mut Tally) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            self.min = other.min;
            self.max = other.max;
        } else {
            self.min = self.min.min(other.min);
            self.max = self.max.max(other.max);
        }
        t.add(&mut self.count, other.count, "a trend's count");
        self.sum += other.sum;
        self.hist.add_to(&other.hist, t, "a trend's histogram's count");
    }

    /// How many values were recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The values as a histogram, each multiplied by [`TrendStats::HISTOGRAM_SCALE`] (negatives
    /// as 0), for outputs that carry buckets.
    pub fn histogram(&self) -> &LatencyHistogram {
        &self.hist
    }

    /// What [`TrendStats::histogram`]'s values are multiplied by.
    pub const HISTOGRAM_SCALE: f64 = TREND_SCALE;

    /// The exact sum of the values.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// The summary in the plugin's own unit.
    pub fn percentiles(&self) -> Percentiles {
        if self.count == 0 {
            return Percentiles::default();
        }
        let q = |quantile: f64| self.hist.quantile_micros(quantile) as f64 / TREND_SCALE;
        Percentiles {
            min: self.min,
            mean: self.sum / self.count as f64,
            p50: q(0.50),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            max: self.max,
        }
    }
}

/// The aggregated value of one series.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesValue {
    /// A running total.
    Counter(u64),
    /// The latest value; `seq` orders updates recorded on different stripes.
    Gauge {
        /// The latest value.
        #[serde(with = "crate::nonfinite::float")]
        value: f64,
        /// A run-wide sequence number of the update.
        seq: u64,
    },
    /// A distribution of values.
    Trend(TrendStats),
    /// Passes and fails of a check.
    Check {
        /// How many times the check passed.
        passes: u64,
        /// How many times the check failed.
        fails: u64,
    },
}

impl SeriesValue {
    /// A value of the same kind with nothing recorded.
    fn empty(&self) -> SeriesValue {
        match self {
            SeriesValue::Counter(_) => SeriesValue::Counter(0),
            SeriesValue::Gauge { .. } => SeriesValue::Gauge { value: 0.0, seq: 0 },
            SeriesValue::Trend(_) => SeriesValue::Trend(TrendStats::default()),
            SeriesValue::Check { .. } => SeriesValue::Check { passes: 0, fails: 0 },
        }
    }

    /// The kind's name, as users see it.
    pub fn kind(&self) -> &'static str {
        match self {
            SeriesValue::Counter(_) => "counter",
            SeriesValue::Gauge { .. } => "gauge",
            SeriesValue::Trend(_) => "trend",
            SeriesValue::Check { .. } => "check",
        }
    }

    /// Fold `other` (of the same kind) into `self`; returns false on a kind mismatch.
    pub(crate) fn merge(&mut self, other: &SeriesValue, t: &mut Tally) -> bool {
        match (self, other) {
            // A plugin chooses its deltas: a total saturates (at 2^53) rather than wrap round to
            // a small number.
            (SeriesValue::Counter(a), SeriesValue::Counter(b)) => t.add(a, *b, "a plugin counter"),
            (SeriesValue::Gauge { value, seq }, SeriesValue::Gauge { value: v, seq: s }) => {
                if *s >= *seq {
                    *value = *v;
                    *seq = *s;
                }
            }
            (SeriesValue::Trend(a), SeriesValue::Trend(b)) => a.merge(b, t),
            (SeriesValue::Check { passes, fails }, SeriesValue::Check { passes: p, fails: f }) => {
                t.add(passes, *p, "a check's passes");
                t.add(fails, *f, "a check's fails");
            }
            _ => return false,
        }
        true
    }

    /// The JSON shape of docs/outputs.md ("metrics"): counters `{count}`, gauges `{value}`, trends the
    /// percentile object plus `count`, checks (rates) `{rate, passes, fails}`.
    pub fn to_summary(&self) -> SeriesSummary {
        match self {
            SeriesValue::Counter(count) => SeriesSummary::Counter { count: *count },
            SeriesValue::Gauge { value, .. } => SeriesSummary::Gauge { value: *value },
            SeriesValue::Trend(t) => SeriesSummary::Trend { count: t.count(), stats: t.percentiles() },
            SeriesValue::Check { passes, fails } => {
                let total = passes + fails;
                let rate = if total == 0 { 0.0 } else { *passes as f64 / total as f64 };
                SeriesSummary::Rate { rate, passes: *passes, fails: *fails }
            }
        }
    }
}

/// A series' value as the summary shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SeriesSummary {
    /// `{"count": n}`
    Counter {
        /// The total.
        count: u64,
    },
    /// `{"value": v}`
    Gauge {
        /// The latest value.
        value: f64,
    },
    /// The percentile object plus `count`.
    Trend {
        /// Values recorded.
        count: u64,
        /// min, mean, percentiles, max.
        #[serde(flatten)]
        stats: Percentiles,
    },
    /// `{"rate": r, "passes": n, "fails": n}`
    Rate {
        /// passes ÷ (passes + fails).
        rate: f64,
        /// Passes.
        passes: u64,
        /// Fails.
        fails: u64,
    },
}

/// One series with its key.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Series {
    /// Name and tags.
    pub key: SeriesKey,
    /// The aggregate.
    pub value: SeriesValue,
}

/// All plugin series recorded in one window (an interval, a stripe, or the whole run).
#[derive(Debug, Clone, Default)]
pub struct PluginMetrics {
    pub(crate) series: HashMap<SeriesKey, SeriesValue>,
    pub(crate) kind_conflicts: u64,
    /// Samples that went to an overflow series (the series cap).
    pub(crate) folded: u64,
    /// Samples dropped because every overflow series was taken too.
    pub(crate) discarded: u64,
    /// Samples refused for a malformed name or tags (see [`valid_key`]).
    pub(crate) invalid: u64,
}

/// The longest metric name or tag key.
pub const MAX_NAME_LEN: usize = 128;
/// The longest tag value.
pub const MAX_TAG_VALUE_LEN: usize = 256;
/// The most tags one sample may carry.
pub const MAX_TAGS: usize = 16;

/// Whether a plugin's sample key is well formed. Metric names and tag keys are what thresholds,
/// CSV headers and Prometheus labels can carry: 1–128 of letters, digits, `_` and `.` (tag keys
/// also `-`), not starting with a digit. A check's name is free text (k6 names checks
/// "status is 200"), 1–128 characters with no control characters. Tag values: at most 256
/// characters, no control characters; at most 16 tags.
pub fn valid_key(key: &SeriesKey, check: bool) -> bool {
    let word = |s: &str, extra: char| {
        (1..=MAX_NAME_LEN).contains(&s.len())
            && !s.starts_with(|c: char| c.is_ascii_digit())
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == extra)
    };
    let text = |s: &str, max: usize| s.len() <= max && !s.chars().any(char::is_control);
    let name_ok = if check { !key.name.is_empty() && text(&key.name, MAX_NAME_LEN) } else { word(&key.name, '_') };
    name_ok && key.tags.len() <= MAX_TAGS && key.tags.iter().all(|(k, v)| word(k, '-') && text(v, MAX_TAG_VALUE_LEN))
}

impl PluginMetrics {
    fn upsert(&mut self, key: SeriesKey, sample: SeriesValue, t: &mut Tally) {
        match self.series.get_mut(&key) {
            Some(existing) => {
                if !existing.merge(&sample, t) {
                    t.add(&mut self.kind_conflicts, 1, "plugin samples of a conflicting kind");
                }
            }
            None => {
                // Into an empty value of its kind, so its counts are checked as a sum's are.
                let mut value = sample.empty();
                value.merge(&sample, t);
                self.series.insert(key, value);
            }
        }
    }

    /// Add `delta` to a counter (a total saturates at [`crate::count::MAX_COUNT`]).
    pub fn counter(&mut self, key: SeriesKey, delta: u64) {
        self.upsert(key, SeriesValue::Counter(delta), &mut Tally::default());
    }

    /// Set a gauge; `seq` orders updates across stripes.
    pub fn gauge(&mut self, key: SeriesKey, value: f64, seq: u64) {
        self.upsert(key, SeriesValue::Gauge { value, seq }, &mut Tally::default());
    }

    /// Record one trend value.
    pub fn trend(&mut self, key: SeriesKey, value: f64) {
        match self.series.get_mut(&key) {
            Some(SeriesValue::Trend(stats)) => stats.record(value),
            Some(_) => self.kind_conflicts += 1,
            None => {
                let mut stats = TrendStats::default();
                stats.record(value);
                self.series.insert(key, SeriesValue::Trend(stats));
            }
        }
    }

    /// Record a check result.
    pub fn check(&mut self, key: SeriesKey, ok: bool) {
        let (passes, fails) = if ok { (1, 0) } else { (0, 1) };
        self.upsert(key, SeriesValue::Check { passes, fails }, &mut Tally::default());
    }

    /// Fold another window's series into this one.
    pub fn merge(&mut self, other: &PluginMetrics) {
        self.add_to(other, &mut Tally::default());
    }

    pub(crate) fn add_to(&mut self, other: &PluginMetrics, t: &mut Tally) {
        for (key, value) in &other.series {
            self.upsert(key.clone(), value.clone(), t);
        }
        t.add(&mut self.kind_conflicts, other.kind_conflicts, "plugin samples of a conflicting kind");
        t.add(&mut self.folded, other.folded, "folded plugin samples");
        t.add(&mut self.discarded, other.discarded, "discarded plugin samples");
        t.add(&mut self.invalid, other.invalid, "invalid plugin samples");
    }

    /// Add `value` to the series `key`, as a window read from a file gives it twice: an error when
    /// the kinds differ or a count does not fit.
    pub(crate) fn add_series(&mut self, key: SeriesKey, value: SeriesValue) -> Result<(), String> {
        let mut t = Tally::default();
        if let Some(existing) = self.series.get_mut(&key) {
            if !existing.merge(&value, &mut t) {
                return Err(format!("series {key} is given twice with different kinds"));
            }
        } else {
            self.series.insert(key, value);
        }
        t.result().map_err(|overflow| overflow.to_string())
    }

    /// Whether this window already holds `key` (so the series cap need not be asked).
    pub fn contains(&self, key: &SeriesKey) -> bool {
        self.series.contains_key(key)
    }

    /// Count a sample folded into an overflow series.
    pub fn note_folded(&mut self) {
        self.folded += 1;
    }

    /// Count a sample discarded by the series cap.
    pub fn note_discarded(&mut self) {
        self.discarded += 1;
    }

    /// Count a sample refused for a malformed name or tags.
    pub fn note_invalid(&mut self) {
        self.invalid += 1;
    }

    /// Samples refused for a malformed name or tags.
    pub fn invalid(&self) -> u64 {
        self.invalid
    }

    /// Samples folded into overflow series.
    pub fn folded(&self) -> u64 {
        self.folded
    }

    /// Samples discarded by the series cap.
    pub fn discarded(&self) -> u64 {
        self.discarded
    }

    /// Forget everything.
    pub fn clear(&mut self) {
        self.series.clear();
        self.kind_conflicts = 0;
        self.folded = 0;
        self.discarded = 0;
        self.invalid = 0;
    }

    /// Samples ignored because their name was already used by a metric of another kind.
    pub fn kind_conflicts(&self) -> u64 {
        self.kind_conflicts
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// Every series, sorted by name then tags.
    pub fn series(&self) -> Vec<Series> {
        let mut all: Vec<Series> =
            self.series.iter().map(|(key, value)| Series { key: key.clone(), value: value.clone() }).collect();
        all.sort_by(|a, b| a.key.cmp(&b.key));
        all
    }

    /// Each metric name with all its tag sets folded together, sorted by name.
    pub fn by_name(&self) -> Vec<Series> {
        let mut names: HashMap<&str, SeriesValue> = HashMap::new();
        for (key, value) in &self.series {
            match names.get_mut(key.name.as_str()) {
                Some(total) => {
                    // Saturating at 2^53, as every count does.
                    total.merge(value, &mut Tally::default());
                }
                None => {
                    names.insert(&key.name, value.clone());
                }
            }
        }
        let mut all: Vec<Series> = names
            .into_iter()
            .map(|(name, value)| Series { key: SeriesKey::new(name.to_owned(), Vec::new()), value })
            .collect();
        all.sort_by(|a, b| a.key.cmp(&b.key));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, tags: &[(&str, &str)]) -> SeriesKey {
        SeriesKey::new(name.into(), tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn tag_order_does_not_make_a_new_series() {
        let mut m = PluginMetrics::default();
        m.counter(key("reqs", &[("b", "2"), ("a", "1")]), 2);
        m.counter(key("reqs", &[("a", "1"), ("b", "2")]), 3);
        let series = m.series();
        assert_eq!(series.len(), 1);
        assert_eq!(series[0].key.to_string(), "reqs{a:1,b:2}");
        assert!(matches!(series[0].value, SeriesValue::Counter(5)));
    }

    #[test]
    fn by_name_folds_tag_sets_and_checks_become_rates() {
        let mut m = PluginMetrics::default();
        m.check(key("ok", &[("s", "a")]), true);
        m.check(key("ok", &[("s", "b")]), true);
        m.check(key("ok", &[("s", "b")]), false);
        m.check(key("ok", &[]), true);
        let names = m.by_name();
        assert_eq!(names.len(), 1);
        assert_eq!(names[0].value.to_summary(), SeriesSummary::Rate { rate: 0.75, passes: 3, fails: 1 });
    }

    #[test]
    fn a_name_keeps_its_first_kind() {
        let mut m = PluginMetrics::default();
        m.counter(key("x", &[]), 1);
        m.trend(key("x", &[]), 3.0);
        m.gauge(key("x", &[]), 3.0, 1);
        assert_eq!(m.kind_conflicts(), 2);
        assert!(matches!(m.series()[0].value, SeriesValue::Counter(1)));
    }

    #[test]
    fn gauge_keeps_the_latest_update_across_merges() {
        let (mut a, mut b) = (PluginMetrics::default(), PluginMetrics::default());
        a.gauge(key("g", &[]), 1.0, 10);
        b.gauge(key("g", &[]), 2.0, 5);
        a.merge(&b);
        assert_eq!(a.series()[0].value.to_summary(), SeriesSummary::Gauge { value: 1.0 });
    }

    #[test]
    fn trend_is_exact_for_min_max_mean_and_close_for_percentiles() {
        let mut m = PluginMetrics::default();
        for v in 1..=100 {
            m.trend(key("t", &[]), v as f64 / 10.0);
        }
        let SeriesSummary::Trend { count, stats } = m.series()[0].value.to_summary() else { panic!("not a trend") };
        assert_eq!(count, 100);
        assert_eq!((stats.min, stats.max), (0.1, 10.0));
        assert!((stats.mean - 5.05).abs() < 1e-9);
        assert!((stats.p50 - 5.0).abs() < 0.01, "p50 {}", stats.p50);
        assert!((stats.p99 - 9.9).abs() < 0.01, "p99 {}", stats.p99);
    }

    #[test]
    fn malformed_names_and_tags_are_refused() {
        assert!(valid_key(&key("login_ms", &[("route", "/a b"), ("http.method", "GET")]), false));
        assert!(valid_key(&key("status is 200", &[]), true), "a check's name is free text");
        let long = "x".repeat(MAX_NAME_LEN + 1);
        let many: Vec<(String, String)> = (0..=MAX_TAGS).map(|i| (format!("k{i}"), "v".to_owned())).collect();
        for (bad, check) in [
            (key("", &[]), false),
            (key("", &[]), true),
            (key("status is 200", &[]), false),
            (key("9lives", &[]), false),
            (key(&long, &[]), false),
            (key("ok", &[("bad key", "v")]), false),
            (key("ok", &[("k", "line\nbreak")]), false),
            (key("ok", &[("k", &"v".repeat(MAX_TAG_VALUE_LEN + 1))]), false),
            (key("tab\there", &[]), true),
            (SeriesKey::new("ok".into(), many), false),
        ] {
            assert!(!valid_key(&bad, check), "{bad:?}");
        }
    }
}
