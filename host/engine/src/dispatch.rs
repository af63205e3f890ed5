//! The hand-off from the pacer to the crew: a stack of idle workers and, under `--overload queue`,
//! a bounded queue of tickets waiting for one.
//!
//! A due task goes to the worker that became idle most recently (LIFO). At a steady rate the same
//! few workers then take nearly every task and stay warm in the CPU's caches (a task handed round
//! the whole crew in turn touches every instance's memory, connection and stack), and a surplus
//! sits at the bottom of the stack, where [`Roster::retire_idle`] finds it. The drop policy's
//! question "is a worker free at this task's scheduled time?" is whether the stack is empty.
//!
//! With a gate (`--max-in-flight`), the drop policy also takes a gate permit at the scheduled time
//! and sends it along inside the ticket, so "no free permit" means dropped, exactly; under the
//! queue policy the worker waits for the permit itself.
//!
//! One mutex per event loop guards it all; only the event loop's own thread takes it, so it is uncontended.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Duration, Instant};

use crate::plan::Overload;

/// A due task on its way to a worker.
#[derive(Debug)]
pub(crate) struct Ticket {
    pub(crate) iteration: u64,
    pub(crate) attempt: u32,
    /// When the schedule said this attempt should start; its wait counts from here.
    pub(crate) scheduled: Instant,
    /// When the task's first attempt was scheduled; the task's latency counts from here.
    pub(crate) first_scheduled: Instant,
    /// The gate permit taken at the scheduled time (drop policy with a gate).
    pub(crate) permit: Option<OwnedSemaphorePermit>,
}

impl Ticket {
    /// A ticket for task `iteration`, first attempt, due at `scheduled`.
    pub(crate) fn new(iteration: u64, scheduled: Instant) -> Self {
        Self { iteration, attempt: 0, scheduled, first_scheduled: scheduled, permit: None }
    }

    /// A ticket for `retry`, given its slot at `now`.
    pub(crate) fn retry(retry: &crate::retry::RetryTicket, now: Instant) -> Self {
        let (iteration, attempt, first_scheduled) = (retry.iteration, retry.attempt, retry.first_scheduled);
        Self { iteration, attempt, scheduled: now, first_scheduled, permit: None }
    }
}

/// What became of a ticket the pacer offered.
#[derive(Debug)]
pub(crate) enum Offer {
    Released,
    /// No worker was free (drop policy): the ticket comes back, without a gate permit.
    Busy(Ticket),
    /// The gate had no permit (drop policy with `--max-in-flight`).
    GateFull,
    /// The queue is full (queue policy): wait for room.
    Full(Ticket),
    /// Every worker is gone.
    Closed,
}

/// What an idle worker was given.
#[derive(Debug)]
pub(crate) enum Taken {
    /// A task to run.
    Ticket(Ticket),
    /// The pacer is done and nothing is queued.
    Done,
    /// The worker has been idle too long: it is retired (already counted as such).
    Retire,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing here can be left half-updated by a panic in a way that matters more than going on.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where one worker waits: the ticket (or signal) handed to it, and how to wake it.
#[derive(Debug, Default)]
struct Seat {
    state: Mutex<SeatState>,
}

#[derive(Debug, Default)]
struct SeatState {
    ticket: Option<Ticket>,
    signal: Option<Signal>,
    waker: Option<Waker>,
}

#[derive(Debug, Clone, Copy)]
enum Signal {
    Done,
    Retire,
}

impl Seat {
    fn give(&self, ticket: Option<Ticket>, signal: Option<Signal>) {
        let waker = {
            let mut seat = lock(&self.state);
            seat.ticket = ticket.or(seat.ticket.take());
            seat.signal = signal.or(seat.signal);
            seat.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

#[derive(Debug)]
struct Hub {
    state: Mutex<State>,
    overload: Overload,
    /// The queue's bound (queue policy).
    capacity: usize,
    /// The gate, when the drop policy must check it at the scheduled time.
    gate: Option<Arc<Semaphore>>,
}

#[derive(Debug, Default)]
struct State {
    /// Idle workers, the most recently idle last, each with when it became idle.
    idle: Vec<(Arc<Seat>, Instant)>,
    /// Tickets waiting for a worker (queue policy).
    queue: VecDeque<Ticket>,
    /// The pacer is done: no more tickets will come.
    done: bool,
    /// Workers (intakes) alive.
    workers: usize,
    /// The pacer, waiting for room in the queue.
    pacer: Option<Waker>,
}

impl State {
    fn leave_idle(&mut self, seat: &Arc<Seat>) -> bool {
        match self.idle.iter().position(|(s, _)| Arc::ptr_eq(s, seat)) {
            Some(at) => {
                self.idle.remove(at);
                true
            }
            None => false,
        }
    }

    fn wake_pacer(&mut self) {
        if let Some(waker) = self.pacer.take() {
            waker.wake();
        }
    }
}

/// The pacer's end.
#[derive(Debug)]
pub(crate) struct Dispatch {
    hub: Arc<Hub>,
}

/// The event loop's view of its idle workers: intakes for new workers, retirement, and the end.
#[derive(Debug, Clone)]
pub(crate) struct Roster {
    hub: Arc<Hub>,
}

/// One worker's end.
#[derive(Debug)]
pub(crate) struct Intake {
    hub: Arc<Hub>,
    seat: Arc<Seat>,
}

/// A dispatch for a crew of up to `workers`, behind `gate` when there is one.
pub(crate) fn channel(workers: u32, overload: Overload, gate: Option<Arc<Semaphore>>) -> (Dispatch, Roster) {
    // Beyond this the pacer holds due tasks back (they keep their scheduled time), so a long
    // overload costs no memory per waiting task.
    let capacity = workers as usize * 2 + 64;
    let gate = if overload == Overload::Drop { gate } else { None };
    let hub = Arc::new(Hub { state: Mutex::default(), overload, capacity, gate });
    (Dispatch { hub: hub.clone() }, Roster { hub })
}

impl Dispatch {
    /// Hand `ticket` to a worker without waiting.
    pub(crate) fn offer(&self, mut ticket: Ticket) -> Offer {
        if let Some(gate) = &self.hub.gate {
            match gate.clone().try_acquire_owned() {
                Ok(permit) => ticket.permit = Some(permit),
                Err(_) => return Offer::GateFull,
            }
        }
        let mut hub = lock(&self.hub.state);
        if hub.workers == 0 {
            return Offer::Closed;
        }
        if let Some((seat, _)) = hub.idle.pop() {
            drop(hub);
            seat.give(Some(ticket), None);
            return Offer::Released;
        }
        match self.hub.overload {
            Overload::Drop => {
                ticket.permit = None;
                Offer::Busy(ticket)
            }
            Overload::Queue if hub.queue.len() < self.hub.capacity => {
                hub.queue.push_back(ticket);
                Offer::Released
            }
            Overload::Queue => Offer::Full(ticket),
        }
    }

    /// Wait for room and hand `ticket` over; `false` when every worker is gone.
    pub(crate) async fn send(&self, ticket: Ticket) -> bool {
        let mut ticket = Some(ticket);
        poll_fn(|cx| {
            let Some(t) = ticket.take() else { return Poll::Ready(false) };
            match self.offer(t) {
                Offer::Released => Poll::Ready(true),
                Offer::Closed => Poll::Ready(false),
                Offer::Full(t) | Offer::Busy(t) => {
                    let mut hub = lock(&self.hub.state);
                    // A worker may have taken from the queue or gone between the offer and now.
                    if hub.workers == 0 {
                        return Poll::Ready(false);
                    }
                    if hub.queue.len() < self.hub.capacity || !hub.idle.is_empty() {
                        drop(hub);
                        ticket = Some(t);
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    hub.pacer = Some(cx.waker().clone());
                    ticket = Some(t);
                    Poll::Pending
                }
                Offer::GateFull => Poll::Ready(false),
            }
        })
        .await
    }
}

impl Drop for Dispatch {
    /// The pacer is done: idle workers end (queued tickets still run first).
    fn drop(&mut self) {
        let seats: Vec<Arc<Seat>> = {
            let mut hub = lock(&self.hub.state);
            hub.done = true;
            hub.idle.drain(..).map(|(seat, _)| seat).collect()
        };
        for seat in seats {
            seat.give(None, Some(Signal::Done));
        }
    }
}

impl Roster {
    /// The end of one more worker.
    pub(crate) fn intake(&self) -> Intake {
        lock(&self.hub.state).workers += 1;
        Intake { hub: self.hub.clone(), seat: Arc::default() }
    }

    /// Retire workers idle since at least `window` before `now`, oldest first, each as long as
    /// `leave` agrees (it keeps the crew at its floor and counts the retirement). Returns how many.
    pub(crate) fn retire_idle(&self, now: Instant, window: Duration, mut leave: impl FnMut() -> bool) -> usize {
        let retiring: Vec<Arc<Seat>> = {
            let mut hub = lock(&self.hub.state);
            let mut retiring = Vec::new();
            let mut kept = Vec::with_capacity(hub.idle.len());
            for (seat, since) in hub.idle.drain(..) {
                if now.saturating_duration_since(since) >= window && leave() {
                    retiring.push(seat);
                } else {
                    kept.push((seat, since));
                }
            }
            hub.idle = kept;
            retiring
        };
        for seat in &retiring {
            seat.give(None, Some(Signal::Retire));
        }
        retiring.len()
    }

    /// Close the dispatch (the pacer's offers fail from now on) and take the tickets left in it.
    pub(crate) fn close_and_drain(&self) -> u64 {
        let mut hub = lock(&self.hub.state);
        hub.workers = 0;
        hub.done = true;
        let left = hub.queue.len() as u64;
        hub.queue.clear();
        hub.wake_pacer();
        left
    }
}

impl Intake {
    /// The end of a new peer of this worker (the crew grows).
    pub(crate) fn peer(&self) -> Intake {
        Roster { hub: self.hub.clone() }.intake()
    }

    /// Wait, as an idle worker, for a ticket, the end of the run, or retirement.
    pub(crate) async fn take(&self) -> Taken {
        {
            let mut hub = lock(&self.hub.state);
            if let Some(ticket) = hub.queue.pop_front() {
                hub.wake_pacer();
                return Taken::Ticket(ticket);
            }
            if hub.done {
                return Taken::Done;
            }
            hub.idle.push((self.seat.clone(), Instant::now()));
        }
        let mut waiting = Waiting { intake: self, armed: true };
        let taken = poll_fn(|cx| {
            let mut seat = lock(&self.seat.state);
            if let Some(ticket) = seat.ticket.take() {
                return Poll::Ready(Taken::Ticket(ticket));
            }
            match seat.signal.take() {
                Some(Signal::Done) => Poll::Ready(Taken::Done),
                Some(Signal::Retire) => Poll::Ready(Taken::Retire),
                None => {
                    if !seat.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        seat.waker = Some(cx.waker().clone());
                    }
                    Poll::Pending
                }
            }
        })
        .await;
        waiting.armed = false;
        taken
    }

    /// Leave the idle stack, handing back a ticket already delivered: the worker is going away
    /// (or stopped waiting) and must not be given one.
    fn stand_down(&self) {
        let mut hub = lock(&self.hub.state);
        hub.leave_idle(&self.seat);
        let ticket = lock(&self.seat.state).ticket.take();
        if let Some(ticket) = ticket {
            // Another worker takes it; at the end it is drained and counted.
            hub.queue.push_front(ticket);
        }
    }
}

/// While a worker waits: if its wait is dropped (the run cut its loop), it leaves the stack.
struct Waiting<'a> {
    intake: &'a Intake,
    armed: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.intake.stand_down();
        }
    }
}

impl Drop for Intake {
    fn drop(&mut self) {
        self.stand_down();
        let mut hub = lock(&self.hub.state);
        hub.workers = hub.workers.saturating_sub(1);
        if hub.workers == 0 {
            hub.wake_pacer();
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt as _;

    use super::*;

    fn ticket(iteration: u64) -> Ticket {
        Ticket::new(iteration, Instant::now())
    }

    fn iteration(taken: Taken) -> Option<u64> {
        match taken {
            Taken::Ticket(t) => Some(t.iteration),
            _ => None,
        }
    }

    #[tokio::test]
    async fn drop_policy_releases_only_to_idle_workers() {
        let (dispatch, roster) = channel(2, Overload::Drop, None);
        let intake = roster.intake();
        assert!(matches!(dispatch.offer(ticket(0)), Offer::Busy(t) if t.iteration == 0), "nobody is idle yet");
        let mut waiting = Box::pin(intake.take());
        assert!(waiting.as_mut().now_or_never().is_none(), "idle now");
        assert!(matches!(dispatch.offer(ticket(1)), Offer::Released));
        assert!(matches!(dispatch.offer(ticket(2)), Offer::Busy(_)), "the one idle worker is taken");
        assert_eq!(iteration(waiting.await), Some(1));
    }

    #[tokio::test]
    async fn the_most_recently_idle_worker_gets_the_next_task() {
        let (dispatch, roster) = channel(3, Overload::Drop, None);
        let (a, b) = (roster.intake(), roster.intake());
        let mut first = Box::pin(a.take());
        let mut second = Box::pin(b.take());
        assert!(first.as_mut().now_or_never().is_none());
        assert!(second.as_mut().now_or_never().is_none());
        assert!(matches!(dispatch.offer(ticket(7)), Offer::Released));
        assert_eq!(iteration(second.await), Some(7), "b went idle last, so b works");
        assert!(first.as_mut().now_or_never().is_none(), "a is still idle");
    }

    #[tokio::test]
    async fn queue_policy_fills_then_reports_full() {
        let (dispatch, roster) = channel(1, Overload::Queue, None);
        let _intake = roster.intake();
        let capacity = 2 + 64;
        for i in 0..capacity {
            assert!(matches!(dispatch.offer(ticket(i)), Offer::Released));
        }
        assert!(matches!(dispatch.offer(ticket(99)), Offer::Full(t) if t.iteration == 99));
        assert_eq!(roster.close_and_drain(), capacity);
    }

    #[tokio::test]
    async fn drop_policy_drops_when_the_gate_is_full_even_with_idle_workers() {
        let gate = Arc::new(Semaphore::new(1));
        let (dispatch, roster) = channel(4, Overload::Drop, Some(gate.clone()));
        let (a, b) = (roster.intake(), roster.intake());
        let mut first = Box::pin(a.take());
        let mut second = Box::pin(b.take());
        assert!(first.as_mut().now_or_never().is_none() && second.as_mut().now_or_never().is_none());
        assert!(matches!(dispatch.offer(ticket(0)), Offer::Released));
        assert!(matches!(dispatch.offer(ticket(1)), Offer::GateFull), "one permit, already taken");
        let Taken::Ticket(given) = second.await else { panic!("a ticket") };
        assert!(given.permit.is_some(), "the permit travels with the ticket");
        drop(given);
        assert!(matches!(dispatch.offer(ticket(2)), Offer::Released), "the permit came back");
    }

    #[tokio::test]
    async fn workers_idle_for_a_window_retire_oldest_first_while_allowed() {
        let (dispatch, roster) = channel(3, Overload::Drop, None);
        let intakes: Vec<Intake> = (0..3).map(|_| roster.intake()).collect();
        let mut waits: Vec<_> = intakes.iter().map(|i| Box::pin(i.take())).collect();
        for w in &mut waits {
            assert!(w.as_mut().now_or_never().is_none());
        }
        let later = Instant::now() + Duration::from_secs(2);
        let mut allowed = 1;
        let retired = roster.retire_idle(later, Duration::from_secs(1), || {
            allowed -= 1;
            allowed >= 0
        });
        assert_eq!(retired, 1, "the floor allowed one");
        assert!(matches!(waits.remove(0).await, Taken::Retire), "the oldest idle worker retires");
        assert!(matches!(dispatch.offer(ticket(5)), Offer::Released), "the others are still idle");
        assert_eq!(iteration(waits.pop().unwrap().await), Some(5));
    }

    #[tokio::test]
    async fn the_end_of_the_pacer_releases_idle_workers_and_a_dropped_wait_leaves_the_stack() {
        let (dispatch, roster) = channel(2, Overload::Drop, None);
        let (a, b) = (roster.intake(), roster.intake());
        {
            let mut abandoned = Box::pin(b.take());
            assert!(abandoned.as_mut().now_or_never().is_none());
        }
        let mut waiting = Box::pin(a.take());
        assert!(waiting.as_mut().now_or_never().is_none());
        assert!(matches!(dispatch.offer(ticket(1)), Offer::Released));
        assert!(matches!(dispatch.offer(ticket(2)), Offer::Busy(_)), "b left the stack when its wait was dropped");
        assert_eq!(iteration(waiting.await), Some(1));
        drop(dispatch);
        assert!(matches!(a.take().await, Taken::Done));
    }

    #[tokio::test]
    async fn closed_when_every_worker_is_gone() {
        let (dispatch, roster) = channel(1, Overload::Queue, None);
        drop(roster.intake());
        assert!(matches!(dispatch.offer(ticket(0)), Offer::Closed));
    }
}
