//! Threshold expressions in k6's syntax: `METRIC[{tag:value,…}]:AGGREGATE OP NUMBER`, such as
//! `latency_ms:p(99)<200`, `http_req_failed:rate<0.01`, `checks:rate>0.99`,
//! `checks{check:status is 200,tier:gold}:rate>0.99`, `group_duration{group:::checkout}:p(95)<500`
//! or `http_reqs{status:500}:count<10`, evaluated against a finished run.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use std::time::Duration;

use crate::checks::{CHECK_TAG, CHECKS, CheckSelector, GROUP_DURATION};
use crate::histogram::Percentiles;
use crate::http::names;
pub use crate::kind::MetricKind;
use crate::plugin::{SeriesKey, SeriesSummary};
use crate::report::RunReport;
use crate::window::Window;

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

/// Why a threshold cannot be used. The message says what is wrong, not where: the caller names the
/// flag and the expression (`--threshold 'EXPR': …`, or clap's "invalid value 'EXPR' for …"), so
/// neither is said twice; `expr` keeps the expression for it.
#[derive(Debug, Error, PartialEq)]
#[non_exhaustive]
pub enum ThresholdError {
    /// The text does not parse.
    #[error("{why}; expected METRIC[{{tag:value}}]:AGGREGATE OP NUMBER, such as latency_ms:p(99)<200")]
    Syntax {
        /// The expression.
        expr: String,
        /// What is wrong.
        why: String,
    },
    /// No such metric in the run: the message suggests a close name, or lists the known ones.
    #[error("no metric named {metric}{}", unknown_hint(.suggestion.as_deref(), .declared))]
    UnknownMetric {
        /// The expression.
        expr: String,
        /// The metric named.
        metric: String,
        /// A known name close to it (a typo away, or the same but for case).
        suggestion: Option<String>,
        /// The names declared for the run (by the plugin or `--metric`), built-in ones aside.
        declared: Vec<String>,
    },
    /// A `{scenario:NAME}` tag names no scenario of the run.
    #[error("no scenario named '{scenario}' (the run has: {known})")]
    UnknownScenario {
        /// The expression.
        expr: String,
        /// The scenario named.
        scenario: String,
        /// The scenarios there are.
        known: String,
    },
    /// The metric cannot be selected by these tags.
    #[error(
        "{metric} takes no tags but scenario (http_reqs, http_req_duration and http_req_failed also take \
         name:ENDPOINT and method:METHOD, http_reqs alone status:CODE and redirect:true|false; checks takes \
         check:NAME and the checks' own tags; plugin metrics take their own tags)"
    )]
    Tags {
        /// The expression.
        expr: String,
        /// The metric.
        metric: String,
    },
    /// A `check:` tag names no check the plugin declares, but one close to it.
    #[error(
        "no check named '{check}': did you mean '{suggestion}'? (the plugin declares its checks; a check it \
         records but does not declare needs declaring as '{check}:check')"
    )]
    UnknownCheck {
        /// The expression.
        expr: String,
        /// The check named.
        check: String,
        /// The declared check close to it.
        suggestion: String,
    },
    /// The metric has no such aggregate.
    #[error("{metric} has no {aggregate}")]
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
            // A check's name is free text: it goes in the tags, as k6 spells it.
            let hint = if metric.contains(' ') {
                format!(" (a check's name goes in checks{{check:{metric}}}, quoted on the shell)")
            } else {
                String::new()
            };
            return Err(syntax(&format!("the metric name must be letters, digits, '_' or '.'{hint}")));
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
        let metric = RENAMED.iter().find(|(old, _)| *old == metric).map_or(metric, |(_, new)| *new);
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

impl MetricKind {
    fn allows(self, aggregate: &Aggregate) -> bool {
        match self {
            MetricKind::Trend => !matches!(aggregate, Aggregate::Rate | Aggregate::Value),
            MetricKind::Counter => matches!(aggregate, Aggregate::Count | Aggregate::Rate),
            MetricKind::Rate => matches!(aggregate, Aggregate::Rate),
            MetricKind::Gauge => matches!(aggregate, Aggregate::Value),
        }
    }

    fn aggregates(self) -> &'static str {
        match self {
            MetricKind::Trend => "p(N), avg, min, max, med, count",
            MetricKind::Counter => "count, rate",
            MetricKind::Rate => "rate",
            MetricKind::Gauge => "value",
        }
    }
}

/// The share of ended tasks that did not pass: (ended − passed) ÷ ended, so drops, timeouts,
/// traps, aborts and interruptions count as well as the `failed` outcome.
pub const TASKS_NOT_PASSED: &str = "tasks_not_passed";

/// Built-in names that were renamed, (old, new): the old name still parses, as the new one, so
/// existing thresholds keep judging the same quantity. `tasks_failed` was renamed because
/// "failed" is one outcome everywhere else, and this share counts every outcome but `passed`.
pub const RENAMED: [(&str, &str); 1] = [("tasks_failed", TASKS_NOT_PASSED)];

/// The metrics the host itself records (and `group_duration`, which the SDKs record for it), by
/// name, and their kinds.
pub const BUILT_IN: [(&str, MetricKind); 13] = [
    ("latency_ms", MetricKind::Trend),
    ("service_ms", MetricKind::Trend),
    ("wait_ms", MetricKind::Trend),
    ("gate_wait_ms", MetricKind::Trend),
    (TASKS_NOT_PASSED, MetricKind::Rate),
    (CHECKS, MetricKind::Rate),
    (GROUP_DURATION, MetricKind::Trend),
    (names::HTTP_REQS, MetricKind::Counter),
    (names::HTTP_REQ_DURATION, MetricKind::Trend),
    (names::HTTP_REQ_FAILED, MetricKind::Rate),
    (names::HTTP_DENIED, MetricKind::Counter),
    (names::DATA_SENT, MetricKind::Counter),
    (names::DATA_RECEIVED, MetricKind::Counter),
];

/// The kind of a built-in metric (by its name, or a name it was renamed from).
pub fn built_in_kind(name: &str) -> Option<MetricKind> {
    let name = RENAMED.iter().find(|(old, _)| *old == name).map_or(name, |(_, new)| *new);
    BUILT_IN.iter().chain(&crate::protocol::PROTOCOL_METRICS).find(|(n, _)| *n == name).map(|(_, kind)| *kind)
}

/// The known name a mistyped `name` most likely meant: the same but for case, or one at most two
/// edits away (a letter added, dropped, changed, or two neighbours swapped), and closer than the
/// name is long. The closest wins; among equals, the first in `known`.
pub fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for candidate in known {
        let distance = if candidate.to_lowercase() == lower { 0 } else { edit_distance(name, candidate) };
        let close = distance <= 2 && distance < name.chars().count();
        if close && best.is_none_or(|(d, _)| distance < d) && candidate != name {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
/// neighbouring characters each cost one.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // Three rows suffice: a swap looks two rows back.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut last: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (last[j] + 1).min(row[j - 1] + 1).min(last[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        before = std::mem::replace(&mut last, row);
    }
    last[b.len()]
}

/// The rest of an unknown metric's message: the suggestion, or the names there are.
fn unknown_hint(suggestion: Option<&str>, declared: &[String]) -> String {
    if let Some(name) = suggestion {
        return format!(": did you mean {name}?");
    }
    let built_in: Vec<&str> = BUILT_IN.iter().map(|(name, _)| *name).collect();
    // A long list helps nobody: past ten declared names, say how many there are.
    let declared = match declared.len() {
        0 => String::new(),
        1..=10 => format!("; declared: {}", declared.join(", ")),
        n => format!("; {n} declared"),
    };
    format!(
        " (built in: {}, and ws_* and grpc_* for WebSocket and gRPC{declared}; a plugin's own metric needs declaring, in the plugin (loadhost inspect lists what it declares) or with --metric NAME:KIND)",
        built_in.join(", ")
    )
}

/// The tag that picks a scenario's measurements rather than a series.
pub const SCENARIO_TAG: &str = "scenario";

/// The tag selecting redirect responses of `http_reqs` (`{redirect:true}`, or `false` for the rest).
pub const REDIRECT_TAG: &str = "redirect";

/// The tag that picks an HTTP endpoint by name (k6's `name`): `http_req_duration{name:login}`.
pub const ENDPOINT_NAME_TAG: &str = "name";

/// The tag that picks HTTP endpoints by request method: `http_reqs{method:POST}`.
pub const ENDPOINT_METHOD_TAG: &str = "method";

/// The aggregate of a distribution; a percentile never above the max, as outputs show it.
fn from_percentiles(p: &Percentiles, count: u64, agg: &Aggregate, h: Option<&crate::LatencyHistogram>) -> Option<f64> {
    let p = &p.clamped();
    Some(match agg {
        Aggregate::Avg => p.mean,
        Aggregate::Min => p.min,
        Aggregate::Max => p.max,
        Aggregate::Med => p.p50,
        Aggregate::Count => count as f64,
        Aggregate::Percentile(n) => match h {
            Some(h) => (h.quantile_micros(n / 100.0) as f64 / 1000.0).min(p.max),
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
    /// When the expression names a renamed built-in metric: (the name written, the name now).
    pub fn renamed(&self) -> Option<(&'static str, &'static str)> {
        let written = self.source.split(['{', ':']).next().unwrap_or_default().trim();
        RENAMED.iter().find(|(old, _)| *old == written).copied()
    }

    /// The scenario named by a `{scenario:NAME}` tag, if any: the threshold then looks at that
    /// scenario's measurements only.
    pub fn scenario(&self) -> Option<&str> {
        self.tags.iter().find(|(k, _)| k == SCENARIO_TAG).map(|(_, v)| v.as_str())
    }

    fn series_tags(&self) -> Vec<(String, String)> {
        self.tags.iter().filter(|(k, _)| k != SCENARIO_TAG).cloned().collect()
    }

    /// Check, before any load, that the metric exists (built in, or declared with its kind in
    /// `declared`), that its kind has the aggregate, and that a scenario tag names a scenario.
    /// An unknown name's error suggests a close built-in one; [`Threshold::validate_among`] also
    /// suggests declared ones.
    pub fn validate(
        &self,
        declared: &dyn Fn(&str) -> Option<MetricKind>,
        scenarios: &[&str],
    ) -> Result<MetricKind, ThresholdError> {
        self.validate_with(declared, &[], scenarios)
    }

    /// [`Threshold::validate`] against the metrics declared for the run, by name (the plugin's
    /// declarations and `--metric` flags), so an unknown name's error can suggest or list them.
    pub fn validate_among(
        &self,
        declared: &[(&str, MetricKind)],
        scenarios: &[&str],
    ) -> Result<MetricKind, ThresholdError> {
        let lookup = |name: &str| declared.iter().find(|(n, _)| *n == name).map(|(_, kind)| *kind);
        let names: Vec<&str> = declared.iter().map(|(name, _)| *name).collect();
        self.validate_with(&lookup, &names, scenarios)
    }

    fn validate_with(
        &self,
        declared: &dyn Fn(&str) -> Option<MetricKind>,
        names: &[&str],
        scenarios: &[&str],
    ) -> Result<MetricKind, ThresholdError> {
        let unknown = || ThresholdError::UnknownMetric {
            expr: self.source.clone(),
            metric: self.metric.clone(),
            suggestion: did_you_mean(
                &self.metric,
                names.iter().copied().chain(BUILT_IN.iter().chain(&crate::protocol::PROTOCOL_METRICS).map(|(n, _)| *n)),
            )
            .map(str::to_owned),
            declared: names.iter().map(|n| (*n).to_owned()).collect(),
        };
        let built_in = built_in_kind(&self.metric);
        let kind = built_in.or_else(|| declared(&self.metric)).ok_or_else(unknown)?;
        if !kind.allows(&self.aggregate) {
            return Err(ThresholdError::NoAggregate {
                expr: self.source.clone(),
                metric: format!("{} (a {}: {})", self.metric, kind.name(), kind.aggregates()),
                aggregate: self.aggregate_name(),
            });
        }
        if let Some(name) = self.scenario()
            && !scenarios.contains(&name)
        {
            return Err(ThresholdError::UnknownScenario {
                expr: self.source.clone(),
                scenario: name.to_owned(),
                known: scenarios.join(", "),
            });
        }
        let tags = self.series_tags();
        let by_status = matches!(tags.as_slice(), [(k, v)] if (k == "status" && v.parse::<u16>().is_ok())
            || (k == REDIRECT_TAG && (v == "true" || v == "false")));
        let tags_allowed = match self.metric.as_str() {
            // Recorded as plugin series, tags and all.
            _ if built_in.is_none() || crate::protocol::is_protocol_metric(&self.metric) => true,
            GROUP_DURATION | CHECKS => true,
            _ if tags.is_empty() => true,
            names::HTTP_REQS => by_status || self.endpoint_selector().is_some(),
            names::HTTP_REQ_DURATION | names::HTTP_REQ_FAILED => self.endpoint_selector().is_some(),
            _ => false,
        };
        if !tags_allowed {
            return Err(ThresholdError::Tags { expr: self.source.clone(), metric: self.metric.clone() });
        }
        if self.metric == CHECKS {
            self.validate_check_names(declared, names)?;
        }
        Ok(kind)
    }

    /// A `check:NAME` tag against the checks the plugin declares (declared rates are checks: a
    /// plugin records no other rate): a name that is not declared, with a declared one a typo
    /// away, is a mistake. Without declared checks, or with nothing close, any name is taken: a
    /// check that never runs fails its threshold with "no samples".
    fn validate_check_names(
        &self,
        declared: &dyn Fn(&str) -> Option<MetricKind>,
        names: &[&str],
    ) -> Result<(), ThresholdError> {
        let checks: Vec<&str> = names.iter().copied().filter(|n| declared(n) == Some(MetricKind::Rate)).collect();
        for (_, name) in self.tags.iter().filter(|(k, _)| k == CHECK_TAG) {
            if checks.contains(&name.as_str()) {
                continue;
            }
            if let Some(close) = did_you_mean(name, checks.iter().copied()) {
                return Err(ThresholdError::UnknownCheck {
                    expr: self.source.clone(),
                    check: name.clone(),
                    suggestion: close.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// The endpoint a built-in HTTP metric is narrowed to, `(name, method)`, when its tags (the
    /// scenario aside) are `name`, `method` or both, each at most once; `None` otherwise.
    pub fn endpoint_selector(&self) -> Option<(Option<&str>, Option<&str>)> {
        let (mut name, mut method) = (None, None);
        for (k, v) in self.tags.iter().filter(|(k, _)| k != SCENARIO_TAG) {
            let slot = match k.as_str() {
                ENDPOINT_NAME_TAG => &mut name,
                ENDPOINT_METHOD_TAG => &mut method,
                _ => return None,
            };
            if slot.replace(v.as_str()).is_some() {
                return None;
            }
        }
        (name.is_some() || method.is_some()).then_some((name, method))
    }

    fn aggregate_name(&self) -> String {
        match self.aggregate {
            Aggregate::Percentile(n) => format!("p({n})"),
            ref other => format!("{other:?}").to_lowercase(),
        }
    }

    /// Compare a measured value with the bound.
    pub fn holds(&self, value: f64) -> bool {
        match self.op {
            Op::Lt => value < self.bound,
            Op::Le => value <= self.bound,
            Op::Gt => value > self.bound,
            Op::Ge => value >= self.bound,
            Op::Eq => value == self.bound,
            Op::Ne => value != self.bound,
        }
    }

    /// The value the threshold looks at in `report`'s totals, and whether it holds.
    pub fn evaluate(&self, report: &RunReport) -> Result<Verdict, ThresholdError> {
        let value = self.measure(&report.totals, report.elapsed)?.ok_or_else(|| ThresholdError::UnknownMetric {
            expr: self.source.clone(),
            metric: self.metric.clone(),
            suggestion: None,
            declared: Vec::new(),
        })?;
        Ok(Verdict { value, passed: self.holds(value) })
    }

    fn no_aggregate(&self) -> ThresholdError {
        ThresholdError::NoAggregate {
            expr: self.source.clone(),
            metric: self.metric.clone(),
            aggregate: self.aggregate_name(),
        }
    }

    /// The value the threshold looks at in `window`, measured over `elapsed` (for per-second
    /// rates); `None` when a plugin metric has no samples there.
    pub fn measure(&self, window: &Window, elapsed: Duration) -> Result<Option<f64>, ThresholdError> {
        let t = window;
        let secs = elapsed.as_secs_f64().max(1e-9);
        let tags = self.series_tags();
        // The endpoints a `{name:…}`/`{method:…}` selects, merged (only built-in HTTP metrics look).
        let endpoint = self.endpoint_selector().map(|(name, method)| t.http.endpoint_matching(name, method));
        let histogram = match self.metric.as_str() {
            "latency_ms" => Some(&t.latency),
            "service_ms" => Some(&t.service),
            "wait_ms" => Some(&t.wait),
            "gate_wait_ms" => Some(&t.gate_wait),
            names::HTTP_REQ_DURATION if tags.is_empty() => Some(&t.http.duration),
            names::HTTP_REQ_DURATION => endpoint.as_ref().map(|e| &e.duration),
            _ => None,
        };
        if let Some(h) = histogram {
            // An empty view has no percentile, mean or extreme: the threshold fails with "no
            // samples" rather than pass on a zero nobody measured.
            if h.count() == 0 && self.aggregate != Aggregate::Count {
                return Ok(None);
            }
            return from_percentiles(&h.percentiles(), h.count(), &self.aggregate, Some(h))
                .map(Some)
                .ok_or_else(|| self.no_aggregate());
        }
        let counter = |count: u64| match self.aggregate {
            Aggregate::Rate => Ok(Some(count as f64 / secs)),
            Aggregate::Count => Ok(Some(count as f64)),
            _ => Err(self.no_aggregate()),
        };
        // A rate over nothing is no sample, not 0% (every request failed of none) or 100%.
        let share = |part: u64, whole: u64| (whole > 0).then(|| part as f64 / whole as f64);
        match (self.metric.as_str(), &self.aggregate) {
            (TASKS_NOT_PASSED, Aggregate::Rate) => {
                let ended = t.counts.ended();
                return Ok(share(ended - t.counts.passed, ended));
            }
            (names::HTTP_REQ_FAILED, Aggregate::Rate) if tags.is_empty() => {
                return Ok(share(t.http.failed, t.http.requests));
            }
            (names::HTTP_REQ_FAILED, Aggregate::Rate) if let Some(e) = &endpoint => {
                return Ok(share(e.failed, e.requests));
            }
            (names::HTTP_REQS, _) => return counter(self.http_reqs(t, &tags, endpoint.as_ref())?),
            (names::HTTP_DENIED, _) => return counter(t.http.denied),
            (names::DATA_SENT, _) => return counter(t.http.bytes_sent),
            (names::DATA_RECEIVED, _) => return counter(t.http.bytes_received),
            (CHECKS, Aggregate::Rate) => return Ok(CheckSelector::new(&tags).tally(&t.plugin).rate()),
            _ => {}
        }
        self.plugin_value(t, tags, secs)
    }

    /// `http_reqs` as the tags select it: all, one status, redirects or not, or endpoints.
    fn http_reqs(
        &self,
        t: &Window,
        tags: &[(String, String)],
        endpoint: Option<&crate::http::EndpointStats>,
    ) -> Result<u64, ThresholdError> {
        Ok(match tags {
            [] => t.http.requests,
            [(k, v)] if k == "status" => {
                v.parse::<u16>().ok().and_then(|s| t.http.by_status.get(&s).copied()).unwrap_or(0)
            }
            [(k, v)] if k == REDIRECT_TAG => {
                let redirects = crate::http::redirects_of(&t.http.by_status);
                if v == "true" { redirects } else { t.http.requests.saturating_sub(redirects) }
            }
            _ => endpoint.ok_or_else(|| self.no_aggregate())?.requests,
        })
    }

    /// A plugin metric's value in `t`: the series the tags name (or all its tag sets folded).
    fn plugin_value(&self, t: &Window, tags: Vec<(String, String)>, secs: f64) -> Result<Option<f64>, ThresholdError> {
        let key = SeriesKey::new(self.metric.clone(), tags.clone());
        let series = if tags.is_empty() {
            t.plugin.by_name().into_iter().find(|s| s.key == key)
        } else {
            t.plugin.series().into_iter().find(|s| s.key == key)
        };
        let Some(series) = series else {
            return Ok(None);
        };
        match (series.value.to_summary(), &self.aggregate) {
            (SeriesSummary::Counter { count }, Aggregate::Count) => Ok(Some(count as f64)),
            (SeriesSummary::Counter { count }, Aggregate::Rate) => Ok(Some(count as f64 / secs)),
            (SeriesSummary::Gauge { value }, Aggregate::Value) => Ok(Some(value)),
            (SeriesSummary::Rate { rate, .. }, Aggregate::Rate) => Ok(Some(rate)),
            (SeriesSummary::Trend { count, stats }, agg) => {
                from_percentiles(&stats, count, agg, None).map(Some).ok_or_else(|| self.no_aggregate())
            }
            _ => Err(self.no_aggregate()),
        }
    }
}

/// How one threshold ended, as every output marks it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ThresholdResult {
    /// The expression as written.
    pub expr: String,
    /// The measured value; `None` when the metric had no samples (which fails the threshold).
    pub value: Option<f64>,
    /// Whether it held.
    pub passed: bool,
    /// Whether a failure stops the run while it goes.
    pub abort_on_fail: bool,
    /// Whether this threshold's failure stopped the run.
    pub aborted_run: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Outcome;

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

    #[test]
    fn validation_knows_built_ins_declared_metrics_and_scenarios() {
        let declared = [("login_ms", MetricKind::Trend)];
        let scenarios = ["default"];
        assert_eq!(t("latency_ms:p(99)<200").validate_among(&declared, &scenarios), Ok(MetricKind::Trend));
        assert_eq!(t("login_ms{route:a}:avg<5").validate_among(&declared, &scenarios), Ok(MetricKind::Trend));
        assert_eq!(t("http_reqs{status:500}:count<10").validate_among(&declared, &scenarios), Ok(MetricKind::Counter));
        let lookup = |name: &str| (name == "login_ms").then_some(MetricKind::Trend);
        assert_eq!(t("login_ms:max<5").validate(&lookup, &scenarios), Ok(MetricKind::Trend));
        let err = |expr: &str| t(expr).validate_among(&declared, &scenarios).unwrap_err().to_string();
        assert!(err("nosuch:count<1").starts_with("no metric named nosuch (built in: latency_ms, service_ms,"));
        assert!(err("nosuch:count<1").contains("; declared: login_ms; a plugin's own metric needs declaring"));
        assert_eq!(err("logn_ms:p(99)<1"), "no metric named logn_ms: did you mean login_ms?");
        assert_eq!(err("Latency_MS:p(99)<1"), "no metric named Latency_MS: did you mean latency_ms?");
        assert!(err("checks:p(99)<1").contains("has no p(99)"));
        assert!(err("latency_ms{scenario:api}:max<1").contains("no scenario named 'api'"));
        assert!(err("http_reqs{status:teapot}:count<1").contains("takes no tags"));
    }

    #[test]
    fn endpoint_tags_judge_that_endpoints_figures() {
        use crate::http::{Endpoint, HttpSample};
        let mut w = Window::default();
        for (method, name, ms, status, n) in
            [("GET", "GET /", 1, 200, 10), ("GET", "GET /delay", 20, 200, 10), ("POST", "GET /delay", 40, 500, 2)]
        {
            for _ in 0..n {
                let endpoint = Some(Endpoint::new(method, name));
                let duration = Duration::from_millis(ms);
                w.http.record(HttpSample::new(Some(status), duration, 0, endpoint));
            }
        }
        let value = |expr: &str| t(expr).measure(&w, Duration::from_secs(2)).unwrap();
        assert_eq!(value("http_req_duration{name:GET /}:p(50)<5"), Some(1.0));
        let max = value("http_req_duration{name:GET /delay}:max<5").unwrap();
        assert!((max - 40.0).abs() < 0.1, "both methods of a name: {max}");
        let max = value("http_req_duration{method:GET,name:GET /delay}:max<5").unwrap();
        assert!((max - 20.0).abs() < 0.1, "one method of a name: {max}");
        assert_eq!(value("http_reqs{method:get}:count<5"), Some(20.0), "methods match whatever their case");
        assert_eq!(value("http_reqs{name:GET /delay}:rate<5"), Some(6.0));
        assert_eq!(value("http_req_failed{name:GET /delay}:rate<5"), Some(2.0 / 12.0));
        assert_eq!(value("http_req_duration{name:nosuch}:p(95)<5"), None, "no samples");
        assert_eq!(value("http_reqs{name:nosuch}:count<5"), Some(0.0));
        assert!(
            t("http_req_duration{name:GET /users/{id}}:p(95)<5")
                .tags
                .contains(&("name".into(), "GET /users/{id}".into()))
        );

        let scenarios = ["default"];
        let ok = |expr: &str| t(expr).validate_among(&[], &scenarios);
        assert_eq!(ok("http_req_duration{name:login}:p(95)<200"), Ok(MetricKind::Trend));
        assert_eq!(ok("http_reqs{name:login,scenario:default}:count>1"), Ok(MetricKind::Counter));
        assert_eq!(ok("http_req_failed{method:POST}:rate<0.1"), Ok(MetricKind::Rate));
        for bad in [
            "http_req_duration{status:200}:p(95)<1",
            "http_req_duration{path:/x}:p(95)<1",
            "http_reqs{name:a,status:200}:count<1",
            "http_denied{name:a}:count<1",
            "latency_ms{name:a}:p(95)<1",
        ] {
            let err = ok(bad).unwrap_err();
            assert!(matches!(err, ThresholdError::Tags { .. }), "{bad}: {err}");
            assert!(err.to_string().contains("name:ENDPOINT and method:METHOD"), "{err}");
        }
    }

    #[test]
    fn checks_are_picked_by_a_name_with_spaces_and_by_their_own_tags() {
        let mut w = Window::default();
        for (name, tier, ok, n) in [
            ("status is 200", "gold", true, 9),
            ("status is 200", "gold", false, 1),
            ("status is 200", "silver", false, 5),
            ("login ok", "gold", true, 5),
        ] {
            for _ in 0..n {
                w.plugin.check(SeriesKey::new(name.into(), vec![("tier".into(), tier.into())]), ok);
            }
        }
        let value = |expr: &str| t(expr).measure(&w, Duration::from_secs(1)).unwrap();
        let spaced = t("checks{check:status is 200}:rate>0.99");
        assert_eq!(spaced.tags, vec![("check".to_owned(), "status is 200".to_owned())]);
        assert_eq!(value("checks{check:status is 200}:rate>0.99"), Some(9.0 / 15.0), "every tier");
        assert_eq!(value("checks{check:status is 200, tier:gold}:rate>0.99"), Some(0.9), "one tagged case");
        assert_eq!(value("checks{tier:gold}:rate>0.99"), Some(14.0 / 15.0), "every check with the tag");
        assert_eq!(value("checks{tier:silver}:rate>0.5"), Some(0.0));
        assert_eq!(value("checks:rate>0.5"), Some(14.0 / 20.0));
        assert_eq!(value("checks{check:nosuch}:rate>0.5"), None, "no check made: no samples");

        let scenarios = ["default"];
        let declared =
            [("status is 200", MetricKind::Rate), ("login ok", MetricKind::Rate), ("size", MetricKind::Trend)];
        let ok = |expr: &str| t(expr).validate_among(&declared, &scenarios);
        assert_eq!(ok("checks{check:status is 200,tier:gold}:rate>0.99"), Ok(MetricKind::Rate));
        assert_eq!(ok("checks{tier:gold,scenario:default}:rate>0.99"), Ok(MetricKind::Rate));
        assert_eq!(ok("checks{check:not declared at all}:rate>0.99"), Ok(MetricKind::Rate), "nothing close");
        assert_eq!(t("checks{check:anything}:rate>0.9").validate(&|_| None, &scenarios), Ok(MetricKind::Rate));
        let err = ok("checks{check:status is 20}:rate>0.99").unwrap_err().to_string();
        assert!(err.starts_with("no check named 'status is 20': did you mean 'status is 200'?"), "{err}");
        assert!(ok("checks{check:sise}:rate>0.99").is_ok(), "a trend is no check to suggest");
        let err = "status is 200:rate>0.99".parse::<Threshold>().unwrap_err().to_string();
        assert!(err.contains("a check's name goes in checks{check:status is 200}"), "{err}");
    }

    #[test]
    fn group_duration_is_built_in_and_judged_per_group() {
        let mut w = Window::default();
        let group = |path: &str| SeriesKey::new(GROUP_DURATION.into(), vec![("group".into(), path.into())]);
        for ms in [10.0, 20.0, 30.0] {
            w.plugin.trend(group("::checkout"), ms);
        }
        w.plugin.trend(group("::checkout::pay"), 400.0);
        let nested = t("group_duration{group:::checkout::pay}:p(95)<500");
        assert_eq!(nested.tags, vec![("group".to_owned(), "::checkout::pay".to_owned())]);
        assert_eq!(nested.validate(&|_| None, &["default"]), Ok(MetricKind::Trend), "no declaration needed");
        let value = |expr: &str| t(expr).measure(&w, Duration::from_secs(1)).unwrap();
        assert_eq!(value("group_duration{group:::checkout}:max<500"), Some(30.0));
        assert_eq!(value("group_duration{group:::checkout::pay}:max<500"), Some(400.0));
        assert_eq!(value("group_duration:max<500"), Some(400.0), "every group");
        assert_eq!(value("group_duration{group:::nosuch}:max<500"), None);
        assert!(t("group_duration:rate>1").validate(&|_| None, &["default"]).is_err(), "a trend");
    }

    #[test]
    fn a_typo_gets_the_closest_known_name() {
        let known = ["journey_ms", "orders", "latency_ms", "checks", "http_reqs"];
        let guess = |name: &str| did_you_mean(name, known);
        assert_eq!(guess("jorney_ms"), Some("journey_ms"), "a letter dropped");
        assert_eq!(guess("journey_msx"), Some("journey_ms"), "a letter added");
        assert_eq!(guess("jounrey_ms"), Some("journey_ms"), "two neighbours swapped: one edit");
        assert_eq!(guess("JOURNEY_MS"), Some("journey_ms"), "case alone");
        assert_eq!(guess("ordrs"), Some("orders"));
        assert_eq!(guess("http_req"), Some("http_reqs"));
        assert_eq!(guess("check"), Some("checks"));
        assert_eq!(guess("journey_seconds"), None, "too far");
        assert_eq!(guess("x"), None, "a one-letter name is close to nothing");
        assert_eq!(did_you_mean("size_a", ["size_b", "size_c"]), Some("size_b"), "the first of equals");
        assert_eq!(did_you_mean("size_a", ["size_bc", "size_c"]), Some("size_c"), "the closest");
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("ca", "abc"), 3, "optimal string alignment: no edit of a swapped pair");
    }

    #[test]
    fn tasks_failed_is_read_as_tasks_not_passed_and_counts_every_outcome_but_passed() {
        let old = t("tasks_failed:rate<0.1");
        assert_eq!(old.metric, TASKS_NOT_PASSED);
        assert_eq!(old.source, "tasks_failed:rate<0.1", "outputs key it by what the user wrote");
        assert_eq!(old.renamed(), Some(("tasks_failed", TASKS_NOT_PASSED)));
        assert_eq!(t("tasks_not_passed:rate<0.1").renamed(), None);
        assert_eq!(old.validate(&|_| None, &["default"]), Ok(MetricKind::Rate));
        assert_eq!(built_in_kind("tasks_failed"), Some(MetricKind::Rate), "the old name stays reserved");
        let mut w = Window::default();
        w.counts.scheduled = 10;
        for (outcome, n) in
            [(Outcome::Passed, 5), (Outcome::Failed, 1), (Outcome::Dropped, 2), (Outcome::Interrupted, 2)]
        {
            w.counts.add(outcome, n);
        }
        let secs = Duration::from_secs(1);
        assert_eq!(old.measure(&w, secs), Ok(Some(0.5)), "failed, dropped and interrupted: 5 of 10");
        assert_eq!(t("tasks_not_passed:rate<0.1").measure(&w, secs), Ok(Some(0.5)));
    }

    #[test]
    fn a_trend_percentile_is_never_above_its_exact_max() {
        let mut w = Window::default();
        for v in [1.0, 2.0, 299.0] {
            w.plugin.trend(SeriesKey::new("size".into(), vec![]), v);
        }
        let p999 = t("size:p(99.9)<1").measure(&w, Duration::from_secs(1)).unwrap();
        assert_eq!(p999, Some(299.0), "the HDR bucket's upper edge would be 299.007");
    }

    #[test]
    fn measuring_picks_the_tagged_series_and_counts_no_samples_as_none() {
        let mut w = Window::default();
        for (route, ms) in [("a", 10.0), ("a", 20.0), ("b", 500.0)] {
            w.plugin.trend(SeriesKey::new("login_ms".into(), vec![("route".into(), route.into())]), ms);
        }
        w.plugin.check(SeriesKey::new("ok".into(), vec![]), true);
        w.plugin.check(SeriesKey::new("ok".into(), vec![]), false);
        let secs = Duration::from_secs(2);
        let value = |expr: &str| t(expr).measure(&w, secs).unwrap();
        assert_eq!(value("login_ms{route:a}:max<100"), Some(20.0));
        assert_eq!(value("login_ms:max<100"), Some(500.0), "no tags: every series of the name");
        assert!(!t("login_ms:max<100").holds(500.0));
        assert_eq!(value("checks:rate>0.9"), Some(0.5));
        assert_eq!(value("login_ms{route:c}:max<100"), None);
        assert_eq!(value("signup_ms:max<100"), None);
    }
}
