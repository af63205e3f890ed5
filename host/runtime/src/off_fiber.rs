//! Host work polled off the wasm fiber.
//!
//! A host call runs on its instance's fiber, and so does every future it awaits: a request's
//! connection (hyper's state machines, TLS, the body) is polled on that fiber's stack, which then
//! touches 56 KiB per in-flight request where a task that only sleeps touches 8 (docs/runtime.md,
//! "Bytes per in-flight task"). With thousands of requests in flight that is megabytes of stacks,
//! each cold in the cache when its connection is next polled.
//!
//! [`Side`] moves that work out: a host call hands its future to the worker's side slot and awaits
//! only a small handle on the fiber; the worker's task ([`drive`]) polls the slot on the event
//! loop's own stack, the same few hot kilobytes for every worker of the loop, before it resumes the
//! fiber. Everything stays in the one task: no spawn, no wake-up from another task, and the work is
//! dropped with the call (a timeout, a stop) exactly as it was when it ran on the fiber.
//!
//! A synchronous component has one host call in progress at a time, so one slot per worker is
//! enough. A call made where no driver polls the slot (a lifecycle call) runs its work inline.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

/// Work handed out by a host call, polled by [`drive`].
trait Work: Send + Sync {
    /// Poll the work; `Ready` once its output is stored for the host call to take.
    fn poll_work(&self, cx: &mut Context<'_>) -> Poll<()>;
}

/// A future and, once it finished, its output: shared by the slot that polls it and the host call
/// that takes the output.
struct Cell<F: Future> {
    state: Mutex<State<F>>,
}

enum State<F: Future> {
    Running(Pin<Box<F>>),
    Done(F::Output),
    Taken,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl<F> Work for Cell<F>
where
    F: Future + Send,
    F::Output: Send,
{
    fn poll_work(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = lock(&self.state);
        let State::Running(future) = &mut *state else { return Poll::Ready(()) };
        match future.as_mut().poll(cx) {
            Poll::Ready(output) => {
                *state = State::Done(output);
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// One worker's side slot (see the module's documentation).
#[derive(Default)]
pub(crate) struct Side {
    slot: Mutex<Slot>,
}

#[derive(Default)]
struct Slot {
    /// A driver is polling the slot (the worker's task is inside `drive`).
    driven: bool,
    work: Option<Arc<dyn Work>>,
}

impl Side {
    /// Run `work` to its end: polled by the worker's task when it is driven, else inline. Dropping
    /// the returned future drops the work. The work is boxed at once, so the host call's own future
    /// (which wasmtime boxes, copying it) holds a pointer to it, not the work.
    pub(crate) fn run<F>(&self, work: F) -> impl Future<Output = F::Output> + Send + '_
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let work = Box::pin(work);
        let handed = {
            let mut slot = lock(&self.slot);
            if slot.driven {
                let cell = Arc::new(Cell { state: Mutex::new(State::Running(work)) });
                slot.work = Some(cell.clone());
                Ok((cell, Handed { side: self }))
            } else {
                Err(work)
            }
        };
        async move {
            let (cell, _handed) = match handed {
                Ok(handed) => handed,
                Err(work) => return work.await,
            };
            // No waker is registered here: the work registers the task's own (this future and the
            // work are polled by the same task), and `drive` resumes the fiber once the work is done.
            poll_fn(|_| {
                let mut state = lock(&cell.state);
                match std::mem::replace(&mut *state, State::Taken) {
                    State::Done(output) => Poll::Ready(output),
                    other => {
                        *state = other;
                        Poll::Pending
                    }
                }
            })
            .await
        }
    }

    /// Poll the work in the slot, if any: `Pending` while it runs; a finished one leaves the slot.
    fn poll_work(&self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(work) = lock(&self.slot).work.clone() else { return Poll::Ready(()) };
        if work.poll_work(cx).is_pending() {
            return Poll::Pending;
        }
        let mut slot = lock(&self.slot);
        if slot.work.as_ref().is_some_and(|w| Arc::ptr_eq(w, &work)) {
            slot.work = None;
        }
        Poll::Ready(())
    }

    /// Whether the slot holds work.
    fn has_work(&self) -> bool {
        lock(&self.slot).work.is_some()
    }
}

/// The host call's end of a piece of work: leaving the call, finished or not, empties the slot.
struct Handed<'a> {
    side: &'a Side,
}

impl Drop for Handed<'_> {
    fn drop(&mut self) {
        let work = { lock(&self.side.slot).work.take() };
        // Dropped outside the lock: the work's own drop may be long (a connection closing).
        drop(work);
    }
}

/// While a driver polls the slot: ends the driving, and drops work a cancelled call left.
struct Driving<'a> {
    side: &'a Side,
}

impl Drop for Driving<'_> {
    fn drop(&mut self) {
        let work = {
            let mut slot = lock(&self.side.slot);
            slot.driven = false;
            slot.work.take()
        };
        drop(work);
    }
}

/// Poll `call` (a call into the instance) with `side`'s work polled beside it, off the fiber.
pub(crate) async fn drive<C: Future>(side: &Side, call: C) -> C::Output {
    lock(&side.slot).driven = true;
    let _driving = Driving { side };
    let mut call = pin!(call);
    poll_fn(|cx| {
        loop {
            // While the host call's work runs, the fiber waits for nothing else: resuming it
            // would only find the work unfinished.
            if side.poll_work(cx).is_pending() {
                return Poll::Pending;
            }
            if let Poll::Ready(output) = call.as_mut().poll(cx) {
                return Poll::Ready(output);
            }
            // The call handed out work and suspended on it: poll the work now, so that it
            // registers the task's waker (or finishes at once) before the task sleeps.
            if !side.has_work() {
                return Poll::Pending;
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    /// Stands for a host call: a chain of works, each awaited through the side.
    async fn host_calls(side: &Side, n: usize) -> usize {
        let mut total = 0;
        for i in 0..n {
            total += side
                .run(async move {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    tokio::task::yield_now().await;
                    i
                })
                .await;
        }
        total
    }

    #[tokio::test(flavor = "current_thread")]
    async fn driven_work_runs_to_its_end_and_each_output_reaches_its_call() {
        let side = Side::default();
        assert_eq!(drive(&side, host_calls(&side, 10)).await, 45);
        // Work that is ready at once, too.
        let quick = drive(&side, async { side.run(async { 7 }).await + side.run(async { 8 }).await }).await;
        assert_eq!(quick, 15);
        assert!(lock(&side.slot).work.is_none() && !lock(&side.slot).driven);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn undriven_work_runs_inline() {
        let side = Side::default();
        assert_eq!(host_calls(&side, 3).await, 3);
    }

    struct CountsDrops(Arc<AtomicUsize>);
    impl Drop for CountsDrops {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_cancelled_call_drops_its_work() {
        let side = Side::default();
        let dropped = Arc::new(AtomicUsize::new(0));
        let guard = CountsDrops(dropped.clone());
        let call = side.run(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
        });
        let timed = tokio::time::timeout(Duration::from_millis(20), drive(&side, call)).await;
        assert!(timed.is_err(), "the work never ends: the call times out");
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "the work went with the call");
        assert!(lock(&side.slot).work.is_none() && !lock(&side.slot).driven);
    }
}
