//! The crew: the workers, each on its own tokio task, running tasks from the pacer (open model)
//! or back to back (closed model), and replacing themselves after a trap.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use loadhost_metrics::{Outcome, Recorder, TaskTiming};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::EngineError;
use crate::dispatch::{Intake, Ticket};
use crate::stop::Stop;
use crate::worker::{MetricsHandle, Task, TaskOutcome, Worker, WorkerContext, WorkerFactory};

/// State shared by every worker of a run.
pub(crate) struct Crew<F: WorkerFactory> {
    factory: F,
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) stop: Arc<Stop>,
    scenario: Arc<str>,
    next_id: AtomicU32,
    /// Workers alive (not counting ones that finished because the run is over).
    pub(crate) resident: AtomicU64,
    pub(crate) replaced: AtomicU64,
    pub(crate) started: AtomicU64,
    pub(crate) in_flight: AtomicU64,
    /// When the last task of the run started (each worker reports once, as it finishes).
    last_start: Mutex<Option<Instant>>,
    /// The first failure of each kind is logged in full; the rest only at debug level.
    logged: [AtomicBool; 5],
}

/// The closed model's shared iteration counter.
pub(crate) struct Claims {
    next: AtomicU64,
    max: u64,
}

impl Claims {
    pub(crate) fn new(max: Option<u64>) -> Self {
        Self { next: AtomicU64::new(0), max: max.unwrap_or(u64::MAX) }
    }

    fn claim(&self) -> Option<u64> {
        let k = self.next.fetch_add(1, Ordering::Relaxed);
        (k < self.max).then_some(k)
    }
}

impl<F: WorkerFactory> Crew<F> {
    pub(crate) fn new(factory: F, recorder: Arc<Recorder>, stop: Arc<Stop>, scenario: &str) -> Self {
        Self {
            factory,
            recorder,
            stop,
            scenario: scenario.into(),
            next_id: AtomicU32::new(0),
            resident: AtomicU64::new(0),
            replaced: AtomicU64::new(0),
            started: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            last_start: Mutex::new(None),
            logged: Default::default(),
        }
    }

    async fn make_worker(&self) -> Result<(u32, F::Worker), EngineError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let ctx = WorkerContext {
            id,
            scenario: self.scenario.clone(),
            metrics: MetricsHandle::new(self.recorder.clone(), id),
        };
        match self.factory.new_worker(ctx).await {
            Ok(worker) => Ok((id, worker)),
            Err(source) => Err(EngineError::WorkerStart { id, source }),
        }
    }

    /// Make `n` workers concurrently, before any load is sent.
    pub(crate) async fn start(self: &Arc<Self>, n: u32) -> Result<Vec<(u32, F::Worker)>, EngineError> {
        let mut making = JoinSet::new();
        for _ in 0..n {
            let crew = self.clone();
            making.spawn(async move { crew.make_worker().await });
        }
        let mut workers = Vec::with_capacity(n as usize);
        while let Some(made) = making.join_next().await {
            match made {
                Ok(Ok(worker)) => workers.push(worker),
                Ok(Err(err)) => return Err(err),
                Err(join) => return Err(EngineError::Panicked(join.to_string())),
            }
        }
        workers.sort_by_key(|(id, _)| *id);
        self.resident.store(workers.len() as u64, Ordering::Relaxed);
        Ok(workers)
    }

    /// A worker of the open model: run tickets until the pacer is done.
    pub(crate) async fn open_loop(self: Arc<Self>, id: u32, worker: F::Worker, intake: Intake) {
        let mut slot = Some((id, worker));
        let mut last_start = None;
        while let Some(ticket) = intake.next().await {
            let Some((id, worker)) = slot.as_mut() else { break };
            let shard = self.recorder.shard_for(*id);
            if self.stop.is_aborted() {
                self.recorder.record_task(shard, Outcome::Interrupted, None);
                continue;
            }
            last_start = Some(Instant::now());
            let outcome = self.execute(worker, shard, &ticket).await;
            if !self.settle(&mut slot, outcome).await {
                break;
            }
        }
        self.note_last_start(last_start);
    }

    fn note_last_start(&self, at: Option<Instant>) {
        let mut last = self.last_start.lock().unwrap_or_else(|p| p.into_inner());
        *last = (*last).max(at);
    }

    /// When the last task of the run started.
    pub(crate) fn last_start(&self) -> Option<Instant> {
        *self.last_start.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A worker of the closed model: claim iterations back to back until the run ends.
    pub(crate) async fn closed_loop(self: Arc<Self>, id: u32, worker: F::Worker, claims: Arc<Claims>) {
        let mut slot = Some((id, worker));
        while self.stop.generating() {
            let Some(iteration) = claims.claim() else {
                self.stop.end_generation();
                break;
            };
            let Some((id, worker)) = slot.as_mut() else { break };
            let shard = self.recorder.shard_for(*id);
            // The closed model has no schedule: a task is due when its worker gets to it.
            let ticket = Ticket { iteration, attempt: 0, scheduled: Instant::now() };
            let outcome = self.execute(worker, shard, &ticket).await;
            if !self.settle(&mut slot, outcome).await {
                break;
            }
        }
    }

    /// Run one task and record how it ended.
    async fn execute(&self, worker: &mut F::Worker, shard: usize, ticket: &Ticket) -> TaskOutcome {
        let task = Task { iteration: ticket.iteration, attempt: ticket.attempt, input: &[] };
        self.started.fetch_add(1, Ordering::Relaxed);
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        let called = Instant::now();
        let outcome = worker.run(task).await;
        let ended = Instant::now();
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        let timing = TaskTiming {
            wait: called.saturating_duration_since(ticket.scheduled),
            service: ended.saturating_duration_since(called),
        };
        self.recorder.record_task(shard, outcome.terminal(), Some(timing));
        // A task that never waits (a no-op plugin) completes without returning Pending, so a worker
        // loop would never yield: it would starve its runtime thread, and tokio's timer (the run's
        // deadline, the interval ticker) only fires when a thread parks. Spending tokio's
        // cooperative budget yields every 128 tasks at a cost of nanoseconds.
        tokio::task::consume_budget().await;
        outcome
    }

    /// Act on an outcome: log failures, stop on abort, replace a poisoned worker. Returns whether
    /// the worker carries on.
    async fn settle(&self, slot: &mut Option<(u32, F::Worker)>, outcome: TaskOutcome) -> bool {
        let id = slot.as_ref().map_or(0, |(id, _)| *id);
        match &outcome {
            TaskOutcome::Passed => {}
            TaskOutcome::Failed(msg) => self.log_once(0, id, "failed", msg),
            TaskOutcome::Retryable(msg) => self.log_once(1, id, "failed (retryable)", msg),
            TaskOutcome::Trapped(msg) => self.log_once(2, id, "trapped", msg),
            TaskOutcome::TimedOut => self.log_once(3, id, "timed out", ""),
            TaskOutcome::Abort(msg) => {
                self.log_once(4, id, "aborted the run", msg);
                self.stop.abort(msg.clone());
            }
        }
        if !outcome.poisons_worker() {
            return true;
        }
        // Free the poisoned instance's slot before making its replacement.
        *slot = None;
        match self.make_worker().await {
            Ok(fresh) => {
                *slot = Some(fresh);
                self.replaced.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(err) => {
                tracing::error!("worker {id} could not be replaced: {err}");
                self.resident.fetch_sub(1, Ordering::Relaxed);
                false
            }
        }
    }

    fn log_once(&self, kind: usize, id: u32, what: &str, msg: &str) {
        if !self.logged[kind].swap(true, Ordering::Relaxed) {
            tracing::warn!("a task {what} on worker {id}: {msg} (later ones are logged at debug level)");
        } else {
            tracing::debug!("a task {what} on worker {id}: {msg}");
        }
    }
}
