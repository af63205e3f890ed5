//! The sink that workers and the pacer record into while a run is under way.
//!
//! Per-worker histograms would cost hundreds of kilobytes per worker (thousands of workers is a
//! normal crew), and one global lock would serialise every task. So the recorder keeps a small
//! fixed set of stripes, each a mutex around a [`Window`]; a worker always records into the stripe
//! its id maps to, and the interval ticker drains all stripes once per interval.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::cardinality::{Admission, EndpointCap, SeriesCap};
use crate::outcome::Outcome;
use crate::plugin::{PluginMetrics, SeriesKey};
use crate::window::Window;

/// The two measured spans of a task that ran; latency is their sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskTiming {
    /// Scheduled time → call into the plugin.
    pub wait: Duration,
    /// Call → return.
    pub service: Duration,
    /// Of `wait`, the time spent waiting for a gate permit (`None` without a gate).
    pub gate: Option<Duration>,
}

/// One attempt that ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptRecord {
    /// How the attempt ended.
    pub end: crate::AttemptEnd,
    /// Whether it was a retry (attempt > 0).
    pub retry: bool,
    /// Its timings.
    pub timing: TaskTiming,
    /// The task's terminal outcome when this was its last attempt; `None` when a retry follows.
    pub terminal: Option<Outcome>,
    /// From the task's first scheduled time to this attempt's (zero for a first attempt): the
    /// earlier attempts and their backoff, which the task's latency includes.
    pub since_first: Duration,
}

/// What the pacer saw on one wake.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacerTally {
    /// Tasks that became due (released or dropped).
    pub scheduled: u64,
    /// Of those, dropped for want of a free worker or a gate permit.
    pub dropped: u64,
    /// Of the dropped, those that found the gate full.
    pub dropped_at_gate: u64,
    /// Tasks released later than the tolerance because the pacer was late.
    pub underrun: u64,
    /// How late the pacer woke, when it woke on its timer.
    pub lateness: Option<Duration>,
    /// The part of `lateness` beyond the tolerance.
    pub lag_beyond_tolerance: Duration,
}

/// A striped, lock-light metrics sink shared by a run's workers and pacer.
#[derive(Debug)]
pub struct Recorder {
    stripes: Box<[Mutex<Window>]>,
    gauge_seq: AtomicU64,
    series_cap: SeriesCap,
    endpoint_cap: EndpointCap,
}

impl Recorder {
    /// A recorder with `stripes` stripes (at least one).
    pub fn new(stripes: usize) -> Self {
        let stripes = (0..stripes.max(1)).map(|_| Mutex::new(Window::default())).collect();
        Self {
            stripes,
            gauge_seq: AtomicU64::new(0),
            series_cap: SeriesCap::default(),
            endpoint_cap: EndpointCap::default(),
        }
    }

    /// The stripe a worker (or the pacer) with this id records into.
    pub fn stripe_for(&self, id: u32) -> usize {
        id as usize % self.stripes.len()
    }

    fn with<R>(&self, stripe: usize, f: impl FnOnce(&mut Window) -> R) -> R {
        let slot = &self.stripes[stripe % self.stripes.len()];
        // A panic while holding the lock cannot leave a Window half-updated in a way that matters
        // more than losing the run's numbers, so a poisoned stripe is still used.
        let mut window = slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut window)
    }

    /// Count one ended task (and its timings when it ran).
    pub fn record_task(&self, stripe: usize, outcome: Outcome, timing: Option<TaskTiming>) {
        self.with(stripe, |w| w.record_task(outcome, timing));
    }

    /// Note what an attempt that did not pass said (`errors`), now.
    pub fn record_error(&self, stripe: usize, outcome: crate::ErrorKind, message: &str, iteration: u64) {
        let at = crate::errors::now_ms();
        self.with(stripe, |w| w.errors.record(outcome, message, iteration, at));
    }

    /// Count one attempt that ran.
    pub fn record_attempt(&self, stripe: usize, attempt: AttemptRecord) {
        self.with(stripe, |w| w.record_attempt(attempt));
    }

    /// Count ended tasks that never ran (dropped or interrupted before start) and were scheduled.
    pub fn record_unstarted(&self, stripe: usize, outcome: Outcome, n: u64) {
        if n > 0 {
            self.with(stripe, |w| {
                w.counts.scheduled += n;
                w.counts.add(outcome, n);
            });
        }
    }

    /// Count tasks that were scheduled earlier and ended without another attempt (retries still
    /// waiting when the run ended).
    pub fn record_unfinished(&self, stripe: usize, outcome: Outcome, n: u64) {
        if n > 0 {
            self.with(stripe, |w| w.counts.add(outcome, n));
        }
    }

    /// Count tasks the closed model started (it has no pacer to schedule them).
    pub fn record_scheduled(&self, stripe: usize, n: u64) {
        self.with(stripe, |w| w.counts.scheduled += n);
    }

    /// Count extra attempts.
    pub fn record_retries(&self, stripe: usize, n: u64) {
        self.with(stripe, |w| w.counts.retries += n);
    }

    /// Record what the pacer did on one wake.
    pub fn record_pacer(&self, stripe: usize, tally: PacerTally) {
        self.with(stripe, |w| {
            w.counts.scheduled += tally.scheduled;
            w.counts.dropped += tally.dropped;
            w.dropped_at_gate += tally.dropped_at_gate;
            w.underrun += tally.underrun;
            if let Some(late) = tally.lateness {
                w.lag_max = w.lag_max.max(late);
            }
            w.lag_total += tally.lag_beyond_tolerance;
        });
    }

    /// Record a plugin sample into `key`'s series, or where the series cap sends it. The cap is
    /// asked only for a key its stripe's window does not hold yet, so known series stay lock-light.
    fn plugin_sample(&self, stripe: usize, key: SeriesKey, record: impl FnOnce(&mut PluginMetrics, SeriesKey)) {
        self.plugin_sample_of(stripe, key, false, record);
    }

    fn plugin_sample_of(
        &self,
        stripe: usize,
        key: SeriesKey,
        check: bool,
        record: impl FnOnce(&mut PluginMetrics, SeriesKey),
    ) {
        self.with(stripe, |w| {
            if w.plugin.contains(&key) {
                return record(&mut w.plugin, key);
            }
            if !crate::plugin::valid_key(&key, check) {
                return w.plugin.note_invalid();
            }
            match self.series_cap.admit(key) {
                Admission::Own(key) => record(&mut w.plugin, key),
                Admission::Folded(key) => {
                    w.plugin.note_folded();
                    record(&mut w.plugin, key);
                }
                Admission::Discarded => w.plugin.note_discarded(),
            }
        });
    }

    /// Add to a plugin counter.
    pub fn counter(&self, stripe: usize, key: SeriesKey, delta: u64) {
        self.plugin_sample(stripe, key, |p, key| p.counter(key, delta));
    }

    /// Set a plugin gauge (a non-finite or absurd value is an invalid sample).
    pub fn gauge(&self, stripe: usize, key: SeriesKey, value: f64) {
        if !crate::plugin::valid_sample(value) {
            return self.with(stripe, |w| w.plugin.note_invalid());
        }
        let seq = self.gauge_seq.fetch_add(1, Ordering::Relaxed);
        self.plugin_sample(stripe, key, |p, key| p.gauge(key, value, seq));
    }

    /// Record a plugin trend value (a non-finite or absurd value is an invalid sample, so no
    /// histogram grows past a bounded range).
    pub fn trend(&self, stripe: usize, key: SeriesKey, value: f64) {
        if !crate::plugin::valid_sample(value) {
            return self.with(stripe, |w| w.plugin.note_invalid());
        }
        self.plugin_sample(stripe, key, |p, key| p.trend(key, value));
    }

    /// Record a plugin check.
    pub fn check(&self, stripe: usize, key: SeriesKey, ok: bool) {
        self.plugin_sample_of(stripe, key, true, |p, key| p.check(key, ok));
    }

    /// Count one finished HTTP request. Its endpoint is checked against the run-wide cap only
    /// when its stripe's window does not hold it yet, as for plugin series.
    pub fn http_request(&self, stripe: usize, mut sample: crate::HttpSample) {
        self.with(stripe, |w| {
            if let Some(endpoint) = sample.endpoint.take() {
                sample.endpoint = Some(if w.http.has_endpoint(&endpoint) {
                    endpoint
                } else {
                    self.endpoint_cap.admit(endpoint).unwrap_or_else(|overflow| {
                        w.http.endpoints_folded += 1;
                        overflow
                    })
                });
            }
            w.http.record(sample);
        });
    }

    /// Count a request refused by the allow-list.
    pub fn http_denied(&self, stripe: usize) {
        self.with(stripe, |w| w.http.denied += 1);
    }

    /// Add connection and wire-byte counts.
    pub fn http_wire(&self, stripe: usize, connections: u64, sent: u64, received: u64) {
        if connections + sent + received > 0 {
            self.with(stripe, |w| {
                w.http.connections_opened += connections;
                w.http.bytes_sent += sent;
                w.http.bytes_received += received;
            });
        }
    }

    /// Take everything recorded since the last drain, merged into one window.
    pub fn drain(&self) -> Window {
        let mut out = Window::default();
        for stripe in 0..self.stripes.len() {
            self.with(stripe, |w| {
                out.merge(w);
                w.reset();
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_plugin_values_are_invalid_samples_and_counters_saturate() {
        let rec = Recorder::new(1);
        for value in [1e300, -1e300, f64::NAN, f64::INFINITY] {
            rec.trend(0, SeriesKey::new("size".into(), Vec::new()), value);
            rec.gauge(0, SeriesKey::new("level".into(), Vec::new()), value);
        }
        rec.trend(0, SeriesKey::new("size".into(), Vec::new()), 12.5);
        rec.counter(0, SeriesKey::new("n".into(), Vec::new()), u64::MAX);
        rec.counter(0, SeriesKey::new("n".into(), Vec::new()), u64::MAX);
        let w = rec.drain();
        assert_eq!(w.plugin.invalid(), 8);
        let series = w.plugin.series();
        let value = |name: &str| &series.iter().find(|s| s.key.name == name).unwrap().value;
        assert!(
            matches!(value("n"), crate::plugin::SeriesValue::Counter(crate::count::MAX_COUNT)),
            "saturated (at 2^53, as every count), not wrapped"
        );
        assert!(matches!(value("size"), crate::plugin::SeriesValue::Trend(t) if t.count() == 1));
    }

    #[test]
    fn endpoints_past_the_run_wide_cap_fold_into_one_and_are_counted() {
        use crate::http::{Endpoint, HttpSample};
        let rec = Recorder::new(2);
        let sample = |i: usize| {
            HttpSample::new(Some(200), Duration::from_millis(1), 0, Some(Endpoint::new("GET", &format!("GET /e{i}"))))
        };
        for i in 0..crate::cardinality::MAX_SERIES + 3 {
            rec.http_request(i % 2, sample(i));
        }
        rec.http_request(0, sample(0));
        let w = rec.drain();
        assert_eq!(w.http.endpoints.len(), crate::cardinality::MAX_SERIES + 1);
        assert_eq!((w.http.endpoints_folded, w.http.endpoints[&Endpoint::overflow()].requests), (3, 3));
        assert_eq!(w.http.endpoint_matching(Some("GET /e0"), None).requests, 2);
        // The next interval still folds them: the cap is run-wide, not per window.
        rec.http_request(1, sample(crate::cardinality::MAX_SERIES + 1));
        assert_eq!(rec.drain().http.endpoints_folded, 1);
    }

    #[test]
    fn drain_merges_stripes_and_empties_them() {
        let rec = Recorder::new(4);
        let timing = TaskTiming { wait: Duration::from_micros(100), service: Duration::from_micros(900), gate: None };
        for id in 0..10u32 {
            rec.record_task(rec.stripe_for(id), Outcome::Passed, Some(timing));
        }
        rec.record_pacer(0, PacerTally { scheduled: 12, dropped: 2, ..PacerTally::default() });
        let w = rec.drain();
        assert_eq!((w.counts.scheduled, w.counts.passed, w.counts.dropped), (12, 10, 2));
        assert!(w.counts.identity_holds());
        assert_eq!(w.latency.count(), 10);
        assert_eq!(w.latency.quantile_micros(0.5), 1000);
        let again = rec.drain();
        assert_eq!(again.counts.scheduled, 0);
        assert_eq!(again.latency.count(), 0);
    }
}
