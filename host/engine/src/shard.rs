//! Shards: one event loop per core, each with its own pacer, crew and dispatch, so nothing crosses
//! threads per task (the shape of wrk and wrk2).
//!
//! A run of S shards deals the plan out exactly as `--segment` deals it across processes: shard s
//! of this process's segment I/N takes the slots and iterations k with k mod N·S = I + N·s
//! ([`Segment::split`]). So the shards together schedule exactly the process's share, a ramp stays
//! a ramp in every shard, and iteration numbers never collide. Workers and the crew's ceiling are
//! split the same way (worker n of shard s has id s + n·S, so each shard records into recorder
//! shards of its own). The gate, the stop, the closed model's iteration counter, the data feed and
//! the recorder are shared.
//!
//! A shard runs either on an OS thread of its own with a single-threaded tokio runtime
//! ([`PacerClock::Precise`], real runs) or as a task on the caller's runtime
//! ([`PacerClock::Runtime`], tests under paused time). Either way its life is [`Shard::drive`]:
//! make its crew, say it is ready, wait for the common start, pace or loop, and end when its
//! workers have.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use loadhost_metrics::{Outcome, Recorder};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until};

use crate::EngineError;
use crate::control::{APPLY_EVERY, Control};
use crate::crew::{
    Bounds, Claims, Coin, Crew, FirstFailures, RETIRE_CHECK, RETIRE_WINDOW, RetrySetup, TimeLimits, WorkerIds,
};
use crate::dispatch::{self, Intake, Roster};
use crate::pacer::{BATCH_TASKS, BATCH_WINDOW, Pacer, PacerClock, Retries};
use crate::plan::{Model, Plan};
use crate::retry;
use crate::segment::Segment;
use crate::stop::Stop;
use crate::worker::WorkerFactory;

/// What every shard of one run shares.
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
    /// The closed model's iteration counter: shared, so a fast shard takes more.
    pub(crate) claims: Option<Arc<Claims>>,
    /// How many shards the run has.
    pub(crate) count: u32,
    /// The first failure of each kind is logged once for the whole run.
    pub(crate) logged: Arc<FirstFailures>,
}

/// One shard of a run.
pub(crate) struct Shard<F: WorkerFactory> {
    pub(crate) shared: Arc<Shared<F>>,
    pub(crate) index: u32,
}

/// What a shard tells the run once its crew is up (or why it could not start).
pub(crate) type Ready<F> = Result<Arc<Crew<F>>, EngineError>;

/// How a shard ended.
#[derive(Debug, Default)]
pub(crate) struct ShardEnd {
    /// Worker loops or the pacer that panicked (bugs).
    pub(crate) panics: Vec<String>,
}

/// Shard `index`'s exact share of `total` (round-robin, so shares add up to `total`).
pub(crate) fn share(total: u32, index: u32, count: u32) -> u32 {
    let segment = Segment::whole().split(index, count);
    u32::try_from(segment.share_of(u64::from(total))).unwrap_or(total)
}

impl<F: WorkerFactory> Shard<F> {
    /// This shard's slice of the plan's slots and iterations.
    fn segment(&self) -> Segment {
        self.shared.plan.segment().split(self.index, self.shared.count)
    }

    /// The crew of this shard, with its share of the workers.
    fn crew(&self, grow: mpsc::UnboundedSender<Intake>, retry: Option<RetrySetup>) -> Crew<F> {
        let sh = &self.shared;
        let plan = &sh.plan;
        // A ramping closed crew may shrink to nothing; otherwise the crew never goes below its start.
        let floor = if plan.worker_curve().is_some() { 0 } else { plan.workers() };
        let min = share(floor, self.index, sh.count);
        let bounds = Bounds { min, max: share(plan.max_workers(), self.index, sh.count).max(min) };
        Crew::new(
            sh.factory.clone(),
            sh.recorder.clone(),
            sh.stop.clone(),
            plan.scenario(),
            WorkerIds { first: self.index, step: sh.count },
            bounds,
            grow,
            sh.gate.clone(),
            retry,
            plan.feed().cloned(),
            sh.setup_data.clone(),
            TimeLimits { init: plan.lifecycle_timeout(), task: plan.task_timeout() },
            sh.logged.clone(),
        )
    }

    /// The whole life of the shard: make its crew and report `ready`; wait for the run's start
    /// (`None`: the run will not start, another shard failed); pace or loop until every worker has
    /// ended.
    pub(crate) async fn drive(
        self,
        ready: oneshot::Sender<Ready<F>>,
        go: oneshot::Receiver<Option<Instant>>,
    ) -> ShardEnd {
        let sh = self.shared.clone();
        let plan = &sh.plan;
        let (grow_tx, mut grow_rx) = mpsc::unbounded_channel();
        // Retries go back to this shard's pacer in the open model; the closed model retries in place.
        let outstanding = Arc::new(AtomicU64::new(0));
        let (retry_queue, retry_intake) = match (plan.retries(), plan.is_open()) {
            (Some(policy), true) => {
                let (queue, intake) = retry::queue(policy.queue_limit);
                (Some(queue), Some(intake))
            }
            _ => (None, None),
        };
        let retry_setup = plan.retries().map(|policy| RetrySetup {
            policy: *policy,
            queue: retry_queue,
            outstanding: outstanding.clone(),
        });
        let crew = Arc::new(self.crew(grow_tx, retry_setup));
        let workers = match crew.start(share(plan.workers(), self.index, sh.count)).await {
            Ok(workers) => workers,
            Err(err) => {
                let _ = ready.send(Err(err));
                return ShardEnd::default();
            }
        };
        let initial = workers.len() as u64;
        let mut loops = JoinSet::new();
        let mut closed_workers = Vec::new();
        let mut dispatch = None;
        let mut roster = None;
        match plan.model() {
            Model::Open { curve, overload, .. } => {
                let max = share(plan.max_workers(), self.index, sh.count).max(1);
                let (to_crew, idle) = dispatch::channel(max, *overload, sh.gate.clone());
                for (id, worker) in workers {
                    loops.spawn(crew.clone().open_loop(id, worker, idle.intake()));
                }
                // The clock starts once every worker has announced itself idle: otherwise on a busy
                // machine the first due tasks could find no idle worker and drop.
                crew.wait_until_idle(initial).await;
                dispatch = Some((to_crew, curve.clone()));
                roster = Some(idle);
            }
            Model::Closed { .. } => closed_workers = workers,
        }
        let _ = ready.send(Ok(crew.clone()));
        let Some(start) = go.await.ok().flatten() else {
            // Dropping the pacer's end closes the channel: idle workers end.
            drop(dispatch);
            while loops.join_next().await.is_some() {}
            return ShardEnd::default();
        };

        let pacer = dispatch.map(|(dispatch, curve)| {
            let retries = retry_intake.zip(plan.retries()).map(|(intake, policy)| Retries {
                intake,
                budget: policy.budget,
                flush_timeout: policy.flush_timeout,
                outstanding: outstanding.clone(),
                // Each shard flushes its own retries at its share of the run's planned average rate.
                flush_spacing: plan
                    .target_rate()
                    .filter(|r| *r > 0.0)
                    .map_or(Duration::ZERO, |r| Duration::from_secs_f64(f64::from(sh.count) / r)),
                next_flush: None,
            });
            let live = sh.control.clone().map(|c| (c, sh.rate_now.clone()));
            let pacer = Pacer::new(
                curve,
                plan.task_limit(),
                start,
                dispatch,
                sh.recorder.clone(),
                sh.stop.clone(),
                retries,
                live,
            )
            .with_segment(self.segment())
            .with_recorder_shard(self.index as usize);
            match plan.pacer_clock() {
                PacerClock::Runtime => tokio::spawn(pacer.run_on_runtime()),
                PacerClock::Precise => tokio::spawn(pacer.with_batch_window(BATCH_WINDOW, BATCH_TASKS).run_precise()),
            }
        });
        if let Some(claims) = &sh.claims {
            for (id, worker) in closed_workers {
                loops.spawn(crew.clone().closed_loop(id, worker, claims.clone()));
            }
        }

        let mut end = ShardEnd::default();
        self.run_loops(&crew, &mut loops, &mut grow_rx, roster.as_ref(), start, &mut end).await;
        crew.in_flight.store(0, Ordering::Relaxed);
        if let Some(roster) = &roster {
            let left = roster.close_and_drain();
            let outcome = if sh.stop.is_aborted() { Outcome::Interrupted } else { Outcome::Dropped };
            sh.recorder.record_unfinished(self.index as usize, outcome, left);
        }
        if let Some(pacer) = pacer
            && let Err(err) = pacer.await
        {
            end.panics.push(err.to_string());
        }
        end
    }

    /// Keep the worker loops going (growth, retirement, a closed ramp, the cut after the grace)
    /// until every one has ended, unless a ramping closed crew is only empty for now (ramped down
    /// to zero before ramping up again).
    async fn run_loops(
        &self,
        crew: &Arc<Crew<F>>,
        loops: &mut JoinSet<()>,
        grow: &mut mpsc::UnboundedReceiver<Intake>,
        roster: Option<&Roster>,
        start: Instant,
        end: &mut ShardEnd,
    ) {
        let sh = &self.shared;
        let ramp = sh.plan.worker_curve().cloned().zip(sh.claims.clone());
        let mut next_ramp = start;
        let mut next_retire = start + RETIRE_CHECK;
        let mut coin = Coin::new(self.index);
        let mut cut = false;
        loop {
            if loops.is_empty() && (ramp.is_none() || !sh.stop.generating()) {
                break;
            }
            tokio::select! {
                biased;
                joined = loops.join_next(), if !loops.is_empty() => match joined {
                    Some(Err(err)) if !err.is_cancelled() => end.panics.push(err.to_string()),
                    _ => {}
                },
                () = sh.stop.cutting(), if !cut => {
                    cut = true;
                    // Tasks still under way end as interrupted (each worker holds its task in a guard).
                    loops.abort_all();
                }
                // A ramping closed crew: follow this shard's share of the target number of workers.
                () = sleep_until(next_ramp), if ramp.is_some() && sh.stop.generating() => {
                    next_ramp += APPLY_EVERY;
                    if let Some((curve, claims)) = &ramp {
                        let target = curve.rate_at(start.elapsed().as_secs_f64()).round() as u32;
                        crew.set_closed_target(u64::from(share(target, self.index, sh.count)));
                        let shortfall = crew.closed_shortfall();
                        crew.reserve_peers(shortfall);
                        for _ in 0..shortfall {
                            loops.spawn(crew.clone().grow_closed(claims.clone()));
                        }
                    }
                }
                Some(intake) = grow.recv() => {
                    loops.spawn(crew.clone().grow(intake));
                }
                // The open model's surplus: workers idle for a whole window retire, on a coin flip
                // each, so the crew shrinks gradually and never below its floor.
                () = sleep_until(next_retire), if roster.is_some() => {
                    next_retire += RETIRE_CHECK;
                    if let Some(roster) = roster {
                        roster.retire_idle(Instant::now(), RETIRE_WINDOW, || coin.flip() && crew.leave());
                    }
                }
            }
        }
    }
}

/// Start shard `shard` where its clock says: on a thread of its own with a single-threaded runtime
/// (precise), or as a task on the current runtime. Its end goes to `done`.
pub(crate) fn launch<F: WorkerFactory>(
    shard: Shard<F>,
    ready: oneshot::Sender<Ready<F>>,
    go: oneshot::Receiver<Option<Instant>>,
    done: mpsc::UnboundedSender<ShardEnd>,
) -> Result<(), EngineError> {
    if shard.shared.plan.pacer_clock() == PacerClock::Runtime {
        tokio::spawn(async move {
            let end = shard.drive(ready, go).await;
            let _ = done.send(end);
        });
        return Ok(());
    }
    let name = format!("loadhost-shard-{}", shard.index);
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
            match runtime {
                Ok(runtime) => runtime.block_on(async move {
                    let stop = shard.shared.stop.clone();
                    let end = shard.drive(ready, go).await;
                    let _ = done.send(end);
                    // The run counts the ends it gets; it learns of a loop that panicked from this
                    // sender going away, so none may be held while waiting.
                    drop(done);
                    // Connections this loop opened may serve other loops (a shared pool): the runtime
                    // that drives them stays up until every loop is over.
                    stop.over().await;
                }),
                Err(err) => {
                    let _ = ready.send(Err(EngineError::Panicked(format!("starting an event loop: {err}"))));
                }
            }
        })
        .map(|_| ())
        .map_err(|err| EngineError::Panicked(format!("starting an event-loop thread: {err}")))
}
