//! Connections the generator could not open for want of its own resources: no local port left
//! (`EADDRNOTAVAIL`: the ephemeral ports are exhausted) or no file descriptor (`EMFILE`, `ENFILE`).
//! These are the generator's failures, not the target's. The runtime counts them where it opens a
//! TCP connection (a relaxed add on the failure path only); the engine's health sampler reads the
//! totals once per interval and puts the difference on the interval's row.
//!
//! The counts are the process's ([`EXHAUSTED`]): ports and descriptors are the process's, shared by
//! every scenario and worker, as the generator's other health figures are.

use std::sync::atomic::{AtomicU64, Ordering};

/// Which resource a connection found exhausted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exhausted {
    /// No local port left (`EADDRNOTAVAIL`).
    Ports,
    /// No file descriptor left (`EMFILE`: the process's `RLIMIT_NOFILE`; `ENFILE`: the system's).
    Fds,
}

/// Connections not opened for want of a resource, counted since the process started.
#[derive(Debug, Default)]
pub struct ExhaustedCounts {
    ports: AtomicU64,
    fds: AtomicU64,
}

/// The totals at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExhaustedTotals {
    /// For want of a local port.
    pub ports: u64,
    /// For want of a file descriptor.
    pub fds: u64,
}

/// The process's counts.
pub static EXHAUSTED: ExhaustedCounts = ExhaustedCounts::new();

impl ExhaustedCounts {
    /// No connection failed yet.
    pub const fn new() -> Self {
        Self { ports: AtomicU64::new(0), fds: AtomicU64::new(0) }
    }

    /// Count one connection that found `what` exhausted.
    pub fn count(&self, what: Exhausted) {
        let counter = match what {
            Exhausted::Ports => &self.ports,
            Exhausted::Fds => &self.fds,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The totals so far.
    pub fn totals(&self) -> ExhaustedTotals {
        ExhaustedTotals { ports: self.ports.load(Ordering::Relaxed), fds: self.fds.load(Ordering::Relaxed) }
    }
}

impl ExhaustedTotals {
    /// What was counted since `before`.
    pub fn since(self, before: Self) -> Self {
        Self { ports: self.ports.saturating_sub(before.ports), fds: self.fds.saturating_sub(before.fds) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_resource_counts_apart_and_differences_are_per_span() {
        let counts = ExhaustedCounts::new();
        counts.count(Exhausted::Fds);
        let before = counts.totals();
        counts.count(Exhausted::Fds);
        counts.count(Exhausted::Ports);
        counts.count(Exhausted::Fds);
        assert_eq!(counts.totals(), ExhaustedTotals { ports: 1, fds: 3 });
        assert_eq!(counts.totals().since(before), ExhaustedTotals { ports: 1, fds: 2 });
    }
}
