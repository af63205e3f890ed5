//! [`RunSettings`]: what a checked run is, its plans beside the options in effect.

use std::time::Duration;

use loadhost_engine::{Plan, Segment};

use super::limits::{DEFAULT_CACHE_MAX, DEFAULT_GRACE, DEFAULT_MAX_MEMORY, plugin_cap};
use crate::options::RunOptions;

/// Everything `loadhost run` needs, checked: what is derived from the options, beside the options
/// themselves (read every option from [`RunSettings::options`]).
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// What the engine will run, in order: a single run is a list of one plan, a run of
    /// `[[scenario]]` blocks has one plan per block, run together.
    pub plans: Vec<Plan>,
    /// The plugin's environment, from `-e` and `--env-file` (values read, `-e` winning).
    pub env: Vec<(String, String)>,
    /// The most workers the run may have at once, every plan's summed: the runtime holds an
    /// instance for each.
    pub max_workers: u32,
    /// This process's share of a plan run by several processes.
    pub segment: Option<Segment>,
    /// The options in effect (the limits' defaults filled in), echoed in outputs.
    pub options: RunOptions,
}

impl RunSettings {
    /// Each instance's memory cap, in bytes (`--max-memory`, which [`resolve`](super::resolve) always fills in).
    pub fn max_memory(&self) -> u64 {
        self.options.max_memory.map_or(DEFAULT_MAX_MEMORY, |s| s.0)
    }

    /// How large a plugin file the run reads (`--max-plugin-size`), as the file reader's cap.
    pub fn plugin_cap(&self) -> loadhost_input::Cap {
        plugin_cap(&self.options)
    }

    /// The compile cache's size cap, in bytes (`--cache-max`; 0 turns the cache off).
    pub fn cache_max(&self) -> u64 {
        self.options.cache_max.map_or(DEFAULT_CACHE_MAX, |s| s.0)
    }

    /// How long tasks under way may finish after a stop (`--grace`, a run-wide option that a
    /// `[[scenario]]` block cannot set).
    pub fn grace(&self) -> Duration {
        self.options.grace.map_or(DEFAULT_GRACE, |d| d.0)
    }

    /// How long a call outside the load (setup, teardown, handleSummary, a script's computed
    /// options) may take: the first plan's `--lifecycle-timeout`.
    pub fn lifecycle_timeout(&self) -> Duration {
        self.plans.first().map_or(loadhost_engine::plan::DEFAULT_LIFECYCLE_TIMEOUT, Plan::lifecycle_timeout)
    }

    /// The reporting interval: every plan reports on the engine's, which no option changes.
    pub fn interval(&self) -> Duration {
        loadhost_engine::plan::DEFAULT_INTERVAL
    }

    /// The plans the outputs report one by one beside the whole run: every plan of a run of
    /// `[[scenario]]` blocks (even a single block), none of a single run, whose one plan is the run.
    pub fn scenarios(&self) -> &[Plan] {
        if self.options.scenarios.is_empty() { &[] } else { &self.plans }
    }

    /// How long the load is planned to last, from the run's start to its last plan's planned end
    /// (each plan from its start delay); `None` when no plan knows (a run to `--iterations`).
    pub fn planned_generation(&self) -> Option<Duration> {
        self.plans.iter().filter_map(|p| p.planned_generation().map(|g| p.start_delay() + g)).max()
    }
}
