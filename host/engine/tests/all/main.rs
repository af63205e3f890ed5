//! Engine tests: fake workers, paused tokio time, so every schedule is exact and fast.

#![allow(clippy::unwrap_used, reason = "a test helper that cannot set up must fail loudly")]

mod arrivals;
mod closed_model;
mod control;
mod crew;
mod event_loops;
mod fake;
mod gate;
mod lifecycle;
mod open_model;
mod outcomes;
mod overrun;
mod periodic;
mod retries;
mod scenarios;
mod segments;
mod spacing;
mod stopping;
mod thread_clock;
