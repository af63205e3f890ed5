//! Each task awaits `SLEEP_MS` milliseconds (default 10) with `loadhost_sdk::sleep`: the async twin
//! of `sleep`, where a sleeping task holds no instance, so one instance keeps many in flight.
//!
//! Two fault modes, for the host's tests of what one task does to the others of its instance:
//! the task whose `iteration` is `TRAP_ON` panics after its sleep (a trap: every task of the
//! instance shares its fate), and the one whose `iteration` is `SPIN_ON` spins for ever after its
//! sleep (a runaway task, which only the host's timeout stops). Both are -1, never, by default.

use std::sync::OnceLock;
use std::time::Duration;

use loadhost_sdk::{AsyncDoer, Task, TaskResult};

struct SleepAsync;

loadhost_sdk::declare_options!(
    static OPTIONS =
        "SLEEP_MS:int=10 'how long each task waits, in milliseconds'",
        "TRAP_ON:int=-1 'the iteration whose task panics after its sleep (-1: none)'",
        "SPIN_ON:int=-1 'the iteration whose task spins for ever after its sleep (-1: none)'",
);

fn pause() -> Duration {
    static PAUSE: OnceLock<Duration> = OnceLock::new();
    *PAUSE.get_or_init(|| Duration::from_millis(OPTIONS.get("SLEEP_MS")))
}

/// The iteration an option names, or `None` for a negative value (never).
fn iteration_of(name: &str) -> Option<u64> {
    u64::try_from(OPTIONS.get::<i64>(name)).ok()
}

fn trap_on() -> Option<u64> {
    static TRAP_ON: OnceLock<Option<u64>> = OnceLock::new();
    *TRAP_ON.get_or_init(|| iteration_of("TRAP_ON"))
}

fn spin_on() -> Option<u64> {
    static SPIN_ON: OnceLock<Option<u64>> = OnceLock::new();
    *SPIN_ON.get_or_init(|| iteration_of("SPIN_ON"))
}

impl AsyncDoer for SleepAsync {
    async fn do_task(task: Task) -> TaskResult {
        loadhost_sdk::sleep(pause()).await;
        if trap_on() == Some(task.iteration) {
            panic!("TRAP_ON={}: this task traps after its sleep", task.iteration);
        }
        if spin_on() == Some(task.iteration) {
            // Never yields: the instance's other tasks wait until the host gives up on it.
            let mut turns = 0_u64;
            loop {
                turns = std::hint::black_box(turns.wrapping_add(1));
            }
        }
        Ok(())
    }
}

loadhost_sdk::export_async!(SleepAsync);
