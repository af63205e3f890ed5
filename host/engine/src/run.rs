//! One run from start to report: start the crew, pace or loop, emit a row per interval, and fold
//! everything into the report.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use loadhost_metrics::{Gauges, IntervalRow, Recorder, RunReport, Window, WorkerStats};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, sleep_until};

use crate::control::{APPLY_EVERY, Control, CrewStatus, RunState, Status};
use crate::crew::{Claims, Crew};
use crate::plan::{Model, Plan};
use crate::shard::{self, Shard, ShardEnd, Shared};
use crate::stop::{Interrupt, Stop};
use crate::worker::{MetricsHandle, WorkerFactory};
use crate::{EngineError, Observer};

/// The id under which the plugin's `setup` and `teardown` record metrics (no worker has it).
const LIFECYCLE_ID: u32 = u32::MAX;

/// Recorder shards: enough that two busy runtime threads rarely meet on one lock, few enough that
/// draining them every interval stays cheap.
const SHARDS: usize = 16;

/// Run `plan` with workers from `factory`, telling `observer` about every interval.
///
/// Workers are made before the load starts; if one cannot be made, nothing is sent and
/// [`EngineError::WorkerStart`] says why.
pub async fn run<F: WorkerFactory>(
    plan: &Plan,
    factory: F,
    observer: &mut dyn Observer,
) -> Result<RunReport, EngineError> {
    run_with_control(plan, factory, observer, None).await
}

/// A gate "without a limit", for runs whose gate may be set live: large, but small enough that
/// shrinking it is one `acquire_many`.
const UNLIMITED_GATE: u32 = 1 << 30;

/// [`run`], driven live through `control` (see [`Control`]).
pub async fn run_with_control<F: WorkerFactory>(
    plan: &Plan,
    factory: F,
    observer: &mut dyn Observer,
    control: Option<Arc<Control>>,
) -> Result<RunReport, EngineError> {
    run_live(plan, factory, observer, Live { control, interrupt: None }).await
}

/// What may reach into a run from outside while it goes.
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// Live changes and the status snapshot (the control API).
    pub control: Option<Arc<Control>>,
    /// Stop requests (signals): graceful first, immediate on the second.
    pub interrupt: Option<Arc<Interrupt>>,
}

/// [`run`], with live control and stop requests.
pub async fn run_live<F: WorkerFactory>(
    plan: &Plan,
    factory: F,
    observer: &mut dyn Observer,
    live: Live,
) -> Result<RunReport, EngineError> {
    let recorder = Arc::new(Recorder::new(SHARDS));
    let lifecycle_metrics = MetricsHandle::new(recorder.clone(), LIFECYCLE_ID);
    let setup_data = setup(&factory, plan.lifecycle_timeout(), lifecycle_metrics.clone()).await?;
    let teardown = Some(lifecycle_metrics);
    run_scenario(plan, factory, observer, live, setup_data, recorder, teardown).await
}

/// The plugin's setup, once, before anything else: its failure sends nothing.
async fn setup<F: WorkerFactory>(
    factory: &F,
    limit: Duration,
    metrics: MetricsHandle,
) -> Result<Option<Arc<str>>, EngineError> {
    match tokio::time::timeout(limit, factory.setup(metrics)).await {
        Ok(Ok(data)) => Ok(data.map(Arc::from)),
        Ok(Err(err)) => Err(EngineError::Setup(err.to_string())),
        Err(_) => Err(EngineError::Setup(format!("took longer than {limit:?}"))),
    }
}

/// The plugin's teardown, once, after everything: why it failed, if it did.
async fn teardown<F: WorkerFactory>(
    factory: &F,
    data: &str,
    limit: Duration,
    metrics: MetricsHandle,
) -> Option<String> {
    match tokio::time::timeout(limit, factory.teardown(data, metrics)).await {
        Ok(Ok(())) => None,
        Ok(Err(err)) => Some(err.to_string()),
        Err(_) => Some(format!("took longer than {limit:?}")),
    }
}

/// What several scenarios run together measured.
#[derive(Debug)]
pub struct ScenarioRuns {
    /// One report per scenario, in the order given.
    pub reports: Vec<RunReport>,
    /// Set when the plugin's `teardown` failed: why.
    pub teardown_error: Option<String>,
    /// Metrics the plugin recorded in its `setup` and `teardown`.
    pub lifecycle: Window,
    /// Set when a task of the engine panicked after the load started (a bug): why. The reports
    /// still hold everything measured.
    pub broken: Option<String>,
}

/// Run several plans at once, each a scenario with its own pacer, crew and metrics, starting after
/// its plan's start delay. The plugin's setup runs once before all of them and its teardown once
/// after; every scenario's workers get the same setup data. Interval rows of every scenario go to
/// `observer` (each row names its scenario).
pub async fn run_scenarios<F: WorkerFactory + Clone>(
    plans: &[Plan],
    factory: F,
    observer: &mut dyn Observer,
    interrupt: Option<Arc<Interrupt>>,
) -> Result<ScenarioRuns, EngineError> {
    let Some(first) = plans.first() else {
        return Ok(ScenarioRuns {
            reports: Vec::new(),
            teardown_error: None,
            lifecycle: Window::default(),
            broken: None,
        });
    };
    let lifecycle = Arc::new(Recorder::new(1));
    let lifecycle_metrics = MetricsHandle::new(lifecycle.clone(), LIFECYCLE_ID);
    let setup_data = setup(&factory, first.lifecycle_timeout(), lifecycle_metrics.clone()).await?;
    let shared = std::sync::Mutex::new(observer);
    let runs = plans.iter().map(|plan| {
        let (factory, setup_data, shared) = (factory.clone(), setup_data.clone(), &shared);
        let live = Live { control: None, interrupt: interrupt.clone() };
        async move {
            tokio::time::sleep(plan.start_delay()).await;
            let mut forward = Forward(shared);
            let recorder = Arc::new(Recorder::new(SHARDS));
            run_scenario(plan, factory, &mut forward, live, setup_data, recorder, None).await
        }
    });
    let mut reports = Vec::new();
    let mut broken = None;
    for result in futures_util::future::join_all(runs).await {
        match result {
            Ok(report) => reports.push(report),
            Err(EngineError::Broken { report, reason }) => {
                broken.get_or_insert(reason);
                reports.push(*report);
            }
            Err(other) => return Err(other),
        }
    }
    let teardown_error = match &setup_data {
        Some(data) => teardown(&factory, data, first.lifecycle_timeout(), lifecycle_metrics).await,
        None => None,
    };
    Ok(ScenarioRuns { reports, teardown_error, lifecycle: lifecycle.drain(), broken })
}

/// Forwards one scenario's rows to the observer every scenario shares.
struct Forward<'a, 'o>(&'a std::sync::Mutex<&'o mut dyn Observer>);

impl Observer for Forward<'_, '_> {
    fn on_interval(&mut self, row: &IntervalRow) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).on_interval(row);
    }

    fn on_window(&mut self, row: &IntervalRow, window: &loadhost_metrics::Window) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).on_window(row, window);
    }
}

/// One scenario from start to report: its shards make their crews, start together, and run until
/// every worker has ended, while this loop cuts intervals, applies live control and handles stops.
/// `teardown_metrics`, when given, runs the plugin's teardown at the end with those metrics (a
/// single-scenario run owns its lifecycle).
async fn run_scenario<F: WorkerFactory>(
    plan: &Plan,
    factory: F,
    observer: &mut dyn Observer,
    live: Live,
    setup_data: Option<Arc<str>>,
    recorder: Arc<Recorder>,
    teardown_metrics: Option<MetricsHandle>,
) -> Result<RunReport, EngineError> {
    let Live { control, interrupt } = live;
    let stop = Arc::new(Stop::default());
    // With live control the gate always exists, so it can be set while the run goes.
    let mut gate_size = plan.max_in_flight().or(control.as_ref().map(|_| UNLIMITED_GATE));
    let gate = gate_size.map(|n| Arc::new(tokio::sync::Semaphore::new(n as usize)));
    let rate_now = Arc::new(AtomicU64::new(0));
    let shared = Arc::new(Shared {
        plan: plan.clone(),
        factory: Arc::new(factory),
        recorder: recorder.clone(),
        stop: stop.clone(),
        gate: gate.clone(),
        setup_data: setup_data.clone(),
        control: control.clone(),
        rate_now: rate_now.clone(),
        claims: (!plan.is_open()).then(|| Arc::new(Claims::new(plan.task_limit(), plan.segment()))),
        count: plan.event_loops(control.is_some()),
        logged: Arc::default(),
    });
    let (crews, gos, mut done) = start_shards(&shared).await?;
    // A stop asked for while the crews were starting: send nothing.
    if interrupt.as_ref().is_some_and(|i| i.requests() > 0) {
        stop.stop_by_user(&stop_reason(interrupt.as_deref()));
    }
    let started_at = SystemTime::now();
    let start = Instant::now();
    for go in gos {
        let _ = go.send(Some(start));
    }

    let initial = crews.sum(|c| &c.resident);
    let mut ticker = Ticker::new(start, plan.interval(), !plan.is_open(), initial, plan.scenario());
    let closed_deadline = match plan.model() {
        Model::Closed { duration, .. } => duration.map(|d| start + d),
        Model::Open { .. } => None,
    };
    let mut panics = Vec::new();
    let mut running = shared.count;
    let mut next_apply = start + APPLY_EVERY;
    let mut applied = 0u64;
    let mut interrupts_seen = 0u32;
    // After a stop, tasks under way have until `grace_ends`; then the worker loops are dropped.
    let mut grace_ends: Option<Instant> = None;
    let mut cut = false;
    // A second interrupt: no grace, no teardown.
    let mut forced = false;
    while running > 0 {
        tokio::select! {
            biased;
            ended = done.recv() => match ended {
                Some(end) => {
                    running -= 1;
                    panics.extend(end.panics);
                }
                None => {
                    panics.push("an event loop ended without reporting (it panicked)".to_owned());
                    break;
                }
            },
            requests = interrupted(interrupt.as_deref(), interrupts_seen), if interrupts_seen < 2 => {
                interrupts_seen = requests;
                stop.stop_by_user(&stop_reason(interrupt.as_deref()));
                if requests >= 2 {
                    forced = true;
                    grace_ends = Some(Instant::now());
                }
            }
            () = stop.aborted(), if grace_ends.is_none() => {
                grace_ends = Some(Instant::now() + plan.grace());
            }
            () = sleep_until(grace_ends.unwrap_or(start)), if grace_ends.is_some() && !cut => {
                cut = true;
                stop.cut();
            }
            () = sleep_until(ticker.next_tick) => ticker.emit(&recorder, &crews, observer, ticker.next_tick),
            () = sleep_until(next_apply), if control.is_some() => {
                next_apply += APPLY_EVERY;
                if let Some(control) = &control {
                    apply(control, &crews, gate.as_ref(), &mut gate_size, &mut applied);
                    control.publish(status(control, &crews, &ticker, &rate_now, gate_size, plan.is_open(), RunState::Running));
                }
            }
            () = sleep_until(closed_deadline.unwrap_or(start)), if closed_deadline.is_some() && stop.generating() => {
                stop.end_generation();
            }
        }
    }
    let end = Instant::now();
    stop.all_over();
    let teardown_error = match (&setup_data, teardown_metrics) {
        (Some(_), Some(_)) if forced => {
            tracing::warn!("the plugin's teardown was skipped: the run was stopped a second time");
            None
        }
        (Some(data), Some(metrics)) => teardown(&*shared.factory, data, plan.lifecycle_timeout(), metrics).await,
        _ => None,
    };
    ticker.emit(&recorder, &crews, observer, end);

    let elapsed = end - start;
    let (aborted, stopped) = match stop.reason() {
        Some(reason) if stop.by_user() => (None, Some(reason)),
        reason => (reason, None),
    };
    if let Some(control) = &control {
        control.publish(status(control, &crews, &ticker, &rate_now, gate_size, plan.is_open(), RunState::Done));
    }
    let generation = if plan.is_open() {
        // Queued tasks may start after the schedule ends: generation lasts until the last start.
        let last_start = crews.last_start().map_or(Duration::ZERO, |at| at - start);
        let planned = if stop.is_aborted() { Duration::ZERO } else { plan.planned_generation().unwrap_or_default() };
        last_start.max(planned)
    } else {
        match plan.planned_generation() {
            Some(limit) => elapsed.min(limit),
            None => elapsed,
        }
    };
    let workers = WorkerStats {
        min: ticker.min_workers,
        peak: ticker.peak_workers,
        final_: crews.sum(|c| &c.resident),
        grown: crews.sum(|c| &c.grown),
        retired: crews.sum(|c| &c.retired),
        replaced: crews.sum(|c| &c.replaced),
    };
    let report = RunReport {
        scenario: plan.scenario().to_owned(),
        offset: plan.start_delay(),
        started_at,
        elapsed,
        generation,
        started: crews.sum(|c| &c.started),
        target_rate: plan.target_rate(),
        totals: ticker.totals,
        workers,
        intervals: ticker.index,
        aborted,
        stopped,
        teardown_error,
    };
    match panics.into_iter().next() {
        // The load ran: what it measured is the caller's to write, beside the error.
        Some(reason) => Err(EngineError::Broken { report: Box::new(report), reason }),
        None => Ok(report),
    }
}

/// Start every shard and wait until each has its crew up. When one cannot, the others are told
/// not to start and its error is returned: nothing was sent.
async fn start_shards<F: WorkerFactory>(
    shared: &Arc<Shared<F>>,
) -> Result<(Crews<F>, Vec<oneshot::Sender<Option<Instant>>>, mpsc::UnboundedReceiver<ShardEnd>), EngineError> {
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let mut gos = Vec::new();
    let mut readies = Vec::new();
    for index in 0..shared.count {
        let (ready_tx, ready_rx) = oneshot::channel();
        let (go_tx, go_rx) = oneshot::channel();
        // On an error here the shards already started see their `go` dropped and end.
        shard::launch(Shard { shared: shared.clone(), index }, ready_tx, go_rx, done_tx.clone())?;
        gos.push(go_tx);
        readies.push(ready_rx);
    }
    drop(done_tx);
    let mut crews = Vec::new();
    let mut failure = None;
    for ready in readies {
        match ready.await {
            Ok(Ok(crew)) => crews.push(crew),
            Ok(Err(err)) => {
                failure.get_or_insert(err);
            }
            Err(_) => {
                failure.get_or_insert(EngineError::Panicked("an event loop ended before its crew was ready".into()));
            }
        }
    }
    if let Some(err) = failure {
        for go in gos {
            let _ = go.send(None);
        }
        while done.recv().await.is_some() {}
        shared.stop.all_over();
        return Err(err);
    }
    Ok((Crews(crews), gos, done))
}

/// The crews of every shard, summed for the interval rows, the status and the report.
struct Crews<F: WorkerFactory>(Vec<Arc<Crew<F>>>);

impl<F: WorkerFactory> Crews<F> {
    /// One counter, added over the shards.
    fn sum(&self, counter: impl Fn(&Crew<F>) -> &AtomicU64) -> u64 {
        self.0.iter().map(|crew| counter(crew).load(Ordering::Relaxed)).sum()
    }

    /// When the last task of the run started.
    fn last_start(&self) -> Option<Instant> {
        self.0.iter().filter_map(|crew| crew.last_start()).max()
    }

    /// Retries waiting for their time.
    fn retries_pending(&self) -> u64 {
        self.0.iter().map(|crew| crew.retries_pending()).sum()
    }

    /// A new ceiling for the whole crew, dealt out to the shards.
    fn set_max_workers(&self, max: u32) {
        let count = self.0.len() as u32;
        for (index, crew) in self.0.iter().enumerate() {
            crew.max_workers.store(u64::from(shard::share(max, index as u32, count)), Ordering::Relaxed);
        }
    }

    fn stop_by_user(&self, reason: &str) {
        if let Some(crew) = self.0.first() {
            crew.stop.stop_by_user(reason);
        }
    }
}

/// Cuts the run into intervals: drains the recorder, samples gauges, and keeps the totals.
struct Ticker {
    start: Instant,
    interval: Duration,
    next_tick: Instant,
    last_end: Duration,
    index: u64,
    last_started: u64,
    last_fresh: u64,
    closed_model: bool,
    totals: Window,
    min_workers: u64,
    peak_workers: u64,
    scenario: Arc<str>,
}

impl Ticker {
    fn new(start: Instant, interval: Duration, closed_model: bool, workers: u64, scenario: &str) -> Self {
        Self {
            start,
            interval,
            next_tick: start + interval,
            last_end: Duration::ZERO,
            index: 0,
            last_started: 0,
            last_fresh: 0,
            closed_model,
            totals: Window::default(),
            min_workers: workers,
            peak_workers: workers,
            scenario: scenario.into(),
        }
    }

    fn emit<F: WorkerFactory>(
        &mut self,
        recorder: &Recorder,
        crews: &Crews<F>,
        observer: &mut dyn Observer,
        at: Instant,
    ) {
        let mut window = recorder.drain();
        if window.plugin.folded() > 0 && self.totals.plugin.folded() == 0 {
            tracing::warn!(
                "the plugin has made more than {} metric series: samples for new ones go to NAME{{overflow:true}}; \
                 tag by something with fewer values",
                loadhost_metrics::cardinality::MAX_SERIES
            );
        }
        if window.plugin.invalid() > 0 && self.totals.plugin.invalid() == 0 {
            tracing::warn!(
                "the plugin recorded metric samples with malformed names or tags (names: letters, digits, '_' \
                 and '.', at most 128; tag values at most 256 characters; at most 16 tags): they are ignored and \
                 counted as invalid_samples"
            );
        }
        let started_total = crews.sum(|c| &c.started);
        let started = started_total - self.last_started;
        self.last_started = started_total;
        if self.closed_model {
            // The closed model has no pacer: a task is scheduled when a worker claims it.
            let fresh_total = crews.sum(|c| &c.claimed);
            window.counts.scheduled = fresh_total - self.last_fresh;
            self.last_fresh = fresh_total;
        }
        let end = at.saturating_duration_since(self.start);
        let workers = crews.sum(|c| &c.resident);
        self.min_workers = self.min_workers.min(workers);
        self.peak_workers = self.peak_workers.max(workers);
        let gauges = Gauges { started, workers, idle: crews.sum(|c| &c.idle), in_flight: crews.sum(|c| &c.in_flight) };
        let mut row = IntervalRow::from_window(self.index, self.last_end, end, &window, gauges);
        row.scenario = self.scenario.clone();
        observer.on_window(&row, &window);
        self.totals.merge(&window);
        self.index += 1;
        self.last_end = end;
        self.next_tick += self.interval;
    }
}

/// Why a run stopped on an [`Interrupt`]: the reason it was given, or a signal.
fn stop_reason(interrupt: Option<&Interrupt>) -> String {
    interrupt.and_then(Interrupt::reason).unwrap_or_else(|| "interrupted (Ctrl-C or SIGTERM)".to_owned())
}

/// Resolve with the number of stop requests once it differs from `seen`; never without a source.
async fn interrupted(interrupt: Option<&Interrupt>, seen: u32) -> u32 {
    match interrupt {
        Some(interrupt) => interrupt.changed(seen).await,
        None => std::future::pending().await,
    }
}

/// Apply what was requested since the last look: the crew's ceiling, the gate, a stop.
fn apply<F: WorkerFactory>(
    control: &Control,
    crews: &Crews<F>,
    gate: Option<&Arc<tokio::sync::Semaphore>>,
    gate_size: &mut Option<u32>,
    applied: &mut u64,
) {
    let version = control.version();
    if version == *applied {
        return;
    }
    *applied = version;
    let requested = control.requested();
    if let Some(max) = requested.max_workers {
        crews.set_max_workers(max);
    }
    if let (Some(want), Some(gate), Some(size)) = (requested.max_in_flight, gate, gate_size.as_mut()) {
        if want > *size {
            gate.add_permits((want - *size) as usize);
        } else if want < *size {
            // Take the surplus out as tasks under way give their permits back.
            let (gate, surplus) = (gate.clone(), *size - want);
            tokio::spawn(async move {
                if let Ok(permits) = gate.acquire_many_owned(surplus).await {
                    permits.forget();
                }
            });
        }
        *size = want;
    }
    if requested.stop {
        crews.stop_by_user("stopped through the control API");
    }
}

/// The status snapshot.
fn status<F: WorkerFactory>(
    control: &Control,
    crews: &Crews<F>,
    ticker: &Ticker,
    rate_now: &AtomicU64,
    gate_size: Option<u32>,
    open: bool,
    state: RunState,
) -> Status {
    let requested = control.requested();
    let state = match state {
        RunState::Done => RunState::Done,
        _ if crews.0.first().is_some_and(|c| c.stop.is_aborted() || !c.stop.generating()) => RunState::Stopping,
        _ if requested.paused || requested.rate == Some(0.0) => RunState::Paused,
        other => other,
    };
    Status {
        state,
        elapsed_s: ticker.start.elapsed().as_secs_f64(),
        rate_per_s: open.then(|| f64::from_bits(rate_now.load(Ordering::Relaxed))),
        workers: CrewStatus {
            resident: crews.sum(|c| &c.resident),
            idle: crews.sum(|c| &c.idle),
            max: crews.sum(|c| &c.max_workers),
        },
        in_flight: crews.sum(|c| &c.in_flight),
        max_in_flight: gate_size.filter(|n| *n != UNLIMITED_GATE),
        retries_pending: crews.retries_pending(),
        started: crews.sum(|c| &c.started),
        tasks: ticker.totals.counts,
    }
}
