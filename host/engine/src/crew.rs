//! The crew: the workers, each on its own tokio task, running tasks from the pacer (open model)
//! or back to back (closed model), and replacing themselves after a trap.
//!
//! In the open model the crew **grows on demand** and **retires** when surplus. The
//! whole growth rule is one question asked in one place: a worker that has just taken a task asks
//! for a peer when nobody is left idle and few peers are already on the way. So the crew keeps a
//! standing reserve of one, and a single edge is enough to grow. The peer is made by the event loop on its own task, never on the
//! pacer's path. Tasks go to the most recently idle worker (see `dispatch`), so a surplus sits idle;
//! a worker idle for a whole [`RETIRE_WINDOW`] retires on a coin flip (the event loop looks every
//! [`RETIRE_CHECK`]), never below the minimum.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loadhost_metrics::{AttemptRecord, ErrorKind, Outcome, Recorder, TaskTiming};
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::EngineError;
use crate::dispatch::{Intake, Taken, Ticket};
use crate::retry::{RetryPolicy, RetryQueue, RetryRefused, RetryTicket};
use crate::shared::{Claims, FailureKind, Shared};
use crate::worker::{MetricsHandle, Task, TaskOutcome, Whereabouts, Worker, WorkerContext, WorkerError, WorkerFactory};

/// The workers of one event loop, and what they count.
pub(crate) struct Crew<F: WorkerFactory> {
    /// What every event loop of the run shares: the plan, the factory, the recorder, the stop, the
    /// gate, the setup data.
    pub(crate) run: Arc<Shared<F>>,
    scenario: Arc<str>,
    /// Workers made so far; worker n of this crew gets id `ids.first + n · ids.step`.
    next_id: AtomicU32,
    ids: WorkerIds,
    /// Workers alive (not counting ones that finished because the run is over).
    pub(crate) resident: AtomicU64,
    /// Workers waiting for a task (open model).
    pub(crate) idle: AtomicU64,
    /// The crew never retires below this.
    min_workers: u64,
    /// The crew never grows beyond this; may change while the run goes.
    pub(crate) max_workers: AtomicU64,
    /// Peers asked for and not yet made.
    pending: AtomicU64,
    pub(crate) grown: AtomicU64,
    pub(crate) retired: AtomicU64,
    pub(crate) replaced: AtomicU64,
    /// Closed model with a ramp: the workers wanted now (`u64::MAX`: no ramp).
    closed_target: AtomicU64,
    /// Growth requests to the run loop, which makes the peer off the pacer's path.
    grow: mpsc::UnboundedSender<Intake>,
    /// Retries: the policy, and the queue to the pacer (open model only).
    retry: Option<RetrySetup>,
    pub(crate) started: AtomicU64,
    /// Iterations claimed: the closed model's scheduled tasks (a retry is not a new task).
    pub(crate) claimed: AtomicU64,
    pub(crate) in_flight: AtomicU64,
    /// When the last task of the run started (each worker reports once, as it finishes).
    last_start: Mutex<Option<Instant>>,
    /// Each live worker's [`Whereabouts`], by id: a stop that cuts tasks says where they were.
    whereabouts: Mutex<std::collections::BTreeMap<u32, Whereabouts>>,
}

/// A worker idle for this long is surplus and may retire. It was 1 s: since tasks go to the most
/// recently idle worker, the bottom of a right-sized crew idles that long between bursts, so on a
/// busy machine the crew retired and regrew all run (grown 126, retired 56 in 15 s at 200/s), each
/// worker made again at a few ms of CPU taken from the tasks (issue 41 defect 11).
pub const RETIRE_WINDOW: Duration = Duration::from_secs(5);

/// How often an event loop looks for surplus workers.
pub const RETIRE_CHECK: Duration = Duration::from_millis(500);

/// How the crew retries: the policy, the queue to the pacer (`None` in the closed model, which
/// retries in place), and the count of released attempts not yet settled.
pub(crate) struct RetrySetup {
    pub(crate) policy: RetryPolicy,
    pub(crate) queue: Option<RetryQueue>,
    pub(crate) outstanding: Arc<AtomicU64>,
}

/// A task a worker has taken and not yet recorded. When the grace after a stop runs out, the run
/// drops the worker loops mid-task; this guard is how such a task still ends in exactly one state
/// (interrupted).
struct Holding<'a> {
    recorder: &'a Recorder,
    stripe: usize,
    armed: bool,
}

impl<'a> Holding<'a> {
    fn new(recorder: &'a Recorder, stripe: usize) -> Self {
        Self { recorder, stripe, armed: true }
    }

    /// The task's end has been recorded.
    fn recorded(mut self) {
        self.armed = false;
    }
}

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.recorder.record_task(self.stripe, Outcome::Interrupted, None);
        }
    }
}

/// The crew's bounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) min: u32,
    pub(crate) max: u32,
}

/// How a crew numbers its workers: each event loop's crew takes every `step`-th id from `first`,
/// so ids are unique in the run and a crew's workers record into recorder stripes of their own.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WorkerIds {
    pub(crate) first: u32,
    pub(crate) step: u32,
}

impl<F: WorkerFactory> Crew<F> {
    /// The crew of one event loop: its ids, its bounds, where it asks to grow, how it retries.
    pub(crate) fn new(
        run: Arc<Shared<F>>,
        ids: WorkerIds,
        bounds: Bounds,
        grow: mpsc::UnboundedSender<Intake>,
        retry: Option<RetrySetup>,
    ) -> Self {
        Self {
            scenario: run.plan.scenario().into(),
            run,
            next_id: AtomicU32::new(0),
            ids,
            resident: AtomicU64::new(0),
            idle: AtomicU64::new(0),
            min_workers: u64::from(bounds.min),
            max_workers: AtomicU64::new(u64::from(bounds.max.max(bounds.min))),
            pending: AtomicU64::new(0),
            closed_target: AtomicU64::new(u64::MAX),
            grown: AtomicU64::new(0),
            retired: AtomicU64::new(0),
            grow,
            retry,
            replaced: AtomicU64::new(0),
            started: AtomicU64::new(0),
            claimed: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            last_start: Mutex::new(None),
            whereabouts: Mutex::default(),
        }
    }

    /// Retries waiting for their time (open model).
    pub(crate) fn retries_pending(&self) -> u64 {
        self.retry.as_ref().and_then(|r| r.queue.as_ref()).map_or(0, |q| q.pending() as u64)
    }

    async fn make_worker(&self) -> Result<(u32, F::Worker), EngineError> {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let id = self.ids.first.wrapping_add(n.wrapping_mul(self.ids.step));
        let ctx = WorkerContext {
            id,
            event_loop: self.ids.first,
            scenario: self.scenario.clone(),
            metrics: MetricsHandle::new(self.run.recorder.clone(), id),
            setup_data: self.run.setup_data.clone(),
        };
        match tokio::time::timeout(self.run.plan.lifecycle_timeout(), self.run.factory.new_worker(ctx)).await {
            Ok(Ok(worker)) => {
                if let Some(at) = worker.whereabouts() {
                    self.whereabouts.lock().unwrap_or_else(|p| p.into_inner()).insert(id, at);
                }
                Ok((id, worker))
            }
            Ok(Err(source)) => Err(EngineError::WorkerStart { id, source }),
            Err(_) => Err(EngineError::WorkerStart {
                id,
                source: WorkerError::refused(format!("init took longer than {:?}", self.run.plan.lifecycle_timeout())),
            }),
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
        self.run.workers.joined(workers.len() as u64);
        Ok(workers)
    }

    /// A worker of the open model: run tickets until the pacer is done, or until it retires.
    pub(crate) async fn open_loop(self: Arc<Self>, id: u32, worker: F::Worker, intake: Intake) {
        let mut slot = Some((id, worker));
        let mut last_start = None;
        let mut coin = Coin::for_worker(&self.run.plan, id);
        loop {
            let Some(mut ticket) = self.wait_for_ticket(&intake).await else { break };
            let Some((id, worker)) = slot.as_mut() else { break };
            let stripe = self.run.recorder.stripe_for(*id);
            let holding = Holding::new(&self.run.recorder, stripe);
            if self.run.stop.is_aborted() {
                drop(holding);
                self.settled();
                continue;
            }
            if self.needs_peer() {
                self.ask_for_peer(&intake);
            }
            let Some(pass) = self.pass_gate(ticket.permit.take()).await else {
                drop(holding);
                self.settled();
                continue;
            };
            last_start = Some(Instant::now());
            let (outcome, timing) = self.execute(*id, worker, &ticket, pass).await;
            self.conclude(stripe, &ticket, &outcome, timing, &mut coin);
            holding.recorded();
            self.settled();
            Self::yield_sometimes().await;
            if !self.settle(&mut slot, outcome).await {
                break;
            }
        }
        if let Some((id, _)) = &slot {
            self.forget(*id);
        }
        self.note_last_start(last_start);
    }

    /// Wait, as an idle worker, for a ticket; `None` when the run is over or the worker retired.
    async fn wait_for_ticket(&self, intake: &Intake) -> Option<Ticket> {
        self.idle.fetch_add(1, Ordering::Relaxed);
        let taken = intake.take().await;
        self.idle.fetch_sub(1, Ordering::Relaxed);
        match taken {
            Taken::Ticket(ticket) => Some(ticket),
            Taken::Done | Taken::Retire => None,
        }
    }

    /// Wait until `n` workers are idle (the crew has started), or the run was aborted.
    pub(crate) async fn wait_until_idle(&self, n: u64) {
        while self.idle.load(Ordering::Acquire) < n && !self.run.stop.is_aborted() {
            tokio::task::yield_now().await;
        }
    }

    /// Whether the crew's reserve is gone: nobody idle and fewer peers on the way than one plus
    /// an eighth of the crew. Peers being made count as the reserve, so a slow `init` (a login)
    /// does not make one peer per task that arrives while it runs, and a large crew still grows
    /// by several at once.
    fn needs_peer(&self) -> bool {
        let on_the_way = self.pending.load(Ordering::Acquire);
        self.idle.load(Ordering::Relaxed) == 0 && on_the_way < 1 + self.resident.load(Ordering::Relaxed) / 8
    }

    /// Ask the run loop for one more worker, unless the crew is at its ceiling (counting peers
    /// already asked for).
    fn ask_for_peer(&self, intake: &Intake) {
        let max = self.max_workers.load(Ordering::Relaxed);
        let reserved = self.pending.fetch_add(1, Ordering::AcqRel);
        if self.resident.load(Ordering::Acquire) + reserved >= max || self.grow.send(intake.peer()).is_err() {
            self.pending.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Make a peer that was reserved (`pending`) and count it as grown; `None` when it could not
    /// be made (said once).
    async fn make_peer(&self) -> Option<(u32, F::Worker)> {
        let made = self.make_worker().await;
        self.pending.fetch_sub(1, Ordering::AcqRel);
        match made {
            Ok(peer) => {
                self.resident.fetch_add(1, Ordering::AcqRel);
                self.run.workers.joined(1);
                self.grown.fetch_add(1, Ordering::Relaxed);
                Some(peer)
            }
            Err(err) => {
                self.log_once(FailureKind::Growth, 0, "could not grow the crew", &err.to_string());
                None
            }
        }
    }

    /// Make a peer asked for by a worker and run it; called by the run loop on a task of its own.
    pub(crate) async fn grow(self: Arc<Self>, intake: Intake) {
        if let Some((id, worker)) = self.make_peer().await {
            self.open_loop(id, worker, intake).await;
        }
    }

    /// Retire a worker if the crew stays at or above its minimum (counted as retired).
    pub(crate) fn leave(&self) -> bool {
        let mut resident = self.resident.load(Ordering::Acquire);
        loop {
            if resident <= self.min_workers {
                return false;
            }
            match self.resident.compare_exchange(resident, resident - 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    self.run.workers.left();
                    self.retired.fetch_add(1, Ordering::Relaxed);
                    return true;
                }
                Err(now) => resident = now,
            }
        }
    }

    /// A worker has gone: nothing to ask it any more.
    fn forget(&self, id: u32) {
        self.whereabouts.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    }

    /// Where worker `id` is, when it is in one of the host's calls.
    fn place_of(&self, id: u32) -> Option<String> {
        let at = self.whereabouts.lock().unwrap_or_else(|p| p.into_inner()).get(&id).cloned();
        at.and_then(|at| at())
    }

    /// Where each worker that is in one of the host's calls is, `worker N waiting …`.
    pub(crate) fn under_way(&self) -> Vec<String> {
        let all: Vec<(u32, Whereabouts)> =
            self.whereabouts.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|(id, w)| (*id, w.clone())).collect();
        all.into_iter().filter_map(|(id, at)| at().map(|place| format!("worker {id} {place}"))).collect()
    }

    fn note_last_start(&self, at: Option<Instant>) {
        let mut last = self.last_start.lock().unwrap_or_else(|p| p.into_inner());
        *last = (*last).max(at);
    }

    /// When the last task of the run started.
    pub(crate) fn last_start(&self) -> Option<Instant> {
        *self.last_start.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Closed model with a ramp: how many workers should be looping now.
    pub(crate) fn set_closed_target(&self, target: u64) {
        self.closed_target.store(target, Ordering::Relaxed);
    }

    /// Closed model with a ramp: workers to add now to reach the target (counting those on the way).
    pub(crate) fn closed_shortfall(&self) -> u64 {
        let target = self.closed_target.load(Ordering::Relaxed);
        let have = self.resident.load(Ordering::Acquire) + self.pending.load(Ordering::Acquire);
        target.saturating_sub(have)
    }

    /// Make one more closed-model worker (a ramp going up) and run it.
    pub(crate) async fn grow_closed(self: Arc<Self>, claims: Arc<Claims>) {
        if let Some((id, worker)) = self.make_peer().await {
            self.closed_loop(id, worker, claims).await;
        }
    }

    /// Reserve `n` closed-model peers to be made by the run loop.
    pub(crate) fn reserve_peers(&self, n: u64) {
        self.pending.fetch_add(n, Ordering::AcqRel);
    }

    /// Whether this closed-model worker is above the ramp's target and should leave.
    fn above_closed_target(&self) -> bool {
        let target = self.closed_target.load(Ordering::Relaxed);
        target != u64::MAX && self.resident.load(Ordering::Acquire) > target
    }

    /// A worker of the closed model: claim iterations back to back until the run ends. A retryable
    /// failure is retried in place, after its backoff.
    pub(crate) async fn closed_loop(self: Arc<Self>, id: u32, worker: F::Worker, claims: Arc<Claims>) {
        let mut slot = Some((id, worker));
        let mut coin = Coin::for_worker(&self.run.plan, id);
        let mut retry: Option<(u64, u32)> = None;
        let mut times = ClosedTimes::default();
        // The task this worker holds, from its claim until its end is recorded (across retries).
        let mut holding: Option<Holding<'_>> = None;
        while self.run.stop.generating() || retry.is_some() {
            if retry.is_none() && self.above_closed_target() && self.leave() {
                break;
            }
            if retry.is_none() && !self.space_out(&mut times, &mut coin).await {
                break;
            }
            let (iteration, attempt) = match retry.take() {
                Some(again) => again,
                None => match claims.claim() {
                    Some(iteration) => {
                        self.claimed.fetch_add(1, Ordering::Relaxed);
                        (iteration, 0)
                    }
                    None => {
                        self.run.stop.end_generation();
                        break;
                    }
                },
            };
            let Some((id, worker)) = slot.as_mut() else { break };
            let stripe = self.run.recorder.stripe_for(*id);
            if holding.is_none() {
                holding = Some(Holding::new(&self.run.recorder, stripe));
            }
            let ticket = times.ticket(iteration, attempt, self.run.plan.spacing().pace);
            let Some(pass) = self.pass_gate(None).await else {
                // Dropping the hold records the task as interrupted.
                break;
            };
            let (outcome, timing) = self.execute(*id, worker, &ticket, pass).await;
            let again = self.conclude(stripe, &ticket, &outcome, timing, &mut coin);
            if again.is_none()
                && let Some(done) = holding.take()
            {
                done.recorded();
            }
            Self::yield_sometimes().await;
            if let Some(wait) = again {
                if !self.wait_to_retry(Instant::now() + wait, stripe, &mut holding).await {
                    break;
                }
                retry = Some((iteration, attempt + 1));
            }
            if !self.settle(&mut slot, outcome).await {
                if retry.take().is_some() {
                    // The replacement failed: the retry cannot run.
                    self.give_up_retry(stripe, &mut holding);
                }
                break;
            }
        }
    }

    /// A closed-model retry's backoff, until `due`: `false` when it will not run (the run was
    /// aborted, or the retry would start past the flush, and its task then ends as failed).
    async fn wait_to_retry(&self, due: Instant, stripe: usize, holding: &mut Option<Holding<'_>>) -> bool {
        if self.past_flush(due) {
            self.give_up_retry(stripe, holding);
            return false;
        }
        tokio::select! {
            () = tokio::time::sleep_until(due) => true,
            () = self.run.stop.aborted() => false,
            () = self.run.stop.generation_ended(), if self.run.stop.generating() => {
                if self.past_flush(due) {
                    self.give_up_retry(stripe, holding);
                    return false;
                }
                tokio::time::sleep_until(due).await;
                true
            }
        }
    }

    /// Before a closed-model worker's next fresh task: think (`--think`, after its first task), then
    /// wait for the task's intended start (`--pace`; at once when it is already late). `false`
    /// when no new task may start any more.
    async fn space_out(&self, times: &mut ClosedTimes, coin: &mut Coin) -> bool {
        let spacing = self.run.plan.spacing();
        let think = spacing.think.filter(|_| times.ran_one).map(|t| t.draw(coin.unit()));
        times.ran_one = true;
        let now = Instant::now();
        let mut until = think.map(|t| now + t);
        if let Some(at) = times.intended {
            // The pace's intended start counts from the think: the pause is the worker's own.
            let at = at.max(until.unwrap_or(at));
            times.intended = Some(at);
            until = Some(at);
        }
        let Some(until) = until.filter(|u| *u > now) else { return self.run.stop.generating() };
        tokio::select! {
            () = tokio::time::sleep_until(until) => self.run.stop.generating(),
            () = self.run.stop.generation_ended() => false,
        }
    }

    /// Whether a closed-model retry `due` then would start past the flush: once no new task may
    /// start, retries have --flush-retries-timeout, as in the open model, so a task failing
    /// forever cannot hold the run open.
    fn past_flush(&self, due: Instant) -> bool {
        let (Some(ended), Some(retry)) = (self.run.stop.generation_ended_at(), &self.retry) else { return false };
        if due <= ended + retry.policy.flush_timeout {
            return false;
        }
        if self.run.logged.first(FailureKind::Flush) {
            tracing::warn!("a retry was still due when --flush-retries-timeout ran out: it ends as failed");
        }
        true
    }

    /// A held task whose retry will not run ends as failed.
    fn give_up_retry(&self, stripe: usize, holding: &mut Option<Holding<'_>>) {
        self.run.recorder.record_task(stripe, Outcome::Failed, None);
        if let Some(done) = holding.take() {
            done.recorded();
        }
    }

    /// Get through the gate: with the permit the pacer already took, or by waiting for one.
    /// `None` when the run was aborted while waiting.
    async fn pass_gate(&self, carried: Option<OwnedSemaphorePermit>) -> Option<GatePass> {
        let Some(gate) = &self.run.gate else { return Some(GatePass { _permit: None, waited: None }) };
        if let Some(permit) = carried {
            return Some(GatePass { _permit: Some(permit), waited: Some(Duration::ZERO) });
        }
        let began = Instant::now();
        tokio::select! {
            permit = gate.clone().acquire_owned() => permit.ok().map(|permit| GatePass {
                _permit: Some(permit),
                waited: Some(began.elapsed()),
            }),
            () = self.run.stop.aborted() => None,
        }
    }

    /// Run one attempt; how it ended and its timings.
    async fn execute(
        &self,
        id: u32,
        worker: &mut F::Worker,
        ticket: &Ticket,
        pass: GatePass,
    ) -> (TaskOutcome, TaskTiming) {
        let input = self.run.plan.feed().map_or(&[][..], |feed| feed.row(ticket.iteration));
        let gate_wait = pass.waited.unwrap_or_default();
        let task = Task { iteration: ticket.iteration, attempt: ticket.attempt, input, gate_wait };
        self.started.fetch_add(1, Ordering::Relaxed);
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        let called = Instant::now();
        // An unpolled timer costs nothing: a task that finishes on its first poll never arms it.
        let mut running = std::pin::pin!(worker.run(task));
        let outcome = match tokio::time::timeout(self.run.plan.task_timeout(), &mut running).await {
            Ok(outcome) => outcome,
            // Asked while the task is still in its call (it goes when `running` does).
            Err(_) => TaskOutcome::timed_out(self.run.plan.task_timeout(), self.place_of(id)),
        };
        let ended = Instant::now();
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        let timing = TaskTiming {
            wait: called.saturating_duration_since(ticket.scheduled),
            service: ended.saturating_duration_since(called),
            gate: pass.waited,
        };
        drop(pass);
        (outcome, timing)
    }

    /// A task that never waits (a no-op plugin) completes without returning Pending, so a worker
    /// loop would never yield: it would starve its runtime thread, and tokio's timer (the run's
    /// deadline, the interval ticker) only fires when a thread parks. Spending tokio's cooperative
    /// budget yields every 128 tasks at a cost of nanoseconds. Called once the task is recorded, so
    /// a worker dropped at this point loses nothing.
    async fn yield_sometimes() {
        tokio::task::consume_budget().await;
    }

    /// Record an attempt, and decide whether the task is retried: returns the backoff to wait when
    /// it is retried in place (closed model); queues it with the pacer in the open model.
    fn conclude(
        &self,
        stripe: usize,
        ticket: &Ticket,
        outcome: &TaskOutcome,
        timing: TaskTiming,
        coin: &mut Coin,
    ) -> Option<std::time::Duration> {
        let mut retry_in_place = None;
        let terminal = match (outcome, &self.retry) {
            (TaskOutcome::Error(ErrorKind::Retryable, _), Some(setup)) if ticket.attempt < setup.policy.max_retries => {
                let wait = setup.policy.backoff_for(ticket.attempt, coin.unit());
                match &setup.queue {
                    Some(queue) => {
                        let retry = RetryTicket {
                            due: Instant::now() + wait,
                            iteration: ticket.iteration,
                            attempt: ticket.attempt + 1,
                            first_scheduled: ticket.first_scheduled,
                        };
                        match queue.push(retry) {
                            Ok(()) => None,
                            // The pacer is gone: stopped before this retry's turn, or its flush is over.
                            Err(RetryRefused::Closed) if self.run.stop.is_aborted() => Some(Outcome::Interrupted),
                            Err(RetryRefused::Full | RetryRefused::Closed) => Some(Outcome::Failed),
                        }
                    }
                    None => {
                        retry_in_place = Some(wait);
                        None
                    }
                }
            }
            _ => Some(outcome.end().terminal()),
        };
        let since_first = ticket.scheduled.saturating_duration_since(ticket.first_scheduled);
        let record = AttemptRecord { end: outcome.end(), retry: ticket.attempt > 0, timing, terminal, since_first };
        self.run.recorder.record_attempt(stripe, record);
        if let TaskOutcome::Error(kind, message) = outcome {
            self.run.recorder.record_error(stripe, *kind, message, ticket.iteration);
        }
        retry_in_place
    }

    /// A released attempt has been dealt with (the pacer's flush waits for these).
    fn settled(&self) {
        if let Some(setup) = &self.retry {
            setup.outstanding.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Act on an outcome: log failures, stop on abort, replace a poisoned worker. Returns whether
    /// the worker carries on.
    async fn settle(&self, slot: &mut Option<(u32, F::Worker)>, outcome: TaskOutcome) -> bool {
        let id = slot.as_ref().map_or(0, |(id, _)| *id);
        if let TaskOutcome::Error(kind, msg) = &outcome {
            let what = match kind {
                ErrorKind::Failed => "failed",
                ErrorKind::Retryable => "failed (retryable)",
                ErrorKind::Trapped => "trapped",
                ErrorKind::TimedOut => "timed out",
                ErrorKind::Aborted => "aborted the run",
            };
            self.log_once(FailureKind::Attempt(*kind), id, what, msg);
            if *kind == ErrorKind::Aborted {
                self.run.stop.abort(msg.clone());
            }
        }
        if !outcome.poisons_worker() {
            return true;
        }
        // Free the poisoned instance's slot before making its replacement.
        *slot = None;
        self.forget(id);
        match self.make_worker().await {
            Ok(fresh) => {
                *slot = Some(fresh);
                self.replaced.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(err) => {
                tracing::error!("worker {id} could not be replaced: {err}");
                self.resident.fetch_sub(1, Ordering::Relaxed);
                self.run.workers.left();
                false
            }
        }
    }

    fn log_once(&self, kind: FailureKind, id: u32, what: &str, msg: &str) {
        if self.run.logged.first(kind) {
            tracing::warn!("a task {what} on worker {id}: {msg} (later ones are logged at debug level)");
        } else {
            tracing::debug!("a task {what} on worker {id}: {msg}");
        }
    }
}

/// A closed-model worker's clock: when its next iteration is meant to start (`--pace`), whether
/// it has run one (think time comes between tasks), and when its current task was first scheduled.
#[derive(Default)]
struct ClosedTimes {
    intended: Option<Instant>,
    ran_one: bool,
    first_scheduled: Option<Instant>,
}

impl ClosedTimes {
    /// The ticket of an attempt. The closed model has no schedule: a task is due when its worker
    /// gets to it, or at its intended start under `pace` (so an overrun shows as wait); a retry
    /// keeps its task's first scheduled time, which latency counts from.
    fn ticket(&mut self, iteration: u64, attempt: u32, pace: Option<Duration>) -> Ticket {
        let now = Instant::now();
        let scheduled = match self.intended {
            Some(at) if attempt == 0 => at.min(now),
            _ => now,
        };
        if attempt == 0 {
            self.first_scheduled = Some(scheduled);
            self.intended = pace.map(|p| scheduled + p);
        }
        let first_scheduled = self.first_scheduled.unwrap_or(scheduled);
        Ticket { iteration, attempt, scheduled, first_scheduled, permit: None }
    }
}

/// A cheap per-worker (or per-event-loop) random sequence: SplitMix64, for backoff jitter and for the
/// coin flips that make a surplus crew shrink gradually.
pub(crate) struct Coin(u64);

impl Coin {
    pub(crate) fn new(seed: u32) -> Self {
        Self(u64::from(seed).wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// Worker `id`'s sequence, from the run's seed and this process's segment: segments of one
    /// distributed run (and runs with different seeds) draw different backoffs and think times,
    /// and a run repeated with its seed draws the same.
    pub(crate) fn for_worker(plan: &crate::plan::Plan, id: u32) -> Self {
        let segment = u64::from(plan.segment().index());
        let mut mix = Self(plan.seed() ^ segment.wrapping_mul(0xD1B5_4A32_D192_ED03));
        Self(mix.next() ^ u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Heads or tails.
    pub(crate) fn flip(&mut self) -> bool {
        self.next() & 1 == 1
    }

    /// A uniform draw in [0, 1), for backoff jitter.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A task's way through the gate: the permit is held until the task ends.
struct GatePass {
    _permit: Option<OwnedSemaphorePermit>,
    waited: Option<Duration>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Model, Plan};
    use crate::segment::Segment;

    fn draws(plan: &Plan, id: u32) -> Vec<u64> {
        let mut coin = Coin::for_worker(plan, id);
        (0..4).map(|_| coin.next()).collect()
    }

    #[test]
    fn backoff_draws_differ_by_segment_seed_and_worker_and_repeat_with_the_seed() {
        let plan = Plan::new(Model::Closed { workers: 2, duration: None, max_tasks: Some(10) }).expect("a plan");
        let seeded = plan.clone().with_seed(7);
        let other_segment = seeded.clone().with_segment(Segment::new(1, 4).expect("a segment"));
        assert_eq!(draws(&seeded, 0), draws(&seeded.clone(), 0), "a seed repeats");
        assert_ne!(draws(&seeded, 0), draws(&other_segment, 0), "segments of one run draw apart");
        assert_ne!(draws(&seeded, 0), draws(&plan.with_seed(8), 0), "another seed, other draws");
        assert_ne!(draws(&seeded, 0), draws(&seeded, 1), "workers draw apart");
    }
}
