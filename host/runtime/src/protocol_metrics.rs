//! The built-in WebSocket and gRPC metrics' names (the catalogue's), and how many connections an
//! instance may hold open.

pub use loadhost_metrics::catalogue::names::*;
pub use loadhost_metrics::protocol::STATUS_TAG;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// The most WebSocket connections and gRPC streams one instance may have open at once: a plugin
/// that opens them in a loop and never closes them fails instead of exhausting the host.
pub const MAX_OPEN_PER_INSTANCE: u32 = 64;

/// An instance's open WebSocket connections, gRPC streams and concurrent HTTP requests, against
/// its cap: [`MAX_OPEN_PER_INSTANCE`] for each worker it serves (one, but for an async plugin's
/// shared instance, where it is the workers attached *now*: sized for the 1,000 an instance may
/// serve, one task of a lone worker could open 64,000 and take every descriptor of the process).
#[derive(Debug)]
pub(crate) struct Slots {
    open: u32,
    workers: Workers,
}

#[derive(Debug)]
enum Workers {
    /// A worker's own instance.
    One,
    /// A shared instance: the count of workers attached to it, kept by the instance.
    Attached(Arc<AtomicU32>),
}

impl Default for Slots {
    fn default() -> Self {
        Self { open: 0, workers: Workers::One }
    }
}

impl Slots {
    /// The slots of a shared instance, [`MAX_OPEN_PER_INSTANCE`] for each of the workers
    /// `attached` counts at the time a slot is taken.
    pub(crate) fn for_attached(attached: Arc<AtomicU32>) -> Self {
        Self { open: 0, workers: Workers::Attached(attached) }
    }

    fn cap(&self) -> u32 {
        let workers = match &self.workers {
            Workers::One => 1,
            Workers::Attached(n) => n.load(Ordering::Relaxed).max(1),
        };
        MAX_OPEN_PER_INSTANCE.saturating_mul(workers)
    }

    /// Take a slot, or say how many are open when none is left.
    pub(crate) fn take(&mut self) -> Result<(), u32> {
        if self.open >= self.cap() {
            return Err(self.open);
        }
        self.open += 1;
        Ok(())
    }

    /// Give a slot back (a session or a stream ended).
    pub(crate) fn give_back(&mut self) {
        self.open = self.open.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_refused_past_the_cap_and_freed() {
        let mut slots = Slots::default();
        for _ in 0..MAX_OPEN_PER_INSTANCE {
            assert!(slots.take().is_ok());
        }
        assert_eq!(slots.take(), Err(MAX_OPEN_PER_INSTANCE));
        slots.give_back();
        assert!(slots.take().is_ok());
    }

    #[test]
    fn a_shared_instance_has_the_slots_of_the_workers_attached_now() {
        let attached = Arc::new(AtomicU32::new(3));
        let mut slots = Slots::for_attached(attached.clone());
        for _ in 0..3 * MAX_OPEN_PER_INSTANCE {
            assert!(slots.take().is_ok());
        }
        assert_eq!(slots.take(), Err(3 * MAX_OPEN_PER_INSTANCE));
        // Workers leave: what is open stays, but nothing more until it is under the new cap.
        attached.store(1, Ordering::Relaxed);
        for _ in 0..2 * MAX_OPEN_PER_INSTANCE {
            assert!(slots.take().is_err());
            slots.give_back();
        }
        assert!(slots.take().is_err(), "{} open, the cap of one worker", MAX_OPEN_PER_INSTANCE);
        slots.give_back();
        assert!(slots.take().is_ok());
        // None attached (the last one leaving) still leaves one worker's slots.
        attached.store(0, Ordering::Relaxed);
        assert!(slots.take().is_err());
    }
}
