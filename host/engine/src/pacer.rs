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
//! Releasing is one synchronous step ([`Pacer::release_due`]); waiting is the driver's job. The
//! [`PacerClock::Thread`] driver sleeps on a dedicated OS thread, whose timer is precise to tens of
//! microseconds; the [`PacerClock::Runtime`] driver uses tokio's timer (1 ms granularity), which is
//! what tests under paused time need.

use std::sync::Arc;
use std::time::Duration;

use loadhost_metrics::{Outcome, PacerTally, Recorder};
use tokio::time::{Instant, sleep_until};

use crate::dispatch::{Dispatch, Offer, Ticket};
use crate::schedule::RateCurve;
use crate::stop::Stop;

/// How late the pacer may release a task before it counts as underrun: one tick of tokio's timer
/// (1 ms) plus a millisecond for waking. The thread driver is far more precise than that, so the
/// same tolerance keeps the two comparable.
pub const TOLERANCE: Duration = Duration::from_millis(2);

/// What the pacer waits on between batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PacerClock {
    /// tokio's timer on the run's own runtime: 1 ms granularity, and follows paused test time.
    #[default]
    Runtime,
    /// A dedicated OS thread sleeping to the next due time: sub-millisecond release accuracy.
    Thread,
}

/// The longest the thread driver sleeps at once, so an abort is noticed promptly.
const THREAD_SLEEP_SLICE: Duration = Duration::from_millis(5);

/// What the pacer should do after releasing what was due.
enum Step {
    /// Sleep until the next task is due.
    Sleep(Instant),
    /// The queue is full: hand this ticket over when there is room.
    Full(Ticket),
    /// Every task has been scheduled.
    Done,
}

/// Everything the pacer needs.
pub(crate) struct Pacer {
    pub(crate) curve: RateCurve,
    /// Tasks to schedule in all.
    pub(crate) total: u64,
    pub(crate) start: Instant,
    pub(crate) dispatch: Dispatch,
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) shard: usize,
    pub(crate) stop: Arc<Stop>,
    /// The next task to release.
    pub(crate) next: u64,
    pub(crate) hint: usize,
}

impl Pacer {
    /// Release every task due at `now`. `slept_until` is the due time the pacer slept for, when it
    /// woke on its timer: lateness is measured against it, and only then is a late task underrun.
    fn release_due(&mut self, now: Instant, slept_until: Option<Instant>) -> Step {
        let mut tally = PacerTally::default();
        let timer_wake = slept_until.is_some() || self.next == 0;
        if let Some(target) = slept_until {
            let late = now.saturating_duration_since(target);
            tally.lateness = Some(late);
            tally.lag_beyond_tolerance = late.saturating_sub(TOLERANCE);
        }
        let step = loop {
            if self.next >= self.total {
                break Step::Done;
            }
            let Some(t) = self.curve.due(self.next, &mut self.hint) else {
                break Step::Done;
            };
            let due = self.start + Duration::from_secs_f64(t);
            if due > now {
                break Step::Sleep(due);
            }
            tally.scheduled += 1;
            if timer_wake && now.saturating_duration_since(due) > TOLERANCE {
                tally.underrun += 1;
            }
            let ticket = Ticket::new(self.next, due);
            self.next += 1;
            match self.dispatch.offer(ticket) {
                Offer::Released => {}
                Offer::Dropped => tally.dropped += 1,
                Offer::Full(ticket) => break Step::Full(ticket),
                Offer::Closed => {
                    tally.dropped += 1;
                    self.crew_gone();
                    break Step::Done;
                }
            }
        };
        self.recorder.record_pacer(self.shard, tally);
        step
    }

    /// The ticket waiting for room could not be handed over (counted as scheduled already).
    fn unsent(&self, ticket_outcome: Outcome) {
        self.recorder.record_task(self.shard, ticket_outcome, None);
    }

    fn crew_gone(&self) {
        self.stop.abort("every worker failed and none could be replaced".into());
    }

    /// After an abort: tasks that fell due but were never released (held back by a full queue, or
    /// due while the pacer was stopping) were scheduled too, and end as interrupted.
    fn finish(mut self) {
        if !self.stop.is_aborted() {
            return;
        }
        let now = Instant::now();
        let mut unreleased = 0;
        while self.next < self.total {
            match self.curve.due(self.next, &mut self.hint) {
                Some(t) if self.start + Duration::from_secs_f64(t) <= now => unreleased += 1,
                _ => break,
            }
            self.next += 1;
        }
        self.recorder.record_unstarted(self.shard, Outcome::Interrupted, unreleased);
        // Dropping the dispatch closes the channel, which lets the workers finish.
    }

    /// Drive the pacer with tokio's timer, on the run's runtime.
    pub(crate) async fn run_on_runtime(mut self) {
        let mut slept_until = None;
        while !self.stop.is_aborted() {
            match self.release_due(Instant::now(), slept_until.take()) {
                Step::Done => break,
                Step::Sleep(next) => tokio::select! {
                    () = sleep_until(next) => slept_until = Some(next),
                    () = self.stop.aborted() => break,
                },
                Step::Full(ticket) => tokio::select! {
                    sent = self.dispatch.send(ticket) => if !sent {
                        self.unsent(Outcome::Dropped);
                        self.crew_gone();
                        break;
                    },
                    () = self.stop.aborted() => {
                        self.unsent(Outcome::Interrupted);
                        break;
                    }
                },
            }
        }
        self.finish();
    }

    /// Drive the pacer from the current (dedicated) OS thread with precise sleeps.
    pub(crate) fn run_on_thread(mut self) {
        let mut slept_until = None;
        while !self.stop.is_aborted() {
            match self.release_due(Instant::now(), slept_until.take()) {
                Step::Done => break,
                Step::Sleep(next) => {
                    // Sleep in slices so an abort is seen within a few milliseconds.
                    loop {
                        let now = Instant::now();
                        if now >= next || self.stop.is_aborted() {
                            break;
                        }
                        std::thread::sleep((next - now).min(THREAD_SLEEP_SLICE));
                    }
                    slept_until = Some(next);
                }
                Step::Full(ticket) => {
                    // Blocking is safe: workers keep taking tickets even after an abort (they
                    // count them interrupted), and the channel closes if every worker is gone.
                    if !self.dispatch.send_blocking(ticket) {
                        self.unsent(Outcome::Dropped);
                        self.crew_gone();
                        break;
                    }
                }
            }
        }
        self.finish();
    }
}
