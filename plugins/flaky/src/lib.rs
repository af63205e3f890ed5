//! Fails `FAIL_PCT` percent of tasks as retryable and `FATAL_PCT` percent as failed (defaults 0).
//!
//! Which tasks fail is a hash of (iteration, attempt), not a random draw: runs are reproducible, and
//! each retry of a task gets a fresh, independent chance, as a real flaky dependency would.

use std::sync::OnceLock;

use loadhost_sdk::{Doer, Task, TaskResult, failed, retryable};

struct Flaky;

loadhost_sdk::declare_options!(
    static OPTIONS =
        "FAIL_PCT:int=0 'percent of tasks that fail as retryable'",
        "FATAL_PCT:int=0 'percent of tasks that fail for good'",
);

struct Odds {
    fail_pct: u64,
    fatal_pct: u64,
}

fn odds() -> &'static Odds {
    static ODDS: OnceLock<Odds> = OnceLock::new();
    ODDS.get_or_init(|| Odds { fail_pct: OPTIONS.get("FAIL_PCT"), fatal_pct: OPTIONS.get("FATAL_PCT") })
}

/// SplitMix64's finaliser: consecutive inputs give uniformly spread outputs.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Doer for Flaky {
    fn do_task(task: Task) -> TaskResult {
        let odds = odds();
        let roll = mix(task.iteration ^ mix(u64::from(task.attempt))) % 100;
        if roll < odds.fatal_pct {
            Err(failed(format!("iteration {} failed for good", task.iteration)))
        } else if roll < odds.fatal_pct + odds.fail_pct {
            Err(retryable(format!("iteration {} attempt {} failed", task.iteration, task.attempt)))
        } else {
            Ok(())
        }
    }
}

loadhost_sdk::export!(Flaky);
