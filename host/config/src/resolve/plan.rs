//! One run's (or one scenario's) options made into an engine plan: the counts checked, the load
//! model (open or closed, with their default crews), then the plan's options and its retries.

use std::sync::Arc;
use std::time::Duration;

use loadhost_engine::{Arrivals, FeedMode, Model, Overload, PacerClock, Plan, Ramp, RateCurve, RetryPolicy, Threads};

use super::limits::{
    DEFAULT_GRACE, DEFAULT_GRACEFUL_STOP, DEFAULT_LIFECYCLE_TIMEOUT, DEFAULT_MAX_MEMORY, DEFAULT_TASK_TIMEOUT,
};
use super::{ConfigError, SharedFeed};
use crate::options::{ArrivalsArg, OverloadArg, RunOptions};
use crate::units::{Shape, Stage};

/// The cap on the open model's default starting crew: the most workers it starts with (and never
/// retires below) when `--workers` does not say; a floor this size absorbs bursts of due tasks at
/// high rates while the crew grows.
pub const DEFAULT_OPEN_WORKERS_CAP: u32 = 100;

/// Without `--workers`, the open model starts with one worker per this many tasks/s of its peak
/// rate (enough for 50 ms tasks; growth covers slower ones), at least [`MIN_OPEN_WORKERS`] and at
/// most [`DEFAULT_OPEN_WORKERS_CAP`]. An idle Rust instance costs KiBs but a Python one ~10 MiB, so a
/// fixed 100 held a gigabyte for a 50 tasks/s Python run. It was one per 100 tasks/s (10 ms
/// tasks): a script's request over a new connection to a target on a busy machine takes tens of
/// ms, so the crew started short, grew while tasks were dropped, and making workers took CPU from
/// the tasks (issue 41 defect 11: `bench/contention.sh` dropped 17–55 of 3,000 from 2 workers, 0
/// from 10, as k6 with 20 pre-allocated VUs).
pub const OPEN_RATE_PER_WORKER: f64 = 20.0;

/// The smallest default starting crew: one worker and its reserve.
pub const MIN_OPEN_WORKERS: u32 = 2;

/// The open model's default starting crew for a curve peaking at `peak` tasks/s, within `max`.
pub fn default_open_workers(peak: f64, max: u32) -> u32 {
    let by_rate =
        (peak / OPEN_RATE_PER_WORKER).ceil().clamp(f64::from(MIN_OPEN_WORKERS), f64::from(DEFAULT_OPEN_WORKERS_CAP));
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

/// One event loop per CPU the process may use.
fn default_threads() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
}

/// Whether `options` make the open model (`--rate`, as in k6).
fn plan_is_open(options: &RunOptions) -> bool {
    options.rate.is_some()
}
/// Check one run's (or scenario's) options and build its plan.
pub(super) fn plan_one(options: &RunOptions, feed: &SharedFeed) -> Result<Plan, ConfigError> {
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
        .with_spacing(loadhost_engine::Spacing { pace: options.pace.map(|d| d.0), think: options.think.map(|t| t.0) })?
        .with_threads(options.threads.map_or_else(|| Threads::Auto(default_threads()), Threads::Exactly))
        // The open model's default ceiling follows memory; a ceiling the user set (or the closed
        // model's -w) is only warned about.
        .with_memory_aware_crew(!plan_is_open(options) || options.max_workers.is_some())
        .with_max_memory(options.max_memory.map_or(DEFAULT_MAX_MEMORY, |s| s.0));
    if !plan.is_open() && !ramps.is_empty() {
        // `-w 0` with stages ramps from nothing (k6's `startVUs: 0`).
        plan = plan.with_worker_stages(options.workers.unwrap_or(DEFAULT_CLOSED_WORKERS), &ramps)?;
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
    // `-w 0` is a closed ramp's start (k6's `startVUs: 0`), nothing else.
    let ramp_from_nothing = options.rate.is_none() && !options.stage.is_empty();
    for (flag, value) in [
        ("workers", options.workers.map(u64::from).filter(|_| !ramp_from_nothing)),
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
    // A ramp from 0 still makes one worker before the load, to check the plugin (it leaves at once).
    let workers = options.workers.unwrap_or(DEFAULT_CLOSED_WORKERS).max(1);
    Ok(Model::Closed { workers, duration, max_tasks })
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
