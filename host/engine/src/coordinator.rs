//! The run loop of one scenario: its event loops start together and run until every
//! worker has ended, while this loop cuts intervals, applies live control and handles stops (the
//! grace, then the cut; a second interrupt skips both). Then the teardown and the report.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use loadhost_metrics::{Recorder, RunReport, WorkerStats};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::time::{Instant, sleep_until};

use crate::control::{APPLY_EVERY, Control, CrewStatus, RunState, Status};
use crate::crews::Crews;
use crate::event_loop::{self, EventLoop, EventLoopEnd};
use crate::health::Sampler;
use crate::lifecycle::teardown;
use crate::plan::{Model, PacerClock, Plan};
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

/// After the cut, how long the run waits for its event loops to drop their tasks. A loop that has
/// not ended by then is busy beyond reach (a task blocking its thread): the run ends without it, so
/// a stop always takes effect and what was measured is written.
pub const CUT_WAIT: Duration = Duration::from_secs(2);

/// How often the terminal hears how a graceful stop goes.
const GRACEFUL_NOTICE_EVERY: Duration = Duration::from_secs(5);

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
    let before = crate::memory::resident_bytes();
    let (crews, gos, mut done) = start_event_loops(&shared).await?;
    let memory = MemoryCeiling::measure(plan, before, &crews);
    let mut run = Coordinator::start(plan, shared, crews, gos, live, run_abort);
    run.memory = memory;
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
        pacers_done: std::sync::atomic::AtomicU32::new(0),
        loop_threads: Arc::default(),
        workers: crate::shared::WorkerCount::default(),
    })
}

/// Start every event loop and wait until each has its crew up. When one cannot, the others are told
/// not to start and its error is returned: nothing was sent.
async fn start_event_loops<F: WorkerFactory>(
    shared: &Arc<Shared<F>>,
) -> Result<(Crews<F>, Vec<oneshot::Sender<Option<Instant>>>, mpsc::UnboundedReceiver<EventLoopEnd>), EngineError> {
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let mut gos = Vec::new();
    let mut readies = Vec::new();
    for index in 0..shared.count {
        let (ready_tx, ready_rx) = oneshot::channel();
        let (go_tx, go_rx) = oneshot::channel();
        // On an error here the event loops already started see their `go` dropped and end.
        event_loop::launch(EventLoop { shared: shared.clone(), index }, ready_tx, go_rx, done_tx.clone())?;
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
    /// The worker loops have been told to drop their tasks (when).
    cut: Option<Instant>,
    /// A second interrupt: no grace, no teardown.
    forced: bool,
    /// The plan ended: tasks still running may finish until then (`--graceful-stop`).
    graceful_ends: Option<Instant>,
    /// When the terminal next hears how the graceful stop goes.
    next_notice: Option<Instant>,
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
    /// The crew's ceiling within memory, when the plan keeps it there.
    memory: Option<MemoryCeiling>,
}

/// The crew within memory: what its workers may take (a share of the memory left when the first
/// ones were up, plus what those took), a worker's footprint measured from the resident memory the
/// workers added (again as the crew grows: an interpreter touches more pages once it works), and
/// the ceiling that gives.
struct MemoryCeiling {
    /// Resident bytes before any worker existed.
    base: u64,
    /// The bytes the crew's workers may take in all.
    budget: u64,
    /// What the memory left was read from.
    source: &'static str,
    /// The largest footprint per worker measured so far.
    per_worker: u64,
    /// The most workers the memory holds.
    holds: u64,
    /// The user set the ceiling (it is only warned about).
    explicit: bool,
    /// The run's planned ceiling.
    planned: u64,
    warned: bool,
}

/// A worker's footprint is at least this (a measured delta of nothing is noise, not a free worker).
const MIN_FOOTPRINT: u64 = 64 << 10;

/// Of the memory available, the share the crew's workers may take: the rest is the host's own
/// (connections, buffers, histograms) and the machine's.
const MEMORY_SHARE: f64 = 0.8;

impl MemoryCeiling {
    /// Measure a worker's footprint from the resident memory the first workers added, and lower
    /// the crew's default ceiling to what the available memory holds (the user's own is only
    /// warned about).
    fn measure<F: WorkerFactory>(plan: &Plan, before: Option<u64>, crews: &Crews<F>) -> Option<Self> {
        let explicit = plan.memory_aware_crew()?;
        let (base, now) = (before?, crate::memory::resident_bytes()?);
        let available = crate::memory::available()?;
        let taken = now.saturating_sub(base);
        let budget = (available.bytes as f64 * MEMORY_SHARE) as u64 + taken;
        let planned = u64::from(plan.max_workers());
        let mut ceiling = Self {
            base,
            budget,
            source: available.source,
            per_worker: 0,
            holds: planned,
            explicit,
            planned,
            warned: false,
        };
        ceiling.update(crews, now);
        Some(ceiling)
    }

    /// With the resident memory `now`, re-measure the footprint; lower the crew's default ceiling
    /// to what the memory holds, and once the crew nears it, say so with the figures (once).
    fn update<F: WorkerFactory>(&mut self, crews: &Crews<F>, now: u64) {
        use crate::memory::human;
        let resident = crews.sum(|c| &c.resident).max(1);
        let per_worker = (now.saturating_sub(self.base) / resident).max(MIN_FOOTPRINT);
        if per_worker <= self.per_worker {
            return self.near(resident);
        }
        self.per_worker = per_worker;
        let holds = self.budget / per_worker;
        let lower = holds < self.holds.min(self.planned);
        self.holds = holds;
        let (per, budget, source) = (human(per_worker), human(self.budget), self.source);
        if lower && self.explicit {
            tracing::warn!(
                "--max-workers {}: a worker of this plugin takes about {per}, so the crew would need {} of memory; \
                 {budget} is what its workers may take ({source})",
                self.planned,
                human(per_worker.saturating_mul(self.planned))
            );
            self.warned = true;
        } else if lower {
            crews.set_max_workers(u32::try_from(holds.max(1)).unwrap_or(u32::MAX));
            tracing::info!(
                "a worker of this plugin takes about {per} ({resident} up) and its workers may take {budget} ({source}): \
                 the crew grows to at most {holds} workers instead of {} (--max-workers overrides)",
                self.planned
            );
        }
        self.near(resident);
    }

    /// Once the crew has 90% of what the memory holds, say so (once).
    fn near(&mut self, resident: u64) {
        use crate::memory::human;
        if self.warned || self.holds >= self.planned || (resident as f64) < 0.9 * self.holds as f64 {
            return;
        }
        self.warned = true;
        tracing::warn!(
            "the crew has {resident} workers of about {} each ({}) of the {} its workers may take ({}): it stops \
             growing at {} (--max-workers overrides)",
            human(self.per_worker),
            human(self.per_worker.saturating_mul(resident)),
            human(self.budget),
            self.source,
            self.holds
        );
    }
}

impl<'p, F: WorkerFactory> Coordinator<'p, F> {
    /// Release every event loop at one start time (or none, if a stop came while they started).
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
        // Every event loop registered its thread before saying it was ready. Under the runtime's
        // clock (tests on virtual time) there are none, and CPU shares of virtual time mean nothing.
        let health = (plan.pacer_clock() == PacerClock::Precise)
            .then(|| Sampler::new(shared.loop_threads.clone(), plan.max_memory(), &loadhost_metrics::EXHAUSTED));
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
            ticker: Ticker::new(start, plan.interval(), !plan.is_open(), initial, plan.scenario()).with_health(health),
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
            memory: None,
        }
    }

    /// Until every event loop has ended: intervals, live control, stops.
    async fn go(&mut self, done: &mut mpsc::UnboundedReceiver<EventLoopEnd>, observer: &mut dyn Observer) {
        let stop = self.shared.stop.clone();
        while self.running > 0 {
            let grace = self.stopping.grace_ends;
            tokio::select! {
                biased;
                ended = done.recv() => if !self.event_loop_ended(ended) { break },
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
                () = sleep_until(grace.unwrap_or(self.start)), if grace.is_some() && self.stopping.cut.is_none() => {
                    self.cut("the stop's --grace");
                }
                () = sleep_until(self.stopping.cut.map_or(self.start, |at| at + CUT_WAIT)), if self.stopping.cut.is_some() => {
                    self.abandon_loops();
                    break;
                }
                () = stop.generation_ended(), if self.stopping.graceful_ends.is_none() && !stop.is_aborted() => {
                    self.begin_graceful_stop();
                }
                () = sleep_until(self.stopping.next_notice.unwrap_or(self.start)),
                    if self.stopping.next_notice.is_some() && self.stopping.cut.is_none() && !stop.is_aborted() => {
                    self.graceful_notice();
                }
                () = sleep_until(self.ticker.next_tick) => {
                    let at = self.ticker.next_tick;
                    self.ticker.emit(&self.shared.recorder, &self.crews, observer, at);
                    if let (Some(memory), Some(now)) = (&mut self.memory, crate::memory::resident_bytes()) {
                        memory.update(&self.crews, now);
                    }
                }
                () = sleep_until(self.next_apply), if self.control.is_some() => self.apply_control(),
                () = sleep_until(self.closed_deadline.unwrap_or(self.start)),
                    if self.closed_deadline.is_some() && stop.generating() => stop.end_generation(),
            }
        }
    }

    /// Event loops still running [`CUT_WAIT`] after the cut are left behind: the tasks they still
    /// run end as interrupted here, and the report says the run could not wait for them.
    fn abandon_loops(&mut self) {
        let under_way = self.crews.sum(|c| &c.in_flight);
        self.shared.recorder.record_unfinished(0, loadhost_metrics::Outcome::Interrupted, under_way);
        self.panics.push(format!(
            "{} of {} event loops had not ended {CUT_WAIT:?} after the grace (a task blocking its thread?): \
             the run ended without them, and their {under_way} tasks under way count as interrupted",
            self.running, self.shared.count
        ));
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
    fn event_loop_ended(&mut self, ended: Option<EventLoopEnd>) -> bool {
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

    /// The plan has ended: tasks still running have `--graceful-stop`, counted down on the
    /// terminal, then they end as interrupted.
    fn begin_graceful_stop(&mut self) {
        let now = Instant::now();
        // From the planned end (k6's gracefulStop), not from the last task's start before it.
        let planned_end = self.plan.planned_generation().map_or(now, |d| self.start + d);
        self.stopping.graceful_ends = Some(now.max(planned_end) + self.plan.graceful_stop());
        self.stopping.next_notice = Some(now.max(planned_end));
    }

    /// Say how many tasks the run waits for and how long it still may; at the end, cut them.
    fn graceful_notice(&mut self) {
        let now = Instant::now();
        let Some(ends) = self.stopping.graceful_ends else { return };
        let running = self.crews.sum(|c| &c.in_flight);
        let tasks = if running == 1 { "1 task".to_owned() } else { format!("{running} tasks") };
        if now >= ends {
            self.stopping.next_notice = None;
            self.cut(&format!("--graceful-stop ({:?})", self.plan.graceful_stop()));
            return;
        }
        if running > 0 {
            let left = Duration::from_secs((ends - now).as_secs_f64().ceil() as u64);
            tracing::info!("the plan has ended; waiting for {tasks} still running: {left:?} left (Ctrl-C to stop now)");
        }
        // A notice every 5 s, and one at the end to cut what is left.
        self.stopping.next_notice = Some((now + GRACEFUL_NOTICE_EVERY).min(ends));
    }

    /// Cut the tasks still running (they end as interrupted), saying how many and where they were,
    /// once `what` (the grace, the graceful stop) has run out.
    fn cut(&mut self, what: &str) {
        let running = self.crews.sum(|c| &c.in_flight);
        if running > 0 {
            let places = self.crews.under_way();
            let tasks = if running == 1 { "1 task".to_owned() } else { format!("{running} tasks") };
            let more = places.len().saturating_sub(5);
            let mut at = if places.is_empty() {
                String::new()
            } else {
                format!(": {}", places[..places.len().min(5)].join("; "))
            };
            if more > 0 {
                at.push_str(&format!("; and {more} more"));
            }
            tracing::warn!("{tasks} still running when {what} ran out end as interrupted{at}");
        }
        self.stopping.cut = Some(Instant::now());
        self.shared.stop.cut();
    }

    /// A stop request (a signal): the first stops gracefully, the second cuts the grace short.
    /// While the plan's graceful stop counts down, the first already stops at once (the terminal
    /// said so).
    fn interrupted(&mut self, requests: u32) {
        self.stopping.interrupts_seen = requests;
        self.shared.stop.stop_by_user(&stop_reason(self.interrupt.as_deref()));
        if requests >= 2 {
            self.stopping.forced = true;
        }
        if requests >= 2 || self.stopping.graceful_ends.is_some() {
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
        let generator = self.ticker.generator();
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
            generator,
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
            peak: self.ticker.peak_workers.max(self.crews.peak()),
            final_: self.crews.sum(|c| &c.resident),
            grown: self.crews.sum(|c| &c.grown),
            retired: self.crews.sum(|c| &c.retired),
            replaced: self.crews.sum(|c| &c.replaced),
            ceiling: self.crews.sum(|c| &c.max_workers),
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
