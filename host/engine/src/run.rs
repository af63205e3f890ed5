//! One run from start to report: start the crew, pace or loop, emit a row per interval, and fold
//! everything into the report.

use std::sync::Arc;

use loadhost_metrics::{IntervalRow, Recorder, RunReport, Window};

use crate::control::Control;
use crate::coordinator::{Live, run_scenario};
use crate::lifecycle::{LIFECYCLE_ID, setup, teardown};
use crate::plan::Plan;
use crate::stop::Interrupt;
use crate::worker::{MetricsHandle, WorkerFactory};
use crate::{EngineError, Observer};

/// Recorder stripes: enough that two busy runtime threads rarely meet on one lock, few enough that
/// draining them every interval stays cheap.
const STRIPES: usize = 16;

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

/// [`run`], driven live through `control` (see [`Control`]).
pub async fn run_with_control<F: WorkerFactory>(
    plan: &Plan,
    factory: F,
    observer: &mut dyn Observer,
    control: Option<Arc<Control>>,
) -> Result<RunReport, EngineError> {
    run_live(plan, factory, observer, Live { control, interrupt: None }).await
}

/// [`run`], with live control and stop requests.
pub async fn run_live<F: WorkerFactory>(
    plan: &Plan,
    factory: F,
    observer: &mut dyn Observer,
    live: Live,
) -> Result<RunReport, EngineError> {
    let recorder = Arc::new(Recorder::new(STRIPES));
    let lifecycle_metrics = MetricsHandle::new(recorder.clone(), LIFECYCLE_ID);
    let setup_data = setup(&factory, plan.lifecycle_timeout(), lifecycle_metrics.clone()).await?;
    let teardown = Some(lifecycle_metrics);
    run_scenario(plan, factory, observer, live, setup_data, recorder, teardown, None).await
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

/// The plugins of a run of scenarios: each a name (for its errors) and a factory, and which of
/// them each scenario's workers come from.
#[derive(Debug, Clone)]
pub struct ScenarioPlugins<F> {
    /// Each plugin's name and factory.
    pub plugins: Vec<(String, F)>,
    /// For each plan, the index of its plugin in `plugins`.
    pub plugin_of: Vec<usize>,
}

impl<F> ScenarioPlugins<F> {
    /// One plugin for all of `scenarios` plans.
    pub fn one(name: impl Into<String>, factory: F, scenarios: usize) -> Self {
        Self { plugins: vec![(name.into(), factory)], plugin_of: vec![0; scenarios] }
    }
}

/// Run several plans at once, each a scenario with its own pacer, crew and metrics, starting after
/// its plan's start delay. Each plugin's setup runs once before all of them (in order; a failure
/// tears down those already set up and sends nothing) and its teardown once after; every scenario's
/// workers get their plugin's setup data. Interval rows of every scenario go to `observer` (each
/// row names its scenario).
pub async fn run_scenarios<F: WorkerFactory + Clone>(
    plans: &[Plan],
    plugins: ScenarioPlugins<F>,
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
    let limit = first.lifecycle_timeout();
    let lifecycle = Arc::new(Recorder::new(1));
    let lifecycle_metrics = MetricsHandle::new(lifecycle.clone(), LIFECYCLE_ID);
    let setups = setup_all(&plugins, limit, &lifecycle_metrics).await?;
    let shared = std::sync::Mutex::new(observer);
    // Another scenario's plugin aborted: the first reason given is the run's (`request_because`).
    let run_abort = Arc::new(Interrupt::new());
    let runs = plans.iter().enumerate().map(|(i, plan)| {
        let which = plugins.plugin_of.get(i).copied().unwrap_or(0);
        let factory = plugins.plugins[which].1.clone();
        let (setup_data, shared, run_abort) = (setups[which].clone(), &shared, run_abort.clone());
        let live = Live { control: None, interrupt: interrupt.clone() };
        async move {
            wait_to_start(plan.start_delay(), live.interrupt.as_deref(), &run_abort).await;
            let mut forward = Forward(shared);
            let recorder = Arc::new(Recorder::new(STRIPES));
            run_scenario(plan, factory, &mut forward, live, setup_data, recorder, None, Some(run_abort)).await
        }
    });
    let mut reports = Vec::new();
    let mut broken = None;
    let mut failed = None;
    for result in futures_util::future::join_all(runs).await {
        match result {
            Ok(report) => reports.push(report),
            Err(EngineError::Broken { report, reason }) => {
                broken.get_or_insert(reason);
                reports.push(*report);
            }
            Err(other) => {
                failed.get_or_insert(other);
            }
        }
    }
    // Every plugin set up is torn down, even when a scenario could not start.
    let teardown_error = teardown_all(&plugins, &setups, limit, &lifecycle_metrics).await;
    if let Some(err) = failed {
        return Err(err);
    }
    Ok(ScenarioRuns { reports, teardown_error, lifecycle: lifecycle.drain(), broken })
}

/// A scenario's start offset, cut short by a stop request or another scenario's abort (the
/// scenario then starts stopped, and sends nothing).
async fn wait_to_start(delay: std::time::Duration, interrupt: Option<&Interrupt>, run_abort: &Interrupt) {
    let stop_asked = async {
        match interrupt {
            Some(interrupt) => interrupt.changed(0).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = tokio::time::sleep(delay) => {}
        _ = stop_asked => {}
        _ = run_abort.changed(0) => {}
    }
}

/// Each plugin's setup, in order: their data, or the first failure (named by its plugin when there
/// are several) after tearing down those already set up.
async fn setup_all<F: WorkerFactory>(
    plugins: &ScenarioPlugins<F>,
    limit: std::time::Duration,
    metrics: &MetricsHandle,
) -> Result<Vec<Option<Arc<str>>>, EngineError> {
    let named = plugins.plugins.len() > 1;
    let mut setups = Vec::with_capacity(plugins.plugins.len());
    for (name, factory) in &plugins.plugins {
        match setup(factory, limit, metrics.clone()).await {
            Ok(data) => setups.push(data),
            Err(err) => {
                let _ = teardown_all(plugins, &setups, limit, metrics).await;
                return Err(match err {
                    EngineError::Setup(why) if named => EngineError::Setup(format!("{name}: {why}")),
                    other => other,
                });
            }
        }
    }
    Ok(setups)
}

/// Tear down every plugin that was set up (those whose setup returned data), in order: the first
/// failure, named by its plugin when there are several.
async fn teardown_all<F: WorkerFactory>(
    plugins: &ScenarioPlugins<F>,
    setups: &[Option<Arc<str>>],
    limit: std::time::Duration,
    metrics: &MetricsHandle,
) -> Option<String> {
    let mut first = None;
    for ((name, factory), data) in plugins.plugins.iter().zip(setups) {
        let Some(data) = data else { continue };
        if let Some(why) = teardown(factory, data, limit, metrics.clone()).await {
            let why = if plugins.plugins.len() > 1 { format!("{name}: {why}") } else { why };
            first.get_or_insert(why);
        }
    }
    first
}

/// Forwards one scenario's rows to the observer every scenario shares.
struct Forward<'a, 'o>(&'a std::sync::Mutex<&'o mut dyn Observer>);

impl Observer for Forward<'_, '_> {
    fn on_start(&mut self, scenario: &str, started_at: std::time::SystemTime) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).on_start(scenario, started_at);
    }

    fn on_interval(&mut self, row: &IntervalRow) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).on_interval(row);
    }

    fn on_window(&mut self, row: &IntervalRow, window: &loadhost_metrics::Window) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).on_window(row, window);
    }
}
