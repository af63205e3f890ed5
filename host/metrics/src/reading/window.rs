//! The figures a [`Window`] keeps (an interval's, or a run's totals): everything, with the
//! histograms themselves, so any percentile can be read.

use std::borrow::Cow;
use std::time::Duration;

use super::{EndpointPick, Figures, HttpFigures, ReadError, SeriesReading, TaskFigures, Trend};
use crate::catalogue::{Phase, Timing};
use crate::checks::{CheckSelector, PassFail};
use crate::generator_verdict::GeneratorTally;
use crate::plugin::{SeriesKey, SeriesValue};
use crate::window::Window;

/// One window and what it spans: what a threshold or a `compare` rule measures in.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    /// The measurements.
    pub window: &'a Window,
    /// Tasks that started executing in it.
    pub started: u64,
    /// The time it covers: the interval, or the run's duration (per-second counter rates divide
    /// by it).
    pub span: Duration,
    /// Load-generation time: the achieved rate divides by it (the interval, for an interval).
    pub generation: Duration,
}

impl<'a> Sample<'a> {
    /// A window over `span` whose started tasks are not counted (thresholds, which do not take
    /// `tasks_started`: see the catalogue).
    pub fn over(window: &'a Window, span: Duration) -> Self {
        Sample { window, started: 0, span, generation: span }
    }
}

impl Figures for Sample<'_> {
    fn secs(&self) -> f64 {
        self.span.as_secs_f64()
    }

    fn timing(&self, timing: Timing) -> Result<Trend<'_>, ReadError> {
        let w = self.window;
        let histogram = match timing {
            Timing::Latency => &w.latency,
            Timing::Service => &w.service,
            Timing::Wait => &w.wait,
            Timing::GateWait => &w.gate_wait,
        };
        Ok(Trend::of(Cow::Borrowed(histogram)))
    }

    fn tasks(&self) -> Result<TaskFigures, ReadError> {
        let secs = self.generation.as_secs_f64();
        let counts = &self.window.counts;
        Ok(TaskFigures {
            started: self.started,
            started_per_s: if secs > 0.0 { self.started as f64 / secs } else { 0.0 },
            ended: counts.ended(),
            passed: counts.passed,
        })
    }

    fn checks(&self, selector: &CheckSelector<'_>) -> Result<PassFail, ReadError> {
        Ok(selector.tally(&self.window.plugin))
    }

    fn generator(&self) -> Result<GeneratorTally, ReadError> {
        Ok(self.window.generator)
    }

    fn http(&self) -> Result<Option<HttpFigures<'_>>, ReadError> {
        let h = &self.window.http;
        Ok(Some(HttpFigures {
            requests: h.requests,
            failed: h.failed,
            denied: h.denied,
            sent: h.bytes_sent,
            received: h.bytes_received,
            by_status: Some(&h.by_status),
            duration: Trend::of(Cow::Borrowed(&h.duration)),
        }))
    }

    fn endpoint(&self, name: Option<&str>, method: Option<&str>) -> Result<Option<HttpFigures<'_>>, ReadError> {
        let e = self.window.http.endpoint_matching(name, method);
        Ok(Some(HttpFigures {
            requests: e.requests,
            failed: e.failed,
            denied: 0,
            sent: 0,
            received: 0,
            by_status: None,
            duration: Trend::of(Cow::Owned(e.duration)),
        }))
    }

    fn http_phase(&self, phase: Phase, endpoint: Option<EndpointPick<'_>>) -> Result<Option<Trend<'_>>, ReadError> {
        let http = &self.window.http;
        Ok(Some(match endpoint {
            None => Trend::of(Cow::Borrowed(http.phases.get(phase))),
            Some((name, method)) => {
                let phases = http.endpoint_matching(name, method).phases;
                Trend::of(Cow::Owned(phases.get(phase).clone()))
            }
        }))
    }

    fn series(&self, name: &str, tags: &[(String, String)]) -> Result<Option<SeriesReading<'_>>, ReadError> {
        let key = SeriesKey::new(name.to_owned(), tags.to_vec());
        let plugin = &self.window.plugin;
        let all = if tags.is_empty() { plugin.by_name() } else { plugin.series() };
        let Some(series) = all.into_iter().find(|s| s.key == key) else { return Ok(None) };
        Ok(Some(match series.value {
            SeriesValue::Counter(count) => SeriesReading::Counter(count),
            SeriesValue::Gauge { value, .. } => SeriesReading::Gauge(value),
            SeriesValue::Check { passes, fails } => {
                let mut results = PassFail::default();
                results.add(passes, fails);
                SeriesReading::Check(results)
            }
            SeriesValue::Trend(t) => {
                SeriesReading::Trend(Trend { count: Some(t.count()), stats: t.percentiles(), histogram: None })
            }
        }))
    }
}
