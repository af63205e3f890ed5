//! The batched pacer: releases tasks on an absolute schedule.
//!
//! It never keeps one timer per task. At tens of thousands of tasks per second the runtime's timer
//! (1 ms granularity) would coalesce the ticks and the achieved rate would plateau. Instead, on
//! every wake it releases *every* task that is due, then sleeps until the next one is due. Task `k`
//! is due at `start + t_k` ([`RateCurve::due`]), so being late never shifts the schedule: late tasks
//! go out in the next batch, stamped with their own scheduled time.
//!
//! Two health figures come out of it:
//! - **lag**: how late the pacer woke compared with the task it slept for;
//! - **underrun**: tasks released more than [`TOLERANCE`] after they were due because the pacer
//!   itself was late. Tasks held back by a full queue (`--overload queue`) are not underrun: that is
//!   the crew's limit, not the emitter's.

use std::sync::Arc;
use std::time::Duration;

use loadhost_metrics::{Outcome, PacerTally, Recorder};
use tokio::time::{Instant, sleep_until};

use crate::dispatch::{Dispatch, Offer, Ticket};
use crate::schedule::RateCurve;
use crate::stop::Stop;

/// How late the pacer may release a task before it counts as underrun: the runtime's timer fires
/// on 1 ms ticks, so up to a tick of lateness is the timer's resolution, and one more covers waking.
pub const TOLERANCE: Duration = Duration::from_millis(2);

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
}

impl Pacer {
    /// Release every task on schedule until the plan is done or the run is aborted. Dropping the
    /// dispatch on return closes the channel, which lets the workers finish.
    pub(crate) async fn run(self) {
        let (mut k, mut hint) = (0u64, 0usize);
        // The instant the pacer last slept until: lateness is measured against it.
        let mut slept_until: Option<Instant> = None;
        'wakes: while k < self.total && !self.stop.is_aborted() {
            let now = Instant::now();
            let mut tally = PacerTally::default();
            // Only a timer wake can be late; after waiting on a full queue, lateness is the crew's.
            let on_time_wake = slept_until.is_some() || k == 0;
            if let Some(target) = slept_until.take() {
                let late = now.saturating_duration_since(target);
                tally.lateness = Some(late);
                tally.lag_beyond_tolerance = late.saturating_sub(TOLERANCE);
            }
            let mut next_due = None;
            while k < self.total {
                let Some(t) = self.curve.due(k, &mut hint) else { break };
                let due = self.start + Duration::from_secs_f64(t);
                if due > now {
                    next_due = Some(due);
                    break;
                }
                tally.scheduled += 1;
                if on_time_wake && now.saturating_duration_since(due) > TOLERANCE {
                    tally.underrun += 1;
                }
                let ticket = Ticket {
                    iteration: k,
                    attempt: 0,
                    scheduled: due,
                };
                k += 1;
                match self.dispatch.offer(ticket) {
                    Offer::Released => {}
                    Offer::Dropped => tally.dropped += 1,
                    Offer::Full(ticket) => {
                        self.recorder.record_pacer(self.shard, std::mem::take(&mut tally));
                        tokio::select! {
                            sent = self.dispatch.send(ticket) => {
                                if !sent {
                                    // Counted as scheduled in the tally just recorded.
                                    self.recorder.record_task(self.shard, Outcome::Dropped, None);
                                    self.crew_gone();
                                    break 'wakes;
                                }
                            }
                            () = self.stop.aborted() => {
                                self.recorder.record_task(self.shard, Outcome::Interrupted, None);
                                break 'wakes;
                            }
                        }
                        continue 'wakes;
                    }
                    Offer::Closed => {
                        tally.dropped += 1;
                        self.recorder.record_pacer(self.shard, tally);
                        self.crew_gone();
                        break 'wakes;
                    }
                }
            }
            self.recorder.record_pacer(self.shard, tally);
            let Some(next) = next_due else { break };
            tokio::select! {
                () = sleep_until(next) => slept_until = Some(next),
                () = self.stop.aborted() => break,
            }
        }
        if self.stop.is_aborted() {
            // Tasks that fell due but were never released (held back by a full queue, or due while
            // the pacer was stopping) were scheduled too: they end as interrupted.
            let now = Instant::now();
            let mut unreleased = 0;
            while k < self.total {
                match self.curve.due(k, &mut hint) {
                    Some(t) if self.start + Duration::from_secs_f64(t) <= now => unreleased += 1,
                    _ => break,
                }
                k += 1;
            }
            self.recorder
                .record_unstarted(self.shard, Outcome::Interrupted, unreleased);
        }
    }

    fn crew_gone(&self) {
        self.stop.abort("every worker failed and none could be replaced".into());
    }
}
