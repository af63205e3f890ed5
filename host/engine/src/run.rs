//! One run from start to report: start the crew, pace or loop, emit a row per interval, and fold
//! everything into the report.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use loadhost_metrics::{Gauges, IntervalRow, Outcome, Recorder, RunReport, Window, WorkerStats};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until};

use crate::control::{APPLY_EVERY, Control, CrewStatus, RunState, Status};
use crate::crew::{Bounds, Claims, Crew, RetrySetup, TimeLimits};
use crate::dispatch;
use crate::pacer::{Pacer, PacerClock, Retries};
use crate::plan::{Model, Plan};
use crate::retry;
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
        return Ok(ScenarioRuns { reports: Vec::new(), teardown_error: None, lifecycle: Window::default() });
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
    let reports = futures_util::future::join_all(runs).await.into_iter().collect::<Result<Vec<_>, _>>()?;
    let teardown_error = match &setup_data {
        Some(data) => teardown(&factory, data, first.lifecycle_timeout(), lifecycle_metrics).await,
        None => None,
    };
    Ok(ScenarioRuns { reports, teardown_error, lifecycle: lifecycle.drain() })
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

/// One scenario from start to report. `teardown`, when given, runs the plugin's teardown at the
/// end with those metrics (a single-scenario run owns its lifecycle).
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
    let (grow_tx, mut grow_rx) = tokio::sync::mpsc::unbounded_channel();
    // A ramping closed crew may shrink to nothing; otherwise the crew never goes below its start.
    let floor = if plan.worker_curve().is_some() { 0 } else { plan.workers() };
    let bounds = Bounds { min: floor, max: plan.max_workers() };
    // With live control the gate always exists, so it can be set while the run goes.
    let mut gate_size = plan.max_in_flight().or(control.as_ref().map(|_| UNLIMITED_GATE));
    let gate = gate_size.map(|n| Arc::new(tokio::sync::Semaphore::new(n as usize)));
    let rate_now = Arc::new(AtomicU64::new(0));
    // Retries go back to the pacer in the open model; the closed model retries in place.
    let outstanding = Arc::new(AtomicU64::new(0));
    let (retry_queue, retry_intake) = match (plan.retries(), plan.is_open()) {
        (Some(policy), true) => {
            let (queue, intake) = retry::queue(policy.queue_limit);
            (Some(queue), Some(intake))
        }
        _ => (None, None),
    };
    let retry_setup = plan.retries().map(|policy| RetrySetup {
        policy: *policy,
        queue: retry_queue,
        outstanding: outstanding.clone(),
    });
    let crew = Arc::new(Crew::new(
        factory,
        recorder.clone(),
        stop.clone(),
        plan.scenario(),
        bounds,
        grow_tx,
        gate.clone(),
        retry_setup,
        plan.feed().cloned(),
        setup_data.clone(),
        TimeLimits { init: plan.lifecycle_timeout(), task: plan.task_timeout() },
    ));
    let workers = crew.start(plan.workers()).await?;
    let initial = workers.len() as u64;

    let mut started_at = SystemTime::now();
    let mut start = Instant::now();
    let mut loops = JoinSet::new();
    let mut closed_deadline = None;
    let mut closed_claims = None;
    // Kept to collect tickets still in the channel when the grace runs out and the workers are gone.
    let mut leftover_intake = None;
    // A stop asked for while the crew was starting: send nothing.
    if interrupt.as_ref().is_some_and(|i| i.requests() > 0) {
        stop.stop_by_user(&stop_reason(interrupt.as_deref()));
    }
    let pacer = match plan.model() {
        Model::Open { curve, overload, .. } => {
            let (dispatch, intake) = dispatch::channel(plan.max_workers(), *overload, gate.clone());
            leftover_intake = Some(intake.clone());
            for (id, worker) in workers {
                loops.spawn(crew.clone().open_loop(id, worker, intake.clone()));
            }
            // The clock starts once every worker has announced itself idle: otherwise on a busy
            // machine the first due tasks could find no idle worker and drop.
            crew.wait_until_idle(initial).await;
            started_at = SystemTime::now();
            start = Instant::now();
            let retries = retry_intake.zip(plan.retries()).map(|(intake, policy)| Retries {
                intake,
                budget: policy.budget,
                flush_timeout: policy.flush_timeout,
                outstanding: outstanding.clone(),
                flush_spacing: plan
                    .target_rate()
                    .filter(|r| *r > 0.0)
                    .map_or(Duration::ZERO, |r| Duration::from_secs_f64(1.0 / r)),
                next_flush: None,
            });
            let live = control.clone().map(|c| (c, rate_now.clone()));
            let pacer = Pacer::new(
                curve.clone(),
                plan.task_limit(),
                start,
                dispatch,
                recorder.clone(),
                stop.clone(),
                retries,
                live,
            )
            .with_segment(plan.segment());
            Some(match plan.pacer_clock() {
                PacerClock::Runtime => tokio::spawn(pacer.run_on_runtime()),
                PacerClock::Thread => tokio::task::spawn_blocking(move || pacer.run_on_thread()),
            })
        }
        Model::Closed { duration, .. } => {
            let claims = Arc::new(Claims::new(plan.task_limit(), plan.segment()));
            for (id, worker) in workers {
                loops.spawn(crew.clone().closed_loop(id, worker, claims.clone()));
            }
            closed_deadline = duration.map(|d| start + d);
            closed_claims = Some(claims);
            None
        }
    };

    let mut ticker = Ticker::new(start, plan.interval(), pacer.is_none(), initial, plan.scenario());
    let mut panics = Vec::new();
    let mut next_apply = start + APPLY_EVERY;
    let ramp = plan.worker_curve().cloned().zip(closed_claims);
    let mut next_ramp = start;
    let mut applied = 0u64;
    let mut interrupts_seen = 0u32;
    // After a stop, tasks under way have until `grace_ends`; then the worker loops are dropped.
    let mut grace_ends: Option<Instant> = None;
    let mut cut = false;
    // A second interrupt: no grace, no teardown.
    let mut forced = false;
    loop {
        // The run is over when every worker loop has ended, unless a ramping closed crew is only
        // empty for now (ramped down to zero before ramping up again).
        if loops.is_empty() && (ramp.is_none() || !crew.stop.generating()) {
            break;
        }
        tokio::select! {
            biased;
            joined = loops.join_next(), if !loops.is_empty() => match joined {
                Some(Err(err)) if !err.is_cancelled() => panics.push(err.to_string()),
                _ => {}
            },
            requests = interrupted(interrupt.as_deref(), interrupts_seen), if interrupts_seen < 2 => {
                interrupts_seen = requests;
                crew.stop.stop_by_user(&stop_reason(interrupt.as_deref()));
                if requests >= 2 {
                    forced = true;
                    grace_ends = Some(Instant::now());
                }
            }
            () = crew.stop.aborted(), if grace_ends.is_none() => {
                grace_ends = Some(Instant::now() + plan.grace());
            }
            () = sleep_until(grace_ends.unwrap_or(start)), if grace_ends.is_some() && !cut => {
                cut = true;
                // Tasks still under way end as interrupted (each worker holds its task in a guard).
                loops.abort_all();
            }
            // A ramping closed crew: follow the target number of workers over time.
            () = sleep_until(next_ramp), if ramp.is_some() && crew.stop.generating() => {
                next_ramp += APPLY_EVERY;
                if let Some((curve, claims)) = &ramp {
                    let target = curve.rate_at(start.elapsed().as_secs_f64()).round() as u64;
                    crew.set_closed_target(target);
                    let shortfall = crew.closed_shortfall();
                    crew.reserve_peers(shortfall);
                    for _ in 0..shortfall {
                        loops.spawn(crew.clone().grow_closed(claims.clone()));
                    }
                }
            }
            Some(intake) = grow_rx.recv() => {
                loops.spawn(crew.clone().grow(intake));
            }
            () = sleep_until(ticker.next_tick) => ticker.emit(&crew, observer, ticker.next_tick),
            () = sleep_until(next_apply), if control.is_some() => {
                next_apply += APPLY_EVERY;
                if let Some(control) = &control {
                    apply(control, &crew, gate.as_ref(), &mut gate_size, &mut applied);
                    control.publish(status(control, &crew, &ticker, &rate_now, gate_size, plan.is_open(), RunState::Running));
                }
            }
            () = sleep_until(closed_deadline.unwrap_or(start)), if closed_deadline.is_some() && crew.stop.generating() => {
                crew.stop.end_generation();
            }
        }
    }
    let end = Instant::now();
    crew.in_flight.store(0, Ordering::Relaxed);
    if let Some(intake) = &leftover_intake {
        let left = intake.close_and_drain();
        let outcome = if crew.stop.is_aborted() { Outcome::Interrupted } else { Outcome::Dropped };
        recorder.record_unfinished(0, outcome, left);
    }
    let teardown_error = match (&setup_data, teardown_metrics) {
        (Some(_), Some(_)) if forced => {
            tracing::warn!("the plugin's teardown was skipped: the run was stopped a second time");
            None
        }
        (Some(data), Some(metrics)) => teardown(crew.factory(), data, plan.lifecycle_timeout(), metrics).await,
        _ => None,
    };
    let open_model = pacer.is_some();
    if let Some(handle) = pacer {
        handle.await.map_err(|err| EngineError::Panicked(err.to_string()))?;
    }
    ticker.emit(&crew, observer, end);
    if let Some(panic) = panics.into_iter().next() {
        return Err(EngineError::Panicked(panic));
    }

    let elapsed = end - start;
    let (aborted, stopped) = match stop.reason() {
        Some(reason) if stop.by_user() => (None, Some(reason)),
        reason => (reason, None),
    };
    if let Some(control) = &control {
        control.publish(status(control, &crew, &ticker, &rate_now, gate_size, plan.is_open(), RunState::Done));
    }
    let generation = if open_model {
        // Queued tasks may start after the schedule ends: generation lasts until the last start.
        let last_start = crew.last_start().map_or(Duration::ZERO, |at| at - start);
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
        final_: crew.resident.load(Ordering::Relaxed),
        grown: crew.grown.load(Ordering::Relaxed),
        retired: crew.retired.load(Ordering::Relaxed),
        replaced: crew.replaced.load(Ordering::Relaxed),
    };
    Ok(RunReport {
        scenario: plan.scenario().to_owned(),
        offset: plan.start_delay(),
        started_at,
        elapsed,
        generation,
        started: crew.started.load(Ordering::Relaxed),
        target_rate: plan.target_rate(),
        totals: ticker.totals,
        workers,
        intervals: ticker.index,
        aborted,
        stopped,
        teardown_error,
    })
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

    fn emit<F: WorkerFactory>(&mut self, crew: &Crew<F>, observer: &mut dyn Observer, at: Instant) {
        let mut window = crew.recorder.drain();
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
        let started_total = crew.started.load(Ordering::Relaxed);
        let started = started_total - self.last_started;
        self.last_started = started_total;
        if self.closed_model {
            // The closed model has no pacer: a task is scheduled when a worker claims it.
            let fresh_total = crew.claimed.load(Ordering::Relaxed);
            window.counts.scheduled = fresh_total - self.last_fresh;
            self.last_fresh = fresh_total;
        }
        let end = at.saturating_duration_since(self.start);
        let workers = crew.resident.load(Ordering::Relaxed);
        self.min_workers = self.min_workers.min(workers);
        self.peak_workers = self.peak_workers.max(workers);
        let gauges = Gauges {
            started,
            workers,
            idle: crew.idle.load(Ordering::Relaxed),
            in_flight: crew.in_flight.load(Ordering::Relaxed),
        };
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
    crew: &Crew<F>,
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
        crew.max_workers.store(u64::from(max), Ordering::Relaxed);
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
        crew.stop.stop_by_user("stopped through the control API");
    }
}

/// The status snapshot.
fn status<F: WorkerFactory>(
    control: &Control,
    crew: &Crew<F>,
    ticker: &Ticker,
    rate_now: &AtomicU64,
    gate_size: Option<u32>,
    open: bool,
    state: RunState,
) -> Status {
    let requested = control.requested();
    let state = match state {
        RunState::Done => RunState::Done,
        _ if crew.stop.is_aborted() || !crew.stop.generating() => RunState::Stopping,
        _ if requested.paused || requested.rate == Some(0.0) => RunState::Paused,
        other => other,
    };
    Status {
        state,
        elapsed_s: ticker.start.elapsed().as_secs_f64(),
        rate_per_s: open.then(|| f64::from_bits(rate_now.load(Ordering::Relaxed))),
        workers: CrewStatus {
            resident: crew.resident.load(Ordering::Relaxed),
            idle: crew.idle.load(Ordering::Relaxed),
            max: crew.max_workers.load(Ordering::Relaxed),
        },
        in_flight: crew.in_flight.load(Ordering::Relaxed),
        max_in_flight: gate_size.filter(|n| *n != UNLIMITED_GATE),
        retries_pending: crew.retries_pending(),
        started: crew.started.load(Ordering::Relaxed),
        tasks: ticker.totals.counts,
    }
}
