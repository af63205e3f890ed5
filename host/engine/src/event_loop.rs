//! Event loops: one per core, each with its own pacer, crew and dispatch, so nothing crosses
//! threads per task (the shape of wrk and wrk2). `--threads` sets how many.
//!
//! A run of S event loops deals the plan out exactly as `--segment` deals it across processes:
//! event loop s of this process's segment I/N takes the slots and iterations k with
//! k mod N·S = I + N·s ([`Segment::split`]). So the event loops together schedule exactly the
//! process's share, a ramp stays a ramp in every event loop, and iteration numbers never collide.
//! Workers and the crew's ceiling are split the same way (worker n of event loop s has id s + n·S,
//! so each event loop records into recorder stripes of its own when S divides their number). The
//! gate, the stop, the closed model's iteration counter, the data feed and the recorder are shared.
//!
//! An event loop runs either on an OS thread of its own with a single-threaded tokio runtime
//! ([`PacerClock::Precise`], real runs) or as a task on the caller's runtime
//! ([`PacerClock::Runtime`], tests under paused time). Either way its life is [`EventLoop::drive`]:
//! make its crew, say it is ready, wait for the common start, pace or loop, and end when its
//! workers have.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use loadhost_metrics::Outcome;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until};

use crate::EngineError;
use crate::control::APPLY_EVERY;
use crate::crew::{Bounds, Coin, Crew, RETIRE_CHECK, RETIRE_WINDOW, RetrySetup, WorkerIds};
use crate::dispatch::{self, Intake, Roster};
use crate::health;
use crate::pacer::{BATCH_TASKS, BATCH_WINDOW, Pacer, Retries};
use crate::plan::{Model, PacerClock};
use crate::retry;
use crate::schedule::RateCurve;
use crate::segment::Segment;
use crate::shared::{Shared, share};
use crate::worker::WorkerFactory;

/// One event loop of a run.
pub(crate) struct EventLoop<F: WorkerFactory> {
    pub(crate) shared: Arc<Shared<F>>,
    pub(crate) index: u32,
}

/// What an event loop tells the run once its crew is up (or why it could not start).
pub(crate) type Ready<F> = Result<Arc<Crew<F>>, EngineError>;

/// An event loop ready to start.
struct Staged<F: WorkerFactory> {
    crew: Arc<Crew<F>>,
    loops: JoinSet<()>,
    /// Growth requests from the crew (open model).
    grow: mpsc::UnboundedReceiver<Intake>,
    /// The open model's dispatch, schedule and idle workers.
    open: Option<OpenParts>,
    /// The closed model's workers, not yet looping.
    closed: Vec<(u32, F::Worker)>,
    retry_intake: Option<retry::RetryIntake>,
    /// Released attempts not yet settled (the pacer's flush waits for them).
    outstanding: Arc<AtomicU64>,
}

/// The open model's parts of an event loop.
struct OpenParts {
    dispatch: dispatch::Dispatch,
    curve: RateCurve,
    roster: Roster,
}

/// How an event loop ended.
#[derive(Debug, Default)]
pub(crate) struct EventLoopEnd {
    /// Worker loops or the pacer that panicked (bugs).
    pub(crate) panics: Vec<String>,
}

impl<F: WorkerFactory> EventLoop<F> {
    /// This event loop's slice of the plan's slots and iterations.
    fn segment(&self) -> Segment {
        self.shared.plan.segment().split(self.index, self.shared.count)
    }

    /// The crew of this event loop, with its share of the workers.
    fn crew(&self, grow: mpsc::UnboundedSender<Intake>, retry: Option<RetrySetup>) -> Crew<F> {
        let sh = &self.shared;
        let plan = &sh.plan;
        // A ramping closed crew may shrink to nothing; otherwise the crew never goes below its start.
        let floor = if plan.worker_curve().is_some() { 0 } else { plan.workers() };
        let min = share(floor, self.index, sh.count);
        let bounds = Bounds { min, max: share(plan.max_workers(), self.index, sh.count).max(min) };
        let crew = Crew::new(sh.clone(), WorkerIds { first: self.index, step: sh.count }, bounds, grow, retry);
        // The ramp's start holds from the first task on (a ramp from 0 sends nothing at once).
        if let Some(curve) = plan.worker_curve() {
            crew.set_closed_target(u64::from(share(workers_at(curve, 0.0), self.index, sh.count)));
        }
        crew
    }

    /// The whole life of the event loop: make its crew and report `ready`; wait for the run's
    /// start (`None`: the run will not start, another event loop failed); pace or loop until every
    /// worker has ended.
    pub(crate) async fn drive(
        self,
        ready: oneshot::Sender<Ready<F>>,
        go: oneshot::Receiver<Option<Instant>>,
    ) -> EventLoopEnd {
        let mut staged = match self.stage().await {
            Ok(staged) => staged,
            Err(err) => {
                let _ = ready.send(Err(err));
                return EventLoopEnd::default();
            }
        };
        let _ = ready.send(Ok(staged.crew.clone()));
        let Some(start) = go.await.ok().flatten() else {
            // Dropping the pacer's end closes the dispatch: idle workers end.
            staged.open = None;
            while staged.loops.join_next().await.is_some() {}
            return EventLoopEnd::default();
        };
        let roster = staged.open.as_ref().map(|open| open.roster.clone());
        let pacer = self.begin(&mut staged, start);
        let mut end = EventLoopEnd::default();
        let Staged { crew, mut loops, mut grow, .. } = staged;
        self.run_loops(&crew, &mut loops, &mut grow, roster.as_ref(), start, &mut end).await;
        crew.in_flight.store(0, Ordering::Relaxed);
        if let Some(roster) = &roster {
            // Tickets still queued, or handed to a worker that was cut: scheduled, never run.
            let left = roster.close_and_drain();
            let outcome = if self.shared.stop.is_aborted() { Outcome::Interrupted } else { Outcome::Dropped };
            self.shared.recorder.record_unfinished(self.index as usize, outcome, left);
        }
        if let Some(pacer) = pacer
            && let Err(err) = pacer.await
        {
            end.panics.push(err.to_string());
        }
        end
    }

    /// Everything before the start: the crew and its workers, idle and waiting (open model), or
    /// made and not yet looping (closed model).
    async fn stage(&self) -> Result<Staged<F>, EngineError> {
        let sh = &self.shared;
        let plan = &sh.plan;
        let (grow_tx, grow) = mpsc::unbounded_channel();
        // Retries go back to this event loop's pacer in the open model; the closed model retries
        // in place.
        let outstanding = Arc::new(AtomicU64::new(0));
        let (queue, retry_intake) = match (plan.retries(), plan.is_open()) {
            (Some(policy), true) => {
                let (queue, intake) = retry::queue(policy.queue_limit);
                (Some(queue), Some(intake))
            }
            _ => (None, None),
        };
        let retry =
            plan.retries().map(|policy| RetrySetup { policy: *policy, queue, outstanding: outstanding.clone() });
        let crew = Arc::new(self.crew(grow_tx, retry));
        let workers = crew.start(share(plan.workers(), self.index, sh.count)).await?;
        let mut staged =
            Staged { crew, loops: JoinSet::new(), grow, open: None, closed: Vec::new(), retry_intake, outstanding };
        match plan.model() {
            Model::Open { curve, overload, .. } => {
                let initial = workers.len() as u64;
                let max = share(plan.max_workers(), self.index, sh.count).max(1);
                let (dispatch, roster) = dispatch::channel(max, *overload, sh.gate.clone());
                for (id, worker) in workers {
                    staged.loops.spawn(staged.crew.clone().open_loop(id, worker, roster.intake()));
                }
                // The clock starts once every worker has announced itself idle: otherwise on a busy
                // machine the first due tasks could find no idle worker and drop.
                staged.crew.wait_until_idle(initial).await;
                staged.open = Some(OpenParts { dispatch, curve: curve.clone(), roster });
            }
            Model::Closed { .. } => staged.closed = workers,
        }
        Ok(staged)
    }

    /// The start: the pacer of the open model, or the closed model's worker loops.
    fn begin(&self, staged: &mut Staged<F>, start: Instant) -> Option<tokio::task::JoinHandle<()>> {
        if let Some(claims) = &self.shared.claims {
            for (id, worker) in std::mem::take(&mut staged.closed) {
                staged.loops.spawn(staged.crew.clone().closed_loop(id, worker, claims.clone()));
            }
        }
        let open = staged.open.take()?;
        let pacer = self.pacer(open, start, staged.retry_intake.take(), staged.outstanding.clone());
        let clock = self.shared.plan.pacer_clock();
        let pacer = match clock {
            PacerClock::Runtime => pacer,
            PacerClock::Precise => pacer.with_batch_window(BATCH_WINDOW, BATCH_TASKS),
        };
        let shared = self.shared.clone();
        Some(tokio::spawn(async move {
            pacer.run(clock).await;
            shared.pacer_done();
        }))
    }

    /// This event loop's pacer: its slice of the schedule, its retries, live control.
    fn pacer(
        &self,
        open: OpenParts,
        start: Instant,
        retry_intake: Option<retry::RetryIntake>,
        outstanding: Arc<AtomicU64>,
    ) -> Pacer {
        let sh = &self.shared;
        let plan = &sh.plan;
        let retries = retry_intake.zip(plan.retries()).map(|(intake, policy)| Retries {
            intake,
            budget: policy.budget,
            flush_timeout: policy.flush_timeout,
            outstanding,
            // Each event loop flushes its own retries at its share of the run's planned average rate.
            flush_spacing: plan
                .target_rate()
                .filter(|r| *r > 0.0)
                .map_or(Duration::ZERO, |r| crate::schedule::clamped_secs(f64::from(sh.count) / r)),
            next_flush: None,
        });
        let live = sh.control.clone().map(|c| (c, sh.rate_now.clone()));
        Pacer::new(
            open.curve,
            plan.task_limit(),
            start,
            open.dispatch,
            sh.recorder.clone(),
            sh.stop.clone(),
            retries,
            live,
        )
        .with_segment(self.segment())
        .with_recorder_stripe(self.index as usize)
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
        end: &mut EventLoopEnd,
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
                // A ramping closed crew: follow this event loop's share of the target number of workers.
                () = sleep_until(next_ramp), if ramp.is_some() && sh.stop.generating() => {
                    next_ramp += APPLY_EVERY;
                    if let Some((curve, claims)) = &ramp {
                        let target = workers_at(curve, start.elapsed().as_secs_f64());
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

/// The workers a closed ramp wants `t` seconds in, as k6's ramping VUs count them: a worker starts
/// once the ramp has reached it (rounded down while rising) and leaves once the ramp has fallen
/// below it (rounded up while falling). Rounding to the nearest started each worker half a step
/// early, so a ramp that rises and holds ran more iterations than k6 (k6's own `protocol`
/// template, 10 s to 5 VUs, 20 s to 10, 1 s to 0: 188 against k6's 176).
fn workers_at(curve: &RateCurve, t: f64) -> u32 {
    // A hair below and above whole numbers: the curve's arithmetic is not exact at its knots.
    const HAIR: f64 = 1e-9;
    let now = curve.rate_at(t);
    let before = curve.rate_at((t - APPLY_EVERY.as_secs_f64()).max(0.0));
    let wanted = if now > before + HAIR {
        (now + HAIR).floor()
    } else if now < before - HAIR {
        (now - HAIR).ceil()
    } else {
        now.round()
    };
    wanted.max(0.0) as u32
}

/// Start `event_loop` where its clock says: on a thread of its own with a single-threaded
/// runtime (precise), or as a task on the current runtime. Its end goes to `done`.
pub(crate) fn launch<F: WorkerFactory>(
    event_loop: EventLoop<F>,
    ready: oneshot::Sender<Ready<F>>,
    go: oneshot::Receiver<Option<Instant>>,
    done: mpsc::UnboundedSender<EventLoopEnd>,
) -> Result<(), EngineError> {
    if event_loop.shared.plan.pacer_clock() == PacerClock::Runtime {
        tokio::spawn(async move {
            let end = event_loop.drive(ready, go).await;
            let _ = done.send(end);
        });
        return Ok(());
    }
    let name = format!("loadhost-loop-{}", event_loop.index);
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            // The generator's health reads each loop thread's time waiting for a CPU.
            let threads = event_loop.shared.loop_threads.clone();
            let overshoot = threads.register();
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
            match runtime {
                Ok(runtime) => runtime.block_on(async move {
                    // Ends when the runtime drops it, after the loop's connections are done.
                    tokio::spawn(health::probe::run(overshoot));
                    let stop = event_loop.shared.stop.clone();
                    let end = event_loop.drive(ready, go).await;
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
            threads.end();
        })
        .map(|_| ())
        .map_err(|err| EngineError::Panicked(format!("starting an event-loop thread: {err}")))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::workers_at;
    use crate::schedule::{Ramp, RateCurve};

    #[test]
    fn a_closed_ramp_counts_workers_as_k6_counts_vus() {
        // 0 → 4 over 4 s, then 4 → 0 over 4 s (k6: a VU starts at 1, 2, 3, 4 s and leaves at 5,
        // 6, 7, 8 s).
        let ramps = [
            Ramp { duration: Duration::from_secs(4), target: 4.0 },
            Ramp { duration: Duration::from_secs(4), target: 0.0 },
        ];
        let curve = RateCurve::new(0.0, &ramps, None).unwrap();
        for (t, wanted) in
            [(0.0, 0), (0.6, 0), (0.99, 0), (1.01, 1), (2.5, 2), (3.99, 3), (4.0, 4), (4.6, 4), (4.99, 4), (5.01, 3)]
        {
            assert_eq!(workers_at(&curve, t), wanted, "at {t} s");
        }
        for (t, wanted) in [(6.5, 2), (7.99, 1), (8.0, 0), (9.0, 0)] {
            assert_eq!(workers_at(&curve, t), wanted, "at {t} s");
        }
        // A hold is its level.
        let hold = RateCurve::new(3.0, &[Ramp { duration: Duration::from_secs(2), target: 3.0 }], None).unwrap();
        assert_eq!(workers_at(&hold, 1.0), 3);
    }
}
