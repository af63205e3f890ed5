//! The hand-off from the pacer to the crew.
//!
//! Due tasks travel as [`Ticket`]s over one bounded multi-consumer channel. For the `drop` policy a
//! semaphore counts idle workers: a worker adds a permit just before it waits for a ticket, and the
//! pacer takes one per ticket it releases. So permits always equal idle workers minus tickets in
//! flight, and "is a worker free at this task's scheduled time?" is a single `try_acquire`.
//!
//! With a gate (`--max-in-flight`), the drop policy also takes a gate permit at the scheduled time
//! and sends it along inside the ticket, so "no free permit" means dropped, exactly; under the
//! queue policy the worker waits for the permit itself.

use std::sync::Arc;

use async_channel::{Receiver, Sender, TrySendError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::plan::Overload;

/// A due task on its way to a worker.
#[derive(Debug)]
pub(crate) struct Ticket {
    pub(crate) iteration: u64,
    pub(crate) attempt: u32,
    /// When the schedule said it should start; latency and wait count from here.
    pub(crate) scheduled: Instant,
    /// The gate permit taken at the scheduled time (drop policy with a gate).
    pub(crate) permit: Option<OwnedSemaphorePermit>,
}

impl Ticket {
    /// A ticket for task `iteration`, first attempt, due at `scheduled`.
    pub(crate) fn new(iteration: u64, scheduled: Instant) -> Self {
        Self { iteration, attempt: 0, scheduled, permit: None }
    }
}

/// What became of a ticket the pacer offered.
#[derive(Debug)]
pub(crate) enum Offer {
    Released,
    /// No worker was free (drop policy).
    Dropped,
    /// The gate had no permit (drop policy with `--max-in-flight`).
    GateFull,
    /// The queue is full (queue policy): wait for room.
    Full(Ticket),
    /// Every worker is gone.
    Closed,
}

/// The pacer's end.
#[derive(Debug)]
pub(crate) struct Dispatch {
    tx: Sender<Ticket>,
    idle: Option<Arc<Semaphore>>,
    /// The gate, when the drop policy must check it at the scheduled time.
    gate: Option<Arc<Semaphore>>,
}

/// A worker's end; clone one per worker.
#[derive(Debug, Clone)]
pub(crate) struct Intake {
    rx: Receiver<Ticket>,
    idle: Option<Arc<Semaphore>>,
}

/// A dispatch channel for a crew of up to `workers`, behind `gate` when there is one.
pub(crate) fn channel(workers: u32, overload: Overload, gate: Option<Arc<Semaphore>>) -> (Dispatch, Intake) {
    let workers = workers as usize;
    let (capacity, idle) = match overload {
        // Tickets in the channel never exceed idle workers, so this never fills.
        Overload::Drop => (workers + 1, Some(Arc::new(Semaphore::new(0)))),
        // Beyond this the pacer holds due tasks back (they keep their scheduled time), so a long
        // overload costs no memory per waiting task.
        Overload::Queue => (workers * 2 + 64, None),
    };
    let (tx, rx) = async_channel::bounded(capacity);
    let gate = if overload == Overload::Drop { gate } else { None };
    (Dispatch { tx, idle: idle.clone(), gate }, Intake { rx, idle })
}

impl Dispatch {
    /// Hand `ticket` to a worker without waiting.
    pub(crate) fn offer(&self, mut ticket: Ticket) -> Offer {
        if let Some(idle) = &self.idle {
            if let Some(gate) = &self.gate {
                match gate.clone().try_acquire_owned() {
                    Ok(permit) => ticket.permit = Some(permit),
                    Err(_) => return Offer::GateFull,
                }
            }
            let Ok(permit) = idle.try_acquire() else {
                return Offer::Dropped;
            };
            permit.forget();
            return match self.tx.try_send(ticket) {
                Ok(()) => Offer::Released,
                Err(TrySendError::Full(_)) => {
                    idle.add_permits(1);
                    Offer::Dropped
                }
                Err(TrySendError::Closed(_)) => Offer::Closed,
            };
        }
        match self.tx.try_send(ticket) {
            Ok(()) => Offer::Released,
            Err(TrySendError::Full(ticket)) => Offer::Full(ticket),
            Err(TrySendError::Closed(_)) => Offer::Closed,
        }
    }

    /// Wait for room and hand `ticket` over; `false` when every worker is gone.
    pub(crate) async fn send(&self, ticket: Ticket) -> bool {
        self.tx.send(ticket).await.is_ok()
    }

    /// [`Dispatch::send`] for a thread outside the async runtime.
    pub(crate) fn send_blocking(&self, ticket: Ticket) -> bool {
        self.tx.send_blocking(ticket).is_ok()
    }
}

/// Why a worker got no ticket.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NoTicket {
    /// Nothing is waiting now.
    Empty,
    /// The pacer is done and the channel is drained.
    Closed,
}

impl Intake {
    /// Announce one more idle worker (drop policy: one more permit for the pacer).
    pub(crate) fn ready(&self) {
        if let Some(idle) = &self.idle {
            idle.add_permits(1);
        }
    }

    /// Stop being idle without a ticket. `false` means a ticket is already on its way to the idle
    /// workers (the pacer took the permit), so this worker must stay and take it.
    pub(crate) fn withdraw(&self) -> bool {
        match &self.idle {
            Some(idle) => idle.try_acquire().map(|permit| permit.forget()).is_ok(),
            None => true,
        }
    }

    /// A ticket that is already waiting, without blocking.
    pub(crate) fn try_take(&self) -> Result<Ticket, NoTicket> {
        self.rx.try_recv().map_err(|err| if err.is_closed() { NoTicket::Closed } else { NoTicket::Empty })
    }

    /// Close the channel (the pacer's sends fail from now on) and take what is left in it.
    pub(crate) fn close_and_drain(&self) -> u64 {
        self.rx.close();
        let mut left = 0;
        while self.rx.try_recv().is_ok() {
            left += 1;
        }
        left
    }

    /// Wait for the next ticket; `None` once the pacer is done and the channel is empty.
    pub(crate) async fn take(&self) -> Option<Ticket> {
        self.rx.recv().await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(iteration: u64) -> Ticket {
        Ticket::new(iteration, Instant::now())
    }

    #[tokio::test]
    async fn drop_policy_releases_only_to_idle_workers() {
        let (dispatch, intake) = channel(2, Overload::Drop, None);
        assert!(matches!(dispatch.offer(ticket(0)), Offer::Dropped), "nobody is idle yet");
        let waiting = tokio::spawn({
            let intake = intake.clone();
            async move {
                intake.ready();
                intake.take().await
            }
        });
        tokio::task::yield_now().await;
        assert!(matches!(dispatch.offer(ticket(1)), Offer::Released));
        assert!(matches!(dispatch.offer(ticket(2)), Offer::Dropped), "the one idle worker is taken");
        assert_eq!(waiting.await.unwrap().map(|t| t.iteration), Some(1));
    }

    #[tokio::test]
    async fn queue_policy_fills_then_reports_full() {
        let (dispatch, _intake) = channel(1, Overload::Queue, None);
        let capacity = 2 + 64;
        for i in 0..capacity {
            assert!(matches!(dispatch.offer(ticket(i)), Offer::Released));
        }
        assert!(matches!(dispatch.offer(ticket(99)), Offer::Full(t) if t.iteration == 99));
    }

    #[tokio::test]
    async fn drop_policy_drops_when_the_gate_is_full_even_with_idle_workers() {
        let gate = Arc::new(Semaphore::new(1));
        let (dispatch, intake) = channel(4, Overload::Drop, Some(gate.clone()));
        intake.ready();
        intake.ready();
        assert!(matches!(dispatch.offer(ticket(0)), Offer::Released));
        assert!(matches!(dispatch.offer(ticket(1)), Offer::GateFull), "one permit, already taken");
        let first = intake.try_take().unwrap();
        assert!(first.permit.is_some(), "the permit travels with the ticket");
        drop(first);
        assert!(matches!(dispatch.offer(ticket(2)), Offer::Released), "the permit came back");
    }

    #[tokio::test]
    async fn a_withdrawn_worker_takes_its_permit_back_unless_a_ticket_is_coming() {
        let (dispatch, intake) = channel(2, Overload::Drop, None);
        intake.ready();
        assert!(intake.withdraw(), "nobody took the permit: leaving is safe");
        assert!(matches!(dispatch.offer(ticket(0)), Offer::Dropped), "the worker is gone");
        intake.ready();
        assert!(matches!(dispatch.offer(ticket(1)), Offer::Released));
        assert!(!intake.withdraw(), "a ticket is on its way: the worker must stay");
        assert_eq!(intake.try_take().map(|t| t.iteration), Ok(1));
        assert!(matches!(intake.try_take(), Err(NoTicket::Empty)));
        drop(dispatch);
        assert!(matches!(intake.try_take(), Err(NoTicket::Closed)));
    }

    #[tokio::test]
    async fn closed_when_every_worker_is_gone() {
        let (dispatch, intake) = channel(1, Overload::Queue, None);
        drop(intake);
        assert!(matches!(dispatch.offer(ticket(0)), Offer::Closed));
    }
}
