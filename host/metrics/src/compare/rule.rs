//! `--fail-on` rules: `METRIC[{tag:value,…}]:STAT` (as in thresholds), then how far it may get
//! worse: `>+N%` (relative), `>+Npp` (percentage points, for rates), `>+Nms` (milliseconds, for
//! durations) or `>+N` (the metric's own unit); `<-N%` (and so on) where lower is worse
//! (`tasks_started:rate`, `checks:rate`).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use thiserror::Error;

use super::stats::{Floor, Unit};
use crate::catalogue::Aggregate;
use crate::catalogue::names::TASKS_STARTED;
use crate::catalogue::{self, MetricKind, Quantity};
use crate::reading::{self, Figures, Sample};
use crate::threshold::{Threshold, ThresholdError, did_you_mean};

/// Which way a metric gets worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `>`: higher is worse (latency, failures).
    Higher,
    /// `<`: lower is worse (achieved rate, check pass rate).
    Lower,
}

/// How far a metric may move in the worse direction before the rule looks at it; every figure is
/// a magnitude (the sign is the rule's [`Direction`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// `N%` of the base value.
    Percent(f64),
    /// `Npp`: percentage points of a rate (a share of 0.0..=1.0 moves by N/100).
    Points(f64),
    /// `Nms`: milliseconds of a duration.
    Millis(f64),
    /// `N`: the metric's own unit.
    Units(f64),
}

/// A parsed `--fail-on` rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The expression as written (trimmed).
    pub source: String,
    /// What is compared, as written: `latency_ms:p(50)`.
    pub stat: String,
    /// Which way is worse.
    pub direction: Direction,
    /// How far it may move that way.
    pub tolerance: Tolerance,
    /// The same selector as a threshold, so a rule measures exactly what a threshold would.
    probe: Threshold,
}

/// Why a rule cannot be used. The message says what is wrong; the caller names the flag and the
/// expression.
#[derive(Debug, Error, PartialEq)]
#[non_exhaustive]
pub enum RuleError {
    /// The text does not parse.
    #[error(
        "{0}; expected METRIC[{{tag:value}}]:STAT then >+N%, >+Npp, >+Nms or >+N (<-… where lower is worse), such as latency_ms:p(99)>+10%"
    )]
    Syntax(String),
    /// The tolerance does not fit the metric.
    #[error("{0}")]
    Tolerance(String),
    /// Neither run has the metric.
    #[error("neither run has a metric named {metric}{hint}")]
    UnknownMetric {
        /// The metric named.
        metric: String,
        /// `: did you mean X?`, or the names there are.
        hint: String,
    },
    /// The metric has no such statistic, no such tags, or no such scenario.
    #[error("{0}")]
    Selector(ThresholdError),
}

impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(text: &str) -> Result<Self, RuleError> {
        let source = text.trim();
        let syntax = |why: &str| RuleError::Syntax(why.to_owned());
        let colon = source.rfind(':').ok_or_else(|| syntax("no ':' between the metric and the statistic"))?;
        let op_at = source[colon..]
            .find(['<', '>', '=', '!'])
            .map(|at| colon + at)
            .ok_or_else(|| syntax("no '>' (worse when higher) or '<' (worse when lower)"))?;
        let (stat, rest) = (source[..op_at].trim(), &source[op_at..]);
        let direction = match rest.as_bytes() {
            [b'>' | b'<', b'=', ..] | [b'=' | b'!', ..] => {
                return Err(syntax("only > (worse when higher) and < (worse when lower) compare a change"));
            }
            [b'>', ..] => Direction::Higher,
            _ => Direction::Lower,
        };
        let tolerance = parse_tolerance(rest[1..].trim(), direction)?;
        let probe = format!("{stat}<0").parse::<Threshold>().map_err(|err| match err {
            ThresholdError::Syntax { why, .. } => RuleError::Syntax(why),
            other => RuleError::Selector(other),
        })?;
        Ok(Rule { source: source.to_owned(), stat: stat.to_owned(), direction, tolerance, probe })
    }
}

/// `+20%`, `0.5pp`, `-2ms`, `+3`: a sign (optional; it must match the direction), a number ≥ 0
/// and a unit.
fn parse_tolerance(text: &str, direction: Direction) -> Result<Tolerance, RuleError> {
    let syntax = |why: String| RuleError::Syntax(why);
    let (sign, magnitude) = match text.as_bytes().first() {
        Some(b'+') => (Some(Direction::Higher), &text[1..]),
        Some(b'-') => (Some(Direction::Lower), &text[1..]),
        _ => (None, text),
    };
    if let Some(sign) = sign
        && sign != direction
    {
        return Err(syntax(match direction {
            Direction::Higher => format!("'>{text}': '>' fails on a rise, so its change is +N (such as >+10%)"),
            Direction::Lower => format!("'<{text}': '<' fails on a fall, so its change is -N (such as <-10%)"),
        }));
    }
    let (number, make): (&str, fn(f64) -> Tolerance) = if let Some(n) = magnitude.strip_suffix('%') {
        (n, Tolerance::Percent)
    } else if let Some(n) = magnitude.strip_suffix("pp") {
        (n, Tolerance::Points)
    } else if let Some(n) = magnitude.strip_suffix("ms") {
        (n, Tolerance::Millis)
    } else {
        (magnitude, Tolerance::Units)
    };
    let number = number.trim();
    match number.parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 => Ok(make(n)),
        _ if number.is_empty() => Err(syntax("no change after the comparison (such as >+10%)".into())),
        _ => Err(syntax(format!("'{number}' is not a number ≥ 0 (units: %, pp, ms, or none)"))),
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl Tolerance {
    /// The tolerance as a change in the worse direction: `+20%`, `-0.5pp`, `+2ms`.
    pub fn signed(&self, direction: Direction) -> String {
        let sign = if direction == Direction::Higher { '+' } else { '-' };
        match self {
            Tolerance::Percent(n) => format!("{sign}{n}%"),
            Tolerance::Points(n) => format!("{sign}{n}pp"),
            Tolerance::Millis(n) => format!("{sign}{n}ms"),
            Tolerance::Units(n) => format!("{sign}{n}"),
        }
    }
}

impl Rule {
    /// The metric name (a renamed one read as its new name, as thresholds do).
    pub fn metric(&self) -> &str {
        &self.probe.metric
    }

    /// The scenario a `{scenario:NAME}` tag picks, if any.
    pub fn scenario(&self) -> Option<&str> {
        self.probe.scenario()
    }

    /// What is compared.
    pub fn aggregate(&self) -> &Aggregate {
        &self.probe.aggregate
    }

    /// The endpoint a built-in HTTP metric is narrowed to, `(name, method)` (see
    /// [`Threshold::endpoint_selector`]).
    pub fn endpoint_selector(&self) -> Option<(Option<&str>, Option<&str>)> {
        self.probe.endpoint_selector()
    }

    /// The tags that select a series (every tag but `scenario`).
    pub fn series_tags(&self) -> Vec<(String, String)> {
        self.probe.tags.iter().filter(|(k, _)| k != crate::catalogue::SCENARIO_TAG).cloned().collect()
    }

    /// Check the rule against the runs: the metric is built in or one of theirs (`declared`: the
    /// runs' plugin metrics and their kinds), its kind has the statistic, a scenario tag names one
    /// of `scenarios`, and the tolerance's unit fits the metric. The metric's kind, which decides
    /// how per-interval values vary.
    pub fn validate(&self, declared: &[(&str, MetricKind)], scenarios: &[&str]) -> Result<MetricKind, RuleError> {
        let kind = if self.metric() == TASKS_STARTED {
            if !matches!(self.aggregate(), Aggregate::Rate | Aggregate::Count) || !self.series_tags().is_empty() {
                return Err(RuleError::Tolerance(format!(
                    "{TASKS_STARTED} takes rate (the achieved rate, per second) or count, and no tag but scenario"
                )));
            }
            MetricKind::Counter
        } else {
            let theirs = |name: &str| declared.iter().find(|(n, _)| *n == name).map(|(_, kind)| *kind);
            if catalogue::built_in_kind(self.metric()).or_else(|| theirs(self.metric())).is_none() {
                return Err(self.unknown(declared));
            }
            self.probe.validate(&theirs, scenarios).map_err(RuleError::Selector)?
        };
        self.check_unit(kind)?;
        Ok(kind)
    }

    fn unknown(&self, declared: &[(&str, MetricKind)]) -> RuleError {
        let built_in = catalogue::CATALOGUE
            .iter()
            .filter(|m| !matches!(m.quantity, Quantity::Series | Quantity::Shown))
            .map(|m| m.name);
        let plugin: Vec<&str> = declared.iter().map(|(name, _)| *name).collect();
        let metric = self.metric().to_owned();
        let hint = match did_you_mean(&metric, plugin.iter().copied().chain(built_in.clone())) {
            Some(name) => format!(": did you mean {name}?"),
            None => {
                let theirs =
                    if plugin.is_empty() { String::new() } else { format!("; the runs' own: {}", plugin.join(", ")) };
                format!(" (built in: {}{theirs})", built_in.collect::<Vec<_>>().join(", "))
            }
        };
        RuleError::UnknownMetric { metric, hint }
    }

    fn check_unit(&self, kind: MetricKind) -> Result<(), RuleError> {
        let count = matches!(self.aggregate(), Aggregate::Count);
        let why = match self.tolerance {
            Tolerance::Points(_) if kind != MetricKind::Rate => {
                format!(
                    "pp (percentage points) is for rates such as http_req_failed:rate; {} is a {}",
                    self.stat,
                    kind.name()
                )
            }
            Tolerance::Millis(_) if kind != MetricKind::Trend || count => {
                format!("ms is for durations such as latency_ms:p(99); {} is not one", self.stat)
            }
            _ => return Ok(()),
        };
        Err(RuleError::Tolerance(why))
    }

    /// How the rule's per-interval values vary by themselves, for the test's variance floor.
    pub fn floor(&self, kind: MetricKind) -> Floor {
        match (kind, self.aggregate()) {
            (_, Aggregate::Count) => Floor::Poisson { per_second: false },
            (MetricKind::Counter, _) => Floor::Poisson { per_second: true },
            (MetricKind::Rate, _) => Floor::Binomial,
            (MetricKind::Trend, _) => Floor::Resolution,
            (MetricKind::Gauge, _) => Floor::None,
        }
    }

    /// The rule's statistic in `figures` (a window, a summary JSON, …); `None` when there is no
    /// sample of it there.
    pub fn measure(&self, figures: &dyn Figures) -> Result<Option<f64>, RuleError> {
        self.probe.read(figures).map_err(RuleError::Selector)
    }

    /// How many samples the statistic stands on in `figures` (tasks, requests, checks, trend
    /// values); `None` for what is not sampled (counters, gauges, rates of events).
    pub fn samples(&self, figures: &dyn Figures) -> Result<Option<u64>, RuleError> {
        let tags = self.series_tags();
        reading::samples(&self.probe.query(&tags), figures)
            .map_err(|err| RuleError::Selector(self.probe.read_error(err)))
    }

    /// One interval's value, for the significance test; `None` when the interval is shorter
    /// than half of `row` (the last one, with the tasks that ended after the schedule) or has no
    /// samples of the statistic (so its value would be a placeholder, not a measurement).
    pub fn unit(&self, sample: &Sample<'_>, row: Duration) -> Result<Option<Unit>, RuleError> {
        if sample.span * 2 < row {
            return Ok(None);
        }
        let samples = self.samples(sample)?;
        if samples == Some(0) {
            return Ok(None);
        }
        let secs = sample.span.as_secs_f64();
        Ok(self.measure(sample)?.map(|value| Unit { value, samples, secs }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Window;

    fn rule(text: &str) -> Rule {
        text.parse().unwrap()
    }

    #[test]
    fn the_documented_forms_parse() {
        let p99 = rule("latency_ms:p(99)>+10%");
        assert_eq!(
            (p99.stat.as_str(), p99.direction, p99.tolerance),
            ("latency_ms:p(99)", Direction::Higher, Tolerance::Percent(10.0))
        );
        assert_eq!(p99.aggregate(), &Aggregate::Percentile(99.0));
        assert_eq!(rule("http_req_failed:rate>+0.5pp").tolerance, Tolerance::Points(0.5));
        assert_eq!(rule("service_ms:p(50) > +2ms").tolerance, Tolerance::Millis(2.0));
        let rate = rule("tasks_started:rate<-5%");
        assert_eq!((rate.direction, rate.tolerance), (Direction::Lower, Tolerance::Percent(5.0)));
        assert_eq!(rule("checks:rate<1pp").tolerance, Tolerance::Points(1.0), "the sign may be left out");
        let tagged = rule("login_ms{route:/a,scenario:api}:p(95)>+3");
        assert_eq!((tagged.metric(), tagged.scenario()), ("login_ms", Some("api")));
        assert_eq!(tagged.series_tags(), vec![("route".to_owned(), "/a".to_owned())]);
        assert_eq!(tagged.tolerance.signed(tagged.direction), "+3");
        assert_eq!(rate.tolerance.signed(rate.direction), "-5%");
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        for (bad, says) in [
            ("latency_ms", "no ':'"),
            ("latency_ms:p(99)", "no '>'"),
            ("latency_ms:p(99)>=+10%", "only > (worse when higher)"),
            ("latency_ms:p(99)>-10%", "its change is +N"),
            ("tasks_started:rate<+10%", "its change is -N"),
            ("latency_ms:p(99)>+ten%", "'ten' is not a number"),
            ("latency_ms:p(99)>", "no change after the comparison"),
            ("latency_ms:p(99)>+10s", "'10s' is not a number"),
            ("latency_ms:p(120)>+1%", "unknown aggregate"),
            ("lat ency:p(99)>+1%", "metric name"),
        ] {
            let err = bad.parse::<Rule>().unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn validation_checks_the_metric_its_statistic_and_the_unit() {
        let declared = [("login_ms", MetricKind::Trend)];
        let check = |text: &str| rule(text).validate(&declared, &["default"]);
        assert_eq!(check("latency_ms:p(99)>+2ms"), Ok(MetricKind::Trend));
        assert_eq!(check("login_ms:p(95)>+10%"), Ok(MetricKind::Trend));
        assert_eq!(check("tasks_started:rate<-5%"), Ok(MetricKind::Counter));
        assert_eq!(check("http_req_failed:rate>+0.5pp"), Ok(MetricKind::Rate));
        let err = |text: &str| check(text).unwrap_err().to_string();
        assert!(
            err("nosuch:p(99)>+1%").contains("neither run has a metric named nosuch"),
            "{}",
            err("nosuch:p(99)>+1%")
        );
        assert!(err("nosuch:p(99)>+1%").contains("the runs' own: login_ms"));
        assert_eq!(err("logn_ms:p(99)>+1%"), "neither run has a metric named logn_ms: did you mean login_ms?");
        assert_eq!(
            err("tasks_startd:rate<-1%"),
            "neither run has a metric named tasks_startd: did you mean tasks_started?"
        );
        assert!(err("latency_ms:p(99)>+1pp").contains("pp (percentage points) is for rates"));
        assert!(err("http_req_failed:rate>+1ms").contains("ms is for durations"));
        assert!(err("latency_ms:count>+1ms").contains("ms is for durations"));
        assert!(err("checks:p(99)>+1%").contains("has no p(99)"));
        assert!(err("latency_ms{scenario:api}:p(99)>+1%").contains("no scenario named 'api'"));
        assert!(err("tasks_started:avg>+1%").contains("takes rate"));
        assert!(err("tasks_started{route:a}:rate<-1%").contains("no tag but scenario"));
        assert_eq!(
            rule("tasks_started{scenario:default}:rate<-1%").validate(&declared, &["default"]),
            Ok(MetricKind::Counter)
        );
    }

    #[test]
    fn a_unit_needs_half_an_interval_and_samples() {
        let mut window = Window::default();
        for ms in [5, 6, 7] {
            window.latency.record(Duration::from_millis(ms));
        }
        let p50 = rule("latency_ms:p(50)>+10%");
        let second = Duration::from_secs(1);
        let sample = |span| Sample { window: &window, started: 3, span, generation: span };
        let unit = p50.unit(&sample(second), second).unwrap().unwrap();
        assert!((unit.value - 6.0).abs() < 0.01 && unit.samples == Some(3), "{unit:?}");
        assert_eq!(p50.unit(&sample(Duration::from_millis(300)), second).unwrap(), None, "the short last interval");
        let failed = rule("http_req_failed:rate>+1pp");
        assert_eq!(failed.unit(&sample(second), second).unwrap(), None, "no requests: no share to test");
        let rate = rule("tasks_started:rate<-5%");
        assert_eq!(rate.unit(&sample(second), second).unwrap().map(|u| u.value), Some(3.0));
        assert_eq!(rate.floor(MetricKind::Counter), Floor::Poisson { per_second: true });
    }
}
