//! Threshold expressions in k6's syntax: `METRIC[{tag:value,…}]:AGGREGATE OP NUMBER`, such as
//! `latency_ms:p(99)<200`, `http_req_failed:rate<0.01`, `checks:rate>0.99` or
//! `http_reqs{status:500}:count<10`, evaluated against a finished run.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::histogram::Percentiles;
use crate::plugin::{SeriesKey, SeriesSummary, SeriesValue};
use crate::report::RunReport;

/// What is compared.
#[derive(Debug, Clone, PartialEq)]
pub enum Aggregate {
    /// A percentile, `p(99)` or `p(99.9)`.
    Percentile(f64),
    /// `avg` (or `mean`).
    Avg,
    /// `min`.
    Min,
    /// `max`.
    Max,
    /// `med` (the 50th percentile).
    Med,
    /// `count`.
    Count,
    /// `rate`: per second for counters, the share of true values for rates and checks.
    Rate,
    /// `value` of a gauge.
    Value,
}

/// The comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

/// A parsed threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The expression as written.
    pub source: String,
    /// The metric name.
    pub metric: String,
    /// Tags selecting one series (`{status:500}`), sorted.
    pub tags: Vec<(String, String)>,
    /// What is compared.
    pub aggregate: Aggregate,
    /// How.
    pub op: Op,
    /// With what.
    pub bound: f64,
}

/// Why a threshold cannot be used.
#[derive(Debug, Error, PartialEq)]
#[non_exhaustive]
pub enum ThresholdError {
    /// The text does not parse.
    #[error(
        "threshold '{expr}': {why}; expected METRIC[{{tag:value}}]:AGGREGATE OP NUMBER, such as latency_ms:p(99)<200"
    )]
    Syntax {
        /// The expression.
        expr: String,
        /// What is wrong.
        why: String,
    },
    /// No such metric in the run.
    #[error(
        "threshold '{expr}': no metric named {metric} (built in: latency_ms, service_ms, wait_ms, gate_wait_ms, tasks_failed, http_reqs, http_req_duration, http_req_failed, checks; or one the plugin records)"
    )]
    UnknownMetric {
        /// The expression.
        expr: String,
        /// The metric named.
        metric: String,
    },
    /// The metric has no such aggregate.
    #[error("threshold '{expr}': {metric} has no {aggregate}")]
    NoAggregate {
        /// The expression.
        expr: String,
        /// The metric.
        metric: String,
        /// The aggregate asked for.
        aggregate: String,
    },
}

impl FromStr for Threshold {
    type Err = ThresholdError;

    fn from_str(text: &str) -> Result<Self, ThresholdError> {
        let expr = text.trim();
        let syntax = |why: &str| ThresholdError::Syntax { expr: expr.to_owned(), why: why.to_owned() };
        let colon = expr.rfind(':').ok_or_else(|| syntax("no ':' between the metric and the aggregate"))?;
        let (target, condition) = (&expr[..colon], &expr[colon + 1..]);
        // The tags' own colons come before the last one; the metric part is what precedes them.
        let (metric, tags) = match target.find('{') {
            Some(open) => {
                let inner = target[open + 1..].strip_suffix('}').ok_or_else(|| syntax("unclosed '{'"))?;
                let mut tags = Vec::new();
                for pair in inner.split(',').filter(|p| !p.trim().is_empty()) {
                    let (k, v) = pair.split_once(':').ok_or_else(|| syntax("a tag needs key:value"))?;
                    tags.push((k.trim().to_owned(), v.trim().to_owned()));
                }
                tags.sort();
                (target[..open].trim(), tags)
            }
            None => (target.trim(), Vec::new()),
        };
        if metric.is_empty() || !metric.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            return Err(syntax("the metric name must be letters, digits, '_' or '.'"));
        }
        let op_at =
            condition.find(['<', '>', '=', '!']).ok_or_else(|| syntax("no comparison (<, <=, >, >=, ==, !=)"))?;
        let (aggregate, rest) = (condition[..op_at].trim(), condition[op_at..].trim());
        let (op, number) =
            [("<=", Op::Le), (">=", Op::Ge), ("==", Op::Eq), ("!=", Op::Ne), ("<", Op::Lt), (">", Op::Gt)]
                .into_iter()
                .find_map(|(sym, op)| rest.strip_prefix(sym).map(|n| (op, n.trim())))
                .ok_or_else(|| syntax("no comparison (<, <=, >, >=, ==, !=)"))?;
        let bound: f64 = number.parse().map_err(|_| syntax(&format!("'{number}' is not a number")))?;
        let aggregate = match aggregate {
            "avg" | "mean" => Aggregate::Avg,
            "min" => Aggregate::Min,
            "max" => Aggregate::Max,
            "med" => Aggregate::Med,
            "count" => Aggregate::Count,
            "rate" => Aggregate::Rate,
            "value" => Aggregate::Value,
            p => {
                let n = p
                    .strip_prefix("p(")
                    .and_then(|n| n.strip_suffix(')'))
                    .and_then(|n| n.parse::<f64>().ok())
                    .filter(|n| *n > 0.0 && *n <= 100.0)
                    .ok_or_else(|| {
                        syntax(&format!("unknown aggregate '{p}' (p(N), avg, min, max, med, count, rate, value)"))
                    })?;
                Aggregate::Percentile(n)
            }
        };
        Ok(Threshold { source: expr.to_owned(), metric: metric.to_owned(), tags, aggregate, op, bound })
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// What a threshold found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// The measured value.
    pub value: f64,
    /// Whether the comparison held.
    pub passed: bool,
}

fn from_percentiles(p: &Percentiles, count: u64, agg: &Aggregate, h: Option<&crate::LatencyHistogram>) -> Option<f64> {
    Some(match agg {
        Aggregate::Avg => p.mean,
        Aggregate::Min => p.min,
        Aggregate::Max => p.max,
        Aggregate::Med => p.p50,
        Aggregate::Count => count as f64,
        Aggregate::Percentile(n) => match h {
            Some(h) => h.quantile_micros(n / 100.0) as f64 / 1000.0,
            None => match *n {
                50.0 => p.p50,
                90.0 => p.p90,
                95.0 => p.p95,
                99.0 => p.p99,
                99.9 => p.p999,
                _ if *n == 100.0 => p.max,
                _ => return None,
            },
        },
        Aggregate::Rate | Aggregate::Value => return None,
    })
}

impl Threshold {
    /// The value the threshold looks at in `report`, and whether it holds.
    pub fn evaluate(&self, report: &RunReport) -> Result<Verdict, ThresholdError> {
        let value = self.measure(report)?;
        let passed = match self.op {
            Op::Lt => value < self.bound,
            Op::Le => value <= self.bound,
            Op::Gt => value > self.bound,
            Op::Ge => value >= self.bound,
            Op::Eq => value == self.bound,
            Op::Ne => value != self.bound,
        };
        Ok(Verdict { value, passed })
    }

    fn no_aggregate(&self) -> ThresholdError {
        ThresholdError::NoAggregate {
            expr: self.source.clone(),
            metric: self.metric.clone(),
            aggregate: format!("{:?}", self.aggregate).to_lowercase(),
        }
    }

    fn measure(&self, report: &RunReport) -> Result<f64, ThresholdError> {
        let t = &report.totals;
        let secs = report.elapsed.as_secs_f64().max(1e-9);
        let histogram = match self.metric.as_str() {
            "latency_ms" => Some(&t.latency),
            "service_ms" => Some(&t.service),
            "wait_ms" => Some(&t.wait),
            "gate_wait_ms" => Some(&t.gate_wait),
            "http_req_duration" if self.tags.is_empty() => Some(&t.http.duration),
            _ => None,
        };
        if let Some(h) = histogram {
            return from_percentiles(&h.percentiles(), h.count(), &self.aggregate, Some(h))
                .ok_or_else(|| self.no_aggregate());
        }
        let counts = report.counts();
        match (self.metric.as_str(), &self.aggregate) {
            ("tasks_failed", Aggregate::Rate) => {
                let ended = counts.ended().max(1) as f64;
                return Ok((counts.ended() - counts.passed) as f64 / ended);
            }
            ("http_req_failed", Aggregate::Rate) if self.tags.is_empty() => {
                return Ok(if t.http.requests == 0 { 0.0 } else { t.http.failed as f64 / t.http.requests as f64 });
            }
            ("http_reqs", agg @ (Aggregate::Count | Aggregate::Rate)) => {
                let count = match self.tags.as_slice() {
                    [] => t.http.requests,
                    [(k, v)] if k == "status" => {
                        v.parse::<u16>().ok().and_then(|s| t.http.by_status.get(&s).copied()).unwrap_or(0)
                    }
                    _ => return Err(self.no_aggregate()),
                } as f64;
                return Ok(if *agg == Aggregate::Rate { count / secs } else { count });
            }
            ("checks", Aggregate::Rate) if self.tags.is_empty() => {
                let (mut passes, mut fails) = (0u64, 0u64);
                for series in t.plugin.by_name() {
                    if let SeriesValue::Check { passes: p, fails: f } = series.value {
                        passes += p;
                        fails += f;
                    }
                }
                return Ok(if passes + fails == 0 { 1.0 } else { passes as f64 / (passes + fails) as f64 });
            }
            _ => {}
        }
        let key = SeriesKey::new(self.metric.clone(), self.tags.clone());
        let series = if self.tags.is_empty() {
            t.plugin.by_name().into_iter().find(|s| s.key == key)
        } else {
            t.plugin.series().into_iter().find(|s| s.key == key)
        };
        let series = series
            .ok_or_else(|| ThresholdError::UnknownMetric { expr: self.source.clone(), metric: self.metric.clone() })?;
        match (series.value.to_summary(), &self.aggregate) {
            (SeriesSummary::Counter { count }, Aggregate::Count) => Ok(count as f64),
            (SeriesSummary::Counter { count }, Aggregate::Rate) => Ok(count as f64 / secs),
            (SeriesSummary::Gauge { value }, Aggregate::Value) => Ok(value),
            (SeriesSummary::Rate { rate, .. }, Aggregate::Rate) => Ok(rate),
            (SeriesSummary::Trend { count, stats }, agg) => {
                from_percentiles(&stats, count, agg, None).ok_or_else(|| self.no_aggregate())
            }
            _ => Err(self.no_aggregate()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Threshold {
        s.parse().unwrap()
    }

    #[test]
    fn k6_expressions_parse() {
        let p99 = t("latency_ms:p(99)<200");
        assert_eq!(
            (p99.metric.as_str(), &p99.aggregate, p99.op, p99.bound),
            ("latency_ms", &Aggregate::Percentile(99.0), Op::Lt, 200.0)
        );
        let tagged = t("http_reqs{status:500}:count<10");
        assert_eq!(tagged.tags, vec![("status".to_owned(), "500".to_owned())]);
        assert_eq!(t("checks:rate>=0.99").op, Op::Ge);
        assert_eq!(t("latency_ms: p(99.9) <= 1.5").aggregate, Aggregate::Percentile(99.9));
    }

    #[test]
    fn bad_expressions_say_what_is_wrong() {
        for (bad, says) in [
            ("latency_ms", "no ':'"),
            ("latency_ms:p(99)", "no comparison"),
            ("latency_ms:p(99)<abc", "'abc' is not a number"),
            ("latency_ms:p(120)<5", "unknown aggregate"),
            ("latency_ms:mode<5", "unknown aggregate 'mode'"),
            ("lat ency:avg<5", "metric name"),
            ("http_reqs{status:500:count<1", "unclosed"),
        ] {
            let err = bad.parse::<Threshold>().unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
