//! Issue 31's question, measured: what one in-flight task costs with wasmtime 48.0.8's
//! component-model async (many tasks on one instance, no fiber each) against today's shape (one
//! pooled instance and one fiber per in-flight task).
//!
//! Modes (each prints one line of `key=value` figures; `bench/cm-async.sh` runs them all):
//!
//! - `today N MS WAITS`: N pooled instances of the sync guest (`concurrency_support(false)`), each
//!   with one `call_async` of the sync export `do-task`, whose sync-lowered import `wait` awaits a
//!   tokio sleep on the instance's fiber; all N in flight at once.
//! - `async N K MS WAITS callback|blocking|sync-lift|sync-import`: K instances of the chosen
//!   guest, each in its own store driven by `run_concurrent`, N calls in all through `call_concurrent`: `callback` calls the
//!   async export `do-task` (callback-lifted), `blocking` the sync export `do-task-blocking` that
//!   blocks on the async import with the guest's `block_on` (wasmtime traps it: a sync-typed
//!   task may not block), `sync-lift` the sync-lift guest's `do-task` (an async function lifted
//!   with the sync ABI, blocking in the guest's `block_on`: a fiber per waiting task),
//!   `sync-import` the sync-import guest's `do-task` (callback-lifted, calling a sync import).
//! - `cpu today|async W R MS`: W workers (instances, or concurrent loops on one instance), R tasks
//!   each in sequence, one `wait(MS)` per task: CPU µs per task from `getrusage`.
//! - `fault trap|cancel|spin-yield|spin-trap N MS`: N tasks on one instance, task 0 traps, is
//!   dropped by a timeout, or spins under epoch interruption, halfway: what happens to the others,
//!   and to the next call on that instance.
//! - `noop ITER`: the CPU cost of one no-op call, `call_async` with `concurrency_support` false and
//!   true, and `call_concurrent` inside `run_concurrent`.
//!
//! `CMA_UNCONSTRAINED`, when set, runs everything inside `tokio::task::unconstrained`, without
//! tokio's cooperative budget (under which many host futures on one store cost far more CPU: see
//! the README). `CMA_MEMORY_RESERVATION_MIB` sets each linear memory's reservation.
//! `CMA_MAX_HANDLES`, when set, is each async store's `Store::set_max_component_handles` (wasmtime's
//! default: 100,000 live handles per store).
//!
//! The memory figures are read from `/proc/self/status` and `/proc/self/smaps_rollup` when the
//! host's `wait` has seen every task enter it (all N in flight), and VmHWM at the end.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use wasmtime::component::{Component, ComponentExportIndex, Linker, TypedFunc};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};

/// Tasks inside the host's `wait` right now, the most at once, and how many entered in all.
static IN_WAIT: AtomicUsize = AtomicUsize::new(0);
static PEAK_IN_WAIT: AtomicUsize = AtomicUsize::new(0);
static ENTERED: AtomicUsize = AtomicUsize::new(0);
/// Calls of the fault mode that returned a value.
static FAULT_OK: AtomicUsize = AtomicUsize::new(0);

/// loadhost's pool shape per component instance (`host/runtime/src/wasmtime_engine.rs`).
const MEMORIES_PER_INSTANCE: u32 = 2;
const TABLES_PER_INSTANCE: u32 = 4;
const CORE_INSTANCES_PER_INSTANCE: u32 = 16;
const MAX_TABLE_ELEMENTS: usize = 20_000;
const POOL_SLACK: u32 = 8;
/// 64 MiB of linear memory per instance at most (loadhost's default cap).
const MAX_MEMORY: usize = 64 << 20;

async fn host_wait(ms: u32) {
    let now = IN_WAIT.fetch_add(1, Ordering::SeqCst) + 1;
    PEAK_IN_WAIT.fetch_max(now, Ordering::SeqCst);
    ENTERED.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(u64::from(ms))).await;
    IN_WAIT.fetch_sub(1, Ordering::SeqCst);
}

fn engine(concurrent: bool, instances: u32) -> anyhow::Result<Engine> {
    engine_with(concurrent, instances, false)
}

/// `epoch`: also `epoch_interruption(true)`, as loadhost has it (the fault mode's spinning task).
fn engine_with(concurrent: bool, instances: u32, epoch: bool) -> anyhow::Result<Engine> {
    let slots = instances.saturating_add(POOL_SLACK);
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(slots)
        .total_memories(slots.saturating_mul(MEMORIES_PER_INSTANCE))
        .total_tables(slots.saturating_mul(TABLES_PER_INSTANCE))
        .total_core_instances(slots.saturating_mul(CORE_INSTANCES_PER_INSTANCE))
        // With concurrency a store may briefly hold its event loop's worker fiber beside a
        // finishing blocking task's (seen: 10 stores of one sync-lift task each failed with
        // "maximum concurrent limit of 18 for fibers reached"): an eighth more slots.
        .total_stacks(if concurrent { slots.saturating_add(slots / 8) } else { slots })
        .max_memories_per_component(MEMORIES_PER_INSTANCE)
        .max_tables_per_component(TABLES_PER_INSTANCE)
        .max_core_instances_per_component(CORE_INSTANCES_PER_INSTANCE)
        .table_elements(MAX_TABLE_ELEMENTS)
        .max_memory_size(MAX_MEMORY);
    let mut config = Config::new();
    config.concurrency_support(concurrent);
    if concurrent {
        config.wasm_component_model_async(true);
    }
    // loadhost keeps wasmtime's default reservation (4 GiB + 32 MiB guard per memory): about
    // 10,000 pooled instances fit in the address space here. `CMA_MEMORY_RESERVATION_MIB`
    // reserves that much per memory instead (with a 64 KiB guard: explicit bounds checks).
    if let Some(mib) = std::env::var("CMA_MEMORY_RESERVATION_MIB").ok().map(|v| v.parse::<u64>()).transpose()? {
        config.memory_reservation(mib << 20).memory_guard_size(64 << 10);
    }
    config.epoch_interruption(epoch);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config).map_err(anyhow::Error::from).context("configuring the engine")
}

fn wasm_dir() -> PathBuf {
    std::env::var_os("CMA_WASM_DIR").map_or_else(|| PathBuf::from("."), PathBuf::from)
}

fn load(engine: &Engine, name: &str) -> anyhow::Result<Component> {
    let path = wasm_dir().join(name);
    Component::from_file(engine, &path)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("compiling {}", path.display()))
}

fn export(component: &Component, name: &str) -> anyhow::Result<ComponentExportIndex> {
    component.get_export_index(None, name).with_context(|| format!("the guest exports no `{name}`"))
}

/// The sync guest's linker: `wait` is a sync-lowered import the host implements with an await on
/// the calling instance's fiber (`func_wrap_async`), as loadhost's imports are.
fn today_linker(engine: &Engine, component: &Component) -> anyhow::Result<Linker<()>> {
    let mut linker = Linker::<()>::new(engine);
    linker.root().func_wrap_async("wait", |_store, (ms,): (u32,)| {
        Box::new(async move {
            host_wait(ms).await;
            Ok(())
        })
    })?;
    // The guest's std imports a few WASI functions the bench never reaches.
    linker.define_unknown_imports_as_traps(component)?;
    Ok(linker)
}

/// The async guest's linker: `wait` is a concurrent host function (`func_wrap_concurrent`).
fn async_linker(engine: &Engine, component: &Component) -> anyhow::Result<Linker<()>> {
    let mut linker = Linker::<()>::new(engine);
    linker.root().func_wrap_concurrent("wait", |_accessor, (ms,): (u32,)| {
        Box::pin(async move {
            host_wait(ms).await;
            Ok(())
        })
    })?;
    linker.define_unknown_imports_as_traps(component)?;
    Ok(linker)
}

#[derive(Clone, Copy, Default)]
struct Mem {
    rss_kib: u64,
    hwm_kib: u64,
    smaps_rss_kib: u64,
    smaps_pss_kib: u64,
    maps: u64,
}

fn field(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn mem() -> Mem {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    let maps = std::fs::read_to_string("/proc/self/maps").map_or(0, |m| m.lines().count() as u64);
    Mem {
        rss_kib: field(&status, "VmRSS:"),
        hwm_kib: field(&status, "VmHWM:"),
        smaps_rss_kib: field(&rollup, "Rss:"),
        smaps_pss_kib: field(&rollup, "Pss:"),
        maps,
    }
}

/// User + system CPU of the process, in µs.
fn cpu_us() -> u64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(ru.ru_utime) + us(ru.ru_stime)
}

/// This thread's CPU time, in ns.
fn thread_ns() -> u64 {
    // SAFETY: clock_gettime writes into the zeroed struct we own.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock id and pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The work word the guests read: low 32 bits the ms of each wait, high 32 bits the waits.
fn work(ms: u32, waits: u32) -> u64 {
    (u64::from(waits) << 32) | u64::from(ms)
}

/// Wait until `target` tasks are inside `wait` at once (or `deadline` passes), then read memory.
async fn sample_when_in_flight(target: usize, deadline: Duration) -> (Mem, bool, Duration) {
    let start = Instant::now();
    loop {
        if IN_WAIT.load(Ordering::SeqCst) >= target {
            return (mem(), true, start.elapsed());
        }
        if start.elapsed() > deadline {
            return (mem(), false, start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Whether tokio's cooperative budget applies (`budget`) or the run is `unconstrained`.
fn coop() -> &'static str {
    if std::env::var_os("CMA_UNCONSTRAINED").is_some() { "unconstrained" } else { "budget" }
}

fn print_mem(prefix: &str, before: Mem, inflight: Mem, all_in: bool, n: usize) {
    let end = mem();
    let per = |a: u64, b: u64| a.saturating_sub(b) as f64 / n as f64;
    println!(
        "{prefix} reservation_mib={} coop={} all_in_flight={all_in} peak_in_wait={} rss_before_kib={} rss_inflight_kib={} \
         hwm_kib={} smaps_rss_kib={} smaps_pss_kib={} maps={} kib_per_task_in_process={:.2} \
         pss_kib_per_task_in_process={:.2}",
        std::env::var("CMA_MEMORY_RESERVATION_MIB").unwrap_or_else(|_| "default".into()),
        coop(),
        PEAK_IN_WAIT.load(Ordering::SeqCst),
        before.rss_kib,
        inflight.rss_kib,
        end.hwm_kib,
        inflight.smaps_rss_kib,
        inflight.smaps_pss_kib,
        inflight.maps,
        per(inflight.rss_kib, before.rss_kib),
        per(inflight.smaps_pss_kib, before.smaps_pss_kib),
    );
}

/// Today's shape: N pooled instances, one `call_async` each, all in flight.
async fn today(n: usize, ms: u32, waits: u32) -> anyhow::Result<()> {
    let instances = u32::try_from(n).context("N too large")?;
    let engine = engine(false, instances)?;
    let component = load(&engine, "cma_guest_sync.wasm")?;
    let linker = today_linker(&engine, &component)?;
    let pre = linker.instantiate_pre(&component)?;
    let idx = export(&component, "do-task")?;
    let before = mem();
    let t0 = Instant::now();
    let mut stores = Vec::with_capacity(n);
    for _ in 0..n {
        let mut store = Store::new(&engine, ());
        let instance = pre.instantiate_async(&mut store).await?;
        let f: TypedFunc<(u64,), (u64,)> = instance.get_typed_func(&mut store, idx)?;
        stores.push((store, f));
    }
    let instantiate = t0.elapsed();
    let cpu0 = cpu_us();
    let t1 = Instant::now();
    let arg = work(ms, waits);
    let mut calls = FuturesUnordered::new();
    for (mut store, f) in stores {
        calls.push(async move { f.call_async(&mut store, (arg,)).await.map(|r| r.0) });
    }
    let sampler = sample_when_in_flight(n, Duration::from_millis(u64::from(ms) * 2 + 10_000));
    let (inflight, all_in, reached) = drive(&mut calls, sampler, arg.wrapping_add(u64::from(waits))).await?;
    let wall = t1.elapsed();
    let cpu = cpu_us() - cpu0;
    print_mem(
        &format!(
            "mode=today n={n} ms={ms} waits={waits} instantiate_ms={} reached_ms={} wall_ms={} cpu_us_per_task={:.2}",
            instantiate.as_millis(),
            reached.as_millis(),
            wall.as_millis(),
            cpu as f64 / n as f64
        ),
        before,
        inflight,
        all_in,
        n,
    );
    Ok(())
}

/// Poll all calls to completion while the sampler waits for them to be in flight; check results.
async fn drive<F>(
    calls: &mut FuturesUnordered<F>,
    sampler: impl Future<Output = (Mem, bool, Duration)>,
    expect: u64,
) -> anyhow::Result<(Mem, bool, Duration)>
where
    F: Future<Output = wasmtime::Result<u64>>,
{
    let mut sampler = std::pin::pin!(sampler);
    let mut sample = None;
    loop {
        tokio::select! {
            s = &mut sampler, if sample.is_none() => sample = Some(s),
            next = calls.next() => match next {
                Some(r) => {
                    let v = r?;
                    if v != expect {
                        bail!("a task returned {v}, expected {expect}");
                    }
                }
                None => break,
            },
        }
    }
    Ok(match sample {
        Some(s) => s,
        None => (mem(), false, Duration::ZERO),
    })
}

/// Poll the stores' runs to completion while the sampler waits for the tasks to be in flight;
/// add up what the runs return.
async fn drive_sum<F>(
    runs: &mut FuturesUnordered<F>,
    sampler: impl Future<Output = (Mem, bool, Duration)>,
) -> anyhow::Result<(Mem, bool, Duration, u64)>
where
    F: Future<Output = wasmtime::Result<u64>>,
{
    let mut sampler = std::pin::pin!(sampler);
    let mut sample = None;
    let mut sum = 0;
    loop {
        tokio::select! {
            s = &mut sampler, if sample.is_none() => sample = Some(s),
            next = runs.next() => match next {
                Some(r) => sum += r?,
                None => break,
            },
        }
    }
    let (m, all_in, reached) = sample.unwrap_or((mem(), false, Duration::ZERO));
    Ok((m, all_in, reached, sum))
}

/// The async shape: K stores of one instance each, N `call_concurrent`s in all.
async fn concurrent(n: usize, k: usize, ms: u32, waits: u32, lift: &str) -> anyhow::Result<()> {
    if k == 0 || k > n {
        bail!("K must be between 1 and N");
    }
    let (file, export_name) = match lift {
        "callback" => ("cma_guest_async.wasm", "do-task"),
        "blocking" => ("cma_guest_async.wasm", "do-task-blocking"),
        "sync-lift" => ("cma_guest_sync_lift.wasm", "do-task"),
        "sync-import" => ("cma_guest_sync_import.wasm", "do-task"),
        other => bail!("lift is callback, blocking, sync-lift or sync-import, not {other}"),
    };
    let engine = engine(true, u32::try_from(k).context("K too large")?)?;
    let component = load(&engine, file)?;
    // A plain `func` import cannot be defined with `func_wrap_concurrent` ("type mismatch with
    // async: this import's WIT type is a plain (non-`async`) function"): `func_wrap_async`.
    let linker =
        if lift == "sync-import" { today_linker(&engine, &component)? } else { async_linker(&engine, &component)? };
    let pre = linker.instantiate_pre(&component)?;
    let idx = export(&component, export_name)?;
    let memory_idx = component.get_export_index(None, "memory-bytes");
    let before = mem();
    let t0 = Instant::now();
    let mut stores = Vec::with_capacity(k);
    let max_handles = std::env::var("CMA_MAX_HANDLES").ok().map(|v| v.parse::<usize>()).transpose()?;
    for _ in 0..k {
        let mut store = Store::new(&engine, ());
        if let Some(limit) = max_handles {
            store.set_max_component_handles(limit);
        }
        let instance = pre.instantiate_async(&mut store).await?;
        let f: TypedFunc<(u64,), (u64,)> = instance.get_typed_func(&mut store, idx)?;
        let bytes: Option<TypedFunc<(), (u64,)>> = match memory_idx {
            Some(i) => Some(instance.get_typed_func(&mut store, i)?),
            None => None,
        };
        stores.push((store, f, bytes));
    }
    let instantiate = t0.elapsed();
    let mut linear_before = 0;
    for (store, _, bytes) in &mut stores {
        if let Some(bytes) = bytes {
            linear_before += bytes.call_async(&mut *store, ()).await?.0;
        }
    }
    let cpu0 = cpu_us();
    let t1 = Instant::now();
    let arg = work(ms, waits);
    let expect = arg.wrapping_add(u64::from(waits));
    let mut runs = FuturesUnordered::new();
    for (i, (mut store, f, bytes)) in stores.into_iter().enumerate() {
        let share = n / k + usize::from(i < n % k);
        runs.push(async move {
            store
                .run_concurrent(async move |accessor| -> wasmtime::Result<()> {
                    let mut calls = FuturesUnordered::new();
                    for _ in 0..share {
                        calls.push(f.call_concurrent(accessor, (arg,)));
                    }
                    while let Some(r) = calls.next().await {
                        let (v,) = r?;
                        if v != expect {
                            wasmtime::bail!("a task returned {v}, expected {expect}");
                        }
                    }
                    Ok(())
                })
                .await??;
            // Linear memory never shrinks: its size now is what this store's tasks grew it to.
            // The store (and its fibers) goes when its tasks are done.
            match bytes {
                Some(bytes) => Ok(bytes.call_async(&mut store, ()).await?.0),
                None => Ok(0),
            }
        });
    }
    let sampler = sample_when_in_flight(n, Duration::from_millis(u64::from(ms) * 2 + 10_000));
    let (inflight, all_in, reached, linear_after) = drive_sum(&mut runs, sampler).await?;
    let wall = t1.elapsed();
    let cpu = cpu_us() - cpu0;
    print_mem(
        &format!(
            "mode=async lift={lift} n={n} k={k} max_handles={} ms={ms} waits={waits} instantiate_ms={} reached_ms={} wall_ms={} \
             cpu_us_per_task={:.2} linear_kib_before={} linear_kib_after={} linear_kib_per_task={:.2}",
            max_handles.map_or_else(|| "default".to_string(), |h| h.to_string()),
            instantiate.as_millis(),
            reached.as_millis(),
            wall.as_millis(),
            cpu as f64 / n as f64,
            linear_before / 1024,
            linear_after / 1024,
            linear_after.saturating_sub(linear_before) as f64 / 1024.0 / n as f64,
        ),
        before,
        inflight,
        all_in,
        n,
    );
    Ok(())
}

/// CPU per short task: W workers, R tasks each in sequence, one `wait(ms)` per task.
async fn cpu(shape: &str, w: usize, r: usize, ms: u32) -> anyhow::Result<()> {
    let arg = work(ms, 1);
    let expect = arg + 1;
    let (cpu, wall) = match shape {
        "today" => {
            let engine = engine(false, u32::try_from(w).context("W too large")?)?;
            let component = load(&engine, "cma_guest_sync.wasm")?;
            let pre = today_linker(&engine, &component)?.instantiate_pre(&component)?;
            let idx = export(&component, "do-task")?;
            let mut workers = Vec::with_capacity(w);
            for _ in 0..w {
                let mut store = Store::new(&engine, ());
                let instance = pre.instantiate_async(&mut store).await?;
                let f: TypedFunc<(u64,), (u64,)> = instance.get_typed_func(&mut store, idx)?;
                // One call first, as a loadhost worker's instance has made before the run.
                f.call_async(&mut store, (0,)).await?;
                workers.push((store, f));
            }
            let cpu0 = cpu_us();
            let t = Instant::now();
            let mut loops = FuturesUnordered::new();
            for (mut store, f) in workers {
                loops.push(async move {
                    for _ in 0..r {
                        let (v,) = f.call_async(&mut store, (arg,)).await?;
                        if v != expect {
                            wasmtime::bail!("a task returned {v}, expected {expect}");
                        }
                    }
                    Ok(())
                });
            }
            while let Some(res) = loops.next().await {
                res?;
            }
            (cpu_us() - cpu0, t.elapsed())
        }
        "async" => {
            let engine = engine(true, 1)?;
            let component = load(&engine, "cma_guest_async.wasm")?;
            let pre = async_linker(&engine, &component)?.instantiate_pre(&component)?;
            let idx = export(&component, "do-task")?;
            let mut store = Store::new(&engine, ());
            let instance = pre.instantiate_async(&mut store).await?;
            let f: TypedFunc<(u64,), (u64,)> = instance.get_typed_func(&mut store, idx)?;
            let cpu0 = cpu_us();
            let t = Instant::now();
            store
                .run_concurrent(async move |accessor| -> wasmtime::Result<()> {
                    let mut loops = FuturesUnordered::new();
                    for _ in 0..w {
                        loops.push(async move {
                            for _ in 0..r {
                                let (v,) = f.call_concurrent(accessor, (arg,)).await?;
                                if v != expect {
                                    wasmtime::bail!("a task returned {v}, expected {expect}");
                                }
                            }
                            Ok(())
                        });
                    }
                    while let Some(res) = loops.next().await {
                        res?;
                    }
                    Ok(())
                })
                .await??;
            (cpu_us() - cpu0, t.elapsed())
        }
        other => bail!("shape is today or async, not {other}"),
    };
    let tasks = (w * r) as f64;
    println!(
        "mode=cpu shape={shape} coop={} w={w} r={r} ms={ms} tasks={} wall_ms={} cpu_us_per_task={:.2} tasks_per_s={:.0}",
        coop(),
        w * r,
        wall.as_millis(),
        cpu as f64 / tasks,
        tasks / wall.as_secs_f64()
    );
    Ok(())
}

/// What one task's trap or cancellation does to the other tasks of its instance: N tasks on one
/// instance wait MS; task 0 either traps after a wait of MS / 2 (`trap`) or is dropped by a
/// timeout of MS / 2 (`cancel`). Then one more call on the same instance.
///
/// `spin-yield` / `spin-trap`: task 0 spins forever after a wait of MS / 2, under epoch
/// interruption (ticked every ms by a thread, deadline 5 ticks) with
/// `epoch_deadline_async_yield_and_update(5)` or `epoch_deadline_trap()`; its call is dropped by a
/// timeout of 1.5 × MS. Printed: how many others finished, and when the last did.
async fn fault(kind: &str, n: usize, ms: u32) -> anyhow::Result<()> {
    let spin = kind.starts_with("spin");
    let engine = engine_with(true, 1, spin)?;
    if spin {
        let ticker = engine.clone();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(1));
                ticker.increment_epoch();
            }
        });
    }
    let component = load(&engine, "cma_guest_async.wasm")?;
    let pre = async_linker(&engine, &component)?.instantiate_pre(&component)?;
    let idx = export(&component, "do-task")?;
    let mut store = Store::new(&engine, ());
    match kind {
        "spin-yield" => store.epoch_deadline_async_yield_and_update(5),
        "spin-trap" => store.epoch_deadline_trap(),
        "trap" | "cancel" => {}
        other => bail!("fault is trap, cancel, spin-yield or spin-trap, not {other}"),
    }
    store.set_epoch_deadline(5);
    let instance = pre.instantiate_async(&mut store).await?;
    let f: TypedFunc<(u64,), (u64,)> = instance.get_typed_func(&mut store, idx)?;
    let (trap, spin_bit, half) = (1u64 << 63, 1u64 << 62, ms / 2);
    let kind_owned = kind.to_string();
    let start = Instant::now();
    let run = store.run_concurrent(async move |accessor| -> wasmtime::Result<String> {
        let mut calls = FuturesUnordered::new();
        for i in 0..n {
            let kind = kind_owned.clone();
            calls.push(async move {
                let r = match (i, kind.as_str()) {
                    (0, "trap") => f.call_concurrent(accessor, (work(half, 1) | trap,)).await,
                    (0, "spin-yield" | "spin-trap") => match tokio::time::timeout(
                        Duration::from_millis(u64::from(ms) * 3 / 2),
                        f.call_concurrent(accessor, (work(half, 1) | spin_bit,)),
                    )
                    .await
                    {
                        Ok(r) => r,
                        Err(_) => Err(wasmtime::format_err!("cancelled by the timeout")),
                    },
                    (0, _) => match tokio::time::timeout(
                        Duration::from_millis(u64::from(half)),
                        f.call_concurrent(accessor, (work(ms, 1),)),
                    )
                    .await
                    {
                        Ok(r) => r,
                        Err(_) => Err(wasmtime::format_err!("cancelled by the timeout")),
                    },
                    _ => f.call_concurrent(accessor, (work(ms, 1),)).await,
                };
                if r.is_ok() {
                    FAULT_OK.fetch_add(1, Ordering::SeqCst);
                }
                (i, r.map(|(v,)| v), start.elapsed())
            });
        }
        let (mut ok, mut failed, mut first_errors, mut last_ok) = (0, 0, Vec::new(), Duration::ZERO);
        while let Some((i, r, at)) = calls.next().await {
            match r {
                Ok(_) => {
                    ok += 1;
                    last_ok = last_ok.max(at);
                }
                Err(e) => {
                    failed += 1;
                    if first_errors.len() < 2 {
                        first_errors.push(format!("task {i}: {}", format!("{e:#}").replace('\n', " ")));
                    }
                }
            }
        }
        let after = match f.call_concurrent(accessor, (work(0, 1),)).await {
            Ok(_) => "ok".to_string(),
            Err(e) => format!("{e:#}").replace('\n', " "),
        };
        Ok(format!(
            "ok={ok} failed={failed} last_ok_ms={} next_call=[{after}] errors={first_errors:?}",
            last_ok.as_millis()
        ))
    });
    // The whole event loop gets 3 × MS: a task's own timeout may never be polled (spin-yield).
    let limit = Duration::from_millis(u64::from(ms) * 3);
    let first = match tokio::time::timeout(limit, run).await {
        Ok(Ok(Ok(s))) => Ok(s),
        Ok(Ok(Err(e)) | Err(e)) => {
            let e = format!("{e:#}").replace('\n', " ");
            Err(format!("run_concurrent_error=[{}]", e.rsplit(": ").next().unwrap_or_default()))
        }
        Err(_) => Err(format!(
            "run_concurrent_dropped_after_ms={} calls_returned_before={} in_wait_at_drop={}",
            start.elapsed().as_millis(),
            FAULT_OK.load(Ordering::SeqCst),
            IN_WAIT.load(Ordering::SeqCst)
        )),
    };
    let outcome = match first {
        Ok(s) => s,
        Err(first) => {
            // The run ended with the fault: does the instance take another call?
            let again = store.run_concurrent(async move |accessor| f.call_concurrent(accessor, (work(0, 1),)).await);
            let again = match tokio::time::timeout(limit, again).await {
                Ok(Ok(Ok(_))) => "ok".to_string(),
                Ok(Ok(Err(e)) | Err(e)) => format!("{e:#}").replace('\n', " "),
                Err(_) => format!("no answer in {} ms", limit.as_millis()),
            };
            format!("{first} next_run_concurrent=[{again}]")
        }
    };
    println!("mode=fault kind={kind} n={n} ms={ms} {outcome}");
    Ok(())
}

/// One no-op call's CPU cost, ns: `call_async` with `concurrency_support` false and true, and
/// `call_concurrent` inside one `run_concurrent`.
async fn noop(iters: usize) -> anyhow::Result<()> {
    let mut line = format!("mode=noop iters={iters}");
    for concurrent in [false, true] {
        let engine = engine(concurrent, 1)?;
        let component = load(&engine, "cma_guest_sync.wasm")?;
        let pre = today_linker(&engine, &component)?.instantiate_pre(&component)?;
        let idx = export(&component, "noop")?;
        let mut store = Store::new(&engine, ());
        let instance = pre.instantiate_async(&mut store).await?;
        let f: TypedFunc<(), ()> = instance.get_typed_func(&mut store, idx)?;
        f.call_async(&mut store, ()).await?;
        let t = thread_ns();
        for _ in 0..iters {
            f.call_async(&mut store, ()).await?;
        }
        let ns = (thread_ns() - t) as f64 / iters as f64;
        line += &format!(" call_async_cs_{concurrent}_ns={ns:.0}");
    }
    let engine = engine(true, 1)?;
    let component = load(&engine, "cma_guest_async.wasm")?;
    let pre = async_linker(&engine, &component)?.instantiate_pre(&component)?;
    let mut store = Store::new(&engine, ());
    let instance = pre.instantiate_async(&mut store).await?;
    let noop: TypedFunc<(), ()> = instance.get_typed_func(&mut store, export(&component, "noop")?)?;
    let task: TypedFunc<(u64,), (u64,)> = instance.get_typed_func(&mut store, export(&component, "do-task")?)?;
    let (noop_ns, task_ns) = store
        .run_concurrent(async move |accessor| -> wasmtime::Result<(f64, f64)> {
            noop.call_concurrent(accessor, ()).await?;
            let t = thread_ns();
            for _ in 0..iters {
                noop.call_concurrent(accessor, ()).await?;
            }
            let noop_ns = (thread_ns() - t) as f64 / iters as f64;
            let t = thread_ns();
            for _ in 0..iters {
                task.call_concurrent(accessor, (0,)).await?;
            }
            let task_ns = (thread_ns() - t) as f64 / iters as f64;
            Ok((noop_ns, task_ns))
        })
        .await??;
    println!("{line} call_concurrent_noop_ns={noop_ns:.0} call_concurrent_async_do_task_0_waits_ns={task_ns:.0}");
    Ok(())
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> anyhow::Result<T> {
    args.get(i)
        .with_context(|| format!("missing {what}"))?
        .parse()
        .map_err(|_| anyhow::anyhow!("{what} is not a number: {:?}", args.get(i)))
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    let work = async {
        match args.first().map(String::as_str) {
            Some("today") => today(arg(&args, 1, "N")?, arg(&args, 2, "MS")?, arg(&args, 3, "WAITS")?).await,
            Some("async") => {
                let lift = args.get(5).map_or("callback", String::as_str);
                concurrent(
                    arg(&args, 1, "N")?,
                    arg(&args, 2, "K")?,
                    arg(&args, 3, "MS")?,
                    arg(&args, 4, "WAITS")?,
                    lift,
                )
                .await
            }
            Some("cpu") => {
                let shape = args.get(1).context("missing shape")?;
                cpu(shape, arg(&args, 2, "W")?, arg(&args, 3, "R")?, arg(&args, 4, "MS")?).await
            }
            Some("fault") => {
                let kind = args.get(1).context("missing trap|cancel|spin-yield|spin-trap")?;
                fault(kind, arg(&args, 2, "N")?, arg(&args, 3, "MS")?).await
            }
            Some("noop") => noop(arg(&args, 1, "ITER")?).await,
            _ => bail!(
                "usage: cm-async-bench today N MS WAITS | async N K MS WAITS [callback|blocking|sync-lift|sync-import] | \
                 cpu today|async W R MS | fault trap|cancel|spin-yield|spin-trap N MS | noop ITER"
            ),
        }
    };
    // `CMA_UNCONSTRAINED=1`: run without tokio's cooperative budget (`task::unconstrained`).
    if std::env::var_os("CMA_UNCONSTRAINED").is_some() {
        rt.block_on(tokio::task::unconstrained(work))
    } else {
        rt.block_on(work)
    }
}
