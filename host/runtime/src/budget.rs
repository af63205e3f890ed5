//! An instance's byte budget: what the host holds on a plugin instance's behalf — WebSocket
//! messages being read or kept for `receive`, gRPC messages on their way in or out, bodies the
//! one-call HTTP path reads whole — is counted here, and refused past the budget.
//!
//! The budget is `--max-memory`, the cap of the instance's own linear memory: whatever a plugin
//! asks of the host, one instance costs at most twice `--max-memory` (see docs/runtime.md, Limits).
//! Bytes are counted where the host accepts them (a frame's header, a body's data), before it
//! holds them, and given back when whoever holds them lets go ([`Held`] is a guard), so a count
//! can neither leak nor go stale.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::{Buf, Bytes};
use thiserror::Error;

use crate::limits::mib;

/// One instance's budget, shared by everything that holds bytes for it (a gRPC stream's task
/// among them).
#[derive(Debug, Clone)]
pub(crate) struct ByteBudget(Arc<Counter>);

#[derive(Debug)]
struct Counter {
    limit: usize,
    held: AtomicUsize,
}

/// Holding `wanted` more bytes would pass the budget.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[error(
    "byte budget: the host holds {} for this plugin instance and {} more would pass its budget of {} (--max-memory)",
    mib(*.held), mib(*.wanted), mib(*.limit)
)]
pub struct OverBudget {
    /// Bytes held already.
    pub held: usize,
    /// Bytes asked for.
    pub wanted: usize,
    /// The budget.
    pub limit: usize,
}

impl ByteBudget {
    /// A budget of `limit` bytes, none held.
    pub(crate) fn new(limit: usize) -> Self {
        Self(Arc::new(Counter { limit, held: AtomicUsize::new(0) }))
    }

    /// Hold `bytes` more, or say why not.
    pub(crate) fn hold(&self, bytes: usize) -> Result<Held, OverBudget> {
        let mut held = self.none();
        held.grow(bytes)?;
        Ok(held)
    }

    /// A guard holding nothing yet, to [`Held::grow`].
    pub(crate) fn none(&self) -> Held {
        Held { budget: self.clone(), bytes: 0 }
    }

    /// Bytes held now, all holders together.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.0.held.load(Ordering::Acquire)
    }
}

/// Bytes held against a budget, given back when the guard drops.
#[derive(Debug)]
pub(crate) struct Held {
    budget: ByteBudget,
    bytes: usize,
}

impl Held {
    /// Hold `bytes` more; nothing changes when that would pass the budget.
    pub(crate) fn grow(&mut self, bytes: usize) -> Result<(), OverBudget> {
        let counter = &self.budget.0;
        counter
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|total| *total <= counter.limit)
            })
            .map_err(|held| OverBudget { held, wanted: bytes, limit: counter.limit })?;
        self.bytes += bytes;
        Ok(())
    }

    /// Move `bytes` of what this guard holds (all of it, if it holds less) to a new guard: the
    /// holder of a part that goes elsewhere.
    pub(crate) fn split(&mut self, bytes: usize) -> Held {
        let moved = bytes.min(self.bytes);
        self.bytes -= moved;
        Held { budget: self.budget.clone(), bytes: moved }
    }

    /// Bytes this guard holds.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.budget.0.held.fetch_sub(self.bytes, Ordering::AcqRel);
        }
    }
}

/// Bytes with their guard: they count against the budget until the last holder drops them
/// (a request body's data as HTTP/2 writes it out, a message waiting for the plugin).
#[derive(Debug)]
pub(crate) struct HeldBytes {
    bytes: Bytes,
    _held: Held,
}

impl HeldBytes {
    /// `bytes`, counted by `held`.
    pub(crate) fn new(bytes: Bytes, held: Held) -> Self {
        Self { bytes, _held: held }
    }

    /// Hold `bytes` against `budget`.
    pub(crate) fn hold(budget: &ByteBudget, bytes: Bytes) -> Result<Self, OverBudget> {
        let held = budget.hold(bytes.len())?;
        Ok(Self::new(bytes, held))
    }

    /// The bytes (still counted until `self` drops).
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl Buf for HeldBytes {
    fn remaining(&self) -> usize {
        self.bytes.remaining()
    }

    fn chunk(&self) -> &[u8] {
        self.bytes.chunk()
    }

    fn advance(&mut self, cnt: usize) {
        self.bytes.advance(cnt);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn bytes_are_refused_past_the_budget_and_given_back_when_dropped() {
        let budget = ByteBudget::new(100);
        let mut a = budget.hold(60).unwrap();
        let err = budget.hold(41).unwrap_err();
        assert_eq!(err, OverBudget { held: 60, wanted: 41, limit: 100 });
        assert!(err.to_string().contains("(--max-memory)"), "{err}");
        assert_eq!(budget.held(), 60, "a refusal holds nothing");
        let b = budget.hold(40).unwrap();
        assert!(a.grow(1).is_err());
        drop(b);
        a.grow(40).unwrap();
        assert_eq!((a.bytes(), budget.held()), (100, 100));
        drop(a);
        assert_eq!(budget.held(), 0);
        assert!(budget.hold(usize::MAX).is_err(), "no overflow");
    }

    #[test]
    fn a_split_part_is_given_back_by_its_own_holder() {
        let budget = ByteBudget::new(100);
        let mut whole = budget.hold(70).unwrap();
        let part = whole.split(30);
        assert_eq!((whole.bytes(), part.bytes()), (40, 30));
        let more = whole.split(1000);
        assert_eq!((whole.bytes(), more.bytes()), (0, 40), "at most what it holds");
        drop(whole);
        assert_eq!(budget.held(), 70);
        let bytes = HeldBytes::new(Bytes::from_static(b"abc"), part);
        drop(more);
        assert_eq!(budget.held(), 30);
        assert_eq!(bytes.chunk(), b"abc");
        drop(bytes);
        assert_eq!(budget.held(), 0);
    }
}
