//! Each task waits `SLEEP_MS` milliseconds (default 10), like a call to a slow dependency.
//!
//! `std::thread::sleep` on wasm32-wasip2 subscribes to `wasi:clocks/monotonic-clock` and blocks on
//! the pollable, so the host awaits a timer: no busy loop, and a sleeping worker costs no CPU.

use std::sync::OnceLock;
use std::time::Duration;

use loadhost_sdk::{Doer, Task, TaskResult};

struct Sleep;

loadhost_sdk::declare_options!(static OPTIONS = "SLEEP_MS:int=10 'how long each task waits, in milliseconds'");

fn pause() -> Duration {
    static PAUSE: OnceLock<Duration> = OnceLock::new();
    *PAUSE.get_or_init(|| Duration::from_millis(OPTIONS.get("SLEEP_MS")))
}

impl Doer for Sleep {
    fn do_task(_task: Task) -> TaskResult {
        std::thread::sleep(pause());
        Ok(())
    }
}

loadhost_sdk::export!(Sleep);
