//! A plugin that misbehaves on purpose, for the hostile-plugin suite. `MODE` picks the misdeed and
//! `EVERY=N` does it on every N-th task (default 1: every task); the other tasks pass.
//!
//! - `spin`: loop forever without waiting (stopped by `--task-timeout` via epoch interruption)
//! - `hang`: wait forever on a WASI clock (stopped by `--task-timeout`)
//! - `memory`: allocate and touch 1 MiB blocks until something stops it (`--max-memory`)
//! - `recurse`: recurse without end (the wasm stack limit)
//! - `panic`: panic, which traps
//! - `read-file`: read the file `FILE` (default `/etc/passwd`); fails with the error if it cannot
//! - `tags`: count `hostile_series` with a tag value no other task uses (the cardinality cap)
//! - `absurd`: record trends of ±1e300 and NaN and add u64::MAX to a counter, over 1,000 tag values
//!   (through the raw bindings: the SDK's `metrics::trend` refuses a NaN before the host sees it)
//! - `trap-init`: trap in the lifecycle's `init`, so no worker can start
//! - `echo-secret`: write the `-e SECRET` value everywhere a plugin can (stdout, stderr, a tag
//!   value and a tag key, a check's name, an endpoint's name when `TARGET_URL` is set, a path segment of its
//!   URL) and fail with it in the message: none of it may reach an output
//! - `huge-error`: fail with a 100 MiB message

use std::hint::black_box;

use loadhost_sdk::bindings::loadhost::plugin::metrics as raw_metrics;
use loadhost_sdk::config::env_or;
use loadhost_sdk::metrics::{check, counter};
use loadhost_sdk::{Doer, Lifecycle, Task, TaskResult, failed};

struct Hostile;

fn mode() -> String {
    env_or("MODE", String::new())
}

/// Recursion that lives on the wasm stack only (no locals in linear memory), so it runs into the
/// host's wasm stack limit; the rotation keeps the compiler from turning it into a loop.
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    if depth == u64::MAX {
        return 0;
    }
    recurse(depth + 1).rotate_left(1) ^ depth
}

impl Doer for Hostile {
    fn do_task(task: Task) -> TaskResult {
        let every: u64 = env_or("EVERY", 1).max(1);
        if !task.iteration.is_multiple_of(every) {
            return Ok(());
        }
        match mode().as_str() {
            "spin" => {
                let mut x = task.iteration;
                loop {
                    x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            }
            "hang" => std::thread::sleep(std::time::Duration::from_secs(u64::from(u32::MAX))),
            "memory" => {
                let mut blocks: Vec<Vec<u8>> = Vec::new();
                loop {
                    blocks.push(black_box(vec![1u8; 1 << 20]));
                }
            }
            "recurse" => {
                black_box(recurse(black_box(task.iteration)));
            }
            "panic" => panic!("task {} panics on purpose", task.iteration),
            "read-file" => {
                let path = env_or("FILE", "/etc/passwd".to_owned());
                std::fs::read(&path).map_err(|err| failed(format!("cannot read {path}: {err}")))?;
            }
            "tags" => counter("hostile_series", 1, &[("id", &task.iteration.to_string())]),
            "absurd" => {
                let tags = [("k".to_owned(), (task.iteration % 1000).to_string())];
                for value in [1e300, -1e300, f64::NAN] {
                    raw_metrics::trend("absurd", value, &tags);
                }
                raw_metrics::counter("huge", u64::MAX, &tags);
            }
            "echo-secret" => return echo_secret(),
            "huge-error" => return Err(failed("x".repeat(100 << 20))),
            _ => {}
        }
        Ok(())
    }
}

/// Say the secret in every way a plugin can; see `echo-secret` above.
fn echo_secret() -> TaskResult {
    let secret = env_or("SECRET", String::new());
    println!("stdout says {secret}");
    eprintln!("stderr says {secret}");
    counter("echoed", 1, &[("token", &secret)]);
    // As a tag key too: a key is the plugin's text as much as a value is.
    counter("echoed_key", 1, &[(&secret, "value")]);
    check(&format!("check named {secret}"), false, &[("token", &secret)]);
    let target = env_or("TARGET_URL", String::new());
    if !target.is_empty() {
        let _ = loadhost_sdk::http::get(&format!("{target}{secret}")).name(&format!("name {secret}")).send();
        let _ = loadhost_sdk::http::get(&format!("{target}{secret}")).send();
    }
    Err(failed(format!("SECRET={secret} was refused (the value {secret})")))
}

impl Lifecycle for Hostile {
    fn setup(_options: String) -> Result<String, String> {
        Ok(String::new())
    }

    fn init(worker_id: u32, _setup_data: String) -> Result<(), String> {
        if mode() == "trap-init" {
            panic!("init of worker {worker_id} traps on purpose");
        }
        Ok(())
    }

    fn teardown(_setup_data: String) -> Result<(), String> {
        Ok(())
    }
}

loadhost_sdk::export_with_lifecycle!(Hostile);
