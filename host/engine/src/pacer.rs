//! The batched pacer: releases tasks on an absolute schedule.
//!
//! It never keeps one timer per task. At tens of thousands of tasks per second a per-task timer
//! would be coalesced by the runtime and the achieved rate would plateau. Instead, on every wake it
//! releases *every* task that is due, then sleeps until the next one is due. Task `k` is due at
//! `start + t_k` ([`RateCurve::due`]), so being late never shifts the schedule: late tasks go out in
//! the next batch, stamped with their own scheduled time.
//!
//! Two health figures come out of it:
//! - **lag**: how late the pacer woke compared with the task it slept for;
//! - **underrun**: tasks released more than [`TOLERANCE`] after they were due because the pacer
//!   itself was late. Tasks held back by a full queue (`--overload queue`) are not underrun: that is
//!   the crew's limit, not the emitter's.
//!
//! The targets on the curve's clock N(t) come from the curve's arrival process
//! ([`crate::arrivals`]): slot k is due when N(t) reaches k (even), or the sum of k + 1 seeded
//! exponential draws (Poisson); a Poisson pacer draws the whole plan's sequence and keeps its
//! segment's slots, so segments and event loops together release the single-process plan.
//!
//! Releasing is one synchronous step ([`Pacer::release_due`]); waiting is the driver's job. The
//! [`PacerClock::Precise`](crate::PacerClock::Precise) driver sleeps inside its event loop on a `timerfd` (the kernel's
//! high-resolution timer), so a released task wakes a worker on the same thread; the
//! [`PacerClock::Runtime`](crate::PacerClock::Runtime) driver uses tokio's timer (1 ms granularity), which is what tests under
//! paused time need.
//!
//! With the precise clock the pacer also releases, on each wake, up to [`BATCH_TASKS`] tasks due
//! within [`BATCH_WINDOW`] after the one it woke for, each still stamped with its own due time.
//! Waking costs far more than releasing: measured on this project's 2-core VM, a thread that sleeps
//! and wakes on a timer spends 20–30 µs of CPU per wake, against ~2 µs for a no-op task. Releasing
//! a millisecond's worth of tasks per wake is what makes a paced no-op task cost single-digit
//! microseconds; the target still sees the rate, with a millisecond's granularity (wrk2's timers
//! have the same).

use std::sync::Arc;
use std::time::Duration;

use std::sync::atomic::{AtomicU64, Ordering};

use loadhost_metrics::{Outcome, PacerTally, Recorder};
use tokio::time::{Instant, sleep_until};

use crate::arrivals::Targets;
use crate::control::Control;
use crate::dispatch::{Dispatch, Offer, Ticket};
use crate::retry::RetryIntake;
use crate::schedule::RateCurve;
use crate::segment::Segment;
use crate::stop::Stop;
use crate::timer::PreciseTimer;

/// How late the pacer may release a task before it counts as underrun: one tick of tokio's timer
/// (1 ms) plus a millisecond for waking. The thread driver is far more precise than that, so the
/// same tolerance keeps the two comparable.
pub const TOLERANCE: Duration = Duration::from_millis(2);

/// With the precise clock, a wake also releases the tasks due this soon after the one it woke
/// for (each stamped with its own due time, so it may start up to this much early)…
pub const BATCH_WINDOW: Duration = Duration::from_millis(1);

/// …but at most this many of them.
pub const BATCH_TASKS: u32 = 64;

/// A slot the pacer reaches more than this after it was due is not released: the pacer itself
/// fell behind (a rate beyond what the host can release, a stalled machine), so the task ends
/// `dropped` and counts as underrun, which names the emitter in the verdict. Releasing it would
/// only report the pacer's own delay as the target's latency, and a schedule the host cannot
/// follow would stretch the run by its whole backlog (2 s at 1,000,000/s took 10 s).
pub const CATCH_UP_LIMIT: Duration = Duration::from_secs(1);

/// The most slots one wake goes through (released, dropped or skipped) before the pacer lets its
/// event loop run again: the workers it released, the stop and the cut are never held up by a
/// schedule, however fast, for more than a fraction of a millisecond.
const WAKE_BUDGET: u32 = 4096;

/// Counting the slots a stop left unreleased walks a random schedule at most this far (about a
/// tenth of a second); past it the rest are counted from the curve in one step.
const COUNT_WALK: u64 = 10_000_000;

/// With live control, the longest the precise driver sleeps at once, so a change is seen soon.
const CONTROL_SLICE: Duration = Duration::from_millis(5);

/// What the pacer should do after releasing what was due.
enum Step {
    /// Sleep until the next slot is due.
    Sleep(Instant),
    /// The queue is full: hand this ticket over when there is room.
    Full(Ticket),
    /// No worker was idle for this ticket: let the event loop run once (a worker that just
    /// finished becomes idle), then offer it again.
    Busy(Ticket),
    /// The wake's budget is spent with slots still due: let the event loop run, then go on.
    More,
    /// The schedule is done.
    Done,
}

/// Retries, in the pacer's hands.
pub(crate) struct Retries {
    pub(crate) intake: RetryIntake,
    /// The largest share of slots retries may take.
    pub(crate) budget: f64,
    pub(crate) flush_timeout: Duration,
    /// Released attempts not yet settled by a worker (a settled one may have queued a retry).
    pub(crate) outstanding: Arc<AtomicU64>,
    /// The flush keeps to the run's planned average rate: one retry per this much time.
    pub(crate) flush_spacing: Duration,
    /// When the flush may release its next retry.
    pub(crate) next_flush: Option<Instant>,
}

/// Everything the pacer needs.
pub(crate) struct Pacer {
    pub(crate) curve: RateCurve,
    /// Slots the curve has in all (`None`: it never ends, or arrivals are random and the
    /// schedule ends when the next one would fall past the curve's end).
    pub(crate) slots: Option<u64>,
    /// Where on the curve's clock N(t) each slot falls.
    targets: Targets,
    /// Fresh tasks to schedule at most (`-n`).
    pub(crate) fresh_limit: u64,
    pub(crate) start: Instant,
    pub(crate) dispatch: Dispatch,
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) stripe: usize,
    pub(crate) stop: Arc<Stop>,
    pub(crate) retries: Option<Retries>,
    /// The next slot of the schedule (in the whole plan's numbering).
    pub(crate) next_slot: u64,
    /// This process's share: it takes every `count`-th slot from `index`.
    segment: Segment,
    /// The next fresh task's iteration number.
    pub(crate) fresh: u64,
    /// Slots given to retries so far.
    pub(crate) retry_slots: u64,
    pub(crate) hint: usize,
    /// Tasks due this soon after a wake may go out in it (zero: exactly on time)…
    early: Duration,
    /// …but at most this many of them per wake.
    batch: u32,
    /// Slot `k` is due at `time_base + curve.due_at(target(k) - consumed)`; a live change
    /// re-bases both (`consumed` is the count the earlier curves used up).
    time_base: Instant,
    consumed: f64,
    /// When the plan says generation ends (`None`: it ends by task count).
    planned_end: Option<Instant>,
    /// The plan's own curve, to resume from when no rate was set live.
    plan_curve: RateCurve,
    live: Option<Live>,
}

/// The pacer's view of live control.
struct Live {
    control: Arc<Control>,
    seen: u64,
    paused: bool,
    applied_rate: Option<f64>,
    /// The rate followed now, published for the status (f64 bits).
    rate_now: Arc<AtomicU64>,
}

impl Pacer {
    /// A pacer for `curve`, scheduling at most `fresh_limit` fresh tasks.
    #[allow(clippy::too_many_arguments, reason = "a constructor for the run loop, which owns every part")]
    pub(crate) fn new(
        curve: RateCurve,
        fresh_limit: Option<u64>,
        start: Instant,
        dispatch: Dispatch,
        recorder: Arc<Recorder>,
        stop: Arc<Stop>,
        retries: Option<Retries>,
        control: Option<(Arc<Control>, Arc<AtomicU64>)>,
    ) -> Self {
        let targets = Targets::new(curve.process());
        Self {
            slots: if targets.is_random() { None } else { curve.total_tasks() },
            targets,
            planned_end: curve.end().map(|end| start + end),
            plan_curve: curve.clone(),
            time_base: start,
            consumed: 0.0,
            live: control.map(|(control, rate_now)| Live {
                control,
                seen: 0,
                paused: false,
                applied_rate: None,
                rate_now,
            }),
            curve,
            fresh_limit: fresh_limit.unwrap_or(u64::MAX),
            start,
            dispatch,
            recorder,
            stripe: 0,
            stop,
            retries,
            next_slot: 0,
            segment: Segment::whole(),
            fresh: 0,
            retry_slots: 0,
            hint: 0,
            early: Duration::ZERO,
            batch: 0,
        }
    }

    /// Record into the recorder's stripe `stripe` (each event loop passes its own index).
    pub(crate) fn with_recorder_stripe(mut self, stripe: usize) -> Self {
        self.stripe = stripe;
        self
    }

    /// On each wake, also release up to `tasks` tasks due within `window` after it (the precise
    /// clock's batches).
    pub(crate) fn with_batch_window(mut self, window: Duration, tasks: u32) -> Self {
        self.early = window;
        self.batch = tasks;
        self
    }

    /// Take only `segment`'s slots, and its share of the fresh tasks, numbered as in the whole plan.
    pub(crate) fn with_segment(mut self, segment: Segment) -> Self {
        self.next_slot = u64::from(segment.index());
        if self.fresh_limit != u64::MAX {
            self.fresh_limit = segment.share_of(self.fresh_limit);
        }
        self.segment = segment;
        self
    }

    /// Slots this process has used so far.
    fn slots_used(&self) -> u64 {
        (self.next_slot - u64::from(self.segment.index())) / u64::from(self.segment.count())
    }

    /// When slot `k` is due, on the current (possibly re-based) schedule.
    fn due(&mut self, k: u64) -> Option<Instant> {
        let target = self.targets.target(k) - self.consumed;
        let t = self.curve.due_at(target, &mut self.hint)?;
        Some(self.time_base + crate::schedule::clamped_secs(t))
    }

    /// Apply live changes; returns whether generation is paused.
    fn follow_control(&mut self, now: Instant) -> bool {
        let Some(live) = self.live.as_mut() else { return false };
        let version = live.control.version();
        if version != live.seen {
            live.seen = version;
            let requested = live.control.requested();
            let rate = requested.rate.filter(|r| *r > 0.0);
            if requested.paused || requested.rate == Some(0.0) {
                live.paused = true;
            } else if live.paused || rate != live.applied_rate {
                live.paused = false;
                live.applied_rate = rate;
                let rate = rate.unwrap_or_else(|| self.plan_curve.rate_at((now - self.start).as_secs_f64()));
                self.rebase(now, rate);
            }
        }
        let (paused, rate_now) = match self.live.as_ref() {
            Some(live) => (live.paused, live.rate_now.clone()),
            None => return false,
        };
        let rate = if paused { 0.0 } else { self.curve.rate_at((now - self.time_base).as_secs_f64()) };
        rate_now.store(rate.to_bits(), Ordering::Relaxed);
        paused
    }

    /// From now on, slots come at a constant `rate` until the planned end. Even arrivals start
    /// afresh with the next slot now; Poisson arrivals keep the next slot's remaining distance on
    /// the clock (still exponential: the process goes on at the new rate), unless it is overdue
    /// (after a pause), when it too comes now.
    fn rebase(&mut self, now: Instant, rate: f64) {
        let remaining = self.planned_end.map(|end| end.saturating_duration_since(now));
        if let Ok(curve) = RateCurve::constant(rate, remaining) {
            let next = self.targets.target(self.next_slot);
            self.consumed = if self.targets.is_random() {
                let carried =
                    self.consumed + self.curve.tasks_by(now.saturating_duration_since(self.time_base).as_secs_f64());
                carried.min(next)
            } else {
                next
            };
            self.slots = if self.targets.is_random() { None } else { curve.total_tasks().map(|n| self.next_slot + n) };
            self.curve = curve;
            self.time_base = now;
            self.hint = 0;
        }
    }

    /// Whether the schedule still has work: fresh tasks, or (with retries) anything pending.
    fn has_work(&mut self) -> bool {
        if self.fresh < self.fresh_limit {
            return true;
        }
        match &mut self.retries {
            Some(r) => !r.intake.is_empty() || r.outstanding.load(Ordering::Acquire) > 0,
            None => false,
        }
    }

    /// A due retry for this slot, if the budget allows one.
    fn due_retry(&mut self, now: Instant) -> Option<Ticket> {
        let used = self.slots_used();
        let r = self.retries.as_mut()?;
        // Retries may take `budget` of the slots used so far (the first one is always allowed).
        if (self.retry_slots as f64) >= r.budget * (used as f64 + 1.0) {
            return None;
        }
        let retry = r.intake.pop_due(now)?;
        self.retry_slots += 1;
        Some(Ticket::retry(&retry, now))
    }

    /// Release every slot due at `now`, at most [`WAKE_BUDGET`] of them per call. `phase` says
    /// whether the pacer slept for a due time (lateness is measured against it), whether a full
    /// queue held it back (then late slots are the crew's, not underrun), and whether this wake
    /// already let the event loop run once for a busy crew.
    fn release_due(&mut self, now: Instant, phase: &mut Phase) -> Step {
        let mut tally = PacerTally::default();
        if let Some(target) = phase.slept_until.take() {
            let late = now.saturating_duration_since(target);
            tally.lateness = Some(late);
            tally.lag_beyond_tolerance = late.saturating_sub(TOLERANCE);
        }
        let pacer_late = !phase.held_back;
        let (mut early, mut handled) = (0, 0);
        let step = loop {
            if self.slots.is_some_and(|total| self.next_slot >= total) || !self.has_work() {
                break Step::Done;
            }
            if handled >= WAKE_BUDGET {
                break Step::More;
            }
            handled += 1;
            let Some(due) = self.due(self.next_slot) else { break Step::Done };
            if due > now {
                if due > now + self.early || early >= self.batch {
                    break Step::Sleep(due);
                }
                early += 1;
            }
            let late = now.saturating_duration_since(due);
            if pacer_late && late > CATCH_UP_LIMIT {
                self.skip_late(now - CATCH_UP_LIMIT, &mut tally);
                continue;
            }
            self.next_slot += u64::from(self.segment.count());
            if pacer_late && late > TOLERANCE {
                tally.underrun += 1;
            }
            let ticket = match self.due_retry(now) {
                Some(mut retry) => {
                    retry.scheduled = due;
                    retry
                }
                None if self.fresh < self.fresh_limit => {
                    tally.scheduled += 1;
                    self.fresh += 1;
                    Ticket::new(self.segment.global(self.fresh - 1), due)
                }
                // Fresh tasks are done and no retry is due: the slot goes by empty.
                None => continue,
            };
            if let Some(step) = self.offer(ticket, &mut tally, !phase.waited) {
                break step;
            }
        };
        self.recorder.record_pacer(self.stripe, tally);
        step
    }

    /// The pacer is more than [`CATCH_UP_LIMIT`] behind: the fresh slots due by `until` end
    /// `dropped` and underrun, counted in one step (even arrivals) or by walking the schedule
    /// within the wake's budget (random arrivals), never offered. Retries keep waiting for a slot
    /// the pacer reaches in time.
    fn skip_late(&mut self, until: Instant, tally: &mut PacerTally) {
        let n = self.due_by(until, u64::from(WAKE_BUDGET)).min(self.fresh_limit - self.fresh).max(1);
        self.next_slot += n * u64::from(self.segment.count());
        self.fresh += n;
        tally.scheduled += n;
        tally.dropped += n;
        tally.underrun += n;
    }

    /// How many of this pacer's slots from `next_slot` on are due by `until` (within the curve and
    /// its total; `-n` is the caller's). Even arrivals are counted in closed form from N(t);
    /// random ones by walking their targets, at most `walk` of them, and the rest estimated from
    /// the curve (one arrival per unit of N(t) on average). Leaves the schedule where it was.
    fn due_by(&mut self, until: Instant, walk: u64) -> u64 {
        let step = u64::from(self.segment.count());
        let reached =
            self.consumed + self.curve.tasks_by(until.saturating_duration_since(self.time_base).as_secs_f64());
        let within =
            |from: u64, last: f64| if last < from as f64 { 0 } else { ((last - from as f64) / step as f64) as u64 + 1 };
        let mut n = if self.targets.is_random() {
            let mut k = self.next_slot;
            let mut walked = 0;
            while walked < walk && self.due(k).is_some_and(|due| due <= until) {
                k += step;
                walked += 1;
            }
            let beyond = self.targets.target(k) - self.consumed;
            let estimate = if walked < walk || beyond > reached { 0 } else { within(k, k as f64 + (reached - beyond)) };
            walked + estimate
        } else {
            within(self.next_slot, reached)
        };
        if let Some(total) = self.slots {
            n = n.min(total.saturating_sub(self.next_slot).div_ceil(step));
        }
        n
    }
    /// Offer a released ticket to the crew and account for what became of it; `Some` when the
    /// pacer must stop releasing (wait for room, let a worker free up, or end). `may_wait` allows
    /// one [`Step::Busy`] round before a ticket finding no idle worker is dropped.
    fn offer(&mut self, ticket: Ticket, tally: &mut PacerTally, may_wait: bool) -> Option<Step> {
        let retry = ticket.attempt > 0;
        match self.dispatch.offer(ticket) {
            Offer::Released => self.released(),
            Offer::Busy(ticket) if may_wait => return Some(Step::Busy(ticket)),
            Offer::Busy(_) | Offer::GateFull if retry => self.recorder.record_task(self.stripe, Outcome::Dropped, None),
            Offer::Busy(_) => tally.dropped += 1,
            Offer::GateFull => {
                tally.dropped += 1;
                tally.dropped_at_gate += 1;
            }
            Offer::Full(ticket) => return Some(Step::Full(ticket)),
            Offer::Closed if self.stop.is_aborted() => {
                self.recorder.record_task(self.stripe, Outcome::Interrupted, None);
                return Some(Step::Done);
            }
            Offer::Closed => {
                if retry {
                    self.recorder.record_task(self.stripe, Outcome::Dropped, None);
                } else {
                    tally.dropped += 1;
                }
                self.crew_gone();
                return Some(Step::Done);
            }
        }
        None
    }

    /// Offer again a ticket that found no idle worker, after the event loop ran once: dropped if
    /// still no worker is idle. `false` when the pacer must stop. A round that freed no worker
    /// is not tried again before the next sleep: the tickets due meanwhile that find the crew busy
    /// are dropped at once, not one event-loop round each.
    fn offer_again(&mut self, ticket: Ticket, phase: &mut Phase) -> bool {
        let mut tally = PacerTally::default();
        let step = self.offer(ticket, &mut tally, false);
        phase.waited = tally.dropped > 0;
        self.recorder.record_pacer(self.stripe, tally);
        !matches!(step, Some(Step::Done))
    }

    /// Whether something was requested since the pacer last looked.
    fn control_changed(&self) -> bool {
        self.live.as_ref().is_some_and(|live| live.control.version() != live.seen)
    }

    fn released(&self) {
        if let Some(r) = &self.retries {
            r.outstanding.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// After the schedule: release retries as they come due, at the run's planned average rate (no
    /// budget: no fresh task competes), until none is pending or outstanding, or until `deadline`.
    fn flush_step(&mut self, now: Instant, deadline: Instant) -> Step {
        let Some(r) = self.retries.as_mut() else { return Step::Done };
        let mut slot = *r.next_flush.get_or_insert(now);
        while slot <= now
            && let Some(retry) = r.intake.pop_due(now)
        {
            slot += r.flush_spacing;
            r.next_flush = Some(slot);
            let ticket = Ticket::retry(&retry, now);
            match self.dispatch.offer(ticket) {
                Offer::Released => r.outstanding.fetch_add(1, Ordering::AcqRel),
                Offer::Closed if self.stop.is_aborted() => {
                    self.recorder.record_task(self.stripe, Outcome::Interrupted, None);
                    0
                }
                Offer::Busy(_) | Offer::GateFull | Offer::Closed => {
                    self.recorder.record_task(self.stripe, Outcome::Dropped, None);
                    0
                }
                Offer::Full(ticket) => return Step::Full(ticket),
            };
        }
        if r.intake.is_empty() && r.outstanding.load(Ordering::Acquire) == 0 {
            return Step::Done;
        }
        if now >= deadline {
            let left = r.intake.drain() as u64;
            if left > 0 {
                tracing::warn!(
                    "{left} retries were still pending when --flush-retries-timeout ran out: they end as failed"
                );
            }
            self.recorder.record_unfinished(self.stripe, Outcome::Failed, left);
            return Step::Done;
        }
        let next = r.intake.next_due().unwrap_or(now + FLUSH_POLL).max(slot).min(now + FLUSH_POLL).min(deadline);
        Step::Sleep(next)
    }

    fn crew_gone(&self) {
        self.stop.abort("every worker failed and none could be replaced".into());
    }

    /// After an abort: fresh tasks that fell due but were never released, and retries still
    /// waiting, were scheduled too: they end as interrupted.
    fn finish(mut self) {
        if let Some(r) = self.retries.as_mut() {
            let left = r.intake.drain() as u64;
            self.recorder.record_unfinished(self.stripe, Outcome::Interrupted, left);
        }
        if !self.stop.is_aborted() {
            return;
        }
        let unreleased = self.due_by(Instant::now(), COUNT_WALK).min(self.fresh_limit - self.fresh);
        self.recorder.record_unstarted(self.stripe, Outcome::Interrupted, unreleased);
        // Dropping the dispatch closes the channel, which lets the workers finish.
    }

    /// The deadline of the flush phase, from now.
    fn flush_deadline(&self) -> Option<Instant> {
        self.retries.as_ref().map(|r| Instant::now() + r.flush_timeout)
    }

    /// What either driver does next: the schedule's logic, free of how a driver waits.
    fn next_action(&mut self, phase: &mut Phase) -> Action {
        if self.stop.is_aborted() {
            return Action::Stop;
        }
        let now = Instant::now();
        let paused = phase.flushing.is_none() && self.follow_control(now);
        let step = match phase.flushing {
            Some(deadline) => self.flush_step(now, deadline),
            // A pause holds generation, not the run: the planned end still ends it.
            None if paused && self.planned_end.is_some_and(|end| now >= end) => Step::Done,
            None if paused => {
                phase.slept_until = None;
                return Action::Pause;
            }
            None => self.release_due(now, phase),
        };
        match step {
            Step::Done if phase.flushing.is_none() => match self.flush_deadline() {
                Some(deadline) => {
                    phase.flushing = Some(deadline);
                    self.next_action(phase)
                }
                None => Action::Stop,
            },
            Step::Done => Action::Stop,
            Step::Sleep(next) => Action::Sleep(next),
            Step::Full(ticket) => Action::Send(ticket),
            Step::Busy(ticket) => Action::Yield(ticket),
            Step::More => Action::Continue,
        }
    }

    /// After a blocked hand-over: false when the crew is gone and the pacer must stop.
    fn handed_over(&mut self, sent: bool) -> bool {
        if sent {
            self.released();
        } else if self.stop.is_aborted() {
            // The run closed the channel after its grace ran out.
            self.recorder.record_task(self.stripe, Outcome::Interrupted, None);
        } else {
            self.recorder.record_task(self.stripe, Outcome::Dropped, None);
            self.crew_gone();
        }
        sent
    }

    /// Hand over a ticket when the queue has room (queue policy); `false` when the pacer must stop.
    async fn send(&mut self, ticket: Ticket) -> bool {
        tokio::select! {
            sent = self.dispatch.send(ticket) => self.handed_over(sent),
            () = self.stop.aborted() => {
                // The ticket was scheduled (fresh) or queued (retry) already.
                self.recorder.record_task(self.stripe, Outcome::Interrupted, None);
                false
            }
        }
    }

    /// Drive the pacer on `clock`: tokio's timer (what paused-time tests need), or a precise timer
    /// in its own event loop (see [`PacerClock::Precise`](crate::PacerClock::Precise)).
    pub(crate) async fn run(mut self, clock: crate::PacerClock) {
        let timer = match clock {
            crate::PacerClock::Runtime => None,
            crate::PacerClock::Precise => match PreciseTimer::new() {
                Ok(timer) => Some(timer),
                Err(err) => {
                    tracing::warn!("no precise timer ({err}): pacing on the runtime's 1 ms timer instead");
                    None
                }
            },
        };
        let mut phase = Phase::default();
        loop {
            let going = match self.next_action(&mut phase) {
                Action::Stop => false,
                Action::Pause => tokio::select! {
                    () = tokio::time::sleep(PAUSE_POLL) => true,
                    () = self.stop.aborted() => false,
                },
                Action::Sleep(next) => {
                    let woke = match &timer {
                        Some(timer) => self.sleep_precisely(timer, next).await,
                        None => tokio::select! {
                            () = sleep_until(next) => true,
                            () = self.stop.aborted() => false,
                        },
                    };
                    phase.slept(next);
                    woke
                }
                Action::Send(ticket) => {
                    phase.held_back = true;
                    self.send(ticket).await
                }
                Action::Yield(ticket) => {
                    tokio::task::yield_now().await;
                    self.offer_again(ticket, &mut phase)
                }
                Action::Continue => {
                    tokio::task::yield_now().await;
                    true
                }
            };
            if !going {
                break;
            }
        }
        self.finish();
    }

    /// Sleep on `timer` until `next`, in slices when live control may change the schedule; `false`
    /// when the run was aborted meanwhile.
    async fn sleep_precisely(&self, timer: &PreciseTimer, next: Instant) -> bool {
        loop {
            let now = Instant::now();
            if now >= next || self.control_changed() {
                return true;
            }
            let until = if self.live.is_some() { next.min(now + CONTROL_SLICE) } else { next };
            tokio::select! {
                biased;
                () = self.stop.aborted() => return false,
                slept = timer.sleep_until(until) => {
                    if let Err(err) = slept {
                        tracing::debug!("the precise timer failed ({err}): sleeping on the runtime's timer");
                        sleep_until(until).await;
                    }
                }
            }
        }
    }
}

/// Where a driver is in the run: pacing the schedule, or flushing retries after it.
#[derive(Default)]
struct Phase {
    /// The deadline of the slept-for slot, so lag is measured against it and not the wake-up.
    slept_until: Option<Instant>,
    /// Set once the schedule is done and retries are flushing, until this deadline.
    flushing: Option<Instant>,
    /// Since the last sleep, a full queue held the pacer back: slots released late since were
    /// late for want of a worker (the crew's limit), not the pacer's.
    held_back: bool,
    /// Since the last sleep, a round of the event loop freed no worker for a busy crew: a ticket
    /// that finds no idle worker now is dropped at once.
    waited: bool,
}

impl Phase {
    /// A sleep until `next` ended: the pacer had caught up. Only the pacing phase measures lag
    /// against it.
    fn slept(&mut self, next: Instant) {
        if self.flushing.is_none() {
            self.slept_until = Some(next);
        }
        self.held_back = false;
        self.waited = false;
    }
}

/// The next thing a driver does.
enum Action {
    /// Stop pacing (the schedule and the flush are done, or the run was aborted).
    Stop,
    /// Paused by live control: look again shortly.
    Pause,
    /// Wait until this instant.
    Sleep(Instant),
    /// The queue is full: wait until the ticket is handed over.
    Send(Ticket),
    /// No worker was idle for this ticket: let the event loop run once, then offer it again.
    Yield(Ticket),
    /// The wake's budget is spent: let the event loop run, then go on releasing.
    Continue,
}

/// How often a paused pacer looks whether it may resume.
const PAUSE_POLL: Duration = Duration::from_millis(5);

/// How often the flush phase looks for retries that arrived from tasks still running.
const FLUSH_POLL: Duration = Duration::from_millis(5);
