//! From options to a runnable plan: the checks that need more than one option at a time.

use std::path::PathBuf;

use loadhost_engine::{
    FeedMode, Model, Overload, PacerClock, Plan, PlanError, Ramp, RateCurve, RetryPolicy, Segment, Threads,
};
use thiserror::Error;

use crate::options::{DataModeArg, OverloadArg, RunOptions};

/// Workers the open model starts with (and never retires below) when `--workers` does not say.
/// Idle instances cost about 2 KiB each, and a floor this size absorbs bursts of due tasks without
/// drops while the crew grows.
pub const DEFAULT_OPEN_WORKERS: u32 = 100;

/// The open model's crew ceiling when `--max-workers` does not say.
pub const DEFAULT_MAX_WORKERS: u32 = 1000;

/// The base retry backoff when `--retry-backoff` does not say.
pub const DEFAULT_RETRY_BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);
/// The share of slots retries may take when `--retry-budget` does not say (as Envoy's default).
pub const DEFAULT_RETRY_BUDGET: f64 = 0.2;
/// How long pending retries are flushed when `--flush-retries-timeout` does not say.
pub const DEFAULT_FLUSH_RETRIES_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// The retry queue's bound when `--retry-queue` does not say (about 3 MB of tickets).
pub const DEFAULT_RETRY_QUEUE: u32 = 100_000;

pub use loadhost_engine::plan::{DEFAULT_GRACE, DEFAULT_TASK_TIMEOUT};
/// Each instance's memory cap when `--max-memory` does not say: ample for compiled guests (a Rust
/// plugin starts at about 1 MiB), and 1,000 workers still cannot take more than 128 GiB.
pub const DEFAULT_MAX_MEMORY: u64 = 128 << 20;

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
    MaxMemory(crate::units::Size),
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
    /// A threshold that cannot be judged: unknown metric, wrong aggregate, unknown scenario.
    #[error("--threshold {0}")]
    Threshold(#[from] loadhost_metrics::ThresholdError),
    /// A `--metric` declaration that clashes.
    #[error("--metric {decl}: {why}")]
    Metric {
        /// The declaration as written.
        decl: String,
        /// What is wrong.
        why: &'static str,
    },
    /// A segment that cannot run.
    #[error("--segment: {0}")]
    Segment(String),
    /// The stages do not form a valid curve.
    #[error("--stage: {0}")]
    Curve(#[from] loadhost_engine::CurveError),
    /// A secret (the plugin's environment, the control token) cannot be read.
    #[error(transparent)]
    Secret(#[from] crate::secrets::SecretError),
}

/// Everything `loadhost run` needs, checked.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// What the engine will do (the first scenario's plan when there are several).
    pub plan: Plan,
    /// The `[[scenario]]` plans, run together; empty for a single run.
    pub scenarios: Vec<Plan>,
    /// The plugin's environment.
    pub env: Vec<(String, String)>,
    /// Where to write the summary JSON.
    pub summary_json: Option<PathBuf>,
    /// Where to write the per-interval CSV.
    pub csv: Option<PathBuf>,
    /// Instances the runtime must be able to hold at once.
    pub max_instances: u32,
    /// Each instance's memory cap, in bytes.
    pub max_memory: u64,
    /// Host directories the plugin may read.
    pub dirs: Vec<crate::units::DirGrant>,
    /// This process's share of a plan run by several processes.
    pub segment: Option<Segment>,
    /// The options in effect (defaults filled in), echoed in outputs.
    pub options: RunOptions,
}

/// Check, before any load, that every threshold can be judged: its metric is built in or
/// declared with `--metric`, its aggregate suits the metric's kind, and a scenario tag names a
/// scenario of the run. An unknown metric is an error, never a silent pass.
fn check_criteria(options: &RunOptions) -> Result<(), ConfigError> {
    let mut declared = std::collections::HashMap::new();
    for decl in &options.metric {
        if loadhost_metrics::threshold::built_in_kind(&decl.name).is_some() {
            return Err(ConfigError::Metric { decl: decl.to_string(), why: "that name is a built-in metric" });
        }
        if declared.insert(decl.name.as_str(), decl.kind).is_some_and(|kind| kind != decl.kind) {
            return Err(ConfigError::Metric { decl: decl.to_string(), why: "declared twice with different kinds" });
        }
    }
    let scenarios: Vec<&str> = if options.scenarios.is_empty() {
        vec!["default"]
    } else {
        options.scenarios.iter().map(|s| s.name.as_str()).collect()
    };
    let lookup = |name: &str| declared.get(name).copied();
    for spec in &options.threshold {
        spec.threshold.validate(&lookup, &scenarios)?;
    }
    Ok(())
}

/// Check `options` and build the plan (one per scenario when there are `[[scenario]]` blocks).
pub fn resolve(options: RunOptions) -> Result<RunSettings, ConfigError> {
    let segment = segment(&options)?;
    let env = crate::secrets::plugin_env(&options)?;
    let token = crate::secrets::control_token(&options)?;
    let mut settings = resolve_plans(options)?;
    settings.env = env;
    settings.options.control_token = token;
    if let Some(segment) = segment {
        if settings.plan.worker_curve().is_some() || settings.scenarios.iter().any(|p| p.worker_curve().is_some()) {
            return Err(ConfigError::Segment(
                "worker stages (--stage without --rate) cannot be split into segments; ramp a rate instead".into(),
            ));
        }
        settings.plan = settings.plan.with_segment(segment);
        settings.scenarios = settings.scenarios.into_iter().map(|p| p.with_segment(segment)).collect();
        settings.max_instances = if settings.scenarios.is_empty() {
            settings.plan.max_workers()
        } else {
            settings.scenarios.iter().map(Plan::max_workers).fold(0, u32::saturating_add)
        };
        settings.segment = Some(segment);
    }
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

/// Check the options and build the whole plan (one per scenario), before any segmenting.
fn resolve_plans(mut options: RunOptions) -> Result<RunSettings, ConfigError> {
    // Limits always apply: fill in their defaults so outputs show what was in force.
    let max_memory = options.max_memory.get_or_insert(crate::units::Size(DEFAULT_MAX_MEMORY)).0;
    if !(MIN_MAX_MEMORY..=MAX_MAX_MEMORY).contains(&max_memory) {
        return Err(ConfigError::MaxMemory(crate::units::Size(max_memory)));
    }
    let body = options.max_response_body.get_or_insert(crate::units::Size(DEFAULT_MAX_RESPONSE_BODY.min(max_memory)));
    if body.0 == 0 {
        return Err(ConfigError::Zero { flag: "max-response-body" });
    }
    if options.task_timeout.get_or_insert(crate::units::Dur(DEFAULT_TASK_TIMEOUT)).0.is_zero() {
        return Err(ConfigError::ZeroTaskTimeout);
    }
    options.grace.get_or_insert(crate::units::Dur(DEFAULT_GRACE));
    for grant in &options.dir {
        if !grant.host.is_dir() {
            let why = if grant.host.exists() { "not a directory" } else { "no such directory" };
            return Err(ConfigError::Dir { grant: grant.to_string(), why: why.to_owned() });
        }
    }
    check_criteria(&options)?;
    if options.scenarios.is_empty() {
        return resolve_one(options);
    }
    if options.control.is_some() {
        return Err(ConfigError::ControlWithScenarios);
    }
    let mut names = std::collections::HashSet::new();
    let mut plans = Vec::new();
    let mut max_instances = 0u32;
    for scenario in &options.scenarios {
        if scenario.name.trim().is_empty() || !names.insert(scenario.name.clone()) {
            return Err(ConfigError::ScenarioName(scenario.name.clone()));
        }
        let own = RunOptions {
            rate: scenario.rate,
            workers: scenario.workers,
            stage: scenario.stage.clone(),
            max_workers: scenario.max_workers.or(options.max_workers),
            duration: scenario.duration.or(options.duration),
            iterations: scenario.iterations.or(options.iterations),
            overload: scenario.overload.or(options.overload),
            max_in_flight: scenario.max_in_flight.or(options.max_in_flight),
            scenarios: Vec::new(),
            ..options.clone()
        };
        let wrap = |error| ConfigError::Scenario { name: scenario.name.clone(), error: Box::new(error) };
        let settings = resolve_one(own).map_err(wrap)?;
        max_instances = max_instances.saturating_add(settings.max_instances);
        let delay = scenario.start_after.map_or(std::time::Duration::ZERO, |d| d.0);
        plans.push(settings.plan.with_scenario(scenario.name.clone()).with_start_delay(delay));
    }
    Ok(RunSettings {
        plan: plans[0].clone(),
        scenarios: plans,
        env: options.env.iter().map(|p| (p.key.clone(), p.value.clone())).collect(),
        summary_json: options.summary_json.clone(),
        csv: options.csv.clone(),
        max_instances,
        max_memory: options.max_memory.map_or(DEFAULT_MAX_MEMORY, |s| s.0),
        dirs: options.dir.clone(),
        segment: None,
        options,
    })
}

/// One event loop per CPU the process may use.
fn default_threads() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
}

/// Check one run's options and build its plan.
fn resolve_one(options: RunOptions) -> Result<RunSettings, ConfigError> {
    for (flag, value) in [("workers", options.workers), ("max-workers", options.max_workers)] {
        if value == Some(0) {
            return Err(ConfigError::Zero { flag });
        }
    }
    for (flag, value) in [
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
    let duration = options.duration.map(|d| d.0);
    // As in k6: --rate makes the open model, and --stage then ramps the rate; without --rate,
    // --stage ramps the number of looping workers.
    let open = options.rate.is_some();
    let ramps: Vec<Ramp> = options.stage.iter().map(|s| Ramp { duration: s.duration.0, target: s.target.0 }).collect();
    let stages_total: Option<std::time::Duration> = (!ramps.is_empty()).then(|| ramps.iter().map(|r| r.duration).sum());
    let feed = match &options.data {
        Some(path) => Some(std::sync::Arc::new(crate::feed::load(path)?)),
        None if options.data_mode.is_some() => return Err(ConfigError::DataModeOnly),
        None => None,
    };
    let feed_mode = match options.data_mode {
        Some(DataModeArg::Once) => FeedMode::Once,
        Some(DataModeArg::Loop) | None => FeedMode::Loop,
    };
    // A `once` feed bounds the run by its rows, like -n.
    let iterations = match (&feed, feed_mode) {
        (Some(feed), FeedMode::Once) => {
            Some(options.iterations.map_or(feed.len() as u64, |n| n.min(feed.len() as u64)))
        }
        _ => options.iterations,
    };

    let model = if open {
        if options.rate.is_some_and(|r| r.0 == 0.0) && options.stage.is_empty() {
            return Err(ConfigError::ZeroRate);
        }
        if duration.is_none() && iterations.is_none() && options.stage.is_empty() {
            return Err(ConfigError::Unbounded { model: "--rate" });
        }
        if let (Some(workers), Some(max)) = (options.workers, options.max_workers)
            && workers > max
        {
            return Err(ConfigError::WorkersAboveMax { workers, max });
        }
        let ramps: Vec<Ramp> =
            options.stage.iter().map(|s| Ramp { duration: s.duration.0, target: s.target.0 }).collect();
        let curve = RateCurve::new(options.rate.map_or(0.0, |r| r.0), &ramps, duration)?;
        let max_workers = options.max_workers.unwrap_or(DEFAULT_MAX_WORKERS.max(options.workers.unwrap_or(0)));
        let workers = options.workers.unwrap_or(DEFAULT_OPEN_WORKERS.min(max_workers));
        let overload = match options.overload {
            Some(OverloadArg::Queue) => Overload::Queue,
            Some(OverloadArg::Drop) | None => Overload::Drop,
        };
        Model::Open { curve, max_tasks: iterations, workers, max_workers, overload }
    } else {
        if options.max_workers.is_some() {
            return Err(ConfigError::OpenOnly { flag: "max-workers" });
        }
        if options.overload.is_some() {
            return Err(ConfigError::OpenOnly { flag: "overload" });
        }
        // Like k6 with no options at all: one worker, one task, a smoke test.
        let duration = duration.or(stages_total);
        let bare = options.workers.is_none() && duration.is_none() && iterations.is_none();
        if !bare && duration.is_none() && iterations.is_none() {
            return Err(ConfigError::Unbounded { model: "--workers" });
        }
        let max_tasks = if bare { Some(1) } else { iterations };
        Model::Closed { workers: options.workers.unwrap_or(1), duration, max_tasks }
    };
    // A real run has an event loop per thread, each pacing on a precise timer (tests of the engine
    // use the runtime's timer instead, which follows paused time).
    let mut plan = Plan::new(model)?
        .with_pacer_clock(PacerClock::Precise)
        .with_threads(options.threads.map_or_else(|| Threads::Auto(default_threads()), Threads::Exactly));
    if !open && !ramps.is_empty() {
        plan = plan.with_worker_stages(&ramps)?;
    }
    if let Some(n) = options.max_in_flight {
        plan = plan.with_max_in_flight(n)?;
    }
    if let Some(feed) = feed {
        plan = plan.with_feed(feed, feed_mode)?;
    }
    if let Some(limit) = options.lifecycle_timeout {
        plan = plan.with_lifecycle_timeout(limit.0);
    }
    plan = plan
        .with_task_timeout(options.task_timeout.map_or(DEFAULT_TASK_TIMEOUT, |d| d.0))
        .with_grace(options.grace.map_or(DEFAULT_GRACE, |d| d.0));
    if let Some(max_retries) = options.retries {
        if options.retry_budget.is_some() && !plan.is_open() {
            return Err(ConfigError::OpenOnly { flag: "retry-budget" });
        }
        plan = plan.with_retries(RetryPolicy {
            max_retries,
            backoff: options.retry_backoff.map_or(DEFAULT_RETRY_BACKOFF, |d| d.0),
            budget: options.retry_budget.map_or(DEFAULT_RETRY_BUDGET, |p| p.0),
            flush_timeout: options.flush_retries_timeout.map_or(DEFAULT_FLUSH_RETRIES_TIMEOUT, |d| d.0),
            queue_limit: options.retry_queue.unwrap_or(DEFAULT_RETRY_QUEUE) as usize,
        })?;
    } else {
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
    }
    Ok(RunSettings {
        scenarios: Vec::new(),
        max_instances: plan.max_workers(),
        env: options.env.iter().map(|p| (p.key.clone(), p.value.clone())).collect(),
        summary_json: options.summary_json.clone(),
        csv: options.csv.clone(),
        plan,
        max_memory: options.max_memory.map_or(DEFAULT_MAX_MEMORY, |s| s.0),
        dirs: options.dir.clone(),
        segment: None,
        options,
    })
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
        assert_eq!(s.plan.workers(), DEFAULT_OPEN_WORKERS);
        assert_eq!(s.plan.max_workers(), DEFAULT_MAX_WORKERS);
        assert_eq!(s.max_instances, DEFAULT_MAX_WORKERS);
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
            o.rate = Some(Rate(200.0));
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
