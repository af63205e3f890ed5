//! Capacity searches (`loadhost find-max`). They saturate the machine on purpose, so they live in
//! their own test binary (cargo runs test binaries one after another) and take turns.

#![allow(clippy::unwrap_used, reason = "a test helper that cannot set up must fail loudly")]

#[path = "../e2e/cgroup.rs"]
#[allow(dead_code, reason = "shared with the e2e suite, which uses all of it")]
mod cgroup;
#[path = "../e2e/common.rs"]
#[allow(dead_code, reason = "shared with the e2e suite, which uses all of it")]
mod common;
mod find_max;
#[path = "../e2e/guests.rs"]
#[allow(dead_code, reason = "the e2e suite's plugin names, of which the searches run a few")]
mod guests;
#[path = "../e2e/target_process.rs"]
#[allow(dead_code, reason = "shared with the e2e suite, which uses all of it")]
mod target_process;

/// One search at a time: each measures the machine.
pub static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
