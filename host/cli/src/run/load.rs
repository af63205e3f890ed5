//! The load itself: a single run's one plan under live control, or every scenario side by side;
//! and the exit code of a load that could not start.

use loadhost_config::RunSettings;
use loadhost_engine::{EngineError, Live, Plan, ScenarioPlugins, WorkerFactory};
use loadhost_metrics::RunReport;

use super::observe::RunObserver;
use crate::exit::Failure;

/// How the load ended: the run's report, each scenario's, and the host's own error when it broke
/// after the load had started (the measurements are still written).
pub(super) struct Ended {
    /// The whole run's report.
    pub(super) report: RunReport,
    /// Each scenario's, for a run of `[[scenario]]` blocks.
    pub(super) scenarios: Vec<RunReport>,
    /// The host's own error, when the run broke after the load started.
    pub(super) broken: Option<String>,
}

/// Run the plans: a single run's one plan under live control, or every scenario side by side.
pub(super) async fn execute<F: WorkerFactory + Clone>(
    settings: &RunSettings,
    mut plugins: ScenarioPlugins<F>,
    observer: &mut RunObserver,
    live: Live,
) -> Result<Ended, EngineError> {
    let ([plan], []) = (settings.plans.as_slice(), settings.scenarios()) else {
        return execute_scenarios(&settings.plans, plugins, observer, live).await;
    };
    // A single run: its one plan is the whole run, with no scenario section of its own.
    let factory = plugins.plugins.swap_remove(0).1;
    match loadhost_engine::run_live(plan, factory, observer, live).await {
        Ok(report) => Ok(Ended { report, scenarios: Vec::new(), broken: None }),
        Err(EngineError::Broken { report, reason }) => {
            Ok(Ended { report: *report, scenarios: Vec::new(), broken: Some(reason) })
        }
        Err(err) => Err(err),
    }
}

/// Run every scenario side by side, each reported on its own beside the whole run.
pub(super) async fn execute_scenarios<F: WorkerFactory + Clone>(
    plans: &[Plan],
    plugins: ScenarioPlugins<F>,
    observer: &mut RunObserver,
    live: Live,
) -> Result<Ended, EngineError> {
    let runs = loadhost_engine::run_scenarios(plans, plugins, observer, live.interrupt).await?;
    // Every scenario together is the run; each also gets its own section in the outputs.
    let mut report = RunReport::combine(&runs.reports).unwrap_or_else(|| runs.reports[0].clone());
    report.teardown_error = runs.teardown_error;
    report.totals.merge(&runs.lifecycle);
    Ok(Ended { report, scenarios: runs.reports, broken: runs.broken })
}

/// The exit code for an engine error: the plugin refused (its setup, or a first worker's init) →
/// 4; a worker could not be made → 3; anything else is the host's (1).
pub(super) fn engine_failure(err: EngineError, plugin: &str) -> Failure {
    let refused = match &err {
        EngineError::Setup(_) => true,
        EngineError::WorkerStart { source, .. } => source.is_refusal(),
        _ => false,
    };
    match err {
        EngineError::Setup(_) | EngineError::WorkerStart { .. } if refused => {
            Failure::aborted(anyhow::Error::new(err).context(plugin.to_owned()))
        }
        EngineError::WorkerStart { .. } => Failure::plugin(anyhow::Error::new(err).context(plugin.to_owned())),
        other => Failure::runtime(other),
    }
}
