//! What loadhost shows when a plugin goes wrong: the fixture of the host's output, panic and
//! errors-table tests, with twins in Python (`debugging-python`), JavaScript (`debugging-js`) and
//! C (`debugging-c`) that behave the same.
//!
//! Each task with iteration `i` prints `debug: starting iteration {i}` to stdout and
//! `note: worker {worker_id} on iteration {i}` to stderr, and records the trend `journey_ms`
//! (`10 * (i % 10)`) and the counter `orders` tagged `tier` (`bulk` when `i % 3 == 0`, else
//! `retail`), both declared; then: on iteration 3 it panics (an index out of bounds, so the task
//! traps); on `i % 5 == 1` it fails with `upstream said 503 for order {i}`; on `i % 5 == 2` with
//! `checkout timed out after {i} ms`; otherwise it passes.
//!
//! Settings: `PRINT_BYTES=N` also prints a line of N `x` to stdout per task (default 0);
//! `DELAY_MS=N` waits N ms before the outcome (default 0); `MODE=bad-metric` records a trend of
//! NaN, which the SDK refuses by panicking with the call's name.

use std::time::Duration;

use loadhost_sdk::{Doer, Task, TaskResult, failed, metrics};

struct Debugging;

loadhost_sdk::declare_metrics!("journey_ms:trend", "orders{tier}:counter");
loadhost_sdk::declare_options!(
    static OPTIONS =
        "PRINT_BYTES:int=0 'print a line of this many bytes in each task'",
        "MODE:string 'bad-metric: record a trend that is not a number in each task'",
        "DELAY_MS:int=0 'wait this many milliseconds in each task'",
);

impl Doer for Debugging {
    fn do_task(task: Task) -> TaskResult {
        let i = task.iteration;
        println!("debug: starting iteration {i}");
        eprintln!("note: worker {} on iteration {i}", task.worker_id);
        let bytes: usize = OPTIONS.get("PRINT_BYTES");
        if bytes > 0 {
            println!("{}", "x".repeat(bytes));
        }
        metrics::trend("journey_ms", (10 * (i % 10)) as f64, &[]);
        metrics::counter("orders", 1, &[("tier", if i.is_multiple_of(3) { "bulk" } else { "retail" })]);
        if OPTIONS.get::<Option<String>>("MODE").as_deref() == Some("bad-metric") {
            metrics::trend("t", f64::NAN, &[]); // the bad metric
        }
        let delay: u64 = OPTIONS.get("DELAY_MS");
        if delay > 0 {
            std::thread::sleep(Duration::from_millis(delay));
        }
        if i == 3 {
            // A bug, not a returned error: the panic traps the task.
            let orders: Vec<u8> = Vec::new();
            let first = orders[i as usize]; // the bug
            return if first > 0 { Ok(()) } else { Err(failed("no items")) };
        }
        match i % 5 {
            1 => Err(failed(format!("upstream said 503 for order {i}"))),
            2 => Err(failed(format!("checkout timed out after {i} ms"))),
            _ => Ok(()),
        }
    }
}

loadhost_sdk::export!(Debugging);
