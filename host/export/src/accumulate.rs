//! [`RunSeries`]: the run so far, folded interval by interval on the outputs' thread, and the
//! [`Snapshot`] each interval makes of it. It keeps one merged window per scenario (a few
//! histograms: kilobytes), so a snapshot's cumulative series are exact totals since the start,
//! whatever was dropped on the way to a receiver.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use loadhost_metrics::{IntervalRow, Window};

use crate::budget::Budget;
use crate::collect::{self, Extras};
use crate::series::{Labels, Series, Snapshot, Unit, Value};

/// One scenario's totals.
#[derive(Default)]
struct Totals {
    window: Window,
    started: u64,
    exhausted: [u64; 2],
    /// Its latest row: the levels (workers, in flight, the generator's health) a snapshot shows.
    last: Option<IntervalRow>,
    /// When its load started: its rows count from there.
    start: Option<SystemTime>,
}

/// The run so far, and the labels that identify it.
pub struct RunSeries {
    run: Labels,
    start: SystemTime,
    scenarios: BTreeMap<String, Totals>,
    thresholds: BTreeMap<String, bool>,
    budget: Budget,
}

fn millis(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl RunSeries {
    /// A run labelled `run` (`run_id`, `segment`, the `--tag`s) that started at `start`, its
    /// series within `budget`.
    pub fn new(run: Labels, start: SystemTime, budget: Budget) -> Self {
        Self { run, start, scenarios: BTreeMap::new(), thresholds: BTreeMap::new(), budget }
    }

    /// A scenario's load started at `at`.
    pub fn started(&mut self, scenario: &str, at: SystemTime) {
        self.scenarios.entry(scenario.to_owned()).or_default().start = Some(at);
    }

    /// Whether a threshold holds on the run so far (or, at the end, on the whole run).
    pub fn threshold(&mut self, expr: &str, passing: bool) {
        self.thresholds.insert(expr.to_owned(), passing);
    }

    /// The series folded by the budget so far, and those dropped (gauges cannot be folded).
    pub fn folded(&self) -> u64 {
        self.budget.folded()
    }

    /// Fold one interval in and say what the run looks like now.
    pub fn fold(&mut self, row: &IntervalRow, window: &Window) -> Snapshot {
        let start = self.start;
        let totals = self.scenarios.entry(row.scenario.to_string()).or_default();
        totals.window.merge(window);
        totals.started += row.started;
        totals.exhausted[0] += row.generator.fds_exhausted;
        totals.exhausted[1] += row.generator.ports_exhausted;
        totals.last = Some(row.clone());
        let at = totals.start.unwrap_or(start) + row.end;
        let extras = Extras {
            row,
            started: row.started,
            exhausted: [row.generator.fds_exhausted, row.generator.ports_exhausted],
        };
        let interval = collect::series(&row.scenario, window, extras, false);
        self.snapshot(at, interval, false)
    }

    /// The run's last snapshot, once every interval is in and the thresholds are the run's
    /// verdicts.
    pub fn finish(&mut self) -> Snapshot {
        let at = self
            .scenarios
            .values()
            .filter_map(|t| Some(t.start.unwrap_or(self.start) + t.last.as_ref()?.end))
            .max()
            .unwrap_or_else(SystemTime::now);
        self.snapshot(at, Vec::new(), true)
    }

    fn snapshot(&mut self, at: SystemTime, interval: Vec<Series>, last: bool) -> Snapshot {
        let mut cumulative = Vec::new();
        for (scenario, totals) in &self.scenarios {
            let Some(row) = &totals.last else { continue };
            let extras = Extras { row, started: totals.started, exhausted: totals.exhausted };
            cumulative.extend(collect::series(scenario, &totals.window, extras, true));
        }
        for (expr, passing) in &self.thresholds {
            cumulative.push(Series {
                name: format!("{}threshold_passing", collect::PREFIX),
                help: "1 while the threshold holds on the run so far, else 0",
                unit: Unit::None,
                labels: vec![("threshold".to_owned(), expr.clone())],
                value: Value::Gauge(f64::from(u8::from(*passing))),
            });
        }
        Snapshot {
            at_ms: millis(at),
            start_ms: millis(self.start),
            run: self.run.clone(),
            cumulative: self.budget.apply(cumulative),
            interval: self.budget.apply(interval),
            last,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadhost_metrics::endpoint::Endpoint;
    use loadhost_metrics::{Gauges, HttpSample, Outcome, SeriesKey};

    use super::*;
    use crate::budget::Budget;

    fn interval(i: u64, requests: u64) -> (IntervalRow, Window) {
        let mut w = Window::default();
        w.counts.scheduled = requests;
        for r in 0..requests {
            w.record_task(Outcome::Passed, None);
            w.latency.record(Duration::from_millis(1 + r));
            let endpoint = Endpoint::new("GET", if r % 2 == 0 { "/a" } else { "/b" });
            w.http.record(HttpSample::new(Some(200), Duration::from_millis(2), 10, Some(endpoint)));
        }
        w.plugin.counter(SeriesKey::new("logins".into(), vec![("url".into(), format!("http://x/{i}"))]), 1);
        let row =
            IntervalRow::from_window(i, Duration::from_secs(i), Duration::from_secs(i + 1), &w, Gauges::default());
        (row, w)
    }

    fn find<'a>(series: &'a [Series], name: &str, label: Option<(&str, &str)>) -> Option<&'a Value> {
        series
            .iter()
            .find(|s| s.name == name && label.is_none_or(|(k, v)| s.labels.iter().any(|(a, b)| a == k && b == v)))
            .map(|s| &s.value)
    }

    #[test]
    fn cumulative_series_are_totals_since_the_start_and_interval_ones_the_interval_s() {
        let start = UNIX_EPOCH + Duration::from_secs(1_000);
        let mut run = RunSeries::new(vec![("run_id".into(), "r1".into())], start, Budget::new(false));
        let (row, window) = interval(0, 4);
        run.fold(&row, &window);
        let (row, window) = interval(1, 6);
        let snap = run.fold(&row, &window);
        assert_eq!((snap.at_ms, snap.start_ms), (1_002_000, 1_000_000), "the interval's end, the run's start");
        assert_eq!(find(&snap.cumulative, "loadhost_http_reqs", Some(("name", "/a"))), Some(&Value::Counter(5)));
        assert_eq!(find(&snap.cumulative, "loadhost_http_reqs", Some(("name", "/b"))), Some(&Value::Counter(5)));
        assert_eq!(find(&snap.interval, "loadhost_http_reqs", Some(("name", "/a"))), Some(&Value::Counter(3)));
        assert_eq!(find(&snap.cumulative, "loadhost_tasks", Some(("outcome", "passed"))), Some(&Value::Counter(10)));
        let Some(Value::Histogram(latency)) = find(&snap.cumulative, "loadhost_latency_seconds", None) else {
            panic!("a latency histogram: {:?}", snap.cumulative)
        };
        assert_eq!(latency.buckets.count, 10);
        assert!((latency.stats.max - 0.006).abs() < 1e-5, "max in seconds: {}", latency.stats.max);
        // The URL tag is no label, so both intervals' logins are one series.
        assert_eq!(
            find(&snap.cumulative, "loadhost_plugin_counter", Some(("metric", "logins"))),
            Some(&Value::Counter(2))
        );
        run.threshold("latency_ms:p(99)<5", false);
        let last = run.finish();
        assert!(last.last && last.interval.is_empty());
        assert_eq!(find(&last.cumulative, "loadhost_threshold_passing", None), Some(&Value::Gauge(0.0)));
    }
}
