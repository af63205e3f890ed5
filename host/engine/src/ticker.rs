//! Cutting a run into intervals: drain the recorder, sample the crews' gauges and the generator's
//! health, keep the totals.

use std::sync::Arc;
use std::time::Duration;

use loadhost_metrics::{Gauges, GeneratorReport, IntervalRow, MeasuredInterval, Recorder, Window};
use tokio::time::Instant;

use crate::Observer;
use crate::crews::Crews;
use crate::health::Sampler;
use crate::worker::WorkerFactory;

/// Cuts the run into intervals: drains the recorder, samples gauges, and keeps the totals.
pub(crate) struct Ticker {
    pub(crate) start: Instant,
    pub(crate) interval: Duration,
    pub(crate) next_tick: Instant,
    pub(crate) last_end: Duration,
    pub(crate) index: u64,
    pub(crate) last_started: u64,
    pub(crate) last_fresh: u64,
    pub(crate) closed_model: bool,
    pub(crate) totals: Window,
    pub(crate) min_workers: u64,
    pub(crate) peak_workers: u64,
    pub(crate) scenario: Arc<str>,
    /// The generator's health, sampled each interval, and what it measured so far.
    health: Option<(Sampler, GeneratorReport)>,
}

impl Ticker {
    pub(crate) fn new(start: Instant, interval: Duration, closed_model: bool, workers: u64, scenario: &str) -> Self {
        Self {
            start,
            interval,
            next_tick: start + interval,
            last_end: Duration::ZERO,
            index: 0,
            last_started: 0,
            last_fresh: 0,
            closed_model,
            totals: Window::default(),
            min_workers: workers,
            peak_workers: workers,
            scenario: scenario.into(),
            health: None,
        }
    }

    /// Measure the generator's health each interval with `sampler` (none: not measured).
    pub(crate) fn with_health(mut self, sampler: Option<Sampler>) -> Self {
        self.health = sampler.map(|s| {
            let report = GeneratorReport { cores_allowed: s.cores_allowed(), intervals: Vec::new() };
            (s, report)
        });
        self
    }

    /// The generator's health over the intervals so far, when it was measured.
    pub(crate) fn generator(&self) -> Option<GeneratorReport> {
        self.health.as_ref().map(|(_, report)| report.clone())
    }

    pub(crate) fn emit<F: WorkerFactory>(
        &mut self,
        recorder: &Recorder,
        crews: &Crews<F>,
        observer: &mut dyn Observer,
        at: Instant,
    ) {
        let mut window = recorder.drain();
        if window.plugin.folded() > 0 && self.totals.plugin.folded() == 0 {
            tracing::warn!(
                "the plugin has made more than {} metric series: samples for new ones go to NAME{{overflow:true}}; \
                 tag by something with fewer values",
                loadhost_metrics::cardinality::MAX_SERIES
            );
        }
        if window.plugin.invalid() > 0 && self.totals.plugin.invalid() == 0 {
            tracing::warn!(
                "the plugin recorded metric samples with malformed names or tags (names: letters, digits, '_' \
                 and '.', at most 128; tag values at most 256 characters; at most 16 tags): they are ignored and \
                 counted as invalid_samples"
            );
        }
        let started_total = crews.sum(|c| &c.started);
        let started = started_total - self.last_started;
        self.last_started = started_total;
        if self.closed_model {
            // The closed model has no pacer: a task is scheduled when a worker claims it.
            let fresh_total = crews.sum(|c| &c.claimed);
            window.counts.scheduled = fresh_total - self.last_fresh;
            self.last_fresh = fresh_total;
        }
        let end = at.saturating_duration_since(self.start);
        let workers = crews.sum(|c| &c.resident);
        self.min_workers = self.min_workers.min(workers);
        self.peak_workers = self.peak_workers.max(workers).max(crews.peak());
        let gauges = Gauges { started, workers, idle: crews.sum(|c| &c.idle), in_flight: crews.sum(|c| &c.in_flight) };
        let mut row = IntervalRow::from_window(self.index, self.last_end, end, &window, gauges);
        row.scenario = self.scenario.clone();
        if let Some((sampler, report)) = &mut self.health {
            row.generator = sampler.sample(self.peak_workers);
            let judgement = row.generator_judgement();
            // Counted in the window, so thresholds (`generator_saturated`) and merges read it.
            if let Some(j) = &judgement {
                window.generator.count(j.verdict);
            }
            report.intervals.push(MeasuredInterval { start: self.last_end, end, health: row.generator, judgement });
        }
        observer.on_window(&row, &window);
        self.totals.merge(&window);
        self.index += 1;
        self.last_end = end;
        self.next_tick += self.interval;
    }
}
