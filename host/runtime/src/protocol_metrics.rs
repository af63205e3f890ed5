//! The built-in WebSocket and gRPC metrics' names (the catalogue's), and how many connections an
//! instance may hold open.

pub use loadhost_metrics::catalogue::names::*;
pub use loadhost_metrics::protocol::STATUS_TAG;

/// The most WebSocket connections and gRPC streams one instance may have open at once: a plugin
/// that opens them in a loop and never closes them fails instead of exhausting the host.
pub const MAX_OPEN_PER_INSTANCE: u32 = 64;

/// An instance's open WebSocket connections and gRPC streams, against its cap:
/// [`MAX_OPEN_PER_INSTANCE`] for each worker it serves (one, but for an async plugin's shared
/// instance).
#[derive(Debug)]
pub(crate) struct Slots {
    open: u32,
    cap: u32,
}

impl Default for Slots {
    fn default() -> Self {
        Self { open: 0, cap: MAX_OPEN_PER_INSTANCE }
    }
}

impl Slots {
    /// The slots of an instance serving `workers` workers at once.
    pub(crate) fn for_workers(workers: u32) -> Self {
        Self { open: 0, cap: MAX_OPEN_PER_INSTANCE.saturating_mul(workers.max(1)) }
    }

    /// Take a slot, or say how many are open when none is left.
    pub(crate) fn take(&mut self) -> Result<(), u32> {
        if self.open >= self.cap {
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
    fn a_shared_instance_has_the_slots_of_every_worker_it_serves() {
        let mut slots = Slots::for_workers(3);
        for _ in 0..3 * MAX_OPEN_PER_INSTANCE {
            assert!(slots.take().is_ok());
        }
        assert_eq!(slots.take(), Err(3 * MAX_OPEN_PER_INSTANCE));
    }
}
