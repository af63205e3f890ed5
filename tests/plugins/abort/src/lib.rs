//! Aborts the run at iteration `ABORT_AT` (default 10); every other task passes.

use std::sync::OnceLock;

use loadhost_sdk::{Doer, Task, TaskResult, abort, config::env_or};

struct Abort;

fn abort_at() -> u64 {
    static AT: OnceLock<u64> = OnceLock::new();
    *AT.get_or_init(|| env_or("ABORT_AT", 10))
}

impl Doer for Abort {
    fn do_task(task: Task) -> TaskResult {
        if task.iteration == abort_at() {
            return Err(abort(format!("stopping at iteration {}", task.iteration)));
        }
        Ok(())
    }
}

loadhost_sdk::export!(Abort);
