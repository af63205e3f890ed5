//! One window's figures as labelled [`Series`]: the run's totals so far (cumulative) or one
//! interval's. Every series carries `scenario`; names, units and labels are the ones
//! docs/outputs.md lists, and the catalogue's help lines describe the built-in ones.
//!
//! The built-in series recorded among the plugin's (WebSocket, gRPC, `group_duration`) keep
//! their own names (`loadhost_ws_msgs_sent`, `loadhost_grpc_req_duration_seconds`); the plugin's
//! own go under `loadhost_plugin_counter`, `_gauge` and `_trend` with a `metric` label, so a
//! plugin can never shadow a built-in series.

use loadhost_metrics::catalogue::{self, MetricKind, Phase, Quantity, Timing, names};
use loadhost_metrics::exponential::ExponentialHistogram;
use loadhost_metrics::{GeneratorHealth, IntervalRow, LatencyHistogram, Outcome, SeriesValue, TrendStats, Window};

use crate::series::{Distribution, Labels, Series, Unit, Value};

/// The prefix of every series.
pub const PREFIX: &str = "loadhost_";

/// Microseconds in the unit durations are exported in (seconds).
const SECONDS_PER_MICRO: f64 = 1e-6;

/// The figures of a window that a window does not hold itself: the row's gauges and, for the
/// cumulative view, the tasks started so far.
#[derive(Debug, Clone, Copy)]
pub struct Extras<'a> {
    /// The interval's row (its gauges are the latest levels).
    pub row: &'a IntervalRow,
    /// Tasks started over the span the window covers.
    pub started: u64,
    /// Connections not opened for want of a file descriptor, and of a local port, over the span
    /// (the generator's counts, kept on rows rather than windows).
    pub exhausted: [u64; 2],
}

/// Builds series with one scenario's label.
struct Out {
    scenario: String,
    series: Vec<Series>,
}

impl Out {
    fn labels(&self, own: &[(&str, &str)]) -> Labels {
        let mut labels = vec![(catalogue::SCENARIO_TAG.to_owned(), self.scenario.clone())];
        labels.extend(own.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        labels
    }

    fn push(&mut self, name: &str, help: &'static str, unit: Unit, labels: Labels, value: Value) {
        self.series.push(Series { name: format!("{PREFIX}{name}"), help, unit, labels, value });
    }

    fn counter(&mut self, name: &str, help: &'static str, own: &[(&str, &str)], n: u64) {
        let labels = self.labels(own);
        self.push(name, help, Unit::None, labels, Value::Counter(n));
    }

    fn gauge(&mut self, name: &str, help: &'static str, unit: Unit, value: f64) {
        let labels = self.labels(&[]);
        self.push(name, help, unit, labels, Value::Gauge(value));
    }

    /// A duration histogram (microseconds) as `NAME_seconds`.
    fn seconds(&mut self, name: &str, help: &'static str, own: &[(&str, &str)], h: &LatencyHistogram) {
        let labels = self.labels(own);
        self.push(&format!("{name}_seconds"), help, Unit::Seconds, labels, seconds(h));
    }
}

/// A duration histogram (microseconds) in seconds.
fn seconds(h: &LatencyHistogram) -> Value {
    // The summary's percentiles are milliseconds.
    let stats = h.percentiles().scaled(1e-3);
    Value::Histogram(Box::new(Distribution { buckets: ExponentialHistogram::of(h, SECONDS_PER_MICRO), stats }))
}

/// A plugin trend in its own unit (or seconds, for a built-in trend in milliseconds).
fn trend(stats: &TrendStats, to_unit: f64) -> Value {
    let mut buckets = ExponentialHistogram::of(stats.histogram(), to_unit / TrendStats::HISTOGRAM_SCALE);
    // The trend keeps its exact sum; the histogram's is the HDR mean's.
    buckets.sum = stats.sum() * to_unit;
    Value::Histogram(Box::new(Distribution { buckets, stats: stats.percentiles().scaled(to_unit) }))
}

fn help(name: &str) -> &'static str {
    catalogue::find(name).map_or("", |m| m.help)
}

/// The series of `window` for `scenario`. `extras` gives the gauges (the latest levels) and the
/// tasks started; an empty duration histogram is left out of an interval's series
/// (`cumulative == false`) but kept in the run's once it has had a value.
pub fn series(scenario: &str, window: &Window, extras: Extras<'_>, cumulative: bool) -> Vec<Series> {
    let mut out = Out { scenario: scenario.to_owned(), series: Vec::new() };
    tasks(&mut out, window, extras);
    for timing in Timing::ALL {
        let h = match timing {
            Timing::Latency => &window.latency,
            Timing::Service => &window.service,
            Timing::Wait => &window.wait,
            Timing::GateWait => &window.gate_wait,
        };
        // The gate's wait exists only when a gate was used; the others once a task ended.
        if h.count() > 0 || (cumulative && timing != Timing::GateWait && window.counts.ended() > 0) {
            out.seconds(timing.stem(), help(timing.name()), &[], h);
        }
    }
    http(&mut out, window, cumulative);
    plugin(&mut out, window, cumulative);
    generator(&mut out, &extras.row.generator, extras.exhausted);
    out.series
}

fn tasks(out: &mut Out, window: &Window, extras: Extras<'_>) {
    let c = &window.counts;
    out.counter("tasks_scheduled", "Tasks scheduled", &[], c.scheduled);
    out.counter(names::TASKS_STARTED, help(names::TASKS_STARTED), &[], extras.started);
    for outcome in Outcome::ALL {
        out.counter("tasks", "Tasks ended, by outcome", &[("outcome", outcome.name())], c.get(outcome));
    }
    out.counter("retries", "Retry attempts", &[], c.retries);
    out.counter("underrun", "Tasks the pacer released late because it was late", &[], window.underrun);
    let row = extras.row;
    out.gauge("workers", "Workers resident", Unit::None, row.workers as f64);
    out.gauge("workers_idle", "Workers waiting for a task", Unit::None, row.idle as f64);
    out.gauge("in_flight", "Tasks executing", Unit::None, row.in_flight as f64);
    out.gauge(
        "lag_max_seconds",
        "The latest the pacer woke in the last interval",
        Unit::Seconds,
        row.lag_max.as_secs_f64(),
    );
}

fn http(out: &mut Out, window: &Window, cumulative: bool) {
    let h = &window.http;
    // Nothing happened: no series, unless a cumulative receiver must still see the bytes sent.
    if h.requests == 0 && h.denied == 0 && (!cumulative || h.bytes_sent == 0) {
        return;
    }
    let (mut requests, mut failed) = (0, 0);
    let mut rest = h.duration.clone();
    for (endpoint, stats) in &h.endpoints {
        let own =
            [(catalogue::ENDPOINT_NAME_TAG, endpoint.name()), (catalogue::ENDPOINT_METHOD_TAG, endpoint.method())];
        out.counter(names::HTTP_REQS, help(names::HTTP_REQS), &own, stats.requests);
        out.counter(names::HTTP_REQ_FAILED, help(names::HTTP_REQ_FAILED), &own, stats.failed);
        out.seconds(names::HTTP_REQ_DURATION, help(names::HTTP_REQ_DURATION), &own, &stats.duration);
        requests += stats.requests;
        failed += stats.failed;
        rest = rest.without(&stats.duration);
    }
    // Requests recorded without an endpoint: their own series, so the per-endpoint ones add up
    // to the whole.
    if h.requests > requests {
        let own = [(catalogue::ENDPOINT_NAME_TAG, ""), (catalogue::ENDPOINT_METHOD_TAG, "")];
        out.counter(names::HTTP_REQS, help(names::HTTP_REQS), &own, h.requests - requests);
        out.counter(names::HTTP_REQ_FAILED, help(names::HTTP_REQ_FAILED), &own, h.failed.saturating_sub(failed));
        out.seconds(names::HTTP_REQ_DURATION, help(names::HTTP_REQ_DURATION), &own, &rest);
    }
    for (status, n) in &h.by_status {
        out.counter(
            "http_responses",
            "HTTP responses by status (0: no response)",
            &[("status", &status.to_string())],
            *n,
        );
    }
    out.counter(names::HTTP_DENIED, help(names::HTTP_DENIED), &[], h.denied);
    let labels = out.labels(&[]);
    out.push(
        &format!("{}_bytes", names::DATA_SENT),
        help(names::DATA_SENT),
        Unit::Bytes,
        labels.clone(),
        Value::Counter(h.bytes_sent),
    );
    out.push(
        &format!("{}_bytes", names::DATA_RECEIVED),
        help(names::DATA_RECEIVED),
        Unit::Bytes,
        labels,
        Value::Counter(h.bytes_received),
    );
    if !h.phases.is_empty() {
        for phase in Phase::ALL {
            let histogram = h.phases.get(phase);
            if histogram.count() > 0 || cumulative {
                out.seconds(phase.name(), help(phase.name()), &[], histogram);
            }
        }
    }
}

/// A plugin tag key as a label name (`[a-zA-Z_][a-zA-Z0-9_]*`, not `__`-prefixed, which
/// Prometheus reserves), kept apart from the labels the host sets.
pub fn label_name(key: &str) -> String {
    let mut name: String = key.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let reserved = matches!(name.as_str(), "scenario" | "metric" | "check" | "result" | "le" | "quantile");
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) || name.starts_with("__") || reserved {
        name.insert_str(0, "tag_");
    }
    name
}

fn plugin(out: &mut Out, window: &Window, cumulative: bool) {
    for series in window.plugin.series() {
        let tags: Vec<(String, String)> = series.key.tags.iter().map(|(k, v)| (label_name(k), v.clone())).collect();
        let tags: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let built_in = catalogue::find(&series.key.name).filter(|m| m.quantity == Quantity::Series);
        match (&series.value, built_in) {
            (SeriesValue::Check { passes, fails }, _) => {
                for (result, n) in [("pass", passes), ("fail", fails)] {
                    let mut own = vec![("check", series.key.name.as_str()), ("result", result)];
                    own.extend(&tags);
                    out.counter(names::CHECKS, "Checks made by the plugin, by result", &own, *n);
                }
            }
            (SeriesValue::Counter(n), Some(m)) => out.counter(m.name, m.help, &tags, *n),
            (SeriesValue::Trend(stats), Some(m)) if m.kind == MetricKind::Trend => {
                if stats.count() > 0 || cumulative {
                    let labels = out.labels(&tags);
                    out.push(&format!("{}_seconds", m.name), m.help, Unit::Seconds, labels, trend(stats, 1e-3));
                }
            }
            (value, _) => {
                let mut own = vec![("metric", series.key.name.as_str())];
                own.extend(&tags);
                let labels = out.labels(&own);
                match value {
                    SeriesValue::Counter(n) => out.push(
                        "plugin_counter",
                        "Counters recorded by the plugin",
                        Unit::None,
                        labels,
                        Value::Counter(*n),
                    ),
                    SeriesValue::Gauge { value, .. } => out.push(
                        "plugin_gauge",
                        "Gauges recorded by the plugin",
                        Unit::None,
                        labels,
                        Value::Gauge(*value),
                    ),
                    SeriesValue::Trend(stats) if stats.count() > 0 || cumulative => {
                        out.push("plugin_trend", "Trends recorded by the plugin", Unit::None, labels, trend(stats, 1.0))
                    }
                    _ => {}
                }
            }
        }
    }
}

fn generator(out: &mut Out, health: &GeneratorHealth, exhausted: [u64; 2]) {
    if !health.is_measured() {
        return;
    }
    let [fds, ports] = exhausted;
    out.counter("generator_fds_exhausted", "Connections not opened for want of a file descriptor", &[], fds);
    out.counter("generator_ports_exhausted", "Connections not opened for want of a local port", &[], ports);
    for (figure, value) in health.figures() {
        let Some(value) = value else { continue };
        match figure.strip_suffix("_ms") {
            Some(stem) => out.gauge(
                &format!("generator_{stem}_seconds"),
                "The generator's timers' lateness, p99 of the interval",
                Unit::Seconds,
                value / 1000.0,
            ),
            None => out.gauge(
                &format!("generator_{figure}"),
                "The generator's health in the last interval (see docs/outputs.md)",
                Unit::Ratio,
                value,
            ),
        }
    }
}
