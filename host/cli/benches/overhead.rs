//! What the host costs per task, measured on the `loadhost` process as a user runs it:
//! 1. the bare wasmtime call of the `noop` plugin (one instance, `call_async` in a loop), in this
//!    process, as the floor;
//! 2. `loadhost run noop.wasm`, closed model, 1 and 2 workers: tasks per second;
//! 3. `loadhost run noop.wasm -r R` (open model) at 2k, 5k, 20k and 50k tasks/s over 100 workers,
//!    and at 20k over 4: achieved rate, drops, wait p99, and the process's CPU per task (user + sys
//!    from `wait4`, as `/usr/bin/time` reports it);
//! 4. peak resident memory (`ru_maxrss`) of a run with 1 worker and with 1,000 and 10,000 idle
//!    workers, and what each extra worker costs.
//!
//! Everything is a no-op task, bounded in time; figures print as a table.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use loadhost_engine::{Task, Worker, WorkerContext, WorkerFactory};
use loadhost_metrics::Recorder;
use loadhost_runtime::{Grants, Runtime, RuntimeOptions, WasmWorkerFactory};
use loadhost_test_guests::Example;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn noop_path() -> PathBuf {
    let path = root().join("target/plugins").join(format!("{}.wasm", Example::Noop.name()));
    assert!(path.is_file(), "{} is missing: run `cargo xtask plugins` first", path.display());
    path
}

/// The `loadhost` binary cargo built next to this bench.
fn loadhost() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from);
    let bin = target.join("release/loadhost");
    assert!(bin.is_file(), "{} is missing: run `cargo build --release -p loadhost` first", bin.display());
    bin
}

fn factory(max_instances: u32) -> WasmWorkerFactory {
    let runtime = Runtime::new(RuntimeOptions {
        max_instances,
        cache_dir: None,
        cache_max: 0,
        max_memory: 128 << 20,
        plugin_cap: loadhost_input::PLUGIN,
    })
    .expect("engine");
    runtime.load(&noop_path()).expect("noop loads").factory(Grants::none().expect("no grants"))
}

fn bare_call_ns(calls: u64) -> f64 {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let factory = factory(4);
        let recorder = std::sync::Arc::new(Recorder::new(1));
        let ctx = WorkerContext {
            id: 0,
            event_loop: 0,
            scenario: "bench".into(),
            metrics: loadhost_engine::MetricsHandle::new(recorder, 0),
            setup_data: None,
        };
        let mut worker = factory.new_worker(ctx).await.expect("worker");
        for i in 0..10_000 {
            worker.run(Task { iteration: i, attempt: 0, input: &[], gate_wait: Duration::ZERO }).await;
        }
        let began = Instant::now();
        for i in 0..calls {
            worker.run(Task { iteration: i, attempt: 0, input: &[], gate_wait: Duration::ZERO }).await;
        }
        began.elapsed().as_nanos() as f64 / calls as f64
    })
}

/// What one `loadhost run` cost, from the kernel's accounting of the child process.
struct Usage {
    cpu: Duration,
    peak_rss_kib: u64,
    wall: Duration,
    summary: serde_json::Value,
}

/// Run `loadhost run noop.wasm ARGS…` to completion and read its rusage and summary.
fn run_noop(args: &[&str]) -> Usage {
    let summary = std::env::temp_dir().join(format!("loadhost-bench-{}.json", std::process::id()));
    let began = Instant::now();
    #[allow(clippy::zombie_processes, reason = "reaped below with wait4, which also gives its rusage")]
    let child = Command::new(loadhost())
        .arg("run")
        .arg(noop_path())
        .args(args)
        .arg("--summary-json")
        .arg(&summary)
        .env("LOADHOST_CACHE_DIR", root().join("target/bench-cache"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start loadhost");
    let pid = i32::try_from(child.id()).expect("pid");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for; both pointers are valid for the call.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4 on loadhost");
    let wall = began.elapsed();
    let seconds = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    let text = std::fs::read_to_string(&summary).unwrap_or_default();
    let _ = std::fs::remove_file(&summary);
    Usage {
        cpu: seconds(usage.ru_utime) + seconds(usage.ru_stime),
        peak_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        wall,
        summary: serde_json::from_str(&text).unwrap_or_default(),
    }
}

fn number(value: &serde_json::Value, path: &[&str]) -> f64 {
    path.iter().fold(value, |v, key| &v[*key]).as_f64().unwrap_or(f64::NAN)
}

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("loadhost overhead benchmark (noop plugin, {cores} cores; CPU = the loadhost process's user + sys)\n");

    let bare = bare_call_ns(1_000_000);
    println!("  bare wasmtime call (call_async, one instance) ... {bare:>9.0} ns/call   {:>10.0} calls/s", 1e9 / bare);
    for workers in [1, 2] {
        let w = workers.to_string();
        let usage = run_noop(&["-w", &w, "-d", "3s"]);
        let rate = number(&usage.summary, &["rate", "achieved_per_s"]);
        println!(
            "  loadhost run, closed model, {workers} worker{} ...... {:>9.0} ns/task   {rate:>10.0} tasks/s",
            if workers == 1 { " " } else { "s" },
            1e9 / rate
        );
    }

    println!("\n  open model (`loadhost run noop.wasm -r RATE -d 5s`), overload drop:");
    println!(
        "    {:>8} {:>8} {:>10} {:>9} {:>8} {:>10} {:>9} {:>12}",
        "target/s", "workers", "achieved/s", "error", "dropped", "wait p99", "underrun", "CPU µs/task"
    );
    for (rate, workers) in [(2_000, 100), (5_000, 100), (20_000, 100), (50_000, 100), (20_000, 4)] {
        let (r, w) = (rate.to_string(), workers.to_string());
        let usage = run_noop(&["-r", &r, "-d", "5s", "-w", &w, "--max-workers", &w]);
        let s = &usage.summary;
        let achieved = number(s, &["rate", "achieved_per_s"]);
        let started = number(s, &["tasks", "scheduled"]) - number(s, &["tasks", "dropped"]);
        println!(
            "    {:>8} {:>8} {:>10.0} {:>8.2}% {:>8} {:>8.3}ms {:>9} {:>12.2}",
            rate,
            workers,
            achieved,
            (achieved - f64::from(rate)) / f64::from(rate) * 100.0,
            number(s, &["tasks", "dropped"]),
            number(s, &["wait_ms", "p99"]),
            number(s, &["underrun"]),
            usage.cpu.as_secs_f64() * 1e6 / started.max(1.0),
        );
    }

    println!("\n  peak resident memory of `loadhost run noop.wasm -r 1 -d 2s -w N` (ru_maxrss):");
    let one = run_noop(&["-r", "1", "-d", "2s", "-w", "1", "--max-workers", "1"]);
    println!("    {:>6} worker  {:>8.1} MiB", 1, one.peak_rss_kib as f64 / 1024.0);
    for workers in [1_000u64, 10_000] {
        let w = workers.to_string();
        let usage = run_noop(&["-r", "1", "-d", "2s", "-w", &w, "--max-workers", &w]);
        let extra = usage.peak_rss_kib.saturating_sub(one.peak_rss_kib) as f64 / (workers - 1) as f64;
        println!(
            "    {workers:>6} workers {:>8.1} MiB   ({extra:.1} KiB per extra worker; the run took {:.1}s)",
            usage.peak_rss_kib as f64 / 1024.0,
            usage.wall.as_secs_f64()
        );
    }
}
