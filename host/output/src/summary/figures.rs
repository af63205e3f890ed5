//! What a summary JSON keeps, as [`Figures`] for the one reader of metric values
//! ([`loadhost_metrics::reading`]): `compare --fail-on` over summary JSON reads exactly what it
//! reads over results files, where a summary keeps it. A summary keeps percentile views (p50,
//! p90, p95, p99, p99.9), endpoints by name only, and per scenario only its timings and tasks.

use loadhost_metrics::GeneratorTally;
use loadhost_metrics::SeriesKey;
use loadhost_metrics::catalogue::{Phase, Timing};
use loadhost_metrics::checks::{CheckSelector, PassFail};
use loadhost_metrics::histogram::Percentiles;
use loadhost_metrics::reading::{EndpointPick, Figures, HttpFigures, ReadError, SeriesReading, TaskFigures, Trend};

use super::{PercentileView, PluginMetric, ScenarioSummary, Summary, Tasks, TrendSummary};

impl PercentileView {
    /// The view as percentiles, for reading.
    pub fn percentiles(&self) -> Percentiles {
        let v = self;
        Percentiles {
            min: v.min,
            mean: v.mean,
            p50: v.p50,
            p90: v.p90,
            p95: v.p95,
            p99: v.p99,
            p999: v.p999,
            max: v.max,
        }
    }
}

impl Summary {
    /// The view of one of a task's timings.
    pub fn timing_view(&self, timing: Timing) -> &PercentileView {
        match timing {
            Timing::Latency => &self.latency_ms,
            Timing::Service => &self.service_ms,
            Timing::Wait => &self.wait_ms,
            Timing::GateWait => &self.gate_wait_ms,
        }
    }
}

/// A view without its count (the summary's task timings keep none).
fn view(v: &PercentileView) -> Trend<'static> {
    Trend { count: None, stats: v.percentiles(), histogram: None }
}

fn trend(t: &TrendSummary) -> Trend<'static> {
    Trend { count: Some(t.count), stats: t.stats.percentiles(), histogram: None }
}

fn tasks(t: &Tasks, started_per_s: f64) -> TaskFigures {
    TaskFigures { started: t.started, started_per_s, ended: t.ended(), passed: t.passed }
}

impl Figures for Summary {
    fn secs(&self) -> f64 {
        self.duration_s
    }

    fn timing(&self, timing: Timing) -> Result<Trend<'_>, ReadError> {
        Ok(view(self.timing_view(timing)))
    }

    fn tasks(&self) -> Result<TaskFigures, ReadError> {
        Ok(tasks(&self.tasks, self.rate.achieved_per_s))
    }

    fn checks(&self, selector: &CheckSelector<'_>) -> Result<PassFail, ReadError> {
        // The summary keeps each check's tag sets: the selector picks among them as among a
        // results file's series.
        let mut results = PassFail::default();
        for (name, check) in &self.checks {
            let picked = check.picked(name, selector);
            results.add(picked.passes, picked.fails);
        }
        Ok(results)
    }

    fn generator(&self) -> Result<GeneratorTally, ReadError> {
        // No section (a merge of several processes, a run under a virtual clock): nothing judged.
        Ok(self.generator.as_ref().map(|g| g.verdicts).unwrap_or_default())
    }

    fn http(&self) -> Result<Option<HttpFigures<'_>>, ReadError> {
        Ok(self.metrics.http.as_ref().map(|h| HttpFigures {
            requests: h.reqs.count,
            failed: h.failed.passes,
            denied: h.denied,
            sent: h.data_sent,
            received: h.data_received,
            by_status: Some(&h.by_status),
            duration: trend(&h.duration),
        }))
    }

    fn endpoint(&self, name: Option<&str>, method: Option<&str>) -> Result<Option<HttpFigures<'_>>, ReadError> {
        let (Some(name), None) = (name, method) else {
            return Err(ReadError::NotKept(
                "a summary JSON keeps endpoints by name only: compare results files for {method:…}".into(),
            ));
        };
        let Some(e) = self.metrics.http.as_ref().and_then(|h| h.endpoints.get(name)) else { return Ok(None) };
        Ok(Some(HttpFigures {
            requests: e.reqs.count,
            failed: e.failed.passes,
            denied: 0,
            sent: 0,
            received: 0,
            by_status: None,
            duration: trend(&e.duration),
        }))
    }

    fn http_phase(&self, phase: Phase, endpoint: Option<EndpointPick<'_>>) -> Result<Option<Trend<'_>>, ReadError> {
        if endpoint.is_some() {
            return Err(ReadError::NotKept(format!(
                "a summary JSON keeps {} for the whole run only: compare results files for {{name:…}}",
                phase.name()
            )));
        }
        Ok(self.metrics.http.as_ref().and_then(|h| h.phases.get(&phase)).map(trend))
    }

    fn series(&self, name: &str, tags: &[(String, String)]) -> Result<Option<SeriesReading<'_>>, ReadError> {
        let key = SeriesKey::new(name.to_owned(), tags.to_vec()).to_string();
        Ok(self.metrics.plugin.get(&key).map(|metric| match metric {
            PluginMetric::Trend(t) => SeriesReading::Trend(trend(t)),
            PluginMetric::Check(r) => {
                let mut results = PassFail::default();
                results.add(r.passes, r.fails);
                SeriesReading::Check(results)
            }
            PluginMetric::Counter(c) => SeriesReading::Counter(c.count),
            PluginMetric::Gauge(g) => SeriesReading::Gauge(g.value),
        }))
    }
}

/// One scenario of a summary JSON, by name: its timings and tasks.
pub struct ScenarioFigures<'a> {
    /// The scenario's name.
    pub name: &'a str,
    /// Its summary.
    pub scenario: &'a ScenarioSummary,
}

impl ScenarioFigures<'_> {
    fn not_kept(&self) -> ReadError {
        ReadError::NotKept(format!(
            "a summary JSON keeps latency_ms, service_ms, wait_ms, tasks_started and tasks_not_passed per scenario \
             (field scenarios.{}): compare the results files",
            self.name
        ))
    }
}

impl Figures for ScenarioFigures<'_> {
    fn secs(&self) -> f64 {
        self.scenario.duration_s
    }

    fn timing(&self, timing: Timing) -> Result<Trend<'_>, ReadError> {
        let s = self.scenario;
        match timing {
            Timing::Latency => Ok(view(&s.latency_ms)),
            Timing::Service => Ok(view(&s.service_ms)),
            Timing::Wait => Ok(view(&s.wait_ms)),
            Timing::GateWait => Err(self.not_kept()),
        }
    }

    fn tasks(&self) -> Result<TaskFigures, ReadError> {
        Ok(tasks(&self.scenario.tasks, self.scenario.rate.achieved_per_s))
    }

    fn checks(&self, _: &CheckSelector<'_>) -> Result<PassFail, ReadError> {
        Err(self.not_kept())
    }

    fn generator(&self) -> Result<GeneratorTally, ReadError> {
        Err(self.not_kept())
    }

    fn http(&self) -> Result<Option<HttpFigures<'_>>, ReadError> {
        Err(self.not_kept())
    }

    fn endpoint(&self, _: Option<&str>, _: Option<&str>) -> Result<Option<HttpFigures<'_>>, ReadError> {
        Err(self.not_kept())
    }

    fn http_phase(&self, _: Phase, _: Option<EndpointPick<'_>>) -> Result<Option<Trend<'_>>, ReadError> {
        Err(self.not_kept())
    }

    fn series(&self, _: &str, _: &[(String, String)]) -> Result<Option<SeriesReading<'_>>, ReadError> {
        Err(self.not_kept())
    }
}

impl<'a> ScenarioFigures<'a> {
    /// The scenario `name` of `summary`, or why there is none.
    pub fn of(summary: &'a Summary, name: &'a str) -> Result<Self, String> {
        summary
            .scenarios
            .as_ref()
            .and_then(|all| all.iter().find(|(n, _)| *n == name))
            .map(|(_, scenario)| ScenarioFigures { name, scenario })
            .ok_or_else(|| format!("no scenario named '{name}' (field scenarios)"))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadhost_metrics::Threshold;
    use loadhost_metrics::reading::Sample;

    use super::*;
    use crate::results::testkit::{run_info as info, synthetic};

    /// Every kind of metric, tag and aggregate a summary keeps reads the same from the summary
    /// JSON as from the run's totals (to the summary's rounding: milliseconds to the
    /// microsecond), through the one reader; what it does not keep is an error, never a value.
    #[test]
    fn a_summary_json_reads_what_the_totals_read() {
        let run = synthetic(11, None, Duration::ZERO, 6, 300);
        let report = &run.report;
        let summary = Summary::new(&info(), report, &[], &[]);
        let json = serde_json::to_string(&summary).expect("serializes");
        let summary: Summary = serde_json::from_str(&json).expect("reads back");
        let totals = Sample {
            window: &report.totals,
            started: report.started,
            span: report.elapsed,
            generation: report.generation,
        };
        let same = [
            "latency_ms:p(99)<0",
            "latency_ms:avg<0",
            "service_ms:max<0",
            "wait_ms:p(50)<0",
            "gate_wait_ms:p(95)<0",
            "tasks_not_passed:rate<0",
            "tasks_failed:rate<0",
            "checks:rate<0",
            "checks{check:status is 200}:rate<0",
            "http_reqs:count<0",
            "http_reqs:rate<0",
            "http_reqs{status:503}:count<0",
            "http_reqs{redirect:false}:count<0",
            "http_reqs{name:GET /a}:count<0",
            "http_req_failed:rate<0",
            "http_req_failed{name:GET /b}:rate<0",
            "http_req_duration:p(90)<0",
            "http_req_duration:count<0",
            "http_req_duration{name:GET /a}:p(95)<0",
            "http_req_blocked:p(95)<0",
            "http_req_connecting:count<0",
            "http_req_waiting:p(50)<0",
            "http_req_receiving:max<0",
            "data_sent:count<0",
            "data_received:rate<0",
            "login_ms:p(99)<0",
            "login_ms{route:/a}:count<0",
            "greetings:count<0",
            "queue_depth:value<0",
        ];
        for expr in same {
            let t: Threshold = expr.parse().expect(expr);
            let exact = t.read(&totals).expect(expr).expect(expr);
            let kept = t.read(&summary).expect(expr).expect(expr);
            assert!((exact - kept).abs() <= 1e-3 + exact.abs() * 1e-9, "{expr}: totals {exact}, summary JSON {kept}");
        }
        let t: Threshold = "tasks_started:rate<0".parse().expect("parses");
        assert_eq!(t.read(&summary), t.read(&totals), "the achieved rate");
        for (expr, kept) in [
            ("latency_ms:p(42)<0", "a percentile the summary's view lacks"),
            ("latency_ms:count<0", "a count the summary's timings lack"),
            ("http_reqs{method:GET}:count<0", "endpoints by method"),
            ("http_req_waiting{name:GET /a}:p(95)<0", "phases by endpoint"),
        ] {
            let t: Threshold = expr.parse().expect(expr);
            assert!(t.read(&totals).expect(expr).is_some(), "{expr}: the totals keep it");
            assert!(t.read(&summary).is_err(), "{expr}: {kept} is an error, not a value");
        }
    }
}
