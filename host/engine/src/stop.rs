//! The run's stop state, read on every task (an atomic load) and awaited by the pacer.

use std::pin::pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};

use tokio::sync::Notify;

const RUNNING: u8 = 0;
const GENERATION_ENDED: u8 = 1;
const ABORTED: u8 = 2;

/// Running → generation ended (no new tasks; the ones under way finish) or aborted (tasks not yet
/// started end as `interrupted`).
#[derive(Debug, Default)]
pub(crate) struct Stop {
    state: AtomicU8,
    notify: Notify,
    reason: Mutex<Option<String>>,
    /// The stop came from the user (a signal, the control API), not from the plugin.
    by_user: std::sync::atomic::AtomicBool,
    /// The grace after an abort is over: every event loop drops its worker loops.
    cut: std::sync::atomic::AtomicBool,
    /// Every event loop has ended: their runtimes may go.
    over: std::sync::atomic::AtomicBool,
    /// When new tasks stopped starting (generation ended, or the run was aborted).
    ended_at: std::sync::OnceLock<tokio::time::Instant>,
}

impl Stop {
    /// No new tasks should start (the closed model's deadline).
    pub(crate) fn end_generation(&self) {
        let _ = self.ended_at.set(tokio::time::Instant::now());
        let _ = self.state.compare_exchange(RUNNING, GENERATION_ENDED, Ordering::AcqRel, Ordering::Acquire);
        self.notify.notify_waiters();
    }

    /// When new tasks stopped starting; `None` while they still may.
    pub(crate) fn generation_ended_at(&self) -> Option<tokio::time::Instant> {
        if self.generating() { None } else { self.ended_at.get().copied() }
    }

    /// Resolve once no new task may start.
    pub(crate) async fn generation_ended(&self) {
        self.until(|stop| !stop.generating()).await;
    }

    /// Stop the run now; the first reason given is kept.
    pub(crate) fn abort(&self, reason: String) {
        let _ = self.ended_at.set(tokio::time::Instant::now());
        if self.state.swap(ABORTED, Ordering::AcqRel) != ABORTED {
            *self.reason.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason);
        }
        self.notify.notify_waiters();
    }

    /// Stop because the user asked: like an abort, but reported as the user's.
    pub(crate) fn stop_by_user(&self, reason: &str) {
        if !self.is_aborted() {
            self.by_user.store(true, Ordering::Release);
            self.abort(reason.to_owned());
        }
    }

    /// Whether the user stopped the run.
    pub(crate) fn by_user(&self) -> bool {
        self.by_user.load(Ordering::Acquire)
    }

    /// Whether new tasks may still start.
    pub(crate) fn generating(&self) -> bool {
        self.state.load(Ordering::Acquire) == RUNNING
    }

    /// Whether the run was aborted.
    pub(crate) fn is_aborted(&self) -> bool {
        self.state.load(Ordering::Acquire) == ABORTED
    }

    /// The abort reason, if the run was aborted.
    pub(crate) fn reason(&self) -> Option<String> {
        self.reason.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The grace is over: tasks still under way are to be dropped (and end as interrupted).
    pub(crate) fn cut(&self) {
        self.cut.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Resolve once `reached` holds: it is checked after each change of state.
    async fn until(&self, reached: impl Fn(&Self) -> bool) {
        loop {
            let mut notified = pin!(self.notify.notified());
            // Register before checking, so a change between the check and the await is not missed.
            notified.as_mut().enable();
            if reached(self) {
                return;
            }
            notified.await;
        }
    }

    /// Resolve once the grace is over ([`Stop::cut`]).
    pub(crate) async fn cutting(&self) {
        self.until(|stop| stop.cut.load(Ordering::Acquire)).await;
    }

    /// Every event loop has ended.
    pub(crate) fn all_over(&self) {
        self.over.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Resolve once every event loop has ended ([`Stop::all_over`]). An event loop that ends
    /// early keeps its runtime going until then: connections it opened may serve other loops.
    pub(crate) async fn over(&self) {
        self.until(|stop| stop.over.load(Ordering::Acquire)).await;
    }

    /// Resolve once the run is aborted.
    pub(crate) async fn aborted(&self) {
        self.until(Stop::is_aborted).await;
    }
}

/// A stop asked for from outside the run, such as Ctrl-C or SIGTERM. The first request stops the
/// run gracefully (tasks under way get the plan's grace to finish); the second cuts the grace short.
#[derive(Debug, Default)]
pub struct Interrupt {
    requests: std::sync::atomic::AtomicU32,
    notify: Notify,
    reason: Mutex<Option<String>>,
}

impl Interrupt {
    /// No request yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ask the run to stop; returns how many times it has now been asked.
    pub fn request(&self) -> u32 {
        let n = self.requests.fetch_add(1, Ordering::AcqRel).saturating_add(1);
        self.notify.notify_waiters();
        n
    }

    /// Ask the run to stop for `reason` (a failed threshold), which the report's `stopped` then
    /// says instead of a signal; the first reason given is kept.
    pub fn request_because(&self, reason: String) -> u32 {
        self.reason.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(reason);
        self.request()
    }

    /// Why the stop was asked for, when the asker said.
    pub fn reason(&self) -> Option<String> {
        self.reason.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// How many times a stop has been asked for.
    pub fn requests(&self) -> u32 {
        self.requests.load(Ordering::Acquire)
    }

    /// Resolve with the number of requests once it differs from `seen`.
    pub(crate) async fn changed(&self, seen: u32) -> u32 {
        loop {
            let mut notified = pin!(self.notify.notified());
            notified.as_mut().enable();
            let now = self.requests();
            if now != seen {
                return now;
            }
            notified.await;
        }
    }
}
