//! `[[scenario]]` blocks: one plan per block, each from the top level's options under its own, and
//! a periodic block (`every`) as one worker on a timer.

use std::time::Duration;

use loadhost_engine::{Arrivals, Plan};

use super::plan::plan_one;
use super::{ConfigError, SharedFeed};
use crate::options::{OverloadArg, RunOptions};

/// One plan per `[[scenario]]` block, each from [`ScenarioOptions::within`] the top level, named
/// and delayed by its block.
///
/// [`ScenarioOptions::within`]: crate::options::ScenarioOptions::within
pub(super) fn plan_scenarios(options: &RunOptions, feed: &SharedFeed) -> Result<Vec<Plan>, ConfigError> {
    if options.control.is_some() {
        return Err(ConfigError::ControlWithScenarios);
    }
    let top = RunOptions { scenarios: Vec::new(), ..options.clone() };
    let mut names = std::collections::HashSet::new();
    let mut plans = Vec::with_capacity(options.scenarios.len());
    for scenario in &options.scenarios {
        if scenario.name.trim().is_empty() || !names.insert(scenario.name.as_str()) {
            return Err(ConfigError::ScenarioName(scenario.name.clone()));
        }
        let wrap = |error| ConfigError::Scenario { name: scenario.name.clone(), error: Box::new(error) };
        let plan = match scenario.every {
            Some(every) => plan_periodic(scenario, every.0, &top, feed),
            None => plan_one(&scenario.within(&top), feed),
        }
        .map_err(wrap)?;
        let delay = scenario.start_after.map_or(Duration::ZERO, |d| d.0);
        plans.push(plan.with_scenario(scenario.name.clone()).with_start_delay(delay));
    }
    Ok(plans)
}

/// A periodic block (`every`, `jitter`): one task per tick on a single worker, for the run's
/// duration, a tick that finds the worker busy dropped (never stacked). Its load is the timer's,
/// so the block sets no load model of its own; bounds and policies (retries, gate, timeouts) apply.
fn plan_periodic(
    block: &crate::options::ScenarioOptions,
    every: Duration,
    top: &RunOptions,
    feed: &SharedFeed,
) -> Result<Plan, ConfigError> {
    let own = [
        ("rate", block.rate.is_some()),
        ("workers", block.workers.is_some()),
        ("max-workers", block.max_workers.is_some()),
        ("stage", !block.stage.is_empty()),
        ("iterations", block.iterations.is_some()),
        ("arrivals", block.arrivals.is_some()),
        ("overload", block.overload.is_some()),
        ("pace", block.pace.is_some()),
        ("think", block.think.is_some()),
    ];
    if let Some((key, _)) = own.iter().find(|(_, set)| *set) {
        return Err(ConfigError::Periodic(format!("`every` sets the load: `{key}` cannot go with it")));
    }
    if every.is_zero() {
        return Err(ConfigError::Periodic("`every` must be longer than 0s".into()));
    }
    let mut options = block.within(top);
    if options.duration.is_none() {
        return Err(ConfigError::Periodic("a periodic scenario runs for the run's `duration`: set one".into()));
    }
    options.rate = Some(crate::units::Rate(1.0 / every.as_secs_f64()));
    options.workers = Some(1);
    options.max_workers = Some(1);
    options.overload = Some(OverloadArg::Drop);
    options.arrivals = None;
    options.iterations = None;
    options.stage = Vec::new();
    let jitter = block.jitter.map_or(Duration::ZERO, |j| j.0);
    Ok(plan_one(&options, feed)?.with_arrivals(Arrivals::Periodic { every, jitter }))
}
