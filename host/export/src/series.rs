//! The model every export shares: a [`Snapshot`] of labelled [`Series`], built once per interval
//! from the run's windows ([`crate::collect`]) and encoded by each format without looking back at
//! the metrics crate. A series is named as Prometheus would name it without the type suffix
//! (`loadhost_http_reqs`, `loadhost_latency_seconds`): formats that add one (`_total`, `_bucket`)
//! add it themselves.

use loadhost_metrics::Percentiles;
use loadhost_metrics::exponential::ExponentialHistogram;

/// Label pairs in the order they were added (formats that need them sorted sort them).
pub type Labels = Vec<(String, String)>;

/// What a series measures in, as OTLP's `unit` spells it; Prometheus has it in the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Durations, in seconds (Prometheus' convention; the summary's milliseconds ÷ 1000).
    Seconds,
    /// Sizes, in bytes.
    Bytes,
    /// A share from 0 to 1.
    Ratio,
    /// A count, or a plugin's value in the plugin's own unit.
    None,
}

impl Unit {
    /// Prometheus' spelling (a name's suffix, metadata's and OpenMetrics' `UNIT`); empty for none.
    pub fn prometheus(self) -> &'static str {
        match self {
            Unit::Seconds => "seconds",
            Unit::Bytes => "bytes",
            Unit::Ratio => "ratio",
            Unit::None => "",
        }
    }

    /// OTLP's (UCUM) spelling.
    pub fn ucum(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::Bytes => "By",
            Unit::Ratio => "1",
            Unit::None => "",
        }
    }
}

/// A distribution: its exponential buckets for the formats that carry buckets, and its exact
/// summary (from the HDR histogram) for those that carry statistics (InfluxDB), both in the
/// series' unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    /// The values in exponential buckets (count and sum included).
    pub buckets: ExponentialHistogram,
    /// Min, mean, percentiles and max, as the summary reports them.
    pub stats: Percentiles,
}

/// A series' value at the snapshot's time.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A total that only grows over the run (in an interval snapshot: the interval's share).
    Counter(u64),
    /// A level at the snapshot's time.
    Gauge(f64),
    /// A distribution of values (cumulative over the run, or the interval's).
    Histogram(Box<Distribution>),
}

/// One labelled series.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its name, `loadhost_` prefixed, without a type suffix.
    pub name: String,
    /// One line saying what it is (Prometheus' HELP, OTLP's description).
    pub help: &'static str,
    /// What it measures in.
    pub unit: Unit,
    /// Its own labels (`scenario`, then the metric's: `outcome`, `name`, `method`, plugin tags);
    /// the run's labels are in [`Snapshot::run`].
    pub labels: Labels,
    /// Its value.
    pub value: Value,
}

/// Everything an export says at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The moment, in milliseconds since the Unix epoch (the interval's end).
    pub at_ms: i64,
    /// When the run's load started, in milliseconds since the Unix epoch: the start of every
    /// cumulative series (OTLP's `start_time_unix_nano`).
    pub start_ms: i64,
    /// The labels that identify the run, on every series: `run_id`, `segment` (when split) and
    /// each `--tag`. OTLP carries them as resource attributes, the others as labels.
    pub run: Labels,
    /// The run so far: counters are totals since the start, histograms hold every value since the
    /// start (so `rate()` and `histogram_quantile` work, and segments add up).
    pub cumulative: Vec<Series>,
    /// The interval just ended, for formats that write one point per interval (InfluxDB):
    /// counters are the interval's, distributions the interval's values only.
    pub interval: Vec<Series>,
    /// Whether this is the run's last snapshot (every interval in).
    pub last: bool,
}
