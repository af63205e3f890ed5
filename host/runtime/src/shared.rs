//! Workers of a `doer-async` plugin: up to [`WORKERS_PER_INSTANCE`] workers of one event loop
//! and scenario share one instance, in one store, whose tasks are async calls
//! (`call_concurrent`) driven together by one tokio task (`Store::run_concurrent`). A task that
//! awaits an async import holds only its own state in the instance's memory, not an instance and a
//! fiber stack: that is what makes 100,000 open sessions fit in kilobytes each (docs/runtime.md,
//! "Many tasks per instance").
//!
//! Shared fate, made explicit: a trap (or a task that runs wasm for [`RUNAWAY_LIMIT`] without
//! awaiting) ends the instance, and every task in flight on it fails as `trapped` with the same
//! description; its workers move to a new instance for their next task. A task cut short by its
//! deadline is only abandoned: it keeps running in the instance (its result is dropped), since one
//! task of a component instance cannot be cancelled alone.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use loadhost_engine::{MetricsHandle, TaskOutcome, WorkerError};
use tokio::sync::{mpsc, oneshot, watch};
use wasmtime::component::{Accessor, TypedFunc};
use wasmtime::{Store, UpdateDeadline};

use crate::bindings::{Task, TaskError};
use crate::bindings_async::{WorkloadAsync, WorkloadAsyncPre};
use crate::ctx::DoerCtx;
use crate::grants::Grants;
use crate::http::RunConnections;
use crate::output::{Capture, HttpDebug, LineSink};
use crate::plugin::one_line;
use crate::plugin_text::{PluginText, bounded};
use crate::protocol_metrics::Slots;

/// How many workers share one instance. Measured flat in bytes per task from 1,000 to 100,000
/// tasks per instance (docs/runtime.md); 1,000 keeps a trap's shared fate, and the instance's byte
/// budget and memory cap, to a thousand tasks.
pub const WORKERS_PER_INSTANCE: u32 = 1_000;

/// How much CPU time a shared instance may run wasm without any task starting, ending or making an
/// async host call before it is ended as a runaway: while one task computes, or blocks in a
/// synchronous call, no other task of the instance runs.
pub const RUNAWAY_LIMIT: Duration = Duration::from_secs(2);

/// The most calls a shared instance has under way: one per attached worker, and as many again
/// abandoned at their deadline (still running: see the module's docs). Past it the instance is
/// ended, which frees them, so a plugin whose tasks never return cannot pile them up.
const MAX_CALLS: usize = 2 * WORKERS_PER_INSTANCE as usize;

/// Too many of a shared instance's tasks were abandoned at their deadline and still run.
#[derive(Debug, thiserror::Error)]
#[error(
    "{under_way} tasks were under way in the instance, most of them cut short at their deadline and still running: the instance was ended to free them"
)]
pub struct AbandonedTasks {
    /// Calls under way (at most one per attached worker is not abandoned).
    pub under_way: usize,
}

type DoTask = TypedFunc<(Task,), (Result<(), TaskError>,)>;

/// How a task sent to a shared instance ended.
enum Reply {
    /// The plugin's `do-task` returned.
    Returned(Result<(), TaskError>),
    /// The instance trapped (this task or another): the description of the trap.
    Trapped(Arc<str>),
}

/// One task for a shared instance, and where its reply goes.
struct Job {
    task: Task,
    reply: oneshot::Sender<Reply>,
}

/// What making a shared instance needs: the factory's parts, owned.
pub(crate) struct Maker {
    pub(crate) engine: wasmtime::Engine,
    pub(crate) pre: WorkloadAsyncPre<DoerCtx>,
    pub(crate) max_memory: usize,
    pub(crate) grants: Arc<Grants>,
    pub(crate) connections: Arc<RunConnections>,
    pub(crate) output: Option<Arc<dyn LineSink>>,
    pub(crate) http_debug: Option<HttpDebug>,
}

/// The shared instances of one factory: the one being filled, per event loop and scenario.
pub(crate) struct Instances {
    maker: Maker,
    /// Weak: an instance lives as long as a worker is attached to it.
    filling: Mutex<HashMap<(u32, Arc<str>), Filling>>,
}

/// The instance being filled for one event loop and scenario; locked while one is made, so that
/// workers made together share it.
type Filling = Arc<tokio::sync::Mutex<Weak<Shared>>>;

/// One shared instance, as its workers see it.
struct Shared {
    jobs: mpsc::UnboundedSender<Job>,
    /// Workers attached (at most [`WORKERS_PER_INSTANCE`]); the instance's slots for
    /// connections are sized by it (`Slots::for_attached`).
    attached: Arc<AtomicU32>,
    /// Set once the instance has ended: why (a trap's description).
    fate: watch::Receiver<Option<Arc<str>>>,
}

impl Shared {
    fn ended(&self) -> bool {
        self.jobs.is_closed()
    }
}

impl Instances {
    pub(crate) fn new(maker: Maker) -> Arc<Self> {
        Arc::new(Self { maker, filling: Mutex::default() })
    }

    /// An instance with room for one more worker of `scenario` on `event_loop`: the one being
    /// filled, or a new one.
    async fn attach(
        &self,
        event_loop: u32,
        scenario: &Arc<str>,
        metrics: &MetricsHandle,
    ) -> Result<Arc<Shared>, WorkerError> {
        let slot = {
            let mut filling = self.filling.lock().unwrap_or_else(|p| p.into_inner());
            filling.entry((event_loop, scenario.clone())).or_default().clone()
        };
        // One maker per loop and scenario at a time: workers made together share what it makes.
        let mut current = slot.lock().await;
        if let Some(shared) = current.upgrade()
            && !shared.ended()
            && shared.attached.load(Ordering::Relaxed) < WORKERS_PER_INSTANCE
        {
            shared.attached.fetch_add(1, Ordering::Relaxed);
            return Ok(shared);
        }
        let shared = self.start(event_loop, scenario, metrics).await?;
        shared.attached.fetch_add(1, Ordering::Relaxed);
        *current = Arc::downgrade(&shared);
        Ok(shared)
    }

    /// Instantiate the plugin in a store of its own and start the task that drives it.
    async fn start(
        &self,
        event_loop: u32,
        scenario: &Arc<str>,
        metrics: &MetricsHandle,
    ) -> Result<Arc<Shared>, WorkerError> {
        let m = &self.maker;
        let capture = Capture::new(m.output.clone(), m.http_debug, scenario.clone(), None, m.grants.text.clone());
        let mut ctx = DoerCtx::new(&m.grants, &capture, &m.connections, event_loop, metrics.clone(), m.max_memory)
            .map_err(|err| WorkerError::new(format!("granting the plugin's directories: {err:#}")))?;
        let attached = Arc::new(AtomicU32::new(0));
        ctx.slots = Slots::for_attached(attached.clone());
        let mut store = Store::new(&m.engine, ctx);
        store.limiter(|ctx| &mut ctx.limits);
        let mut runaway = Runaway::default();
        store.epoch_deadline_callback(move |ctx| {
            runaway.check(ctx.data().progress)?;
            // Yield at every tick, so the event loop's other instances run beside a long task.
            Ok(UpdateDeadline::Yield(1))
        });
        store.set_epoch_deadline(1);
        let instance = m
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|err| WorkerError::new(format!("instantiating the plugin: {}", one_line(&err))))?;
        let do_task = WorkloadAsync::loadhost_plugin_doer_async(&instance).func_do_task();
        let (jobs, queue) = mpsc::unbounded_channel();
        let (ended, fate) = watch::channel(None);
        tokio::spawn(drive(store, do_task, queue, ended, capture));
        Ok(Arc::new(Shared { jobs, attached, fate }))
    }
}

/// Run the instance's tasks as they come until every worker has gone or the instance traps; then
/// say why it ended, and every task still waiting gets that reply.
async fn drive(
    mut store: Store<DoerCtx>,
    do_task: DoTask,
    mut queue: mpsc::UnboundedReceiver<Job>,
    ended: watch::Sender<Option<Arc<str>>>,
    capture: Arc<Capture>,
) {
    let result = store
        .run_concurrent(async |store| -> wasmtime::Result<()> {
            let mut calls = FuturesUnordered::new();
            loop {
                tokio::select! {
                    Some((reply, result)) = calls.next(), if !calls.is_empty() => {
                        progressed(store);
                        let reply: oneshot::Sender<Reply> = reply;
                        match result {
                            // A task abandoned at its deadline has no one waiting: fine.
                            Ok((returned,)) => drop(reply.send(Reply::Returned(returned))),
                            // Its reply is sent below, with every other task's.
                            Err(trap) => return Err(trap),
                        }
                    }
                    job = queue.recv() => {
                        // Every worker has gone: the tasks still running (abandoned ones) go too.
                        let Some(Job { task, reply }) = job else { return Ok(()) };
                        if calls.len() >= MAX_CALLS {
                            // Fails the task with the rest: its reply goes with theirs.
                            drop(reply);
                            return Err(AbandonedTasks { under_way: calls.len() }.into());
                        }
                        progressed(store);
                        calls.push(async move { (reply, do_task.call_concurrent(store, (task,)).await) });
                    }
                }
            }
        })
        .await;
    let why: Arc<str> = match result.and_then(|r| r) {
        Ok(()) => Arc::from("the instance was ended"),
        Err(trap) => Arc::from(bounded(crate::worker::describe_trap(&trap, &capture))),
    };
    queue.close();
    // Tasks sent but never started fail with the rest.
    while let Ok(Job { reply, .. }) = queue.try_recv() {
        let _ = reply.send(Reply::Trapped(why.clone()));
    }
    capture.flush();
    let _ = ended.send(Some(why));
}

fn progressed(store: &Accessor<DoerCtx>) {
    store.with(|mut access| access.get().progressed());
}

/// Whether the instance has run wasm for [`RUNAWAY_LIMIT`] of CPU time without progress (see
/// `DoerCtx::progress`), or has held its co-tenants in long stretches most of the time.
///
/// Time on the CPU, not wall time: on a machine loaded by other work, wall time between epoch
/// ticks is mostly time the thread waited for a CPU, and the wall-time guard (which took a gap
/// between ticks as "not running") missed a task that never awaited (13.2 s for a 6 s plan, no
/// runaway). The thread's CPU time since the last check of any shared instance on it is this
/// instance's: other instances' wasm on the same event loop is theirs, checked by them.
#[derive(Debug)]
struct Runaway {
    progress: u64,
    /// CPU time wasm has run since `progress` last changed.
    stretch: Duration,
    /// Seconds of past stretches longer than [`HOLD`], less [`DEBT_DECAY`] of the wall time since:
    /// a task that awaits once every 1.9 s holds its co-tenants as surely as one that never does.
    debt: f64,
    /// When the last check ran.
    seen: Instant,
}

/// Checks this close together saw the instance running throughout (the epoch callback runs once
/// a tick, `limits::EPOCH_TICK`, while wasm runs).
const RUNNING_GAP: Duration = Duration::from_millis(35);

/// A stretch of wasm without progress longer than this holds the instance's other tasks (their
/// awaited calls may be done, but none can run) and counts towards its debt.
const HOLD: Duration = Duration::from_millis(100);

/// How fast the debt of long stretches is paid back, in seconds per second: an instance held more
/// than this share of the time, in stretches over [`HOLD`], ends as a runaway once its debt
/// passes [`RUNAWAY_LIMIT`].
const DEBT_DECAY: f64 = 0.75;

thread_local! {
    /// This thread's CPU time when a shared instance on it was last checked.
    static LAST_CHECK_CPU: std::cell::Cell<Option<Duration>> = const { std::cell::Cell::new(None) };
}

/// The CPU time this thread has used; `None` where the clock cannot be read.
fn thread_cpu() -> Option<Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime(3) writes one timespec, which we own, and reads nothing else.
    let read = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (read == 0).then(|| Duration::new(u64::try_from(ts.tv_sec).unwrap_or(0), u32::try_from(ts.tv_nsec).unwrap_or(0)))
}

impl Default for Runaway {
    fn default() -> Self {
        Self { progress: 0, stretch: Duration::ZERO, debt: 0.0, seen: Instant::now() }
    }
}

/// A shared instance's task ran wasm too long without awaiting.
#[derive(Debug, thiserror::Error)]
#[error(
    "a task ran for over {limit:?} of CPU time without awaiting, or held its instance most of the time in long \
     stretches (a loop, or a blocking call such as std::thread::sleep or a synchronous import): no other task of \
     its instance could run, so they all end"
)]
pub struct RunawayTask {
    /// The limit passed.
    pub limit: Duration,
}

impl Runaway {
    fn check(&mut self, progress: u64) -> Result<(), RunawayTask> {
        // The CPU this thread used since any shared instance on it was last checked: ours.
        let ran = match thread_cpu() {
            Some(now) => {
                let last = LAST_CHECK_CPU.with(|c| c.replace(Some(now)));
                last.map_or(Duration::ZERO, |last| now.saturating_sub(last))
            }
            None => crate::limits::EPOCH_TICK,
        };
        self.check_at(progress, ran, Instant::now())
    }

    /// `ran`: the thread's CPU time since the last check on it; `now`: the wall clock.
    fn check_at(&mut self, progress: u64, ran: Duration, now: Instant) -> Result<(), RunawayTask> {
        let wall = now.saturating_duration_since(self.seen);
        self.seen = now;
        // Checked a tick ago, the instance ran throughout and the thread's time is its own. After
        // a longer gap it had yielded or waited (every task awaiting a slow host) and the thread
        // did other work meanwhile: at most two ticks of that are the instance's.
        let ran = if wall <= RUNNING_GAP { ran } else { ran.min(crate::limits::EPOCH_TICK * 2) };
        self.debt = (self.debt - wall.as_secs_f64() * DEBT_DECAY).max(0.0);
        // What ran since the last check belongs to the stretch it ends.
        self.stretch += ran;
        if progress != self.progress {
            if self.stretch > HOLD {
                self.debt += self.stretch.as_secs_f64();
            }
            self.progress = progress;
            self.stretch = Duration::ZERO;
        }
        let holding = if self.stretch > HOLD { self.stretch.as_secs_f64() } else { 0.0 };
        if self.stretch > RUNAWAY_LIMIT || self.debt + holding > RUNAWAY_LIMIT.as_secs_f64() {
            return Err(RunawayTask { limit: RUNAWAY_LIMIT });
        }
        Ok(())
    }
}

/// A worker of a shared instance: a handle that sends its tasks to the instance.
pub struct SharedWorker {
    instances: Arc<Instances>,
    shared: Arc<Shared>,
    event_loop: u32,
    scenario: Arc<str>,
    id: u32,
    metrics: MetricsHandle,
    text: Arc<PluginText>,
}

impl SharedWorker {
    pub(crate) async fn new(
        instances: Arc<Instances>,
        event_loop: u32,
        scenario: Arc<str>,
        id: u32,
        metrics: MetricsHandle,
    ) -> Result<Self, WorkerError> {
        let shared = instances.attach(event_loop, &scenario, &metrics).await?;
        let text = instances.maker.grants.text.clone();
        Ok(Self { instances, shared, event_loop, scenario, id, metrics, text })
    }

    pub(crate) async fn run(&mut self, task: loadhost_engine::Task<'_>) -> TaskOutcome {
        if self.shared.ended() {
            // Its instance trapped while this worker was idle: a new one, not a failed task.
            match self.instances.attach(self.event_loop, &self.scenario, &self.metrics).await {
                Ok(shared) => self.leave(shared),
                Err(err) => return TaskOutcome::Error(loadhost_metrics::ErrorKind::Trapped, err.to_string()),
            }
        }
        let task = Task {
            scenario: self.scenario.to_string(),
            worker_id: self.id,
            iteration: task.iteration,
            attempt: task.attempt,
            input: task.input.to_vec(),
        };
        let (reply, answer) = oneshot::channel();
        let reply = match self.shared.jobs.send(Job { task, reply }) {
            Ok(()) => answer.await.ok(),
            Err(_) => None,
        };
        let reply = match reply {
            Some(reply) => reply,
            // The instance ended before it replied: why comes with its end.
            None => Reply::Trapped(self.fate().await),
        };
        match reply {
            Reply::Returned(returned) => crate::worker::outcome(returned, &self.text),
            Reply::Trapped(why) => TaskOutcome::Error(loadhost_metrics::ErrorKind::Trapped, why.to_string()),
        }
    }

    /// Why the instance ended, once it has.
    async fn fate(&self) -> Arc<str> {
        let mut fate = self.shared.fate.clone();
        match fate.wait_for(Option::is_some).await {
            Ok(why) => why.clone().unwrap_or_else(|| Arc::from("the instance ended")),
            Err(_) => Arc::from("the instance ended"),
        }
    }

    /// Move to `shared`, leaving the instance it had.
    fn leave(&mut self, shared: Arc<Shared>) {
        let old = std::mem::replace(&mut self.shared, shared);
        old.attached.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for SharedWorker {
    fn drop(&mut self) {
        self.shared.attached.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: Duration = Duration::from_millis(10);

    fn runaway(start: Instant) -> Runaway {
        Runaway { seen: start, ..Runaway::default() }
    }

    #[test]
    fn wasm_running_without_progress_past_the_limit_of_cpu_time_is_a_runaway() {
        let start = Instant::now();
        let mut guard = runaway(start);
        let mut now = start;
        let mut cpu = Duration::ZERO;
        // Every tick a full tick on the CPU and no progress: fine until the limit, then a runaway.
        while cpu + TICK <= RUNAWAY_LIMIT {
            now += TICK;
            cpu += TICK;
            assert!(guard.check_at(0, TICK, now).is_ok(), "{cpu:?}");
        }
        assert!(guard.check_at(0, TICK + TICK, now + TICK).is_err());
    }

    #[test]
    fn on_a_loaded_machine_the_cpu_time_counts_not_the_wall_time() {
        // A fifth of a CPU: 50 ms between checks, 10 ms of them running. The wall-time guard took
        // every such gap for "not running" and never fired; this one fires after 2 s of CPU.
        let start = Instant::now();
        let mut guard = runaway(start);
        let mut now = start;
        let mut fired_at = None;
        for i in 1..=1_000u32 {
            now += Duration::from_millis(50);
            if guard.check_at(0, TICK, now).is_err() {
                fired_at = Some(i);
                break;
            }
        }
        assert_eq!(fired_at, Some(201), "after 2 s of CPU, 10 s of wall time");
    }

    #[test]
    fn awaiting_once_a_stretch_still_counts_long_stretches_held() {
        // 1.9 s of CPU, then one await, over and over: under the limit each time, but it held its
        // co-tenants nearly all the time (9.5 s once).
        let start = Instant::now();
        let mut guard = runaway(start);
        let mut now = start;
        let mut fired = false;
        'run: for progress in 0..10u64 {
            for _ in 0..190 {
                now += TICK;
                if guard.check_at(progress, TICK, now).is_err() {
                    fired = true;
                    break 'run;
                }
            }
        }
        assert!(fired, "held 1.9 s of every 1.9 s");
        assert!(now.duration_since(start) < Duration::from_secs(6), "{:?}", now.duration_since(start));
    }

    #[test]
    fn progress_short_stretches_or_idle_time_never_add_up() {
        let start = Instant::now();
        let mut guard = runaway(start);
        let mut now = start;
        for step in 0..10_000u64 {
            now += TICK;
            // A busy instance: tasks start and end all the time.
            assert!(guard.check_at(step, TICK, now).is_ok());
        }
        // Stretches of 80 ms, each ending in an await: under HOLD, never a debt.
        for step in 0..1_000u64 {
            now += Duration::from_millis(80);
            assert!(guard.check_at(20_000 + step, Duration::from_millis(80), now).is_ok());
        }
        // Stretches of 300 ms half the time: held less than DEBT_DECAY of the time.
        for step in 0..200u64 {
            now += Duration::from_millis(600);
            assert!(guard.check_at(30_000 + step, Duration::from_millis(300), now).is_ok(), "{step}");
        }
        // A long wait with every task awaiting a slow host, the thread busy elsewhere (3 s of
        // its CPU): not the instance's, no runaway.
        now += Duration::from_secs(5);
        assert!(guard.check_at(40_000, Duration::from_secs(3), now).is_ok());
        assert!(guard.check_at(40_001, Duration::from_secs(3), now + Duration::from_secs(60)).is_ok());
        assert!(guard.debt < 0.1, "{}", guard.debt);
    }
}
