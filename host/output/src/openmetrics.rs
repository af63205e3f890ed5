//! `--metrics-addr`: the run's live state as OpenMetrics text, for Prometheus to scrape while the
//! run goes. Counters are totals since the start; latency and trend quantiles are those of the
//! last interval (a scrape every few seconds sees each interval's shape, not a blur of the run).
//!
//! Names (all prefixed `loadhost_`): `tasks_scheduled_total`, `tasks_started_total`,
//! `tasks_total{outcome}`, `retries_total`, `underrun_total`, `workers`, `workers_idle`,
//! `in_flight`, `lag_max_ms`, `latency_ms{quantile}`, `http_reqs_total`,
//! `http_req_failed_total`, `http_denied_total`, `plugin_counter_total{metric,…}`,
//! `plugin_gauge{metric,…}`, `plugin_trend{metric,quantile,…}`, `checks_total{check,result}` and
//! `threshold_passing{threshold}`; each carries `scenario` except the last.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use loadhost_metrics::catalogue::{self, names};
use loadhost_metrics::{IntervalRow, Outcome, Percentiles, SeriesValue, Window};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

type Labels = Vec<(String, String)>;
type Counters = Family<Labels, Counter>;
type Gauges = Family<Labels, Gauge<f64, AtomicU64>>;

/// The registry and a handle on each family; shared between the run (which updates it once per
/// interval) and the HTTP endpoint (which encodes it).
pub struct Exporter {
    registry: Registry,
    scheduled: Counters,
    started: Counters,
    tasks: Counters,
    retries: Counters,
    underrun: Counters,
    workers: Gauges,
    idle: Gauges,
    in_flight: Gauges,
    lag_max: Gauges,
    latency: Gauges,
    http_reqs: Counters,
    http_req_failed: Counters,
    http_denied: Counters,
    plugin_counter: Counters,
    plugin_gauge: Gauges,
    plugin_trend: Gauges,
    checks: Counters,
    thresholds: Gauges,
    /// The figures are the run's last (every interval in, thresholds judged on the whole run).
    last: AtomicBool,
    /// A scrape has read them since: the run need not linger any longer for its scraper.
    last_read: AtomicBool,
}

impl Default for Exporter {
    fn default() -> Self {
        Self::new()
    }
}

/// A plugin tag key as a label name (`[a-zA-Z_][a-zA-Z0-9_]*`), kept apart from the host's labels.
fn label_name(key: &str) -> String {
    let mut name: String = key.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    if name.starts_with(|c: char| c.is_ascii_digit()) || matches!(name.as_str(), "scenario" | "metric" | "quantile") {
        name.insert_str(0, "tag_");
    }
    name
}

fn quantiles(p: &Percentiles) -> [(&'static str, f64); 4] {
    [("0.5", p.p50), ("0.9", p.p90), ("0.99", p.p99), ("1", p.max)]
}

/// A new family, registered under `name`; the clone kept is the handle that updates it.
fn family<M: prometheus_client::registry::Metric + Default + Clone>(
    registry: &mut Registry,
    name: &str,
    help: &str,
) -> M {
    let family = M::default();
    registry.register(name, help, family.clone());
    family
}

/// A built-in metric's family, named and described as the catalogue has it.
fn built_in<M: prometheus_client::registry::Metric + Default + Clone>(registry: &mut Registry, name: &str) -> M {
    family(registry, name, catalogue::find(name).map_or("", |m| m.help))
}

impl Exporter {
    /// Register every family.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("loadhost");
        let scheduled = family(&mut registry, "tasks_scheduled", "Tasks scheduled");
        let started = built_in(&mut registry, names::TASKS_STARTED);
        let tasks = family(&mut registry, "tasks", "Tasks ended, by outcome");
        let retries = family(&mut registry, "retries", "Retry attempts");
        let underrun = family(&mut registry, "underrun", "Tasks the pacer released late because it was late");
        let http_reqs = built_in(&mut registry, names::HTTP_REQS);
        // A counter of the failed requests: the rate `http_req_failed` is this over `http_reqs`.
        let http_req_failed = family(
            &mut registry,
            names::HTTP_REQ_FAILED,
            "HTTP requests without a response or with a status the request did not expect",
        );
        let http_denied = built_in(&mut registry, names::HTTP_DENIED);
        let plugin_counter = family(&mut registry, "plugin_counter", "Counters recorded by the plugin");
        let checks = family(&mut registry, names::CHECKS, "Checks made by the plugin, by result");
        let workers = family(&mut registry, "workers", "Workers resident");
        let idle = family(&mut registry, "workers_idle", "Workers waiting for a task");
        let in_flight = family(&mut registry, "in_flight", "Tasks executing");
        let lag_max = family(&mut registry, "lag_max_ms", "The latest the pacer woke in the last interval (ms)");
        let latency =
            family(&mut registry, names::LATENCY_MS, "Task latency in the last interval, scheduled time to end (ms)");
        let plugin_gauge = family(&mut registry, "plugin_gauge", "Gauges recorded by the plugin");
        let plugin_trend =
            family(&mut registry, "plugin_trend", "Trends recorded by the plugin, last interval's quantiles");
        let thresholds =
            family(&mut registry, "threshold_passing", "1 while the threshold holds on the run so far, else 0");
        Self {
            registry,
            scheduled,
            started,
            tasks,
            retries,
            underrun,
            workers,
            idle,
            in_flight,
            lag_max,
            latency,
            http_reqs,
            http_req_failed,
            http_denied,
            plugin_counter,
            plugin_gauge,
            plugin_trend,
            checks,
            thresholds,
            last: AtomicBool::new(false),
            last_read: AtomicBool::new(false),
        }
    }

    /// The figures are final: every interval is in and the thresholds are the run's verdicts.
    pub fn mark_final(&self) {
        self.last.store(true, Ordering::Release);
    }

    /// Whether a scrape has read the final figures.
    pub fn final_read(&self) -> bool {
        self.last_read.load(Ordering::Acquire)
    }

    /// Fold one interval in.
    pub fn update(&self, row: &IntervalRow, window: &Window) {
        let scenario = || vec![("scenario".to_owned(), row.scenario.to_string())];
        let with = |key: &str, value: &str| {
            let mut labels = scenario();
            labels.push((key.to_owned(), value.to_owned()));
            labels
        };
        let c = &row.counts;
        self.scheduled.get_or_create(&scenario()).inc_by(c.scheduled);
        self.started.get_or_create(&scenario()).inc_by(row.started);
        for outcome in Outcome::ALL {
            self.tasks.get_or_create(&with("outcome", outcome.name())).inc_by(c.get(outcome));
        }
        self.retries.get_or_create(&scenario()).inc_by(c.retries);
        self.underrun.get_or_create(&scenario()).inc_by(row.underrun);
        self.workers.get_or_create(&scenario()).set(row.workers as f64);
        self.idle.get_or_create(&scenario()).set(row.idle as f64);
        self.in_flight.get_or_create(&scenario()).set(row.in_flight as f64);
        self.lag_max.get_or_create(&scenario()).set(row.lag_max.as_secs_f64() * 1000.0);
        if window.latency.count() > 0 {
            for (q, ms) in quantiles(&row.latency) {
                self.latency.get_or_create(&with("quantile", q)).set(ms);
            }
        }
        self.http_reqs.get_or_create(&scenario()).inc_by(row.http_reqs);
        self.http_req_failed.get_or_create(&scenario()).inc_by(row.http_req_failed);
        self.http_denied.get_or_create(&scenario()).inc_by(row.http_denied);
        for series in window.plugin.series() {
            let mut labels = with("metric", &series.key.name);
            labels.extend(series.key.tags.iter().map(|(k, v)| (label_name(k), v.clone())));
            match &series.value {
                SeriesValue::Counter(count) => {
                    self.plugin_counter.get_or_create(&labels).inc_by(*count);
                }
                SeriesValue::Gauge { value, .. } => {
                    self.plugin_gauge.get_or_create(&labels).set(*value);
                }
                SeriesValue::Trend(stats) => {
                    for (q, value) in quantiles(&stats.percentiles()) {
                        let mut labels = labels.clone();
                        labels.push(("quantile".to_owned(), q.to_owned()));
                        self.plugin_trend.get_or_create(&labels).set(value);
                    }
                }
                SeriesValue::Check { passes, fails } => {
                    let mut labels = with("check", &series.key.name);
                    labels.extend(series.key.tags.iter().map(|(k, v)| (label_name(k), v.clone())));
                    for (result, n) in [("pass", passes), ("fail", fails)] {
                        let mut labels = labels.clone();
                        labels.push(("result".to_owned(), result.to_owned()));
                        self.checks.get_or_create(&labels).inc_by(*n);
                    }
                }
            }
        }
    }

    /// Whether a threshold holds on the run so far.
    pub fn threshold(&self, expr: &str, passing: bool) {
        self.thresholds
            .get_or_create(&vec![("threshold".to_owned(), expr.to_owned())])
            .set(f64::from(u8::from(passing)));
    }

    /// The text a scrape answers (ends with `# EOF`).
    pub fn encode(&self) -> String {
        // Read before encoding: figures marked final after this read are not in this text.
        let last = self.last.load(Ordering::Acquire);
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        if last {
            self.last_read.store(true, Ordering::Release);
        }
        text
    }
}

/// The content type of [`Exporter::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadhost_metrics::SeriesKey;

    use super::*;

    #[test]
    fn counters_add_up_across_intervals_and_tags_become_labels() {
        let exporter = Exporter::new();
        let mut window = Window::default();
        window.record_task(Outcome::Passed, None);
        window.plugin.counter(SeriesKey::new("logins".into(), vec![("9site".into(), "a".into())]), 2);
        window.plugin.check(SeriesKey::new("status is 200".into(), vec![]), false);
        let row = IntervalRow::from_window(0, Duration::ZERO, Duration::from_secs(1), &window, Default::default());
        exporter.update(&row, &window);
        exporter.update(&row, &window);
        exporter.threshold("latency_ms:p(99)<5", false);
        let text = exporter.encode();
        assert!(text.contains(r#"loadhost_tasks_total{scenario="default",outcome="passed"} 2"#), "{text}");
        assert!(text.contains(r#"loadhost_plugin_counter_total{scenario="default",metric="logins",tag_9site="a"} 4"#));
        assert!(text.contains(r#"loadhost_checks_total{scenario="default",check="status is 200",result="fail"} 2"#));
        assert!(text.contains(r#"loadhost_threshold_passing{threshold="latency_ms:p(99)<5"} 0"#));
        assert!(text.trim_end().ends_with("# EOF"));
    }

    #[test]
    fn only_a_scrape_after_the_figures_are_final_reads_them() {
        let exporter = Exporter::new();
        let _ = exporter.encode();
        assert!(!exporter.final_read(), "a scrape during the run");
        exporter.mark_final();
        assert!(!exporter.final_read(), "final, not yet scraped");
        let text = exporter.encode();
        assert!(text.ends_with("# EOF\n") && exporter.final_read());
    }
}
