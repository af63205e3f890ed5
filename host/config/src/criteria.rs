//! Pass/fail criteria and the outputs they feed: `--threshold` (k6's expression syntax plus
//! `;abort_on_fail` and `;delay=DUR`), `--metric NAME:KIND` declarations of plugin metrics, and
//! `--out json=FILE`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use loadhost_metrics::{MetricKind, Threshold, ThresholdError};
use serde::{Deserialize, Deserializer};
use thiserror::Error;

use crate::units::{Dur, REDACTED};

/// A threshold as the user gave it: the expression and what a failure does while the run goes.
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdSpec {
    /// The parsed expression.
    pub threshold: Threshold,
    /// Stop the run as soon as the threshold fails (exit 99), as k6's `abortOnFail`.
    pub abort_on_fail: bool,
    /// Judge it for the abort only after this long into the run, as k6's `delayAbortEval`.
    pub delay: Duration,
}

/// Why a `--threshold` does not parse. The message says what is wrong and leaves naming the flag
/// and the expression to the caller (clap's `invalid value '…' for '--threshold <EXPR>'`, or the
/// TOML file's line), so neither is said twice.
#[derive(Debug, Error, PartialEq)]
#[non_exhaustive]
pub enum SpecError {
    /// The expression itself.
    #[error(transparent)]
    Expr(#[from] ThresholdError),
    /// Something after a `;` that is not an option.
    #[error("unknown option '{0}' (expected abort_on_fail or delay=DURATION)")]
    UnknownOption(String),
    /// `delay=` with something other than a duration (the message quotes the value).
    #[error("delay: {0}")]
    Delay(String),
    /// `delay=` means when to start judging for the abort: alone it means nothing.
    #[error("delay= only applies with abort_on_fail")]
    DelayWithoutAbort,
}

impl FromStr for ThresholdSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Self, SpecError> {
        let mut parts = text.split(';');
        let threshold: Threshold = parts.next().unwrap_or_default().parse()?;
        let mut spec = ThresholdSpec { threshold, abort_on_fail: false, delay: Duration::ZERO };
        for option in parts.map(str::trim).filter(|p| !p.is_empty()) {
            match option.split_once('=') {
                None if matches!(option, "abort_on_fail" | "abortOnFail") => spec.abort_on_fail = true,
                Some(("delay" | "delayAbortEval", value)) => {
                    spec.delay = value.trim().parse::<Dur>().map_err(SpecError::Delay)?.0;
                }
                _ => return Err(SpecError::UnknownOption(option.to_owned())),
            }
        }
        if !spec.delay.is_zero() && !spec.abort_on_fail {
            return Err(SpecError::DelayWithoutAbort);
        }
        Ok(spec)
    }
}

impl fmt::Display for ThresholdSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.threshold.source)?;
        if self.abort_on_fail {
            f.write_str(";abort_on_fail")?;
        }
        if !self.delay.is_zero() {
            write!(f, ";delay={}", Dur(self.delay))?;
        }
        Ok(())
    }
}

display_serialize!(ThresholdSpec);

impl<'de> Deserialize<'de> for ThresholdSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// TOML takes the flag's string or k6's object form with snake-case keys.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Table {
                threshold: String,
                #[serde(default)]
                abort_on_fail: bool,
                #[serde(default)]
                delay: Option<Dur>,
            },
        }
        match Raw::deserialize(d)? {
            // The file's error names the place; the message names the expression once.
            Raw::Text(text) => {
                text.parse().map_err(|err| serde::de::Error::custom(format!("threshold '{text}': {err}")))
            }
            Raw::Table { threshold, abort_on_fail, delay } => {
                let mut spec: ThresholdSpec = threshold
                    .parse()
                    .map_err(|err| serde::de::Error::custom(format!("threshold '{threshold}': {err}")))?;
                spec.abort_on_fail = abort_on_fail;
                spec.delay = delay.map_or(Duration::ZERO, |d| d.0);
                if !spec.delay.is_zero() && !abort_on_fail {
                    return Err(serde::de::Error::custom(format!(
                        "threshold '{threshold}': delay only applies with abort_on_fail = true"
                    )));
                }
                Ok(spec)
            }
        }
    }
}

/// Why the criteria cannot be judged; one line naming the flag and what it was given.
#[derive(Debug, Error, PartialEq)]
#[non_exhaustive]
pub enum CriteriaError {
    /// A threshold that cannot be judged: unknown metric, wrong aggregate, unknown scenario.
    #[error("--threshold '{expr}': {error}")]
    Threshold {
        /// The expression as written.
        expr: String,
        /// What is wrong with it.
        error: ThresholdError,
    },
    /// A `--metric` declaration that clashes.
    #[error("--metric {decl}: {why}")]
    Metric {
        /// The declaration as written.
        decl: String,
        /// What is wrong.
        why: &'static str,
    },
    /// A `--metric` declaration that gives a metric the plugin declares another kind.
    #[error(
        "--metric {decl}: the plugin declares {name} as a {plugin_kind} (leave the flag out: a declared metric needs none)"
    )]
    Disagrees {
        /// The declaration as written.
        decl: String,
        /// The metric's name.
        name: String,
        /// The kind the plugin declares.
        plugin_kind: &'static str,
    },
}

/// Check, before any load, that the declarations do not clash and that every threshold can be
/// judged: its metric is built in or declared with `--metric`, its aggregate suits the metric's
/// kind, and a scenario tag names one of `scenarios`. An unknown metric is an error, never a silent
/// pass. `loadhost merge` checks with this; `loadhost run` with [`check_declared`], which also
/// knows what the plugin declares.
pub fn check(metrics: &[MetricDecl], thresholds: &[ThresholdSpec], scenarios: &[&str]) -> Result<(), CriteriaError> {
    check_declared(metrics, Some(&[]), thresholds, scenarios)
}

/// [`check`], with the metrics the plugin declares in its file (`plugin`) known as well as the
/// `--metric` flags: a threshold on a declared metric needs no flag, and a flag on one must give
/// the plugin's kind. `plugin` is `None` before the plugin file is read: an unknown metric then
/// waits for the check with its declarations, and everything else is checked now.
pub fn check_declared(
    flags: &[MetricDecl],
    plugin: Option<&[MetricDecl]>,
    thresholds: &[ThresholdSpec],
    scenarios: &[&str],
) -> Result<(), CriteriaError> {
    let from_plugin = plugin.unwrap_or_default();
    let mut declared: Vec<(&str, MetricKind)> = from_plugin.iter().map(|d| (d.name.as_str(), d.kind)).collect();
    for decl in flags {
        let clash = |why: &'static str| CriteriaError::Metric { decl: decl.to_string(), why };
        if loadhost_metrics::catalogue::built_in_kind(&decl.name).is_some() {
            return Err(clash("that name is a built-in metric"));
        }
        if let Some(own) = from_plugin.iter().find(|d| d.name == decl.name && d.kind != decl.kind) {
            return Err(CriteriaError::Disagrees {
                decl: decl.to_string(),
                name: own.name.clone(),
                plugin_kind: own.kind.name(),
            });
        }
        match declared.iter().find(|(name, _)| *name == decl.name) {
            Some((_, kind)) if *kind != decl.kind => return Err(clash("declared twice with different kinds")),
            Some(_) => {}
            None => declared.push((decl.name.as_str(), decl.kind)),
        }
    }
    for spec in thresholds {
        match spec.threshold.validate_among(&declared, scenarios) {
            Ok(_) => {}
            Err(ThresholdError::UnknownMetric { .. }) if plugin.is_none() => {}
            Err(error) => return Err(CriteriaError::Threshold { expr: spec.threshold.source.clone(), error }),
        }
    }
    Ok(())
}

/// A plugin metric declared ahead of the run, so thresholds on it can be checked before load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricDecl {
    /// The name the plugin records it under.
    pub name: String,
    /// Its kind.
    pub kind: MetricKind,
}

impl FromStr for MetricDecl {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (name, kind) =
            text.split_once(':').ok_or_else(|| format!("'{text}' is not NAME:KIND (trend, counter, rate, gauge)"))?;
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            return Err(format!("'{text}': a metric name is letters, digits, '_' or '.'"));
        }
        Ok(MetricDecl { name: name.to_owned(), kind: kind.trim().parse().map_err(|e| format!("'{text}': {e}"))? })
    }
}

impl fmt::Display for MetricDecl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.name, self.kind.name())
    }
}

/// A streaming output: `json=FILE` writes JSON lines as the run goes; the others push the run's
/// metrics to a receiver every interval (issue 30; k6's spellings where it has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutSpec {
    /// One JSON object per line: per interval, per plugin-metric batch, and the summary at the end.
    Json(PathBuf),
    /// The run's metrics pushed to a receiver at a URL.
    Push(PushKind, String),
}

/// A receiver the run's metrics are pushed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushKind {
    /// `prometheus-rw=URL`: Prometheus remote write 1.0 (protobuf + snappy).
    PrometheusRw,
    /// `otlp=URL`: OTLP/HTTP protobuf.
    Otlp,
    /// `influxdb=URL`: InfluxDB 1.x line protocol.
    Influxdb,
}

impl PushKind {
    /// Every kind, as `--out` spells it.
    pub const ALL: [(PushKind, &'static str); 3] =
        [(PushKind::PrometheusRw, "prometheus-rw"), (PushKind::Otlp, "otlp"), (PushKind::Influxdb, "influxdb")];

    /// As `--out` spells it.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(k, _)| *k == self).map_or("", |(_, name)| name)
    }
}

impl FromStr for OutSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let expected = "expected json=FILE, prometheus-rw=URL, otlp=URL or influxdb=URL";
        match text.split_once('=') {
            Some(("json", path)) if !path.is_empty() => Ok(OutSpec::Json(PathBuf::from(path))),
            Some((kind, url)) => match PushKind::ALL.iter().find(|(_, name)| *name == kind) {
                Some((kind, _)) => check_url(url).map(|()| OutSpec::Push(*kind, url.to_owned())),
                None => Err(format!("'{text}' is not an output: {expected}")),
            },
            None => Err(format!("'{text}' is not an output: {expected}")),
        }
    }
}

/// A receiver's URL: http or https, with a host.
fn check_url(url: &str) -> Result<(), String> {
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') => Ok(()),
        _ => Err(format!("'{}' is not a receiver's URL: expected http://HOST:PORT/PATH or https://…", redact_url(url))),
    }
}

/// `url` fit to show: a password in it (`user:PASSWORD@`, or InfluxDB's `p=` parameter) replaced.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, path) = rest.split_once('/').map_or((rest, None), |(a, p)| (a, Some(p)));
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => format!("{}:{REDACTED}@{host}", user.split(':').next().unwrap_or_default()),
        None => authority.to_owned(),
    };
    let path = path.map(|p| {
        let (before, query) = p.split_once('?').map_or((p, None), |(b, q)| (b, Some(q)));
        let query = query.map(|q| {
            q.split('&')
                .map(|pair| if pair.starts_with("p=") { format!("p={REDACTED}") } else { pair.to_owned() })
                .collect::<Vec<_>>()
                .join("&")
        });
        match query {
            Some(q) => format!("/{before}?{q}"),
            None => format!("/{before}"),
        }
    });
    let sep = if scheme.is_empty() { "" } else { "://" };
    format!("{scheme}{sep}{authority}{}", path.unwrap_or_default())
}

impl fmt::Display for OutSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutSpec::Json(path) => write!(f, "json={}", path.display()),
            // Shown in every output's config echo: never with a password.
            OutSpec::Push(kind, url) => write!(f, "{}={}", kind.name(), redact_url(url)),
        }
    }
}

/// Where the plugin's stdout and stderr lines go (`--plugin-output`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PluginOutputSpec {
    /// Through the log, each line prefixed with where it came from, rate-limited (the default).
    #[default]
    Log,
    /// Every line into FILE, with a timestamp and the same prefix.
    File(PathBuf),
    /// Nowhere.
    None,
}

impl FromStr for PluginOutputSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.split_once('=') {
            None if text == "log" => Ok(PluginOutputSpec::Log),
            None if text == "none" => Ok(PluginOutputSpec::None),
            Some(("file", path)) if !path.is_empty() => Ok(PluginOutputSpec::File(PathBuf::from(path))),
            _ => Err(format!("'{text}' is not a plugin output: expected log, file=PATH or none")),
        }
    }
}

impl fmt::Display for PluginOutputSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginOutputSpec::Log => f.write_str("log"),
            PluginOutputSpec::File(path) => write!(f, "file={}", path.display()),
            PluginOutputSpec::None => f.write_str("none"),
        }
    }
}

/// How much of each request `--http-debug` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpDebugArg {
    /// Method, URL, status and headers (`--http-debug`).
    Headers,
    /// Those and the bodies (`--http-debug=full`).
    Full,
}

impl FromStr for HttpDebugArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "headers" => Ok(HttpDebugArg::Headers),
            "full" => Ok(HttpDebugArg::Full),
            _ => Err(format!("'{text}' is not an HTTP debug level: expected --http-debug or --http-debug=full")),
        }
    }
}

impl fmt::Display for HttpDebugArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HttpDebugArg::Headers => "headers",
            HttpDebugArg::Full => "full",
        })
    }
}

/// How remote write sends a latency histogram (`--out-histograms`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HistogramsArg {
    /// Native histograms: exponential buckets, one series per histogram.
    #[default]
    Native,
    /// Classic histograms: a `_bucket{le}` series per boundary, `_sum` and `_count`.
    Classic,
}

impl FromStr for HistogramsArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "native" => Ok(HistogramsArg::Native),
            "classic" => Ok(HistogramsArg::Classic),
            _ => Err(format!("'{text}' is not a histogram style: expected native or classic")),
        }
    }
}

impl fmt::Display for HistogramsArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HistogramsArg::Native => "native",
            HistogramsArg::Classic => "classic",
        })
    }
}

text_serde!(MetricDecl, OutSpec, PluginOutputSpec, HttpDebugArg, HistogramsArg);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_follow_the_expression() {
        let spec: ThresholdSpec = "http_req_failed:rate<0.01;abort_on_fail;delay=10s".parse().unwrap();
        assert!(spec.abort_on_fail);
        assert_eq!(spec.delay, Duration::from_secs(10));
        assert_eq!(spec.threshold.metric, "http_req_failed");
        assert_eq!(spec.to_string(), "http_req_failed:rate<0.01;abort_on_fail;delay=10s");
        let plain: ThresholdSpec = "latency_ms:p(99)<200".parse().unwrap();
        assert!(!plain.abort_on_fail);
    }

    #[test]
    fn bad_options_are_named() {
        for (bad, says) in [
            ("latency_ms:p(99)<200;abort", "unknown option 'abort'"),
            ("latency_ms:p(99)<200;delay=5s", "only applies with abort_on_fail"),
            ("latency_ms:p(99)<200;abort_on_fail;delay=soon", "not a duration"),
            ("latency_ms<200", "no ':'"),
        ] {
            let err = bad.parse::<ThresholdSpec>().unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
            assert!(!err.contains("threshold '"), "the caller names the flag and the expression: {err}");
        }
    }

    #[test]
    fn criteria_errors_name_the_flag_and_the_expression_once() {
        let specs = |texts: &[&str]| texts.iter().map(|t| t.parse::<ThresholdSpec>().unwrap()).collect::<Vec<_>>();
        let err = check(&[], &specs(&["nosuch:count<1"]), &["default"]).unwrap_err().to_string();
        assert!(err.starts_with("--threshold 'nosuch:count<1': no metric named nosuch (built in:"), "{err}");
        assert_eq!(err.matches("nosuch:count<1").count(), 1, "{err}");
        let err = check(&[], &specs(&["latncy_ms:p(99)<1"]), &["default"]).unwrap_err().to_string();
        assert_eq!(err, "--threshold 'latncy_ms:p(99)<1': no metric named latncy_ms: did you mean latency_ms?");
        let err = check(&[], &specs(&["latency_ms:rate<1"]), &["default"]).unwrap_err().to_string();
        assert!(err.starts_with("--threshold 'latency_ms:rate<1': latency_ms (a trend"), "{err}");
        let decl: MetricDecl = "login:trend".parse().unwrap();
        assert!(check(std::slice::from_ref(&decl), &specs(&["login:p(99)<5"]), &["default"]).is_ok());
        let twice = ["login:trend".parse().unwrap(), "login:counter".parse().unwrap()];
        let err = check(&twice, &[], &["default"]).unwrap_err().to_string();
        assert_eq!(err, "--metric login:counter: declared twice with different kinds");
    }

    #[test]
    fn the_plugins_declarations_need_no_flag_and_a_flag_must_agree_with_them() {
        let specs = |texts: &[&str]| texts.iter().map(|t| t.parse::<ThresholdSpec>().unwrap()).collect::<Vec<_>>();
        let plugin: Vec<MetricDecl> = vec!["journey_ms:trend".parse().unwrap(), "orders:counter".parse().unwrap()];
        let on = specs(&["journey_ms:p(95)<300", "orders{tier:bulk}:count>0"]);
        assert_eq!(check_declared(&[], Some(&plugin), &on, &["default"]), Ok(()));
        let agree: MetricDecl = "orders:counter".parse().unwrap();
        assert_eq!(check_declared(std::slice::from_ref(&agree), Some(&plugin), &on, &["default"]), Ok(()));
        let disagree: MetricDecl = "orders:trend".parse().unwrap();
        let err = check_declared(&[disagree], Some(&plugin), &on, &["default"]).unwrap_err().to_string();
        assert!(err.starts_with("--metric orders:trend: the plugin declares orders as a counter"), "{err}");
        let typo = specs(&["jorney_ms:p(95)<300"]);
        let err = check_declared(&[], Some(&plugin), &typo, &["default"]).unwrap_err().to_string();
        assert_eq!(err, "--threshold 'jorney_ms:p(95)<300': no metric named jorney_ms: did you mean journey_ms?");
        assert_eq!(check_declared(&[], None, &typo, &["default"]), Ok(()), "before the plugin is read, it waits");
        let wrong = specs(&["latency_ms:rate<1"]);
        assert!(check_declared(&[], None, &wrong, &["default"]).is_err(), "the rest is checked at once");
    }

    #[test]
    fn declarations_and_outputs_parse() {
        let decl: MetricDecl = "login_ms:trend".parse().unwrap();
        assert_eq!((decl.name.as_str(), decl.kind), ("login_ms", MetricKind::Trend));
        assert!("login_ms:histogram".parse::<MetricDecl>().unwrap_err().contains("unknown metric kind"));
        assert!("login ms:trend".parse::<MetricDecl>().is_err());
        assert_eq!("json=out.jsonl".parse::<OutSpec>().unwrap(), OutSpec::Json("out.jsonl".into()));
        assert!("influx=x".parse::<OutSpec>().unwrap_err().contains("json=FILE"));
        assert_eq!(
            "prometheus-rw=http://127.0.0.1:9090/api/v1/write".parse::<OutSpec>().unwrap(),
            OutSpec::Push(PushKind::PrometheusRw, "http://127.0.0.1:9090/api/v1/write".into())
        );
        assert!("otlp=localhost:4318".parse::<OutSpec>().unwrap_err().contains("not a receiver's URL"));
        let spec: OutSpec = "influxdb=http://u:secret@h:8086/write?db=k6&p=secret&u=u".parse().unwrap();
        assert_eq!(spec.to_string(), format!("influxdb=http://u:{REDACTED}@h:8086/write?db=k6&p={REDACTED}&u=u"));
    }
}
