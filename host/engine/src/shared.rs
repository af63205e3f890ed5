//! What every event loop of one run shares: the plan, the factory, the recorder, the stop,
//! the gate, the setup data, live control, the closed model's iteration counter and which
//! failures have been logged. Everything else belongs to one loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use loadhost_metrics::{ErrorKind, Recorder};
use tokio::sync::Semaphore;

use crate::control::Control;
use crate::health::LoopThreads;
use crate::plan::Plan;
use crate::segment::Segment;
use crate::stop::Stop;
use crate::worker::WorkerFactory;

/// What every event loop of one run shares.
pub(crate) struct Shared<F: WorkerFactory> {
    pub(crate) plan: Plan,
    pub(crate) factory: Arc<F>,
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) stop: Arc<Stop>,
    /// The gate (`--max-in-flight`), one for the whole run.
    pub(crate) gate: Option<Arc<Semaphore>>,
    pub(crate) setup_data: Option<Arc<str>>,
    pub(crate) control: Option<Arc<Control>>,
    /// The rate the pacers follow now, for the status (f64 bits).
    pub(crate) rate_now: Arc<AtomicU64>,
    /// The closed model's iteration counter: shared, so a fast event loop takes more.
    pub(crate) claims: Option<Arc<Claims>>,
    /// How many event loops the run has.
    pub(crate) count: u32,
    /// The first failure of each kind is logged once for the whole run.
    pub(crate) logged: Arc<FirstFailures>,
    /// Pacers whose schedule (and retry flush) is done: when every event loop's is, no new task will
    /// start, and tasks still running have the plan's graceful stop.
    pub(crate) pacers_done: std::sync::atomic::AtomicU32,
    /// The event loops' threads, for the generator's health (none under the runtime's clock).
    pub(crate) loop_threads: Arc<LoopThreads>,
    /// Workers resident in every event loop together, and the most there ever were.
    pub(crate) workers: WorkerCount,
}

/// Workers resident across the run's event loops and their high-water mark. The ticker samples the
/// crew at each interval's end, which misses a peak between two (a closed ramp's last worker may
/// live for a fifth of a second, as k6 counts VUs): this one sees every worker join.
#[derive(Debug, Default)]
pub(crate) struct WorkerCount {
    now: AtomicU64,
    peak: AtomicU64,
}

impl WorkerCount {
    /// `n` workers joined.
    pub(crate) fn joined(&self, n: u64) {
        let now = self.now.fetch_add(n, Ordering::AcqRel) + n;
        self.peak.fetch_max(now, Ordering::AcqRel);
    }

    /// A worker left.
    pub(crate) fn left(&self) {
        self.now.fetch_sub(1, Ordering::AcqRel);
    }

    /// The most workers resident at once.
    pub(crate) fn peak(&self) -> u64 {
        self.peak.load(Ordering::Acquire)
    }
}

impl<F: WorkerFactory> Shared<F> {
    /// An event loop's pacer finished its schedule; the last one ends generation (not after an abort,
    /// which is a stop of its own).
    pub(crate) fn pacer_done(&self) {
        let done = self.pacers_done.fetch_add(1, Ordering::AcqRel) + 1;
        if done == self.count && !self.stop.is_aborted() {
            self.stop.end_generation();
        }
    }
}

/// The closed model's shared iteration counter.
pub(crate) struct Claims {
    next: AtomicU64,
    max: u64,
    segment: Segment,
}

impl Claims {
    /// Claims of `segment`'s share of the first `max` iterations (all of them without a cap).
    pub(crate) fn new(max: Option<u64>, segment: Segment) -> Self {
        Self { next: AtomicU64::new(0), max: max.map_or(u64::MAX, |n| segment.share_of(n)), segment }
    }

    /// The next iteration, numbered as in the whole plan.
    pub(crate) fn claim(&self) -> Option<u64> {
        let j = self.next.fetch_add(1, Ordering::Relaxed);
        (j < self.max).then(|| self.segment.global(j))
    }
}

/// Kinds of failure whose first occurrence in the run is logged in full: a task's attempt's, or
/// the host's own.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FailureKind {
    Attempt(ErrorKind),
    /// The crew could not grow.
    Growth,
    /// A closed-model retry given up at the flush's end.
    Flush,
}

impl FailureKind {
    /// Its slot in [`FirstFailures`].
    fn index(self) -> usize {
        match self {
            FailureKind::Attempt(kind) => kind as usize,
            FailureKind::Growth => ErrorKind::ALL.len(),
            FailureKind::Flush => ErrorKind::ALL.len() + 1,
        }
    }
}

/// Whether the first failure of each kind has been logged yet (every event loop's crew shares it).
#[derive(Debug, Default)]
pub(crate) struct FirstFailures([AtomicBool; ErrorKind::ALL.len() + 2]);

impl FirstFailures {
    /// Whether this is the run's first failure of `kind` (and remember that it was seen).
    pub(crate) fn first(&self, kind: FailureKind) -> bool {
        !self.0[kind.index()].swap(true, Ordering::Relaxed)
    }
}

/// Event loop `index`'s exact share of `total` (round-robin, so shares add up to `total`).
pub(crate) fn share(total: u32, index: u32, count: u32) -> u32 {
    let segment = Segment::whole().split(index, count);
    u32::try_from(segment.share_of(u64::from(total))).unwrap_or(total)
}
