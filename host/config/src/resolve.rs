//! From options to a runnable plan: the checks that need more than one option at a time.
//!
//! [`resolve`] reads as its steps: this process's segment and the secrets; the limits every run
//! has (their defaults filled in, so outputs show what was in force); the directories and the
//! pass/fail criteria; the data feed, loaded once and shared by every scenario; a plan per
//! scenario (`plan_one`: counts, model, then the plan's options and retries); and last the split
//! into segments.

use std::sync::Arc;
use std::time::Duration;

use loadhost_engine::{
    Arrivals, Feed, FeedMode, Model, Overload, PacerClock, Plan, PlanError, Ramp, RateCurve, RetryPolicy, Segment,
    Threads,
};
use thiserror::Error;

use crate::criteria::MetricDecl;
use crate::options::{ArrivalsArg, DataModeArg, OverloadArg, RunOptions};
use crate::units::{Dur, Shape, Size, Stage};

/// The most workers the open model starts with (and never retires below) when `--workers` does
/// not say: a floor this size absorbs bursts of due tasks at high rates while the crew grows.
pub const DEFAULT_OPEN_WORKERS: u32 = 100;

/// Without `--workers`, the open model starts with one worker per this many tasks/s of its peak
/// rate (enough for 10 ms tasks; growth covers slower ones), at least [`MIN_OPEN_WORKERS`] and at
/// most [`DEFAULT_OPEN_WORKERS`]. An idle Rust instance costs KiBs but a Python one ~10 MiB, so a
/// fixed 100 held a gigabyte for a 50 tasks/s Python run.
pub const OPEN_RATE_PER_WORKER: f64 = 100.0;

/// The smallest default starting crew: one worker and its reserve.
pub const MIN_OPEN_WORKERS: u32 = 2;

/// The open model's default starting crew for a curve peaking at `peak` tasks/s, within `max`.
pub fn default_open_workers(peak: f64, max: u32) -> u32 {
    let by_rate =
        (peak / OPEN_RATE_PER_WORKER).ceil().clamp(f64::from(MIN_OPEN_WORKERS), f64::from(DEFAULT_OPEN_WORKERS));
    (by_rate as u32).min(max)
}

/// The open model's crew ceiling when `--max-workers` does not say.
pub const DEFAULT_MAX_WORKERS: u32 = 1000;

/// The closed model's workers when `--workers` does not say (k6's one VU).
pub const DEFAULT_CLOSED_WORKERS: u32 = 1;

/// The base retry backoff when `--retry-backoff` does not say.
pub const DEFAULT_RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// The share of slots retries may take when `--retry-budget` does not say (as Envoy's default).
pub const DEFAULT_RETRY_BUDGET: f64 = 0.2;
/// How long pending retries are flushed when `--flush-retries-timeout` does not say.
pub const DEFAULT_FLUSH_RETRIES_TIMEOUT: Duration = Duration::from_secs(5);
/// The retry queue's bound when `--retry-queue` does not say (about 3 MB of tickets).
pub const DEFAULT_RETRY_QUEUE: u32 = 100_000;

pub use loadhost_engine::plan::{
    DEFAULT_GRACE, DEFAULT_GRACEFUL_STOP, DEFAULT_LIFECYCLE_TIMEOUT, DEFAULT_TASK_TIMEOUT,
};
/// Each instance's memory cap when `--max-memory` does not say: ample for compiled guests (a Rust
/// plugin starts at about 1 MiB), and 1,000 workers still cannot take more than 128 GiB.
pub const DEFAULT_MAX_MEMORY: u64 = 128 << 20;

/// The compile cache's cap when `--cache-max` does not say: room for about 25 interpreter (Python,
/// JS) plugins of ~36 MB or thousands of Rust ones, while a day of rebuilds cannot fill the disk.
pub const DEFAULT_CACHE_MAX: u64 = 1 << 30;
/// The largest plugin file a run reads unless `--max-plugin-size` says otherwise.
pub const DEFAULT_MAX_PLUGIN_SIZE: u64 = loadhost_input::PLUGIN.bytes;

/// The largest response body the host reads for a plugin, unless `--max-memory` is smaller.
pub const DEFAULT_MAX_RESPONSE_BODY: u64 = 64 << 20;
/// The smallest memory cap: one 64 KiB wasm page times the 17 a Rust plugin starts with, rounded up.
const MIN_MAX_MEMORY: u64 = 2 << 20;
/// A plugin's memories are 32-bit.
const MAX_MAX_MEMORY: u64 = 4 << 30;

/// An option, or a combination of options, that cannot run. Messages name the flags.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A count that must be positive is zero.
    #[error("--{flag} must be at least 1")]
    Zero {
        /// The flag's long name.
        flag: &'static str,
    },
    /// A zero duration.
    #[error("--duration must be longer than 0s")]
    ZeroDuration,
    /// A periodic scenario block that cannot run.
    #[error("{0}")]
    Periodic(String),
    /// A constant rate of zero would schedule nothing.
    #[error("--rate must be more than 0 (to start from 0, ramp up with --stage)")]
    ZeroRate,
    /// Nothing says when to stop.
    #[error("{model} needs --duration or --iterations (or --stage) to know when to stop")]
    Unbounded {
        /// What was asked for.
        model: &'static str,
    },
    /// An open-model option without the open model.
    #[error("--{flag} applies to the open model: add --rate")]
    OpenOnly {
        /// The flag's long name.
        flag: &'static str,
    },
    /// A retry option without `--retries`.
    #[error("--{flag} needs --retries N")]
    RetriesOnly {
        /// The flag's long name.
        flag: &'static str,
    },
    /// `--workers` above `--max-workers`.
    #[error("--workers ({workers}) is more than --max-workers ({max})")]
    WorkersAboveMax {
        /// `--workers`.
        workers: u32,
        /// `--max-workers`.
        max: u32,
    },
    /// The engine refused the plan.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A scenario block that cannot run.
    #[error("scenario '{name}': {error}")]
    Scenario {
        /// The scenario's name.
        name: String,
        /// Why.
        error: Box<ConfigError>,
    },
    /// Scenario names must be unique and not empty.
    #[error("[[scenario]] blocks need distinct, non-empty names; '{0}' is repeated or empty")]
    ScenarioName(String),
    /// Live control drives one scenario.
    #[error("--control drives a single run: it cannot be combined with [[scenario]] blocks")]
    ControlWithScenarios,
    /// The data file cannot be used.
    #[error(transparent)]
    Feed(#[from] crate::feed::FeedError),
    /// `--data-mode` without `--data`.
    #[error("--data-mode needs --data FILE")]
    DataModeOnly,
    /// `--max-memory` outside what a plugin can use.
    #[error("--max-memory {0}: expected between 2MiB and 4GiB")]
    MaxMemory(Size),
    /// `--task-timeout` of zero.
    #[error("--task-timeout must be longer than 0s")]
    ZeroTaskTimeout,
    /// A `--dir` that is not a readable directory.
    #[error("--dir {grant}: {why}")]
    Dir {
        /// The grant as written.
        grant: String,
        /// What is wrong with it.
        why: String,
    },
    /// A `--threshold` that cannot be judged or a `--metric` declaration that clashes.
    #[error(transparent)]
    Criteria(#[from] crate::criteria::CriteriaError),
    /// A segment that cannot run.
    #[error("--segment: {0}")]
    Segment(String),
    /// `--barrier`, `--results oci://…` or `--max-start-lateness` without what they need.
    #[error("{0}")]
    Distributed(String),
    /// The stages do not form a valid curve.
    #[error("--stage: {0}")]
    Curve(#[from] loadhost_engine::CurveError),
    /// A secret (the plugin's environment, the control token) cannot be read.
    #[error(transparent)]
    Secret(#[from] crate::secrets::SecretError),
}

/// Everything `loadhost run` needs, checked: what is derived from the options, beside the options
/// themselves (read every option from [`RunSettings::options`]).
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// What the engine will do (the first scenario's plan when there are several).
    pub plan: Plan,
    /// The `[[scenario]]` plans, run together; empty for a single run.
    pub scenarios: Vec<Plan>,
    /// The plugin's environment, from `-e` and `--env-file` (values read, `-e` winning).
    pub env: Vec<(String, String)>,
    /// Instances the runtime must be able to hold at once.
    pub max_instances: u32,
    /// This process's share of a plan run by several processes.
    pub segment: Option<Segment>,
    /// The options in effect (the limits' defaults filled in), echoed in outputs.
    pub options: RunOptions,
}

impl RunSettings {
    /// Each instance's memory cap, in bytes (`--max-memory`, which [`resolve`] always fills in).
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

    /// Every plan of the run: the scenarios', or the one plan.
    pub fn plans(&self) -> &[Plan] {
        if self.scenarios.is_empty() { std::slice::from_ref(&self.plan) } else { &self.scenarios }
    }
}

/// The data feed, loaded once: every scenario's plan holds the same rows.
type SharedFeed = Option<(Arc<Feed>, FeedMode)>;

/// Check `options` and build the plan (one per scenario when there are `[[scenario]]` blocks).
/// A threshold on a metric nobody has declared yet is left to [`check_plugin_metrics`], which
/// the caller makes once it has read the plugin file (the plugin may declare the metric there).
pub fn resolve(mut options: RunOptions) -> Result<RunSettings, ConfigError> {
    let segment = segment(&options)?;
    crate::distributed::check(&options, segment.is_some()).map_err(ConfigError::Distributed)?;
    let env = crate::secrets::plugin_env(&options)?;
    options.control_token = crate::secrets::control_token(&options)?;
    options.metrics_token = crate::secrets::metrics_token(&options)?;
    fill_limits(&mut options)?;
    check_arrivals(&mut options)?;
    check_dirs(&options)?;
    check_criteria(&options)?;
    let feed = load_feed(&options)?;
    let (plan, scenarios) = if options.scenarios.is_empty() {
        (plan_one(&options, &feed)?, Vec::new())
    } else {
        let plans = plan_scenarios(&options, &feed)?;
        (plans[0].clone(), plans)
    };
    let mut settings = RunSettings { plan, scenarios, env, max_instances: 0, segment: None, options };
    if settings.plans().iter().any(Plan::is_open) {
        // Shown in every output's config, as the seed is.
        settings.options.arrivals.get_or_insert(ArrivalsArg::Even);
    }
    if let Some(segment) = segment {
        split(&mut settings, segment)?;
    }
    settings.max_instances = settings.plans().iter().map(Plan::max_workers).fold(0, u32::saturating_add);
    Ok(settings)
}

/// This process's segment: `--segment I/N` (or `LOADHOST_SEGMENT`), or `--segments N` with the
/// index from Kubernetes' `JOB_COMPLETION_INDEX`.
fn segment(options: &RunOptions) -> Result<Option<Segment>, ConfigError> {
    let wrong = |why: String| ConfigError::Segment(why);
    let arg = match (options.segment, options.segments) {
        (Some(arg), Some(n)) if arg.count != n => {
            return Err(wrong(format!("--segment {arg} and --segments {n} disagree on the number of segments")));
        }
        (Some(arg), _) => arg,
        (None, Some(n)) => {
            let name = crate::distributed::JOB_COMPLETION_INDEX;
            let index = std::env::var(name).map_err(|_| {
                wrong(format!("--segments {n} needs ${name} (set by a Kubernetes Indexed Job) or --segment I/{n}"))
            })?;
            let index: u32 = index.trim().parse().map_err(|_| {
                wrong(format!("${name}='{index}' is not a segment index (0 to {})", n.saturating_sub(1)))
            })?;
            crate::distributed::SegmentArg { index, count: n }
        }
        (None, None) => return Ok(None),
    };
    if options.control.is_some() {
        return Err(wrong("--control drives one process's rate; it cannot be combined with segments".into()));
    }
    Segment::new(arg.index, arg.count).map(Some).map_err(|err| wrong(err.to_string()))
}

/// How large a plugin file `options` let a command read (`--max-plugin-size`), as the file
/// reader's cap.
pub fn plugin_cap(options: &RunOptions) -> loadhost_input::Cap {
    let bytes = options.max_plugin_size.map_or(DEFAULT_MAX_PLUGIN_SIZE, |s| s.0);
    loadhost_input::PLUGIN.raised(bytes, "--max-plugin-size raises it")
}

/// The limits every run has: fill in their defaults, so outputs show what was in force, and check
/// them.
fn fill_limits(options: &mut RunOptions) -> Result<(), ConfigError> {
    let max_memory = options.max_memory.get_or_insert(Size(DEFAULT_MAX_MEMORY)).0;
    if !(MIN_MAX_MEMORY..=MAX_MAX_MEMORY).contains(&max_memory) {
        return Err(ConfigError::MaxMemory(Size(max_memory)));
    }
    let body = options.max_response_body.get_or_insert(Size(DEFAULT_MAX_RESPONSE_BODY.min(max_memory)));
    if body.0 == 0 {
        return Err(ConfigError::Zero { flag: "max-response-body" });
    }
    if options.max_plugin_size.is_some_and(|s| s.0 == 0) {
        return Err(ConfigError::Zero { flag: "max-plugin-size" });
    }
    if options.task_timeout.get_or_insert(Dur(DEFAULT_TASK_TIMEOUT)).0.is_zero() {
        return Err(ConfigError::ZeroTaskTimeout);
    }
    options.grace.get_or_insert(Dur(DEFAULT_GRACE));
    options.graceful_stop.get_or_insert(Dur(DEFAULT_GRACEFUL_STOP));
    Ok(())
}

/// `--arrivals` applies to the open model; the seed in effect is `--seed` or one drawn now, kept in
/// the options so every output shows it.
fn check_arrivals(options: &mut RunOptions) -> Result<(), ConfigError> {
    if options.scenarios.is_empty() && options.rate.is_none() && options.arrivals.is_some() {
        return Err(ConfigError::OpenOnly { flag: "arrivals" });
    }
    if options.seed.is_none() {
        // Every segment of a split run must draw the same arrivals (and `merge` wants one plan):
        // they take their seed from what they share, `--start-at`, not from chance.
        let segmented = options.segment.is_some() || options.segments.is_some();
        let shared = options.start_at.map(|at| at.to_string()).unwrap_or_default();
        options.seed = Some(if segmented { stable_seed(&shared) } else { random_seed() });
    }
    Ok(())
}

/// A seed below 2⁵³ that every process computes alike from `text` (FNV-1a).
fn stable_seed(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)) >> 11
}

/// A fresh seed below 2⁵³, so it survives every JSON reader and a TOML file exactly: std's
/// `RandomState` is keyed from the operating system's randomness, and the clock varies it further.
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    hasher.write_u128(now.as_nanos());
    hasher.finish() >> 11
}

/// The stages as the engine's ramps: a sine stage becomes its linear pieces.
fn ramps(stages: &[Stage]) -> Result<Vec<Ramp>, ConfigError> {
    let mut ramps = Vec::with_capacity(stages.len());
    for stage in stages {
        match stage.shape {
            Shape::Linear => ramps.push(Ramp { duration: stage.duration.0, target: stage.target.0 }),
            Shape::Sine { period, min, max } => {
                ramps.extend(loadhost_engine::sine_ramps(period.0, min.0, max.0, stage.duration.0)?)
            }
        }
    }
    Ok(ramps)
}

/// Every `--dir` is a directory there is.
fn check_dirs(options: &RunOptions) -> Result<(), ConfigError> {
    for grant in &options.dir {
        if !grant.host.is_dir() {
            let why = if grant.host.exists() { "not a directory" } else { "no such directory" };
            return Err(ConfigError::Dir { grant: grant.to_string(), why: why.to_owned() });
        }
    }
    Ok(())
}

/// Check, before any load, that every threshold can be judged in this run's scenarios, but for
/// a metric no one has declared yet: the plugin may declare it, and its file is read later
/// ([`check_plugin_metrics`]).
fn check_criteria(options: &RunOptions) -> Result<(), ConfigError> {
    crate::criteria::check_declared(&options.metric, None, &options.threshold, &scenario_names(options))?;
    Ok(())
}

/// Check, before any load, every threshold with the metrics the plugin declares (read from its
/// file) known beside the `--metric` flags: the unknown-metric check [`resolve`] leaves to this.
pub fn check_plugin_metrics(settings: &RunSettings, plugin: &[MetricDecl]) -> Result<(), ConfigError> {
    let options = &settings.options;
    crate::criteria::check_declared(&options.metric, Some(plugin), &options.threshold, &scenario_names(options))?;
    Ok(())
}

/// The run's scenario names: its `[[scenario]]` blocks', or `default`.
fn scenario_names(options: &RunOptions) -> Vec<&str> {
    if options.scenarios.is_empty() {
        vec!["default"]
    } else {
        options.scenarios.iter().map(|s| s.name.as_str()).collect()
    }
}

/// `--data`, loaded once for the whole run (the engine's workers borrow its rows, no copies).
fn load_feed(options: &RunOptions) -> Result<SharedFeed, ConfigError> {
    let mode = match options.data_mode {
        Some(DataModeArg::Once) => FeedMode::Once,
        Some(DataModeArg::Loop) | None => FeedMode::Loop,
    };
    match &options.data {
        Some(path) => Ok(Some((Arc::new(crate::feed::load(path)?), mode))),
        None if options.data_mode.is_some() => Err(ConfigError::DataModeOnly),
        None => Ok(None),
    }
}

/// One plan per `[[scenario]]` block, each from [`ScenarioOptions::within`] the top level, named
/// and delayed by its block.
///
/// [`ScenarioOptions::within`]: crate::options::ScenarioOptions::within
fn plan_scenarios(options: &RunOptions, feed: &SharedFeed) -> Result<Vec<Plan>, ConfigError> {
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

/// Split every plan into this process's segment. A worker ramp has no exact split.
fn split(settings: &mut RunSettings, segment: Segment) -> Result<(), ConfigError> {
    if settings.plans().iter().any(|p| p.worker_curve().is_some()) {
        return Err(ConfigError::Segment(
            "worker stages (--stage without --rate) cannot be split into segments; ramp a rate instead".into(),
        ));
    }
    settings.plan = settings.plan.clone().with_segment(segment);
    settings.scenarios = std::mem::take(&mut settings.scenarios).into_iter().map(|p| p.with_segment(segment)).collect();
    settings.segment = Some(segment);
    Ok(())
}

/// One event loop per CPU the process may use.
fn default_threads() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
}

/// Whether `options` make the open model (`--rate`, as in k6).
fn plan_is_open(options: &RunOptions) -> bool {
    options.rate.is_some()
}

/// Check one run's (or scenario's) options and build its plan.
fn plan_one(options: &RunOptions, feed: &SharedFeed) -> Result<Plan, ConfigError> {
    check_counts(options)?;
    let ramps = ramps(&options.stage)?;
    // A `once` feed bounds the run by its rows, like -n.
    let iterations = match feed {
        Some((feed, FeedMode::Once)) => {
            Some(options.iterations.map_or(feed.len() as u64, |n| n.min(feed.len() as u64)))
        }
        _ => options.iterations,
    };
    // As in k6: --rate makes the open model, and --stage then ramps the rate; without --rate,
    // --stage ramps the number of looping workers.
    let model = if plan_is_open(options) {
        open_model(options, &ramps, iterations)?
    } else {
        closed_model(options, &ramps, iterations)?
    };
    // A real run has an event loop per thread, each pacing on a precise timer (tests of the engine
    // use the runtime's timer instead, which follows paused time).
    let arrivals = match options.arrivals {
        Some(ArrivalsArg::Poisson) => Arrivals::Poisson,
        Some(ArrivalsArg::Even) | None => Arrivals::Even,
    };
    let mut plan = Plan::new(model)?
        .with_arrivals(arrivals)
        .with_seed(options.seed.unwrap_or_default())
        .with_pacer_clock(PacerClock::Precise)
        .with_pacing(loadhost_engine::Pacing { pace: options.pace.map(|d| d.0), think: options.think.map(|t| t.0) })?
        .with_threads(options.threads.map_or_else(|| Threads::Auto(default_threads()), Threads::Exactly))
        // The open model's default ceiling follows memory; a ceiling the user set (or the closed
        // model's -w) is only warned about.
        .with_memory_aware_crew(!plan_is_open(options) || options.max_workers.is_some());
    if !plan.is_open() && !ramps.is_empty() {
        plan = plan.with_worker_stages(&ramps)?;
    }
    if let Some(n) = options.max_in_flight {
        plan = plan.with_max_in_flight(n)?;
    }
    if let Some((feed, mode)) = feed {
        plan = plan.with_feed(Arc::clone(feed), *mode)?;
    }
    plan = plan
        .with_lifecycle_timeout(options.lifecycle_timeout.map_or(DEFAULT_LIFECYCLE_TIMEOUT, |d| d.0))
        .with_task_timeout(options.task_timeout.map_or(DEFAULT_TASK_TIMEOUT, |d| d.0))
        .with_grace(options.grace.map_or(DEFAULT_GRACE, |d| d.0))
        .with_graceful_stop(options.graceful_stop.map_or(DEFAULT_GRACEFUL_STOP, |d| d.0));
    with_retries(plan, options)
}

/// Counts that must be positive are, and a duration is longer than nothing.
fn check_counts(options: &RunOptions) -> Result<(), ConfigError> {
    for (flag, value) in [
        ("workers", options.workers.map(u64::from)),
        ("max-workers", options.max_workers.map(u64::from)),
        ("iterations", options.iterations),
        ("max-in-flight", options.max_in_flight.map(u64::from)),
        ("threads", options.threads.map(u64::from)),
        ("retries", options.retries.map(u64::from)),
        ("retry-queue", options.retry_queue.map(u64::from)),
        ("max-connections-per-host", options.max_connections_per_host.map(u64::from)),
    ] {
        if value == Some(0) {
            return Err(ConfigError::Zero { flag });
        }
    }
    if options.duration.is_some_and(|d| d.0.is_zero()) {
        return Err(ConfigError::ZeroDuration);
    }
    Ok(())
}

/// `--rate`: tasks on a schedule (the rate ramped by `ramps`), a crew from `--workers` growing up
/// to `--max-workers`.
fn open_model(options: &RunOptions, ramps: &[Ramp], iterations: Option<u64>) -> Result<Model, ConfigError> {
    let duration = options.duration.map(|d| d.0);
    if options.rate.is_some_and(|r| r.0 == 0.0) && ramps.is_empty() {
        return Err(ConfigError::ZeroRate);
    }
    if duration.is_none() && iterations.is_none() && ramps.is_empty() {
        return Err(ConfigError::Unbounded { model: "--rate" });
    }
    if let (Some(workers), Some(max)) = (options.workers, options.max_workers)
        && workers > max
    {
        return Err(ConfigError::WorkersAboveMax { workers, max });
    }
    let curve = RateCurve::new(options.rate.map_or(0.0, |r| r.0), ramps, duration)?;
    let max_workers = options.max_workers.unwrap_or(DEFAULT_MAX_WORKERS.max(options.workers.unwrap_or(0)));
    let workers = options.workers.unwrap_or_else(|| default_open_workers(curve.peak_rate(), max_workers));
    let overload = match options.overload {
        Some(OverloadArg::Queue) => Overload::Queue,
        Some(OverloadArg::Drop) | None => Overload::Drop,
    };
    Ok(Model::Open { curve, max_tasks: iterations, workers, max_workers, overload })
}

/// No `--rate`: workers looping, as many as `--workers` (or the stages' ramp, set on the plan),
/// for `--duration` (or as long as the stages) or `--iterations`.
fn closed_model(options: &RunOptions, ramps: &[Ramp], iterations: Option<u64>) -> Result<Model, ConfigError> {
    if options.max_workers.is_some() {
        return Err(ConfigError::OpenOnly { flag: "max-workers" });
    }
    if options.overload.is_some() {
        return Err(ConfigError::OpenOnly { flag: "overload" });
    }
    let stages_total = (!ramps.is_empty()).then(|| ramps.iter().map(|r| r.duration).sum());
    let duration = options.duration.map(|d| d.0).or(stages_total);
    // Like k6 with no options at all: one worker, one task, a smoke test.
    let bare = options.workers.is_none() && duration.is_none() && iterations.is_none();
    if !bare && duration.is_none() && iterations.is_none() {
        return Err(ConfigError::Unbounded { model: "--workers" });
    }
    let max_tasks = if bare { Some(1) } else { iterations };
    Ok(Model::Closed { workers: options.workers.unwrap_or(DEFAULT_CLOSED_WORKERS), duration, max_tasks })
}

/// `--retries` and the options that tune it, which mean nothing without it.
fn with_retries(plan: Plan, options: &RunOptions) -> Result<Plan, ConfigError> {
    let Some(max_retries) = options.retries else {
        for (flag, set) in [
            ("retry-backoff", options.retry_backoff.is_some()),
            ("retry-budget", options.retry_budget.is_some()),
            ("retry-queue", options.retry_queue.is_some()),
            ("flush-retries-timeout", options.flush_retries_timeout.is_some()),
        ] {
            if set {
                return Err(ConfigError::RetriesOnly { flag });
            }
        }
        return Ok(plan);
    };
    if options.retry_budget.is_some() && !plan.is_open() {
        return Err(ConfigError::OpenOnly { flag: "retry-budget" });
    }
    Ok(plan.with_retries(RetryPolicy {
        max_retries,
        backoff: options.retry_backoff.map_or(DEFAULT_RETRY_BACKOFF, |d| d.0),
        budget: options.retry_budget.map_or(DEFAULT_RETRY_BUDGET, |p| p.0),
        flush_timeout: options.flush_retries_timeout.map_or(DEFAULT_FLUSH_RETRIES_TIMEOUT, |d| d.0),
        queue_limit: options.retry_queue.unwrap_or(DEFAULT_RETRY_QUEUE) as usize,
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;

    fn opts(f: impl FnOnce(&mut RunOptions)) -> RunOptions {
        let mut o = RunOptions::default();
        f(&mut o);
        o
    }

    #[test]
    fn no_options_is_one_task_on_one_worker() {
        let s = resolve(RunOptions::default()).unwrap();
        assert_eq!(s.plan.model(), &Model::Closed { workers: 1, duration: None, max_tasks: Some(1) });
    }

    #[test]
    fn rate_and_duration_make_the_open_model() {
        let s = resolve(opts(|o| {
            o.rate = Some(Rate(2000.0));
            o.duration = Some("5s".parse().unwrap());
        }))
        .unwrap();
        assert_eq!(s.plan.planned_tasks(), Some(10_000));
        assert_eq!(s.plan.workers(), 20, "one per 100 tasks/s");
        assert_eq!(s.plan.max_workers(), DEFAULT_MAX_WORKERS);
        assert_eq!(s.max_instances, DEFAULT_MAX_WORKERS);
    }

    #[test]
    fn the_default_starting_crew_follows_the_peak_rate_within_bounds() {
        assert_eq!(default_open_workers(50.0, 1000), MIN_OPEN_WORKERS, "a slow Python plugin holds 2, not 100");
        assert_eq!(default_open_workers(1_000.0, 1000), 10);
        assert_eq!(default_open_workers(80_000.0, 1000), DEFAULT_OPEN_WORKERS);
        assert_eq!(default_open_workers(1_000.0, 4), 4, "never above --max-workers");
    }

    #[test]
    fn stages_ramp_the_rate_with_rate_and_the_workers_without() {
        let s = resolve(opts(|o| {
            o.rate = Some(Rate(0.0));
            o.stage = vec!["10s:1000".parse().unwrap()];
        }))
        .unwrap();
        assert_eq!(s.plan.planned_tasks(), Some(5_000));
        let s = resolve(opts(|o| o.stage = vec!["10s:40".parse().unwrap(), "5s:0".parse().unwrap()])).unwrap();
        assert!(!s.plan.is_open());
        assert_eq!(s.plan.planned_generation(), Some(std::time::Duration::from_secs(15)));
        assert_eq!((s.plan.workers(), s.plan.max_workers(), s.max_instances), (1, 40, 40));
    }

    #[test]
    fn max_workers_caps_the_open_crew_and_workers_sets_its_floor() {
        let s = resolve(opts(|o| {
            o.rate = Some(Rate(2000.0));
            o.duration = Some("5s".parse().unwrap());
            o.max_workers = Some(5);
        }))
        .unwrap();
        assert_eq!((s.plan.workers(), s.plan.max_workers()), (5, 5));
        let s = resolve(opts(|o| {
            o.rate = Some(Rate(200.0));
            o.duration = Some("5s".parse().unwrap());
            o.workers = Some(2);
            o.max_workers = Some(60);
        }))
        .unwrap();
        assert_eq!((s.plan.workers(), s.plan.max_workers(), s.max_instances), (2, 60, 60));
    }

    #[test]
    fn scenarios_take_their_own_model_and_fall_back_for_bounds() {
        let toml = r#"
            duration = "10s"
            max-in-flight = 8
            [[scenario]]
            name = "browse"
            rate = 100
            [[scenario]]
            name = "checkout"
            workers = 2
            start-after = "2s"
            iterations = 50
        "#;
        let options = crate::file::parse(std::path::Path::new("run.toml"), toml).unwrap();
        let s = resolve(options).unwrap();
        assert_eq!(s.scenarios.len(), 2);
        let (browse, checkout) = (&s.scenarios[0], &s.scenarios[1]);
        assert_eq!((browse.scenario(), browse.is_open(), browse.planned_tasks()), ("browse", true, Some(1000)));
        assert_eq!(browse.max_in_flight(), Some(8), "bounds fall back to the top level");
        assert_eq!((checkout.scenario(), checkout.is_open()), ("checkout", false));
        assert_eq!(checkout.start_delay(), std::time::Duration::from_secs(2));
        assert_eq!(s.max_instances, DEFAULT_MAX_WORKERS + 2);
    }

    #[test]
    fn scenarios_share_one_data_feed() {
        let dir = tempfile::tempdir().unwrap();
        let rows = dir.path().join("rows.jsonl");
        std::fs::write(&rows, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n").unwrap();
        let toml = format!(
            "data = {:?}\ndata-mode = \"once\"\nduration = \"10s\"\n[[scenario]]\nname = \"a\"\nrate = 100\n[[scenario]]\nname = \"b\"\nworkers = 1\n",
            rows.display().to_string()
        );
        let s = resolve(crate::file::parse(std::path::Path::new("run.toml"), &toml).unwrap()).unwrap();
        let (a, b) = (s.scenarios[0].feed().unwrap(), s.scenarios[1].feed().unwrap());
        assert!(std::sync::Arc::ptr_eq(a, b), "one load, one buffer for every scenario");
        assert_eq!(s.scenarios[0].planned_tasks(), Some(3), "a once feed bounds each scenario by its rows");
    }

    #[test]
    fn bad_scenarios_name_themselves() {
        let parse = |toml: &str| crate::file::parse(std::path::Path::new("run.toml"), toml).unwrap();
        let err = resolve(parse("[[scenario]]\nname = \"a\"\nrate = 5\n")).unwrap_err().to_string();
        assert!(err.starts_with("scenario 'a': --rate needs --duration"), "{err}");
        let err = resolve(parse("[[scenario]]\nname = \"a\"\nworkers = 1\niterations = 1\n[[scenario]]\nname = \"a\"\nworkers = 1\niterations = 1\n")).unwrap_err().to_string();
        assert!(err.contains("'a' is repeated or empty"), "{err}");
        let err = crate::file::parse(std::path::Path::new("run.toml"), "[[scenario]]\nname = \"a\"\nratez = 1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `ratez`"), "{err}");
    }

    #[test]
    fn a_periodic_block_is_one_worker_on_a_timer_for_the_runs_duration() {
        let parse = |toml: &str| crate::file::parse(std::path::Path::new("run.toml"), toml).unwrap();
        let s = resolve(parse(
            "duration = \"10s\"\noverload = \"queue\"\n[[scenario]]\nname = \"load\"\nrate = 50\n\
             [[scenario]]\nname = \"refresh\"\nevery = \"2s\"\njitter = \"500ms\"\n",
        ))
        .unwrap();
        let timer = &s.scenarios[1];
        assert_eq!((timer.workers(), timer.max_workers()), (1, 1));
        assert_eq!(
            timer.arrivals(),
            Arrivals::Periodic { every: Duration::from_secs(2), jitter: Duration::from_millis(500) }
        );
        assert!(
            matches!(timer.model(), Model::Open { overload: Overload::Drop, .. }),
            "a busy tick drops, never queues"
        );
        for (block, says) in
            [("every = \"1s\"\nrate = 5\n", "`rate` cannot go with it"), ("every = \"0s\"\n", "longer than 0s")]
        {
            let err = resolve(parse(&format!("duration = \"5s\"\n[[scenario]]\nname = \"t\"\n{block}"))).unwrap_err();
            assert!(err.to_string().starts_with("scenario 't': ") && err.to_string().contains(says), "{err}");
        }
        let err = resolve(parse("[[scenario]]\nname = \"t\"\nevery = \"1s\"\n")).unwrap_err().to_string();
        assert!(err.contains("runs for the run's `duration`"), "{err}");
    }

    #[test]
    fn combinations_that_cannot_run_name_their_flags() {
        let cases: Vec<(RunOptions, &str)> = vec![
            (opts(|o| o.rate = Some(Rate(10.0))), "--rate needs --duration"),
            (
                opts(|o| {
                    o.stage = vec!["5s:10".parse().unwrap()];
                    o.max_workers = Some(3);
                }),
                "--max-workers applies to the open model",
            ),
            (opts(|o| o.workers = Some(4)), "--workers needs --duration"),
            (opts(|o| o.workers = Some(0)), "--workers must be at least 1"),
            (opts(|o| o.iterations = Some(0)), "--iterations must be at least 1"),
            (
                opts(|o| {
                    o.iterations = Some(5);
                    o.retry_backoff = Some("1s".parse().unwrap());
                }),
                "--retry-backoff needs --retries N",
            ),
            (
                opts(|o| {
                    o.iterations = Some(5);
                    o.retries = Some(2);
                    o.retry_budget = Some("10".parse().unwrap());
                }),
                "--retry-budget applies to the open model",
            ),
            (opts(|o| o.duration = Some("0s".parse().unwrap())), "--duration must be longer than 0s"),
            (
                opts(|o| {
                    o.rate = Some(Rate(0.0));
                    o.duration = Some("1s".parse().unwrap());
                }),
                "--rate must be more than 0",
            ),
            (
                opts(|o| {
                    o.max_workers = Some(3);
                    o.iterations = Some(5);
                }),
                "--max-workers applies to the open model",
            ),
            (
                opts(|o| {
                    o.overload = Some(OverloadArg::Queue);
                    o.iterations = Some(5);
                }),
                "--overload applies to the open model",
            ),
            (
                opts(|o| {
                    o.rate = Some(Rate(1.0));
                    o.iterations = Some(5);
                    o.workers = Some(9);
                    o.max_workers = Some(3);
                }),
                "--workers (9) is more than --max-workers (3)",
            ),
        ];
        for (options, expected) in cases {
            let err = resolve(options).expect_err(expected).to_string();
            assert!(err.starts_with(expected), "expected '{expected}…', got '{err}'");
        }
    }
}
