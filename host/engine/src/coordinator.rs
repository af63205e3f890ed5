//! The run loop of one scenario: its event loops (shards) start together and run until every
//! worker has ended, while this loop cuts intervals, applies live control and handles stops (the
//! grace, then the cut; a second interrupt skips both). Then the teardown and the report.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use loadhost_metrics::{Recorder, RunReport, WorkerStats};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::time::{Instant, sleep_until};

use crate::control::{APPLY_EVERY, Control, CrewStatus, RunState, Status};
use crate::crew::Crews;
use crate::lifecycle::teardown;
use crate::plan::{Model, Plan};
use crate::shard::{self, Shard, ShardEnd};
use crate::shared::{Claims, Shared};
use crate::stop::{Interrupt, Stop};
use crate::ticker::Ticker;
use crate::worker::{MetricsHandle, WorkerFactory};
use crate::{EngineError, Observer};

/// What may reach into a run from outside while it goes.
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// Live changes and the status snapshot (the control API).
    pub control: Option<Arc<Control>>,
    /// Stop requests (signals): graceful first, immediate on the second.
    pub interrupt: Option<Arc<Interrupt>>,
}

/// A gate "without a limit", for runs whose gate may be set live: large, but small enough that
/// shrinking it is one `acquire_many`.
const UNLIMITED_GATE: u32 = 1 << 30;

/// One scenario from start to report. `teardown_metrics`, when given, runs the plugin's teardown
/// at the end with those metrics (a single-scenario run owns its lifecycle).
#[allow(clippy::too_many_arguments)] // each is one part of a scenario's start; a struct would only rename them
pub(crate) async fn run_scenario<F: WorkerFactory>(
    plan: &Plan,
    factory: F,
    observer: &mut dyn Observer,
    live: Live,
    setup_data: Option<Arc<str>>,
    recorder: Arc<Recorder>,
    teardown_metrics: Option<MetricsHandle>,
    run_abort: Option<Arc<Interrupt>>,
) -> Result<RunReport, EngineError> {
    let shared = shared_state(plan, factory, live.control.as_ref(), setup_data, recorder);
    let (crews, gos, mut done) = start_shards(&shared).await?;
    let mut run = Coordinator::start(plan, shared, crews, gos, live, run_abort);
    observer.on_start(plan.scenario(), run.started_at);
    run.go(&mut done, observer).await;
    // A scenario whose last task aborted ends before its loop sees the abort: tell the others now.
    run.tell_other_scenarios();
    let end = Instant::now();
    run.shared.stop.all_over();
    let teardown_error = run.teardown(teardown_metrics).await;
    run.ticker.emit(&run.shared.recorder, &run.crews, observer, end);
    run.finish(end, teardown_error)
}

/// What every event loop of the scenario shares.
fn shared_state<F: WorkerFactory>(
    plan: &Plan,
    factory: F,
    control: Option<&Arc<Control>>,
    setup_data: Option<Arc<str>>,
    recorder: Arc<Recorder>,
) -> Arc<Shared<F>> {
    // With live control the gate always exists, so it can be set while the run goes.
    let gate = plan.max_in_flight().or(control.map(|_| UNLIMITED_GATE)).map(|n| Arc::new(Semaphore::new(n as usize)));
    Arc::new(Shared {
        plan: plan.clone(),
        factory: Arc::new(factory),
        recorder,
        stop: Arc::new(Stop::default()),
        gate,
        setup_data,
        control: control.cloned(),
        rate_now: Arc::new(AtomicU64::new(0)),
        claims: (!plan.is_open()).then(|| Arc::new(Claims::new(plan.task_limit(), plan.segment()))),
        count: plan.event_loops(control.is_some()),
        logged: Arc::default(),
    })
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

/// How the run is being stopped.
#[derive(Default)]
struct Stopping {
    /// Stop requests seen so far (signals): the first is graceful, the second forces.
    interrupts_seen: u32,
    /// After a stop, tasks under way have until then; then the worker loops are dropped.
    grace_ends: Option<Instant>,
    /// The worker loops have been told to drop their tasks.
    cut: bool,
    /// A second interrupt: no grace, no teardown.
    forced: bool,
    /// Another scenario's abort has been applied here, or this one's told to the others.
    run_abort_seen: bool,
}

/// The run loop's state.
struct Coordinator<'p, F: WorkerFactory> {
    plan: &'p Plan,
    shared: Arc<Shared<F>>,
    crews: Crews<F>,
    ticker: Ticker,
    control: Option<Arc<Control>>,
    interrupt: Option<Arc<Interrupt>>,
    /// The run's scenarios' shared abort, when this is one of several.
    run_abort: Option<Arc<Interrupt>>,
    started_at: SystemTime,
    start: Instant,
    closed_deadline: Option<Instant>,
    /// Live control: the gate's size now, when to look next, the last change applied.
    gate_size: Option<u32>,
    next_apply: Instant,
    applied: u64,
    stopping: Stopping,
    /// Event loops still running, and bugs they reported.
    running: u32,
    panics: Vec<String>,
}

impl<'p, F: WorkerFactory> Coordinator<'p, F> {
    /// Release every shard at one start time (or none, if a stop came while they started).
    fn start(
        plan: &'p Plan,
        shared: Arc<Shared<F>>,
        crews: Crews<F>,
        gos: Vec<oneshot::Sender<Option<Instant>>>,
        live: Live,
        run_abort: Option<Arc<Interrupt>>,
    ) -> Self {
        let Live { control, interrupt } = live;
        // A stop asked for, or another scenario's abort, while the crews were starting: send nothing.
        if interrupt.as_ref().is_some_and(|i| i.requests() > 0) {
            shared.stop.stop_by_user(&stop_reason(interrupt.as_deref()));
        }
        if let Some(reason) = run_abort.as_ref().and_then(|a| a.reason()) {
            shared.stop.abort(reason);
        }
        let started_at = SystemTime::now();
        let start = Instant::now();
        for go in gos {
            let _ = go.send(Some(start));
        }
        let initial = crews.sum(|c| &c.resident);
        let closed_deadline = match plan.model() {
            Model::Closed { duration, .. } => duration.map(|d| start + d),
            Model::Open { .. } => None,
        };
        Self {
            plan,
            ticker: Ticker::new(start, plan.interval(), !plan.is_open(), initial, plan.scenario()),
            gate_size: plan.max_in_flight().or(control.as_ref().map(|_| UNLIMITED_GATE)),
            running: shared.count,
            shared,
            crews,
            control,
            interrupt,
            run_abort,
            started_at,
            start,
            closed_deadline,
            next_apply: start + APPLY_EVERY,
            applied: 0,
            stopping: Stopping::default(),
            panics: Vec::new(),
        }
    }

    /// Until every event loop has ended: intervals, live control, stops.
    async fn go(&mut self, done: &mut mpsc::UnboundedReceiver<ShardEnd>, observer: &mut dyn Observer) {
        let stop = self.shared.stop.clone();
        while self.running > 0 {
            let grace = self.stopping.grace_ends;
            tokio::select! {
                biased;
                ended = done.recv() => if !self.shard_ended(ended) { break },
                requests = interrupted(self.interrupt.as_deref(), self.stopping.interrupts_seen),
                    if self.stopping.interrupts_seen < 2 => self.interrupted(requests),
                reason = run_aborted(self.run_abort.as_deref()), if !self.stopping.run_abort_seen => {
                    self.stopping.run_abort_seen = true;
                    stop.abort(reason);
                }
                () = stop.aborted(), if grace.is_none() => {
                    self.stopping.grace_ends = Some(Instant::now() + self.plan.grace());
                    self.tell_other_scenarios();
                }
                () = sleep_until(grace.unwrap_or(self.start)), if grace.is_some() && !self.stopping.cut => {
                    self.stopping.cut = true;
                    stop.cut();
                }
                () = sleep_until(self.ticker.next_tick) => {
                    let at = self.ticker.next_tick;
                    self.ticker.emit(&self.shared.recorder, &self.crews, observer, at);
                }
                () = sleep_until(self.next_apply), if self.control.is_some() => self.apply_control(),
                () = sleep_until(self.closed_deadline.unwrap_or(self.start)),
                    if self.closed_deadline.is_some() && stop.generating() => stop.end_generation(),
            }
        }
    }

    /// This scenario's plugin aborted: every other scenario of the run stops too.
    fn tell_other_scenarios(&mut self) {
        let stop = &self.shared.stop;
        let own = stop.is_aborted() && !stop.by_user() && !self.stopping.run_abort_seen;
        if let Some(run_abort) = self.run_abort.as_ref().filter(|_| own) {
            self.stopping.run_abort_seen = true;
            let why = stop.reason().unwrap_or_default();
            run_abort.request_because(format!("scenario '{}' aborted the run: {why}", self.plan.scenario()));
        }
    }

    /// An event loop has ended (`None`: one ended without reporting); `false` to stop waiting.
    fn shard_ended(&mut self, ended: Option<ShardEnd>) -> bool {
        match ended {
            Some(end) => {
                self.running -= 1;
                self.panics.extend(end.panics);
                true
            }
            None => {
                self.panics.push("an event loop ended without reporting (it panicked)".to_owned());
                false
            }
        }
    }

    /// A stop request (a signal): the first stops gracefully, the second cuts the grace short.
    fn interrupted(&mut self, requests: u32) {
        self.stopping.interrupts_seen = requests;
        self.shared.stop.stop_by_user(&stop_reason(self.interrupt.as_deref()));
        if requests >= 2 {
            self.stopping.forced = true;
            self.stopping.grace_ends = Some(Instant::now());
        }
    }

    fn apply_control(&mut self) {
        self.next_apply += APPLY_EVERY;
        if let Some(control) = &self.control {
            apply(control, &self.crews, self.shared.gate.as_ref(), &mut self.gate_size, &mut self.applied);
            control.publish(self.status(control, RunState::Running));
        }
    }

    fn status(&self, control: &Control, state: RunState) -> Status {
        status(control, &self.crews, &self.ticker, &self.shared.rate_now, self.gate_size, self.plan.is_open(), state)
    }

    /// The plugin's teardown, unless there is none or the run was forced to stop.
    async fn teardown(&self, metrics: Option<MetricsHandle>) -> Option<String> {
        match (&self.shared.setup_data, metrics) {
            (Some(_), Some(_)) if self.stopping.forced => {
                tracing::warn!("the plugin's teardown was skipped: the run was stopped a second time");
                None
            }
            (Some(data), Some(metrics)) => {
                teardown(&*self.shared.factory, data, self.plan.lifecycle_timeout(), metrics).await
            }
            _ => None,
        }
    }

    /// The report; an error that still carries it when an event loop panicked (a bug).
    fn finish(self, end: Instant, teardown_error: Option<String>) -> Result<RunReport, EngineError> {
        let stop = &self.shared.stop;
        let elapsed = end - self.start;
        let (aborted, stopped) = match stop.reason() {
            Some(reason) if stop.by_user() => (None, Some(reason)),
            reason => (reason, None),
        };
        if let Some(control) = &self.control {
            control.publish(self.status(control, RunState::Done));
        }
        let report = RunReport {
            scenario: self.plan.scenario().to_owned(),
            offset: self.plan.start_delay(),
            started_at: self.started_at,
            elapsed,
            generation: self.generation(elapsed),
            started: self.crews.sum(|c| &c.started),
            target_rate: self.plan.target_rate(),
            workers: self.worker_stats(),
            intervals: self.ticker.index,
            totals: self.ticker.totals,
            aborted,
            stopped,
            teardown_error,
        };
        match self.panics.into_iter().next() {
            // The load ran: what it measured is the caller's to write, beside the error.
            Some(reason) => Err(EngineError::Broken { report: Box::new(report), reason }),
            None => Ok(report),
        }
    }

    /// How long load was generated: the open model until the last task started (queued tasks may
    /// start after the schedule ends), at least the plan; the closed model until its deadline.
    fn generation(&self, elapsed: Duration) -> Duration {
        if self.plan.is_open() {
            let last_start = self.crews.last_start().map_or(Duration::ZERO, |at| at - self.start);
            let planned = if self.shared.stop.is_aborted() {
                Duration::ZERO
            } else {
                self.plan.planned_generation().unwrap_or_default()
            };
            return last_start.max(planned);
        }
        match self.plan.planned_generation() {
            Some(limit) => elapsed.min(limit),
            None => elapsed,
        }
    }

    fn worker_stats(&self) -> WorkerStats {
        WorkerStats {
            min: self.ticker.min_workers,
            peak: self.ticker.peak_workers,
            final_: self.crews.sum(|c| &c.resident),
            grown: self.crews.sum(|c| &c.grown),
            retired: self.crews.sum(|c| &c.retired),
            replaced: self.crews.sum(|c| &c.replaced),
        }
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

/// Resolve with the reason once another scenario aborted the run; never without scenarios.
async fn run_aborted(run_abort: Option<&Interrupt>) -> String {
    match run_abort {
        Some(run_abort) => {
            run_abort.changed(0).await;
            run_abort.reason().unwrap_or_default()
        }
        None => std::future::pending().await,
    }
}

/// Apply what was requested since the last look: the crew's ceiling, the gate, a stop.
fn apply<F: WorkerFactory>(
    control: &Control,
    crews: &Crews<F>,
    gate: Option<&Arc<Semaphore>>,
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
        _ if crews.0.first().is_some_and(|c| c.run.stop.is_aborted() || !c.run.stop.generating()) => RunState::Stopping,
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
