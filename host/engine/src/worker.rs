//! The seam between the engine and whatever runs tasks: a [`WorkerFactory`] makes workers (heavy,
//! once per worker) and a [`Worker`] runs one task at a time (hot, once per task). The engine never
//! knows a worker is a wasm instance, so it is tested with fake workers.

use std::error::Error as StdError;
use std::future::Future;
use std::sync::Arc;

use loadhost_metrics::{Outcome, Recorder, SeriesKey};
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
}

/// How one call of a task ended, as the worker saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskOutcome {
    /// The task passed.
    Passed,
    /// A failure that must not be retried.
    Failed(String),
    /// A transient failure that may be retried.
    Retryable(String),
    /// The plugin asked to stop the whole run.
    Abort(String),
    /// The worker trapped and cannot run another task; the engine replaces it.
    Trapped(String),
    /// The task overran its deadline; the engine replaces the worker. With where it was, when
    /// the worker could tell ([`Worker::whereabouts`]).
    TimedOut(Option<String>),
}

impl TaskOutcome {
    /// The terminal state this outcome counts as when no retry follows.
    pub fn terminal(&self) -> Outcome {
        match self {
            TaskOutcome::Passed => Outcome::Passed,
            TaskOutcome::Failed(_) | TaskOutcome::Retryable(_) => Outcome::Failed,
            TaskOutcome::Abort(_) => Outcome::Aborted,
            TaskOutcome::Trapped(_) => Outcome::Trapped,
            TaskOutcome::TimedOut(_) => Outcome::TimedOut,
        }
    }

    /// How this attempt ended, for the per-attempt counts.
    pub fn attempt_end(&self) -> loadhost_metrics::AttemptEnd {
        use loadhost_metrics::AttemptEnd;
        match self {
            TaskOutcome::Passed => AttemptEnd::Passed,
            TaskOutcome::Failed(_) => AttemptEnd::Failed,
            TaskOutcome::Retryable(_) => AttemptEnd::Retryable,
            TaskOutcome::Abort(_) => AttemptEnd::Aborted,
            TaskOutcome::Trapped(_) => AttemptEnd::Trapped,
            TaskOutcome::TimedOut(_) => AttemptEnd::TimedOut,
        }
    }

    /// What an attempt that did not pass said, for the errors table: a timeout says how long it
    /// was allowed (`timeout`, the plan's `--task-timeout`).
    pub fn error(
        &self,
        timeout: std::time::Duration,
    ) -> Option<(loadhost_metrics::ErrorKind, std::borrow::Cow<'_, str>)> {
        use loadhost_metrics::ErrorKind;
        use std::borrow::Cow;
        match self {
            TaskOutcome::Passed => None,
            TaskOutcome::Failed(msg) => Some((ErrorKind::Failed, Cow::Borrowed(msg))),
            TaskOutcome::Retryable(msg) => Some((ErrorKind::Retryable, Cow::Borrowed(msg))),
            TaskOutcome::Abort(msg) => Some((ErrorKind::Aborted, Cow::Borrowed(msg))),
            TaskOutcome::Trapped(msg) => Some((ErrorKind::Trapped, Cow::Borrowed(msg))),
            TaskOutcome::TimedOut(place) => {
                let at = place.as_deref().map(|p| format!(", {p}")).unwrap_or_default();
                Some((ErrorKind::TimedOut, Cow::Owned(format!("still running after {timeout:?} (--task-timeout){at}"))))
            }
        }
    }

    /// Whether the worker is unusable afterwards and must be replaced.
    pub fn poisons_worker(&self) -> bool {
        matches!(self, TaskOutcome::Trapped(_) | TaskOutcome::TimedOut(_))
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
    /// The event loop (shard) the worker runs on, from 0: workers of one loop share its thread.
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
    shard: usize,
}

impl MetricsHandle {
    /// A handle recording into `recorder`'s shard for worker `id`.
    pub fn new(recorder: Arc<Recorder>, id: u32) -> Self {
        let shard = recorder.shard_for(id);
        Self { recorder, shard }
    }

    /// Add to a counter.
    pub fn counter(&self, name: String, delta: u64, tags: Vec<(String, String)>) {
        self.recorder.counter(self.shard, SeriesKey::new(name, tags), delta);
    }

    /// Set a gauge.
    pub fn gauge(&self, name: String, value: f64, tags: Vec<(String, String)>) {
        self.recorder.gauge(self.shard, SeriesKey::new(name, tags), value);
    }

    /// Record a trend value.
    pub fn trend(&self, name: String, value: f64, tags: Vec<(String, String)>) {
        self.recorder.trend(self.shard, SeriesKey::new(name, tags), value);
    }

    /// Count one finished HTTP request (built-in metrics).
    pub fn http_request(&self, sample: loadhost_metrics::HttpSample) {
        self.recorder.http_request(self.shard, sample);
    }

    /// Count a request refused by the allow-list.
    pub fn http_denied(&self) {
        self.recorder.http_denied(self.shard);
    }

    /// Add connections opened and wire bytes.
    pub fn http_wire(&self, connections: u64, sent: u64, received: u64) {
        self.recorder.http_wire(self.shard, connections, sent, received);
    }

    /// Record a check; returns `ok`.
    pub fn check(&self, name: String, ok: bool, tags: Vec<(String, String)>) -> bool {
        self.recorder.check(self.shard, SeriesKey::new(name, tags), ok);
        ok
    }
}
