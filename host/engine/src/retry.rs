//! Retries: a `retryable` failure with attempts left goes back to the pacer with an
//! exponential backoff and full jitter, and takes a rate slot when it comes due, so a failing
//! target is not hammered harder than the rate says. Retries may take at most the budget's share
//! of slots; the queue is bounded; what is still pending when the schedule ends is flushed for up
//! to a timeout and then ends as `failed`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use thiserror::Error;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The longest a backoff waits, however many attempts came before.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What to do with `retryable` failures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Extra attempts a task may have.
    pub max_retries: u32,
    /// The base of the exponential backoff: attempt n waits a random time in [0, base · 2ⁿ).
    pub backoff: Duration,
    /// The largest share (0–1] of rate slots that retries may take.
    pub budget: f64,
    /// How long pending retries are flushed after the schedule ends.
    pub flush_timeout: Duration,
    /// The most retries waiting at once; beyond it a retryable failure ends as `failed`.
    pub queue_limit: usize,
}

/// A retry policy that cannot work.
#[derive(Debug, Error, PartialEq)]
#[non_exhaustive]
pub enum RetryError {
    /// Zero retries is no policy.
    #[error("the number of retries must be at least 1")]
    NoRetries,
    /// The budget is a share of slots.
    #[error("the retry budget must be more than 0% and at most 100%, got {0}%")]
    Budget(f64),
    /// The queue must hold something.
    #[error("the retry queue must hold at least one retry")]
    NoQueue,
}

impl RetryPolicy {
    /// Check the policy.
    pub fn validate(&self) -> Result<(), RetryError> {
        if self.max_retries == 0 {
            return Err(RetryError::NoRetries);
        }
        if !(self.budget > 0.0 && self.budget <= 1.0) {
            return Err(RetryError::Budget(self.budget * 100.0));
        }
        if self.queue_limit == 0 {
            return Err(RetryError::NoQueue);
        }
        Ok(())
    }

    /// The wait before the retry that follows a failed attempt `attempt` (0 for the first try):
    /// full jitter, uniform in [0, min(base · 2^attempt, [`MAX_BACKOFF`])). `unit` is a uniform draw
    /// in [0, 1).
    pub fn backoff_for(&self, attempt: u32, unit: f64) -> Duration {
        let ceiling =
            self.backoff.saturating_mul(1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX)).min(MAX_BACKOFF);
        ceiling.mul_f64(unit.clamp(0.0, 1.0))
    }
}

/// A retry waiting for its time and a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RetryTicket {
    pub(crate) due: Instant,
    pub(crate) iteration: u64,
    pub(crate) attempt: u32,
    /// When the task's first attempt was scheduled: its latency counts from here.
    pub(crate) first_scheduled: Instant,
}

/// The workers' end: where retryable failures are queued.
#[derive(Debug)]
pub(crate) struct RetryQueue {
    tx: mpsc::UnboundedSender<RetryTicket>,
    pending: Arc<AtomicUsize>,
    limit: usize,
}

/// The pacer's end: retries ordered by due time.
#[derive(Debug)]
pub(crate) struct RetryIntake {
    rx: mpsc::UnboundedReceiver<RetryTicket>,
    heap: BinaryHeap<Reverse<RetryTicket>>,
    pending: Arc<AtomicUsize>,
}

/// A bounded retry queue.
pub(crate) fn queue(limit: usize) -> (RetryQueue, RetryIntake) {
    let (tx, rx) = mpsc::unbounded_channel();
    let pending = Arc::new(AtomicUsize::new(0));
    (RetryQueue { tx, pending: pending.clone(), limit }, RetryIntake { rx, heap: BinaryHeap::new(), pending })
}

impl RetryQueue {
    /// Retries waiting now.
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// Queue a retry, unless the queue is full or the pacer is gone.
    pub(crate) fn push(&self, retry: RetryTicket) -> Result<(), RetryRefused> {
        if self.pending.fetch_add(1, Ordering::AcqRel) >= self.limit {
            self.pending.fetch_sub(1, Ordering::AcqRel);
            return Err(RetryRefused::Full);
        }
        if self.tx.send(retry).is_err() {
            self.pending.fetch_sub(1, Ordering::AcqRel);
            return Err(RetryRefused::Closed);
        }
        Ok(())
    }
}

/// Why a retry could not be queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetryRefused {
    /// The queue is at its bound.
    Full,
    /// The pacer has stopped taking retries (the run is over).
    Closed,
}

impl RetryIntake {
    fn absorb(&mut self) {
        while let Ok(retry) = self.rx.try_recv() {
            self.heap.push(Reverse(retry));
        }
    }

    /// The earliest retry due by `now`, if any.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<RetryTicket> {
        self.absorb();
        match self.heap.peek() {
            Some(Reverse(retry)) if retry.due <= now => {
                self.pending.fetch_sub(1, Ordering::AcqRel);
                self.heap.pop().map(|Reverse(retry)| retry)
            }
            _ => None,
        }
    }

    /// When the earliest waiting retry is due.
    pub(crate) fn next_due(&mut self) -> Option<Instant> {
        self.absorb();
        self.heap.peek().map(|Reverse(retry)| retry.due)
    }

    /// Whether no retry is waiting.
    pub(crate) fn is_empty(&mut self) -> bool {
        self.absorb();
        self.heap.is_empty()
    }

    /// Take every waiting retry (the run is over for them) and close the queue.
    pub(crate) fn drain(&mut self) -> usize {
        self.rx.close();
        self.absorb();
        let n = self.heap.len();
        self.heap.clear();
        self.pending.fetch_sub(n, Ordering::AcqRel);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 3,
            backoff: Duration::from_millis(100),
            budget: 0.2,
            flush_timeout: Duration::from_secs(5),
            queue_limit: 2,
        }
    }

    #[test]
    fn backoff_is_full_jitter_under_an_exponential_ceiling() {
        let p = policy();
        assert_eq!(p.backoff_for(0, 0.0), Duration::ZERO);
        assert_eq!(p.backoff_for(0, 0.5), Duration::from_millis(50));
        assert_eq!(p.backoff_for(2, 0.5), Duration::from_millis(200), "ceiling 100 ms · 2² = 400 ms");
        assert_eq!(p.backoff_for(40, 0.999_999), MAX_BACKOFF.mul_f64(0.999_999), "capped");
    }

    #[test]
    fn bad_policies_are_refused() {
        assert_eq!(RetryPolicy { max_retries: 0, ..policy() }.validate(), Err(RetryError::NoRetries));
        assert_eq!(RetryPolicy { budget: 0.0, ..policy() }.validate(), Err(RetryError::Budget(0.0)));
        assert_eq!(RetryPolicy { budget: 1.5, ..policy() }.validate(), Err(RetryError::Budget(150.0)));
        assert!(policy().validate().is_ok());
    }

    #[tokio::test]
    async fn the_queue_is_bounded_and_yields_retries_in_due_order() {
        let (queue, mut intake) = queue(2);
        let now = Instant::now();
        let at = |ms| now + Duration::from_millis(ms);
        assert_eq!(queue.push(RetryTicket { due: at(20), iteration: 1, attempt: 1, first_scheduled: at(0) }), Ok(()));
        assert_eq!(queue.push(RetryTicket { due: at(10), iteration: 2, attempt: 1, first_scheduled: at(0) }), Ok(()));
        assert_eq!(
            queue.push(RetryTicket { due: at(5), iteration: 3, attempt: 1, first_scheduled: at(0) }),
            Err(RetryRefused::Full)
        );
        assert_eq!(intake.next_due(), Some(at(10)));
        assert_eq!(intake.pop_due(at(9)), None, "not due yet");
        assert_eq!(intake.pop_due(at(30)).map(|r| r.iteration), Some(2));
        assert_eq!(
            queue.push(RetryTicket { due: at(5), iteration: 3, attempt: 1, first_scheduled: at(0) }),
            Ok(()),
            "room again"
        );
        assert_eq!(intake.drain(), 2);
        assert_eq!(
            queue.push(RetryTicket { due: at(5), iteration: 4, attempt: 1, first_scheduled: at(0) }),
            Err(RetryRefused::Closed)
        );
    }
}
