//! The crews of every event loop of a run, as one: their counters summed for the interval rows,
//! the status and the report, and the ceiling dealt out among them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::time::Instant;

use crate::crew::Crew;
use crate::shared::share;
use crate::worker::WorkerFactory;

/// The crews of every event loop, summed for the interval rows, the status and the report.
pub(crate) struct Crews<F: WorkerFactory>(pub(crate) Vec<Arc<Crew<F>>>);

impl<F: WorkerFactory> Crews<F> {
    /// One counter, added over the event loops.
    pub(crate) fn sum(&self, counter: impl Fn(&Crew<F>) -> &AtomicU64) -> u64 {
        self.0.iter().map(|crew| counter(crew).load(Ordering::Relaxed)).sum()
    }

    /// The most workers resident at once across the event loops (joins counted as they happen,
    /// not sampled).
    pub(crate) fn peak(&self) -> u64 {
        self.0.first().map_or(0, |crew| crew.run.workers.peak())
    }

    /// Where the workers of every event loop that are in one of the host's calls are.
    pub(crate) fn under_way(&self) -> Vec<String> {
        self.0.iter().flat_map(|crew| crew.under_way()).collect()
    }

    /// When the last task of the run started.
    pub(crate) fn last_start(&self) -> Option<Instant> {
        self.0.iter().filter_map(|crew| crew.last_start()).max()
    }

    /// Retries waiting for their time.
    pub(crate) fn retries_pending(&self) -> u64 {
        self.0.iter().map(|crew| crew.retries_pending()).sum()
    }

    /// A new ceiling for the whole crew, dealt out to the event loops.
    pub(crate) fn set_max_workers(&self, max: u32) {
        let count = self.0.len() as u32;
        for (index, crew) in self.0.iter().enumerate() {
            crew.max_workers.store(u64::from(share(max, index as u32, count)), Ordering::Relaxed);
        }
    }

    pub(crate) fn stop_by_user(&self, reason: &str) {
        if let Some(crew) = self.0.first() {
            crew.run.stop.stop_by_user(reason);
        }
    }
}
