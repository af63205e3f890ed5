//! The one reader of a metric's value. A threshold, a `compare --fail-on` rule (over results
//! files or summary JSON) and `find-max` each name a metric, its tags and an aggregate (a
//! [`Query`]); [`value`] looks the name up in the [catalogue](crate::catalogue) and asks the
//! source for the figures it keeps ([`Figures`]): an interval's window, a run's totals, a summary
//! JSON or one of its scenarios. Each source only says what it holds; what `http_reqs{redirect:true}`
//! or `checks{tier:gold}` means is decided here, once.

use std::borrow::Cow;
use std::collections::BTreeMap;

use thiserror::Error;

use crate::catalogue::{
    self, Aggregate, ENDPOINT_METHOD_TAG, ENDPOINT_NAME_TAG, Phase, Quantity, REDIRECT_TAG, Timing,
};
use crate::checks::{CheckSelector, PassFail};
use crate::generator_verdict::GeneratorTally;
use crate::histogram::{LatencyHistogram, Percentiles};

mod window;

pub use window::Sample;

/// What is asked: a metric, the tags that narrow it (the scenario tag already taken out: the
/// caller picks the scenario's figures), and the aggregate.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// The metric's name (a renamed one already read as its new name).
    pub metric: &'a str,
    /// `key:value` selectors.
    pub tags: &'a [(String, String)],
    /// The statistic.
    pub aggregate: &'a Aggregate,
}

/// Why a value cannot be read.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ReadError {
    /// The metric has no such aggregate (or no such selection) in these figures.
    #[error("no such aggregate")]
    NoAggregate,
    /// The figures do not keep it; the text says what they keep instead.
    #[error("{0}")]
    NotKept(String),
}

/// A distribution as a source keeps it: its percentiles, and the histogram when the source has
/// one (any percentile), else only the summary's (p50, p90, p95, p99, p99.9).
#[derive(Debug, Clone)]
pub struct Trend<'a> {
    /// How many values; `None` when the source does not keep the count.
    pub count: Option<u64>,
    /// Its percentiles.
    pub stats: Percentiles,
    /// The histogram, for any percentile.
    pub histogram: Option<Cow<'a, LatencyHistogram>>,
}

impl<'a> Trend<'a> {
    /// The trend of a histogram.
    pub fn of(histogram: Cow<'a, LatencyHistogram>) -> Self {
        Trend { count: Some(histogram.count()), stats: histogram.percentiles(), histogram: Some(histogram) }
    }
}

/// The HTTP figures of a run, or of the endpoints a `{name:…}`/`{method:…}` selector picks.
#[derive(Debug, Clone)]
pub struct HttpFigures<'a> {
    /// Requests that got a response or failed trying.
    pub requests: u64,
    /// Of those, failed ones.
    pub failed: u64,
    /// Refused by the allow-list (whole run only).
    pub denied: u64,
    /// Bytes written (whole run only).
    pub sent: u64,
    /// Bytes read (whole run only).
    pub received: u64,
    /// Responses by status (whole run only).
    pub by_status: Option<&'a BTreeMap<u16, u64>>,
    /// Request durations.
    pub duration: Trend<'a>,
}

/// A series' value (a plugin's metric, or a built-in one recorded as a series).
#[derive(Debug, Clone)]
pub enum SeriesReading<'a> {
    /// A running total.
    Counter(u64),
    /// The latest value.
    Gauge(f64),
    /// Check results.
    Check(PassFail),
    /// A distribution.
    Trend(Trend<'a>),
}

/// Tasks as a source counts them.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskFigures {
    /// Started executing.
    pub started: u64,
    /// The achieved rate: started ÷ load-generation time (per second).
    pub started_per_s: f64,
    /// Ended, in any outcome.
    pub ended: u64,
    /// Ended passed.
    pub passed: u64,
}

/// What a source of measurements keeps. Each method answers `Err` for what the source does not
/// keep at all, `Ok(None)` where it keeps nothing of it this time.
pub trait Figures {
    /// The seconds the figures span: a counter's `rate` is its count over these.
    fn secs(&self) -> f64;
    /// A task timing's distribution.
    fn timing(&self, timing: Timing) -> Result<Trend<'_>, ReadError>;
    /// The tasks.
    fn tasks(&self) -> Result<TaskFigures, ReadError>;
    /// The check results `selector` picks.
    fn checks(&self, selector: &CheckSelector<'_>) -> Result<PassFail, ReadError>;
    /// The run's HTTP figures; `None` when it made no request.
    fn http(&self) -> Result<Option<HttpFigures<'_>>, ReadError>;
    /// The endpoints `name` and `method` pick, merged.
    fn endpoint(&self, name: Option<&str>, method: Option<&str>) -> Result<Option<HttpFigures<'_>>, ReadError>;
    /// The generator's verdicts on the intervals these figures span.
    fn generator(&self) -> Result<GeneratorTally, ReadError>;
    /// One phase of HTTP requests: the whole run's (`endpoint` `None`), or the endpoints an
    /// [`endpoint_selector`] picks; `None` when no request recorded its phases.
    fn http_phase(&self, phase: Phase, endpoint: Option<EndpointPick<'_>>) -> Result<Option<Trend<'_>>, ReadError>;
    /// The series `name` with exactly `tags`, or every tag set folded when `tags` is empty.
    fn series(&self, name: &str, tags: &[(String, String)]) -> Result<Option<SeriesReading<'_>>, ReadError>;
}

/// The endpoints a selector picks: `(name, method)`, `None` matching any.
pub type EndpointPick<'a> = (Option<&'a str>, Option<&'a str>);

/// The value of `query` in `figures`; `Ok(None)` when there is no sample to read (an empty
/// distribution, a share of nothing, a series never recorded).
pub fn value(query: &Query<'_>, figures: &dyn Figures) -> Result<Option<f64>, ReadError> {
    let agg = query.aggregate;
    let counter = |count: u64| match agg {
        Aggregate::Count => Ok(Some(count as f64)),
        Aggregate::Rate => Ok(Some(count as f64 / figures.secs().max(1e-9))),
        _ => Err(ReadError::NoAggregate),
    };
    let rate_only = |share: Option<f64>| match agg {
        Aggregate::Rate => Ok(share),
        _ => Err(ReadError::NoAggregate),
    };
    let quantity = quantity_of(query.metric);
    match quantity {
        Quantity::Timing(timing) => trend_value(&figures.timing(timing)?, agg),
        Quantity::TasksStarted => {
            let tasks = figures.tasks()?;
            match agg {
                Aggregate::Rate => Ok(Some(tasks.started_per_s)),
                _ => counter(tasks.started),
            }
        }
        Quantity::TasksNotPassed => {
            let tasks = figures.tasks()?;
            rate_only(share(tasks.ended.saturating_sub(tasks.passed), tasks.ended))
        }
        Quantity::Checks => rate_only(figures.checks(&CheckSelector::new(query.tags))?.rate()),
        Quantity::GeneratorSaturated => {
            let tally = figures.generator()?;
            rate_only(share(tally.saturated, tally.judged))
        }
        Quantity::HttpPhase(phase) => match figures.http_phase(phase, endpoint_selector(query.tags))? {
            Some(trend) => trend_value(&trend, agg),
            None => Ok(None),
        },
        Quantity::Series => match figures.series(query.metric, query.tags)? {
            None => Ok(None),
            Some(SeriesReading::Counter(count)) => counter(count),
            Some(SeriesReading::Gauge(value)) if *agg == Aggregate::Value => Ok(Some(value)),
            Some(SeriesReading::Check(results)) => rate_only(results.rate()),
            Some(SeriesReading::Trend(trend)) => trend_value(&trend, agg),
            Some(SeriesReading::Gauge(_)) => Err(ReadError::NoAggregate),
        },
        // Only the summary shows these; `quantity_of` reads such a name as a series.
        Quantity::Shown => Err(ReadError::NoAggregate),
        http @ (Quantity::HttpReqs
        | Quantity::HttpReqDuration
        | Quantity::HttpReqFailed
        | Quantity::HttpDenied
        | Quantity::DataSent
        | Quantity::DataReceived) => {
            let Some(figures) = http_figures(query.tags, figures)? else { return Ok(None) };
            match http {
                Quantity::HttpReqs => counter(http_reqs(&figures, query.tags)?),
                Quantity::HttpReqDuration => trend_value(&figures.duration, agg),
                Quantity::HttpReqFailed => rate_only(share(figures.failed, figures.requests)),
                Quantity::HttpDenied => counter(figures.denied),
                Quantity::DataSent => counter(figures.sent),
                _ => counter(figures.received),
            }
        }
    }
}

/// How many samples `query`'s statistic stands on in `figures` (tasks, requests, checks, trend
/// values); `None` for what is not sampled (counters, gauges, rates of events) — `compare`'s
/// test weighs each interval by it.
pub fn samples(query: &Query<'_>, figures: &dyn Figures) -> Result<Option<u64>, ReadError> {
    let quantity = quantity_of(query.metric);
    Ok(match quantity {
        Quantity::Timing(timing) => figures.timing(timing)?.count,
        Quantity::TasksNotPassed => Some(figures.tasks()?.ended),
        Quantity::Checks => Some(figures.checks(&CheckSelector::new(query.tags))?.total()),
        Quantity::GeneratorSaturated => Some(figures.generator()?.judged),
        Quantity::HttpPhase(phase) => {
            figures.http_phase(phase, endpoint_selector(query.tags))?.map_or(Some(0), |t| t.count)
        }
        Quantity::HttpReqDuration | Quantity::HttpReqFailed => {
            let http = http_figures(query.tags, figures)?;
            match (http, quantity) {
                (None, _) => Some(0),
                (Some(h), Quantity::HttpReqDuration) if endpoint_selector(query.tags).is_none() => h.duration.count,
                (Some(h), _) => Some(h.requests),
            }
        }
        Quantity::Series => match figures.series(query.metric, query.tags)? {
            None => Some(0),
            Some(SeriesReading::Trend(t)) => t.count,
            Some(SeriesReading::Check(results)) => Some(results.total()),
            Some(SeriesReading::Counter(_) | SeriesReading::Gauge(_)) => None,
        },
        _ => None,
    })
}

/// Where `metric`'s value is kept: a built-in one's place, else (a plugin's metric, or one named
/// like a figure the summary only shows, which no selector reads) its series.
fn quantity_of(metric: &str) -> Quantity {
    catalogue::find(metric).map(|m| m.quantity).filter(|q| *q != Quantity::Shown).unwrap_or(Quantity::Series)
}

/// The endpoint a built-in HTTP metric is narrowed to, `(name, method)`, when its tags are
/// `name`, `method` or both, each at most once; `None` otherwise.
pub fn endpoint_selector<'a>(
    tags: impl IntoIterator<Item = &'a (String, String)>,
) -> Option<(Option<&'a str>, Option<&'a str>)> {
    let (mut name, mut method) = (None, None);
    for (k, v) in tags {
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

fn http_figures<'f>(tags: &[(String, String)], figures: &'f dyn Figures) -> Result<Option<HttpFigures<'f>>, ReadError> {
    match endpoint_selector(tags) {
        Some((name, method)) => figures.endpoint(name, method),
        None => figures.http(),
    }
}

/// `http_reqs` as the tags select it: all, one status, redirects or not, or endpoints (already
/// picked by [`http_figures`]).
fn http_reqs(http: &HttpFigures<'_>, tags: &[(String, String)]) -> Result<u64, ReadError> {
    let by_status = || http.by_status.ok_or(ReadError::NoAggregate);
    Ok(match tags {
        [(k, v)] if k == "status" => {
            v.parse::<u16>().ok().and_then(|s| by_status().ok()?.get(&s).copied()).unwrap_or(0)
        }
        [(k, v)] if k == REDIRECT_TAG => {
            let redirects = crate::http::redirects_of(by_status()?);
            if v == "true" { redirects } else { http.requests.saturating_sub(redirects) }
        }
        _ if tags.is_empty() || endpoint_selector(tags).is_some() => http.requests,
        _ => return Err(ReadError::NoAggregate),
    })
}

/// A share of a whole; nothing of nothing is no sample, not 0% or 100%.
fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// A statistic of a distribution; an empty one has no percentile, mean or extreme (the threshold
/// fails with "no samples" rather than pass on a zero nobody measured).
fn trend_value(trend: &Trend<'_>, agg: &Aggregate) -> Result<Option<f64>, ReadError> {
    if trend.count == Some(0) && *agg != Aggregate::Count {
        return Ok(None);
    }
    let p = &trend.stats.clamped();
    Ok(Some(match agg {
        Aggregate::Avg => p.mean,
        Aggregate::Min => p.min,
        Aggregate::Max => p.max,
        Aggregate::Med => p.p50,
        Aggregate::Count => trend.count.ok_or(ReadError::NoAggregate)? as f64,
        Aggregate::Percentile(n) => match &trend.histogram {
            Some(h) => (h.quantile_micros(n / 100.0) as f64 / 1000.0).min(p.max),
            None => match *n {
                50.0 => p.p50,
                90.0 => p.p90,
                95.0 => p.p95,
                99.0 => p.p99,
                99.9 => p.p999,
                _ if *n == 100.0 => p.max,
                _ => return Err(ReadError::NoAggregate),
            },
        },
        Aggregate::Rate | Aggregate::Value => return Err(ReadError::NoAggregate),
    }))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::compare::Rule;
    use crate::{MetricKind, SeriesKey, Threshold, Window};

    /// The catalogue's test-only `probe_ms` has an entry and nothing else: recorded (the one line
    /// below), it is a built-in trend to thresholds (no declaration), reserved against plugins,
    /// read by thresholds and `compare`, and refused an aggregate its kind lacks.
    #[test]
    fn a_new_built_in_metric_is_one_entry() {
        let mut window = Window::default();
        for ms in [10.0, 20.0, 30.0] {
            // The recording site.
            window.plugin.trend(SeriesKey::new("probe_ms".into(), Vec::new()), ms);
        }
        assert_eq!(
            catalogue::built_in_kind("probe_ms"),
            Some(MetricKind::Trend),
            "reserved: plugins cannot declare it"
        );
        let t: Threshold = "probe_ms:max<25".parse().expect("parses");
        assert_eq!(t.validate(&|_| None, &[]), Ok(MetricKind::Trend), "no declaration needed");
        let sample = Sample::over(&window, Duration::from_secs(1));
        let max = t.read(&sample).expect("reads").expect("has samples");
        assert!((max - 30.0).abs() < 0.1, "{max}");
        let rule: Rule = "probe_ms:avg>+10%".parse().expect("parses");
        assert_eq!(rule.validate(&[], &[]).ok(), Some(MetricKind::Trend));
        assert_eq!(rule.samples(&sample).ok(), Some(Some(3)));
        let rate: Threshold = "probe_ms:rate<1".parse().expect("parses");
        assert!(rate.validate(&|_| None, &[]).is_err(), "a trend has no rate");
    }

    /// A name the summary only shows (`http_status`) is free for a plugin's own metric: it
    /// reads as the plugin's series, not as nothing.
    #[test]
    fn a_plugin_metric_named_like_a_shown_figure_reads_as_its_series() {
        let mut window = Window::default();
        window.plugin.counter(SeriesKey::new(crate::catalogue::names::HTTP_STATUS.into(), Vec::new()), 3);
        let t: Threshold = "http_status:count>1".parse().expect("parses");
        assert_eq!(t.read(&Sample::over(&window, Duration::from_secs(1))), Ok(Some(3.0)));
    }
}
