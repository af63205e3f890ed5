//! The kinds of metric (k6's): what a value means, which decides how it aggregates and which
//! aggregates a threshold may compare. Its own module because the metrics of every protocol name
//! their kinds, and thresholds read them.

use std::str::FromStr;

/// A metric's kind, which decides the aggregates a threshold may compare (as in k6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricKind {
    /// Values with a distribution: `p(N)`, `avg`, `min`, `max`, `med`, `count`.
    Trend,
    /// A running total: `count`, `rate` (per second).
    Counter,
    /// A share of true values: `rate`.
    Rate,
    /// The latest value: `value`.
    Gauge,
}

impl MetricKind {
    /// The kind's name: `trend`, `counter`, `rate`, `gauge`.
    pub fn name(self) -> &'static str {
        match self {
            MetricKind::Trend => "trend",
            MetricKind::Counter => "counter",
            MetricKind::Rate => "rate",
            MetricKind::Gauge => "gauge",
        }
    }
}

impl FromStr for MetricKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "trend" => Ok(MetricKind::Trend),
            "counter" => Ok(MetricKind::Counter),
            "rate" | "check" => Ok(MetricKind::Rate),
            "gauge" => Ok(MetricKind::Gauge),
            other => Err(format!("unknown metric kind '{other}' (trend, counter, rate, gauge)")),
        }
    }
}
