//! Traps on every `TRAP_EVERY`-th task (default 10): iterations 9, 19, 29, … with the default.
//! The host must discard the trapped instance, count the task as `trapped` and carry on.

use std::sync::OnceLock;

use loadhost_sdk::{Doer, Task, TaskResult};

struct Trap;

loadhost_sdk::declare_options!(static OPTIONS = "TRAP_EVERY:int=10 'trap on every Nth task'");

fn every() -> u64 {
    static EVERY: OnceLock<u64> = OnceLock::new();
    *EVERY.get_or_init(|| OPTIONS.get::<u64>("TRAP_EVERY").max(1))
}

impl Doer for Trap {
    fn do_task(task: Task) -> TaskResult {
        if task.iteration % every() == every() - 1 {
            // A real trap, not a returned error: the instance is unusable afterwards.
            core::arch::wasm32::unreachable();
        }
        Ok(())
    }
}

loadhost_sdk::export!(Trap);
