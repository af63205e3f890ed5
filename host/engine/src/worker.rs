//! The seam between the engine and whatever runs tasks: a [`WorkerFactory`] makes workers (heavy,
//! once per worker) and a [`Worker`] runs one task at a time (hot, once per task). The engine never
//! knows a worker is a wasm instance, so it is tested with fake workers.

use std::error::Error as StdError;
use std::future::Future;
use std::sync::Arc;

use loadhost_metrics::{AttemptEnd, ErrorKind, Recorder, SeriesKey};
use thiserror::Error;

/// One task as the engine hands it to a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task<'a> {
    /// Sequence number in the run, from 0; a retry keeps its number.
    pub iteration: u64,
    /// 0 for the first try, n for the n-th retry.
    pub attempt: u32,
    /// The task's row from the data feed; empty without one.
    pub input: &'a [u8],
    /// How long it waited at the gate (`--max-in-flight`) just before this call; zero without one.
    pub gate_wait: std::time::Duration,
}

/// How one call of a task ended, as the worker saw it: passed, or failed in some way, saying
/// why. The runtime makes it from the plugin's `task-error` (or a trap); the engine itself makes
/// the timeouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskOutcome {
    /// The task passed.
    Passed,
    /// It did not, and said this. A `retryable` one may be retried; after an `aborted` one the run
    /// stops; after a `trapped` or `timed_out` one the engine replaces the worker.
    Error(ErrorKind, String),
}

impl TaskOutcome {
    /// How this attempt ended, for the per-attempt counts (and, through
    /// [`AttemptEnd::terminal`], the task's when no retry follows).
    pub fn end(&self) -> AttemptEnd {
        match self {
            TaskOutcome::Passed => AttemptEnd::Passed,
            TaskOutcome::Error(kind, _) => AttemptEnd::Error(*kind),
        }
    }

    /// A task cut short by its deadline (`timeout`, the plan's `--task-timeout`), saying where it
    /// was when the worker could tell ([`Worker::whereabouts`]).
    pub fn timed_out(timeout: std::time::Duration, place: Option<String>) -> Self {
        let at = place.map(|p| format!(", {p}")).unwrap_or_default();
        TaskOutcome::Error(ErrorKind::TimedOut, format!("still running after {timeout:?} (--task-timeout){at}"))
    }

    /// Whether the worker is unusable afterwards and must be replaced.
    pub fn poisons_worker(&self) -> bool {
        matches!(self, TaskOutcome::Error(ErrorKind::Trapped | ErrorKind::TimedOut, _))
    }
}

/// Where a worker's task is now, in words (`waiting 2.9 s for GET http://…`), or `None` when it is
/// in none of the host's calls; asked when a task is cut short, from any thread.
pub type Whereabouts = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// Runs tasks one at a time. Each worker lives on its own tokio task.
pub trait Worker: Send + 'static {
    /// Run one task to completion.
    fn run(&mut self, task: Task<'_>) -> impl Future<Output = TaskOutcome> + Send;

    /// How to ask where this worker's task is, so a task that times out or is interrupted says
    /// where it was. `None` (the default): the worker cannot tell.
    fn whereabouts(&self) -> Option<Whereabouts> {
        None
    }
}

/// Why a worker (or a lifecycle call) failed.
#[derive(Debug, Error)]
#[error("{error}")]
pub struct WorkerError {
    error: Box<dyn StdError + Send + Sync + 'static>,
    /// The plugin itself refused (its `init`, `setup` or `teardown` returned an error or trapped),
    /// as opposed to the host failing to make an instance.
    refused: bool,
}

impl WorkerError {
    /// The host could not make the worker.
    pub fn new(err: impl Into<Box<dyn StdError + Send + Sync + 'static>>) -> Self {
        Self { error: err.into(), refused: false }
    }

    /// The plugin refused: its lifecycle call returned an error.
    pub fn refused(err: impl Into<Box<dyn StdError + Send + Sync + 'static>>) -> Self {
        Self { error: err.into(), refused: true }
    }

    /// Whether the plugin itself refused.
    pub fn is_refusal(&self) -> bool {
        self.refused
    }
}

/// What a new worker is told about itself.
#[derive(Debug, Clone)]
pub struct WorkerContext {
    /// Unique in the run and stable for the worker's life; a replacement gets a new id.
    pub id: u32,
    /// The event loop the worker runs on, from 0: workers of one loop share its thread.
    pub event_loop: u32,
    /// The scenario the worker runs tasks for.
    pub scenario: Arc<str>,
    /// Where the worker records metrics the plugin reports.
    pub metrics: MetricsHandle,
    /// What the plugin's `setup` returned, for its `init` (`None` without a lifecycle).
    pub setup_data: Option<Arc<str>>,
}

/// Makes workers. Making one may be slow (instantiating a plugin); the engine never does it on
/// the pacer's path.
pub trait WorkerFactory: Send + Sync + 'static {
    /// The worker type made.
    type Worker: Worker;
    /// Make a worker (and run the plugin's `init` in it, when it has a lifecycle).
    fn new_worker(&self, ctx: WorkerContext) -> impl Future<Output = Result<Self::Worker, WorkerError>> + Send;

    /// Once per run, before any load: the plugin's `setup`, if it has one. Its result goes to every
    /// worker's `init` and to `teardown`.
    fn setup(&self, metrics: MetricsHandle) -> impl Future<Output = Result<Option<String>, WorkerError>> + Send {
        let _ = metrics;
        async { Ok(None) }
    }

    /// Once per run, after the load: the plugin's `teardown`, if it has one.
    fn teardown(
        &self,
        setup_data: &str,
        metrics: MetricsHandle,
    ) -> impl Future<Output = Result<(), WorkerError>> + Send {
        let _ = (setup_data, metrics);
        async { Ok(()) }
    }
}

/// A worker's handle on the run's metrics, for the metrics its plugin records.
#[derive(Debug, Clone)]
pub struct MetricsHandle {
    recorder: Arc<Recorder>,
    stripe: usize,
}

impl MetricsHandle {
    /// A handle recording into `recorder`'s stripe for worker `id`.
    pub fn new(recorder: Arc<Recorder>, id: u32) -> Self {
        let stripe = recorder.stripe_for(id);
        Self { recorder, stripe }
    }

    /// Add to a counter.
    pub fn counter(&self, name: String, delta: u64, tags: Vec<(String, String)>) {
        self.recorder.counter(self.stripe, SeriesKey::new(name, tags), delta);
    }

    /// Set a gauge.
    pub fn gauge(&self, name: String, value: f64, tags: Vec<(String, String)>) {
        self.recorder.gauge(self.stripe, SeriesKey::new(name, tags), value);
    }

    /// Record a trend value.
    pub fn trend(&self, name: String, value: f64, tags: Vec<(String, String)>) {
        self.recorder.trend(self.stripe, SeriesKey::new(name, tags), value);
    }

    /// Count one finished HTTP request (built-in metrics).
    pub fn http_request(&self, sample: loadhost_metrics::HttpSample) {
        self.recorder.http_request(self.stripe, sample);
    }

    /// Count a request refused by the allow-list.
    pub fn http_denied(&self) {
        self.recorder.http_denied(self.stripe);
    }

    /// Add connections opened and wire bytes.
    pub fn http_wire(&self, connections: u64, sent: u64, received: u64) {
        self.recorder.http_wire(self.stripe, connections, sent, received);
    }

    /// Record a check; returns `ok`.
    pub fn check(&self, name: String, ok: bool, tags: Vec<(String, String)>) -> bool {
        self.recorder.check(self.stripe, SeriesKey::new(name, tags), ok);
        ok
    }
}
