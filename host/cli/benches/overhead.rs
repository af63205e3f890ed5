//! What the host costs per task, side by side in one run:
//! 1. the bare wasmtime call of the `noop` plugin (one instance, `call_async` in a loop);
//! 2. no-op tasks through the whole engine, closed model, 1 and 2 workers, and the ratio to (1);
//! 3. the achieved rate, drops, wait p99 and CPU at 2k, 20k and 50k tasks/s (open model);
//! 4. resident memory of the `loadhost` process with 1 and with 1,000 idle workers.
//!
//! Everything runs on loopback-free no-op tasks, bounded in time. Figures print as a table.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use loadhost_engine::{Model, Overload, PacerClock, Plan, RateCurve, Task, Worker, WorkerContext, WorkerFactory};
use loadhost_metrics::{IntervalRow, Recorder, RunReport};
use loadhost_runtime::{Grants, Runtime, RuntimeOptions, WasmWorkerFactory};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn noop_path() -> PathBuf {
    let path = root().join("target/plugins/noop.wasm");
    assert!(path.is_file(), "{} is missing: run `cargo xtask plugins` first", path.display());
    path
}

/// User + system CPU time of this process so far (from /proc, 10 ms resolution).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = after.split_whitespace().filter_map(|f| f.parse().ok()).collect();
    // After the command name: state is not numeric, so utime and stime are fields 11 and 12 here.
    let ticks = fields.get(10).copied().unwrap_or(0) + fields.get(11).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

fn factory(max_instances: u32) -> WasmWorkerFactory {
    let runtime =
        Runtime::new(RuntimeOptions { max_instances, cache_dir: None, max_memory: 128 << 20 }).expect("engine");
    runtime.load(&noop_path()).expect("noop loads").factory(Grants::none().expect("no grants"))
}

fn bare_call_ns(calls: u64) -> f64 {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let factory = factory(4);
        let recorder = std::sync::Arc::new(Recorder::new(1));
        let ctx = WorkerContext {
            id: 0,
            scenario: "bench".into(),
            metrics: loadhost_engine::MetricsHandle::new(recorder, 0),
            setup_data: None,
        };
        let mut worker = factory.new_worker(ctx).await.expect("worker");
        for i in 0..10_000 {
            worker.run(Task { iteration: i, attempt: 0, input: &[] }).await;
        }
        let began = Instant::now();
        for i in 0..calls {
            worker.run(Task { iteration: i, attempt: 0, input: &[] }).await;
        }
        began.elapsed().as_nanos() as f64 / calls as f64
    })
}

fn run_plan(plan: &Plan, workers: u32) -> (RunReport, Duration, Duration) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let factory = factory(workers);
    let cpu = process_cpu();
    let began = Instant::now();
    let report = rt.block_on(loadhost_engine::run(plan, factory, &mut |_: &IntervalRow| {})).expect("run");
    (report, began.elapsed(), process_cpu().saturating_sub(cpu))
}

fn closed_tasks_per_s(workers: u32, duration: Duration) -> f64 {
    let plan = Plan::new(Model::Closed { workers, duration: Some(duration), max_tasks: None })
        .expect("plan")
        .with_pacer_clock(PacerClock::Thread);
    let (report, _, _) = run_plan(&plan, workers);
    report.achieved_rate()
}

/// VmRSS of a `loadhost run` process with `workers` idle workers (rate 1/s), sampled mid-run.
fn rss_kib(workers: u32) -> Option<u64> {
    let bin = root().join("target/release/loadhost");
    let bin = if bin.is_file() {
        bin
    } else {
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from)?.join("release/loadhost")
    };
    let mut child = Command::new(bin)
        .args(["run", &noop_path().display().to_string(), "-r", "1", "-d", "3s"])
        .args(["--max-workers", &workers.to_string()])
        .env("LOADHOST_CACHE_DIR", root().join("target/bench-cache"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    std::thread::sleep(Duration::from_millis(2000));
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).ok();
    let _ = child.wait();
    status?
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kib| kib.parse().ok())
}

fn main() {
    let seconds = 3;
    println!(
        "loadhost overhead benchmark (noop plugin, {} cores)\n",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    let bare = bare_call_ns(1_000_000);
    println!("  bare wasmtime call (call_async, one instance) ... {bare:>9.0} ns/call   {:>10.0} calls/s", 1e9 / bare);
    let one = closed_tasks_per_s(1, Duration::from_secs(seconds));
    let two = closed_tasks_per_s(2, Duration::from_secs(seconds));
    let per_task = 1e9 / one;
    println!("  engine, closed model, 1 worker ................ {per_task:>9.0} ns/task   {one:>10.0} tasks/s");
    println!("  engine, closed model, 2 workers ............... {:>9.0} ns/task   {two:>10.0} tasks/s", 1e9 / two);
    println!("  engine ÷ bare call (1 worker) ................. {:>9.2}x", per_task / bare);

    println!("\n  open model, noop, {seconds} s each, 100 workers, overload drop:");
    println!(
        "    {:>8} {:>10} {:>9} {:>8} {:>10} {:>9} {:>9} {:>10}",
        "target/s", "achieved/s", "error", "dropped", "wait p99", "underrun", "lag max", "CPU µs/task"
    );
    for rate in [2_000.0, 20_000.0, 50_000.0] {
        let curve = RateCurve::constant(rate, Some(Duration::from_secs(seconds))).expect("curve");
        let plan =
            Plan::new(Model::Open { curve, max_tasks: None, workers: 100, max_workers: 100, overload: Overload::Drop })
                .expect("plan")
                .with_pacer_clock(PacerClock::Thread);
        let (report, _, cpu) = run_plan(&plan, 100);
        let achieved = report.achieved_rate();
        let t = &report.totals;
        println!(
            "    {:>8.0} {:>10.0} {:>8.2}% {:>8} {:>8.3}ms {:>9} {:>7.2}ms {:>10.2}",
            rate,
            achieved,
            (achieved - rate) / rate * 100.0,
            t.counts.dropped,
            t.wait.percentiles().p99,
            t.underrun,
            t.lag_max.as_secs_f64() * 1000.0,
            cpu.as_secs_f64() * 1e6 / report.started.max(1) as f64,
        );
    }

    println!("\n  resident memory of `loadhost run` (VmRSS 2 s into a 1/s run):");
    match (rss_kib(1), rss_kib(1000)) {
        (Some(one), Some(thousand)) => {
            println!("    1 worker ..... {:>8.1} MiB", one as f64 / 1024.0);
            println!(
                "    1000 workers . {:>8.1} MiB   ({:.1} KiB per extra worker)",
                thousand as f64 / 1024.0,
                (thousand - one.min(thousand)) as f64 / 999.0
            );
        }
        _ => println!("    (the loadhost binary is not built: run `cargo build --release -p loadhost`)"),
    }
}
