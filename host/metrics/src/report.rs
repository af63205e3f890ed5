//! What outputs render: one row per interval while the run goes, one report at the end. How
//! reports and intervals combine is in [`crate::combine`].

use std::time::{Duration, SystemTime};

use crate::catalogue::Timing;
use crate::count::Tally;
use crate::generator::GeneratorHealth;
use crate::generator_verdict::{JudgedInterval, Judgement};
use crate::histogram::Percentiles;
use crate::outcome::Counts;
use crate::window::Window;

/// One interval of the run (one second by default), as the CSV and the progress line show it.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalRow {
    /// The scenario the row belongs to ("default" when there is one).
    pub scenario: std::sync::Arc<str>,
    /// 0 for the first interval.
    pub index: u64,
    /// Offset of the interval's start from the run's start.
    pub start: Duration,
    /// Offset of the interval's end (the last interval may be short).
    pub end: Duration,
    /// Tasks scheduled in the interval and the tasks that ended in it, by outcome.
    pub counts: Counts,
    /// Tasks that started in the interval.
    pub started: u64,
    /// The latest the pacer woke in the interval.
    pub lag_max: Duration,
    /// Tasks released late because the pacer was late.
    pub underrun: u64,
    /// Workers resident at the interval's end.
    pub workers: u64,
    /// Of those, idle (waiting for a task).
    pub idle: u64,
    /// Tasks executing at the interval's end.
    pub in_flight: u64,
    /// Latency of tasks that ended in the interval.
    pub latency: Percentiles,
    /// Service time of tasks that ended in the interval.
    pub service: Percentiles,
    /// Wait of tasks that ended in the interval.
    pub wait: Percentiles,
    /// Gate wait of tasks that ended in the interval.
    pub gate_wait: Percentiles,
    /// HTTP requests that finished in the interval.
    pub http_reqs: u64,
    /// Of those, failed ones (`http_req_failed`: no response, or an unexpected status).
    pub http_req_failed: u64,
    /// HTTP requests refused by the allow-list.
    pub http_denied: u64,
    /// Duration of the HTTP requests that finished in the interval.
    pub http_duration: Percentiles,
    /// The generator's health in the interval (nothing measured under a virtual clock).
    pub generator: GeneratorHealth,
}

impl IntervalRow {
    /// The generator's verdict on this interval (`None`: nothing measured), judged against the
    /// service times of the tasks that ended in it.
    pub fn generator_judgement(&self) -> Option<crate::Judgement> {
        let service_p99 = (self.counts.ended() > 0 && self.service.max > 0.0).then_some(self.service.p99);
        crate::generator_verdict::judge(&self.generator, service_p99)
    }

    /// The percentiles of one of a task's timings in the interval.
    pub fn timing(&self, timing: Timing) -> &Percentiles {
        match timing {
            Timing::Latency => &self.latency,
            Timing::Service => &self.service,
            Timing::Wait => &self.wait,
            Timing::GateWait => &self.gate_wait,
        }
    }

    /// Build the row for `window`, recorded between `start` and `end`.
    pub fn from_window(index: u64, start: Duration, end: Duration, window: &Window, gauges: Gauges) -> Self {
        Self {
            scenario: std::sync::Arc::from("default"),
            index,
            start,
            end,
            counts: window.counts,
            started: gauges.started,
            lag_max: window.lag_max,
            underrun: window.underrun,
            workers: gauges.workers,
            idle: gauges.idle,
            in_flight: gauges.in_flight,
            latency: window.latency.percentiles(),
            service: window.service.percentiles(),
            wait: window.wait.percentiles(),
            gate_wait: window.gate_wait.percentiles(),
            http_reqs: window.http.requests,
            http_req_failed: window.http.failed,
            http_denied: window.http.denied,
            http_duration: window.http.duration.percentiles(),
            generator: GeneratorHealth::default(),
        }
    }
}

/// Point-in-time values sampled at an interval's end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Gauges {
    /// Tasks started during the interval.
    pub started: u64,
    /// Workers resident.
    pub workers: u64,
    /// Workers idle.
    pub idle: u64,
    /// Tasks executing.
    pub in_flight: u64,
}

/// How the crew changed over the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WorkerStats {
    /// Fewest workers resident at once (after start-up).
    pub min: u64,
    /// Most workers resident at once.
    pub peak: u64,
    /// Workers resident at the end.
    #[serde(rename = "final")]
    pub final_: u64,
    /// Workers added on demand.
    pub grown: u64,
    /// Workers retired as surplus.
    pub retired: u64,
    /// Instances discarded after a trap and replaced by a fresh one.
    pub replaced: u64,
    /// The most workers the crew could have at the end (`--max-workers`, or what live control or
    /// the memory ceiling set); 0 where it is not known (older files).
    #[serde(default)]
    pub ceiling: u64,
}

impl WorkerStats {
    /// Add another crew's figures, as for crews that ran side by side (scenarios, segments).
    pub fn add(&mut self, other: &WorkerStats) {
        self.add_to(other, &mut Tally::default());
    }

    pub(crate) fn add_to(&mut self, other: &WorkerStats, t: &mut Tally) {
        t.add(&mut self.min, other.min, "workers (min)");
        t.add(&mut self.peak, other.peak, "workers (peak)");
        t.add(&mut self.final_, other.final_, "workers (final)");
        t.add(&mut self.grown, other.grown, "workers grown");
        t.add(&mut self.retired, other.retired, "workers retired");
        t.add(&mut self.replaced, other.replaced, "workers replaced");
        t.add(&mut self.ceiling, other.ceiling, "workers (ceiling)");
    }
}

/// Everything a finished run measured.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RunReport {
    /// The scenario ("default" when there is one; "all" for scenarios combined).
    pub scenario: String,
    /// How long after the run's start this scenario started.
    pub offset: Duration,
    /// Wall-clock time the load started.
    pub started_at: SystemTime,
    /// From the start of load to the end of the last task.
    pub elapsed: Duration,
    /// Load-generation time: from the start until the last task was released (at least the planned
    /// duration). `achieved_per_s` divides by this.
    pub generation: Duration,
    /// Tasks that started executing.
    pub started: u64,
    /// The planned average rate (tasks/s) in the open model; `None` in the closed model.
    #[serde(with = "crate::nonfinite::opt_float")]
    pub target_rate: Option<f64>,
    /// Totals over the whole run.
    pub totals: Window,
    /// Crew statistics.
    pub workers: WorkerStats,
    /// Per-interval rows emitted.
    pub intervals: u64,
    /// Set when the plugin aborted the run: its message.
    pub aborted: Option<String>,
    /// Set when the user stopped the run (a signal, the control API): how.
    pub stopped: Option<String>,
    /// Set when the plugin's `teardown` failed: why.
    pub teardown_error: Option<String>,
    /// The generator's health, when it was measured (a run on real threads). Not in results
    /// files: a merge of several processes has no one generator.
    #[serde(skip)]
    pub generator: Option<GeneratorReport>,
}

impl RunReport {
    /// The accounting counts over the whole run.
    pub fn counts(&self) -> &Counts {
        &self.totals.counts
    }

    /// Tasks started ÷ load-generation time.
    pub fn achieved_rate(&self) -> f64 {
        let secs = self.generation.as_secs_f64();
        if secs > 0.0 { self.started as f64 / secs } else { 0.0 }
    }
}

impl Percentiles {
    /// The percentiles as outputs show them: none above the max. An HDR percentile is the upper
    /// edge of its bucket (values are exact to 0.1%), so it can pass a max that is exact (a
    /// trend's); a p99.9 above the largest value recorded is never what the user means.
    pub fn clamped(self) -> Percentiles {
        let at_most = |v: f64| v.min(self.max);
        Percentiles {
            p50: at_most(self.p50),
            p90: at_most(self.p90),
            p95: at_most(self.p95),
            p99: at_most(self.p99),
            p999: at_most(self.p999),
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_percentile_is_shown_above_the_max() {
        let p = Percentiles {
            min: 0.0,
            mean: 150.0,
            p50: 149.1,
            p90: 269.1,
            p95: 284.2,
            p99: 299.2,
            p999: 299.4,
            max: 299.0,
        };
        let shown = p.clamped();
        assert_eq!((shown.p50, shown.p90, shown.p99, shown.p999, shown.max), (149.1, 269.1, 299.0, 299.0, 299.0));
        assert_eq!((shown.min, shown.mean), (0.0, 150.0));
    }
}

/// The generator's health over a run: what it may use, and each interval's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GeneratorReport {
    /// The cores the process may use (its affinity, or its cgroup's CPU quota when smaller).
    pub cores_allowed: f64,
    /// Each interval's figures and verdict.
    pub intervals: Vec<MeasuredInterval>,
}

/// One interval's figures, and the verdict on them.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredInterval {
    /// Its start, from the run's start.
    pub start: Duration,
    /// Its end.
    pub end: Duration,
    /// The figures.
    pub health: GeneratorHealth,
    /// The verdict (`None`: too little was measured to judge).
    pub judgement: Option<Judgement>,
}

impl GeneratorReport {
    /// The judged intervals, for [`crate::generator_verdict::sentence`].
    pub fn judged(&self) -> Vec<JudgedInterval> {
        self.intervals
            .iter()
            .filter_map(|i| {
                let judgement = i.judgement.clone()?;
                Some(JudgedInterval { start: i.start, end: i.end, judgement })
            })
            .collect()
    }
}
