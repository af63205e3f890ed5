//! What one interval accumulates. Windows merge, so stripes fold into an interval and intervals
//! fold into the run's totals without any value being counted twice.

use std::time::Duration;

use crate::count::{Overflow, Tally};
use crate::errors::ErrorTable;
use crate::generator_verdict::GeneratorTally;
use crate::histogram::LatencyHistogram;
use crate::http::HttpStats;
use crate::outcome::{Attempts, Counts, Outcome};
use crate::plugin::PluginMetrics;

/// Counts, latency views, pacer health and plugin metrics over some span of the run. It
/// serializes exactly (see [`crate::serial`]), so windows written by one process merge in another.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Window {
    /// Scheduled tasks and how they ended.
    pub counts: Counts,
    /// Every attempt and how it ended.
    pub attempts: Attempts,
    /// Scheduled time → end: what a user of the target sees (free of coordinated omission).
    pub latency: LatencyHistogram,
    /// Call into the plugin → end.
    pub service: LatencyHistogram,
    /// Scheduled time → call: queueing in the host.
    pub wait: LatencyHistogram,
    /// Time each task waited for a gate permit (`--max-in-flight`): a saturated gate shows here
    /// even when it is never sampled empty.
    pub gate_wait: LatencyHistogram,
    /// The latest the pacer woke after a task was due.
    pub lag_max: Duration,
    /// Sum of pacer lateness beyond the timer's tolerance.
    pub lag_total: Duration,
    /// Tasks the pacer released later than the tolerance because it was itself late.
    pub underrun: u64,
    /// Of the dropped tasks, those that found the gate full (the rest found no idle worker).
    pub dropped_at_gate: u64,
    /// Metrics recorded by the plugin.
    pub plugin: PluginMetrics,
    /// HTTP requests the plugin made, recorded by the host.
    pub http: HttpStats,
    /// Attempts that carried an error, grouped by what they said.
    #[serde(default, skip_serializing_if = "ErrorTable::is_empty")]
    pub errors: ErrorTable,
    /// The generator's verdicts on the intervals in this window (none under a virtual clock, or
    /// in results files written before the verdict existed).
    #[serde(default, skip_serializing_if = "GeneratorTally::is_empty")]
    pub generator: GeneratorTally,
}

impl Window {
    /// Count one ended task and, when it ran, its three latency views.
    pub fn record_task(&mut self, outcome: Outcome, timing: Option<crate::TaskTiming>) {
        self.counts.add(outcome, 1);
        self.record_timing(timing);
    }

    /// Count one attempt that ran: how it ended, its timings, whether it was a retry, and the
    /// task's terminal outcome when this attempt was its last.
    pub fn record_attempt(&mut self, attempt: crate::AttemptRecord) {
        self.attempts.add(attempt.end);
        if attempt.retry {
            self.counts.retries += 1;
        }
        let t = attempt.timing;
        self.record_attempt_timing(t);
        // Latency is the task's, as a user of the target sees it: once, when its last attempt
        // ends, from its first scheduled time (earlier attempts and backoff included).
        if let Some(outcome) = attempt.terminal {
            self.counts.add(outcome, 1);
            self.latency.record(attempt.since_first + t.wait + t.service);
        }
    }

    fn record_timing(&mut self, timing: Option<crate::TaskTiming>) {
        if let Some(t) = timing {
            self.record_attempt_timing(t);
            self.latency.record(t.wait + t.service);
        }
    }

    /// The per-attempt views: wait, service and the gate's share of the wait.
    fn record_attempt_timing(&mut self, t: crate::TaskTiming) {
        self.wait.record(t.wait);
        self.service.record(t.service);
        if let Some(gate) = t.gate {
            self.gate_wait.record(gate);
        }
    }

    /// Fold `other` into this window (a count past [`MAX_COUNT`](crate::count::MAX_COUNT)
    /// saturates: the host's own counts never come near it).
    pub fn merge(&mut self, other: &Window) {
        self.add_to(other, &mut Tally::default());
    }

    /// Fold `other` into this window, or say which figure would pass
    /// [`MAX_COUNT`](crate::count::MAX_COUNT) (a damaged or crafted results file): the window
    /// is then not to be used.
    pub fn try_merge(&mut self, other: &Window) -> Result<(), Overflow> {
        let mut t = Tally::default();
        self.add_to(other, &mut t);
        t.result()
    }

    /// Whether every figure of this window fits (a window read from a file: see [`crate::count`]).
    pub fn check(&self) -> Result<(), Overflow> {
        Window::default().try_merge(self)
    }

    pub(crate) fn add_to(&mut self, other: &Window, t: &mut Tally) {
        self.counts.add_to(&other.counts, t);
        self.attempts.add_to(&other.attempts, t);
        self.latency.add_to(&other.latency, t, "the latency histogram's count");
        self.service.add_to(&other.service, t, "the service-time histogram's count");
        self.wait.add_to(&other.wait, t, "the wait histogram's count");
        self.gate_wait.add_to(&other.gate_wait, t, "the gate-wait histogram's count");
        self.lag_max = self.lag_max.max(other.lag_max);
        t.add_duration(&mut self.lag_total, other.lag_total, "the pacer's total lag");
        t.add(&mut self.underrun, other.underrun, "underrun");
        t.add(&mut self.dropped_at_gate, other.dropped_at_gate, "tasks dropped at the gate");
        self.plugin.add_to(&other.plugin, t);
        self.http.add_to(&other.http, t);
        self.errors.add_to(&other.errors, t);
        self.generator.merge(&other.generator);
    }

    /// Empty the window, keeping its allocations.
    pub fn reset(&mut self) {
        self.counts = Counts::default();
        self.attempts = Attempts::default();
        self.latency.reset();
        self.service.reset();
        self.wait.reset();
        self.gate_wait.reset();
        self.lag_max = Duration::ZERO;
        self.lag_total = Duration::ZERO;
        self.underrun = 0;
        self.dropped_at_gate = 0;
        self.plugin.clear();
        self.http.reset();
        self.errors.clear();
    }
}
