//! Burns CPU: each task runs `BURN_ITERS` rounds of a hash (default 200,000, about a millisecond),
//! so a capacity search finds the host, not a target, as the limit.

use std::sync::OnceLock;

use loadhost_sdk::{Doer, Task, TaskResult, config::env_or, failed};

struct Burn;

fn iterations() -> u64 {
    static N: OnceLock<u64> = OnceLock::new();
    *N.get_or_init(|| env_or("BURN_ITERS", 200_000))
}

impl Doer for Burn {
    fn do_task(task: Task) -> TaskResult {
        let mut x = task.iteration | 1;
        for _ in 0..iterations() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        // Keep the result observable so the loop is not optimised away.
        if x == 0 { Err(failed("impossible")) } else { Ok(()) }
    }
}

loadhost_sdk::export!(Burn);
