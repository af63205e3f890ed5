//! What a run will do, decided before it starts: the load model and its bounds.

use std::time::Duration;

use thiserror::Error;

use crate::arrivals::{Arrivals, Process};
use crate::feed::{Feed, FeedMode};
use crate::retry::{RetryError, RetryPolicy};
use crate::schedule::{CurveError, Ramp, RateCurve};
use crate::segment::Segment;

/// What the pacer waits on between batches, and where a run's event loops run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PacerClock {
    /// tokio's timer, every event loop a task on the caller's runtime: 1 ms granularity, and follows
    /// paused test time.
    #[default]
    Runtime,
    /// Every event loop on an OS thread of its own with a single-threaded runtime, pacing on a
    /// `timerfd` in that runtime: release accuracy in microseconds, nothing crossing threads.
    Precise,
}

/// What happens to a task whose time has come but that finds no free worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overload {
    /// Count it as `dropped` and move on (k6's dropped iterations).
    #[default]
    Drop,
    /// Let it wait for a worker; its wait shows in `wait_ms` and `latency_ms`.
    Queue,
}

/// The load model.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    /// Tasks start on an absolute schedule, whatever the workers are doing (wrk2, k6 arrival rate).
    Open {
        /// Tasks per second over time.
        curve: RateCurve,
        /// Stop after this many tasks are scheduled.
        max_tasks: Option<u64>,
        /// Workers started before the load, and the fewest the crew retires down to.
        workers: u32,
        /// The most workers the crew may grow to.
        max_workers: u32,
        /// What a due task does when every worker is busy.
        overload: Overload,
    },
    /// Each worker runs tasks back to back (k6 constant VUs).
    Closed {
        /// Workers, each one loop.
        workers: u32,
        /// Stop starting tasks after this long.
        duration: Option<Duration>,
        /// Stop after this many tasks are started.
        max_tasks: Option<u64>,
    },
}

/// A plan that cannot run.
#[derive(Debug, Error, PartialEq)]
#[non_exhaustive]
pub enum PlanError {
    /// The rate curve is invalid.
    #[error(transparent)]
    Curve(#[from] CurveError),
    /// Nothing bounds the run.
    #[error("the run has no end: give a duration, an iteration count or stages")]
    Unbounded,
    /// A crew of zero cannot run anything.
    #[error("at least one worker is needed")]
    NoWorkers,
    /// The crew's ceiling is below its floor.
    #[error("the most workers ({max}) is fewer than the workers to start with ({workers})")]
    MaxBelowWorkers {
        /// Workers to start with.
        workers: u32,
        /// The ceiling.
        max: u32,
    },
    /// Worker stages apply to the closed model.
    #[error("worker stages ramp the closed model's workers; the open model ramps its rate")]
    WorkerStagesNeedClosed,
    /// A feed without rows.
    #[error("the data feed has no rows")]
    EmptyFeed,
    /// The retry policy cannot work.
    #[error(transparent)]
    Retry(#[from] RetryError),
    /// A gate that lets nothing through.
    #[error("the most tasks in flight must be at least 1")]
    ZeroGate,
    /// `--pace` and `--think` space a closed-model worker's tasks.
    #[error("--pace and --think space the closed model's workers; with --rate the schedule spaces tasks")]
    SpacingNeedsClosed,
    /// The reporting interval must be positive.
    #[error("the reporting interval must be longer than 0s")]
    ZeroInterval,
}

/// A validated plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    model: Model,
    scenario: String,
    interval: Duration,
    pacer_clock: PacerClock,
    /// Event loops the run may use.
    threads: Threads,
    max_in_flight: Option<u32>,
    retries: Option<RetryPolicy>,
    feed: Option<(std::sync::Arc<Feed>, FeedMode)>,
    lifecycle_timeout: Duration,
    /// The longest one task may run.
    task_timeout: Duration,
    /// After a stop, how long tasks under way may finish.
    grace: Duration,
    graceful_stop: Duration,
    /// Keep the crew within memory (see [`Plan::with_memory_aware_crew`]): `Some(explicit)`,
    /// where `explicit` says the user set the ceiling.
    memory_aware: Option<bool>,
    /// The most memory each worker's plugin instance may use (`--max-memory`), when known: the
    /// generator's health weighs the process's memory against it × the crew's peak.
    max_memory: Option<u64>,
    /// Closed model: the worker count over time (`--stage` without `--rate`).
    worker_curve: Option<RateCurve>,
    /// How long after the run's start this plan starts (a scenario's offset).
    start_delay: Duration,
    /// This process's share of the plan (the whole plan unless `--segment`).
    segment: Segment,
    /// How the open model's arrivals are spaced.
    arrivals: Arrivals,
    /// The run's seed: Poisson arrivals (with the scenario's name), and whatever else draws.
    seed: u64,
    /// Closed model: how each worker spaces its tasks (`--pace`, `--think`).
    spacing: crate::spacing::Spacing,
}

/// How many event loops a run may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// Up to this many, as the load needs (see [`Plan::event_loops`]).
    Auto(u32),
    /// This many (never more than the workers).
    Exactly(u32),
}

/// With [`Threads::Auto`], the open model's rate one event loop takes before another is added.
pub const RATE_PER_EVENT_LOOP: f64 = 10_000.0;

/// How long each lifecycle call (`setup`, a worker's `init`, `teardown`) may take by default.
pub const DEFAULT_LIFECYCLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one task may run by default (k6's default HTTP timeout: a task slower than this is
/// broken, not slow).
pub const DEFAULT_TASK_TIMEOUT: Duration = Duration::from_secs(60);

/// How long tasks under way may finish after a stop, by default.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// How long tasks still running when the plan ends may finish, by default (k6's `gracefulStop`).
pub const DEFAULT_GRACEFUL_STOP: Duration = Duration::from_secs(30);

/// The default reporting interval: one CSV row and progress update per second.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

impl Plan {
    /// Check `model` and make a plan for the `default` scenario with one-second intervals.
    pub fn new(model: Model) -> Result<Self, PlanError> {
        match &model {
            Model::Open { curve, max_tasks, workers, max_workers, .. } => {
                if *workers == 0 {
                    return Err(PlanError::NoWorkers);
                }
                if max_workers < workers {
                    return Err(PlanError::MaxBelowWorkers { workers: *workers, max: *max_workers });
                }
                if curve.total_tasks().is_none() && max_tasks.is_none() {
                    return Err(PlanError::Unbounded);
                }
            }
            Model::Closed { workers, duration, max_tasks } => {
                if *workers == 0 {
                    return Err(PlanError::NoWorkers);
                }
                if duration.is_none() && max_tasks.is_none() {
                    return Err(PlanError::Unbounded);
                }
            }
        }
        Ok(Self {
            model,
            scenario: "default".into(),
            interval: DEFAULT_INTERVAL,
            pacer_clock: PacerClock::default(),
            threads: Threads::Exactly(1),
            max_in_flight: None,
            retries: None,
            feed: None,
            lifecycle_timeout: DEFAULT_LIFECYCLE_TIMEOUT,
            task_timeout: DEFAULT_TASK_TIMEOUT,
            grace: DEFAULT_GRACE,
            graceful_stop: DEFAULT_GRACEFUL_STOP,
            memory_aware: None,
            max_memory: None,
            worker_curve: None,
            start_delay: Duration::ZERO,
            segment: Segment::whole(),
            arrivals: Arrivals::Even,
            seed: 0,
            spacing: crate::spacing::Spacing::default(),
        })
    }

    /// Space each closed-model worker's tasks (`--pace`, `--think`); the open model's schedule
    /// spaces its own.
    pub fn with_spacing(mut self, spacing: crate::spacing::Spacing) -> Result<Self, PlanError> {
        if spacing.is_set() && self.is_open() {
            return Err(PlanError::SpacingNeedsClosed);
        }
        self.spacing = spacing;
        Ok(self)
    }

    /// How each closed-model worker spaces its tasks.
    pub fn spacing(&self) -> crate::spacing::Spacing {
        self.spacing
    }

    /// Space the open model's arrivals as `arrivals` says (even by default).
    pub fn with_arrivals(mut self, arrivals: Arrivals) -> Self {
        self.arrivals = arrivals;
        self.sync_process()
    }

    /// How the open model's arrivals are spaced.
    pub fn arrivals(&self) -> Arrivals {
        self.arrivals
    }

    /// Seed everything random in the run with `seed`: the same seed, the same schedule.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self.sync_process()
    }

    /// The run's seed (0 unless [`Plan::with_seed`] set one).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Hand the arrival process to the curve, which is what the pacer gets; called whenever the
    /// kind, the seed or the scenario's name changes.
    fn sync_process(mut self) -> Self {
        let process = Process::new(self.arrivals, self.seed, &self.scenario);
        if let Model::Open { curve, .. } = &mut self.model {
            *curve = curve.clone().with_process(process);
        }
        self
    }

    /// Use another reporting interval.
    pub fn with_interval(mut self, interval: Duration) -> Result<Self, PlanError> {
        if interval.is_zero() {
            return Err(PlanError::ZeroInterval);
        }
        self.interval = interval;
        Ok(self)
    }

    /// Name the scenario (the plugin sees it in `task.scenario`).
    pub fn with_scenario(mut self, scenario: impl Into<String>) -> Self {
        self.scenario = scenario.into();
        self.sync_process()
    }

    /// Run the event loops on threads of their own with a precise timer, or as tasks on the caller's
    /// runtime with tokio's timer (what paused-time tests need; the default).
    pub fn with_pacer_clock(mut self, clock: PacerClock) -> Self {
        self.pacer_clock = clock;
        self
    }

    /// What the pacer waits on.
    pub fn pacer_clock(&self) -> PacerClock {
        self.pacer_clock
    }

    /// Split the run over `event_loops` event loops, exactly (never more than the workers it starts with).
    pub fn with_event_loops(self, event_loops: u32) -> Self {
        self.with_threads(Threads::Exactly(event_loops))
    }

    /// How many event loops the run may use.
    pub fn with_threads(mut self, threads: Threads) -> Self {
        self.threads = threads;
        self
    }

    /// How many event loops the run uses; `live` says whether its rate may be changed
    /// while it goes (then an automatic choice cannot go by the planned rate).
    ///
    /// Never more than the workers it starts with (an event loop needs a worker), except for a ramping
    /// closed crew, which grows. With [`Threads::Auto`], an open model takes one event loop per
    /// [`RATE_PER_EVENT_LOOP`] of its peak rate: each loop that sleeps between tasks pays for
    /// its own wake-ups, and below that rate one loop has the time to spare.
    pub fn event_loops(&self, live: bool) -> u32 {
        let (threads, auto) = match self.threads {
            Threads::Exactly(n) => (n.max(1), false),
            Threads::Auto(n) => (n.max(1), true),
        };
        if self.worker_curve.is_some() {
            return threads;
        }
        let by_workers = threads.min(self.workers().max(1));
        match &self.model {
            Model::Open { curve, .. } if auto && !live => {
                let rate = curve.peak_rate() / f64::from(self.segment.count());
                let needed = (rate / RATE_PER_EVENT_LOOP).ceil().clamp(1.0, f64::from(u32::MAX)) as u32;
                by_workers.min(needed)
            }
            _ => by_workers,
        }
    }

    /// Put a gate in front of the crew: at most `n` tasks execute at once, whatever the number of
    /// workers.
    pub fn with_max_in_flight(mut self, n: u32) -> Result<Self, PlanError> {
        if n == 0 {
            return Err(PlanError::ZeroGate);
        }
        self.max_in_flight = Some(n);
        Ok(self)
    }

    /// The gate's size, if there is one.
    pub fn max_in_flight(&self) -> Option<u32> {
        self.max_in_flight
    }

    /// Retry `retryable` failures with `policy`.
    pub fn with_retries(mut self, policy: RetryPolicy) -> Result<Self, PlanError> {
        policy.validate()?;
        self.retries = Some(policy);
        Ok(self)
    }

    /// The retry policy, if any.
    pub fn retries(&self) -> Option<&RetryPolicy> {
        self.retries.as_ref()
    }

    /// Hand task `k` row `k` of `feed` as its input. With [`FeedMode::Once`] the run schedules at
    /// most one task per row, which also bounds a run that has no other end.
    pub fn with_feed(mut self, feed: std::sync::Arc<Feed>, mode: FeedMode) -> Result<Self, PlanError> {
        if feed.is_empty() {
            return Err(PlanError::EmptyFeed);
        }
        self.feed = Some((feed, mode));
        Ok(self)
    }

    /// Closed model: ramp the number of looping workers linearly through `stages`, starting from
    /// `start` (k6's ramping VUs, whose `startVUs` may be 0: the plan's workers are then made and
    /// leave before their first task, and peers come as the ramp rises). Workers above the target
    /// leave after their task.
    pub fn with_worker_stages(mut self, start: u32, stages: &[Ramp]) -> Result<Self, PlanError> {
        let Model::Closed { duration, .. } = &self.model else {
            return Err(PlanError::WorkerStagesNeedClosed);
        };
        let curve = RateCurve::new(f64::from(start), stages, *duration)?;
        self.worker_curve = Some(curve);
        Ok(self)
    }

    /// The closed model's worker count over time, when it ramps.
    pub fn worker_curve(&self) -> Option<&RateCurve> {
        self.worker_curve.as_ref()
    }

    /// Bound each lifecycle call (`setup`, `init`, `teardown`) by `limit`.
    pub fn with_lifecycle_timeout(mut self, limit: Duration) -> Self {
        self.lifecycle_timeout = limit;
        self
    }

    /// How long each lifecycle call may take.
    pub fn lifecycle_timeout(&self) -> Duration {
        self.lifecycle_timeout
    }

    /// Bound each task by `limit`: past it the task ends as timed out and its worker is replaced.
    pub fn with_task_timeout(mut self, limit: Duration) -> Self {
        self.task_timeout = limit;
        self
    }

    /// How long one task may run.
    pub fn task_timeout(&self) -> Duration {
        self.task_timeout
    }

    /// After a stop, give tasks under way `grace` to finish before they end as interrupted.
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// How long tasks under way may finish after a stop.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// When the plan ends, give tasks still running `graceful_stop` to finish before they end as
    /// interrupted.
    pub fn with_graceful_stop(mut self, graceful_stop: Duration) -> Self {
        self.graceful_stop = graceful_stop;
        self
    }

    /// How long tasks still running when the plan ends may finish.
    pub fn graceful_stop(&self) -> Duration {
        self.graceful_stop
    }

    /// Keep the crew within memory: once the first workers are up, a worker's footprint is
    /// measured (the process's resident memory they added) and what the available memory holds of
    /// them becomes the crew's ceiling when `explicit` is false (the user left `--max-workers` at
    /// its default); either way a warning names the figures before the crew would pass it.
    pub fn with_memory_aware_crew(mut self, explicit: bool) -> Self {
        self.memory_aware = Some(explicit);
        self
    }

    /// Whether the crew is kept within memory, and whether its ceiling was the user's.
    pub fn memory_aware_crew(&self) -> Option<bool> {
        self.memory_aware
    }

    /// Each worker's plugin instance may use `bytes` of memory (`--max-memory`).
    pub fn with_max_memory(mut self, bytes: u64) -> Self {
        self.max_memory = Some(bytes);
        self
    }

    /// The memory each worker's plugin instance may use, when known.
    pub fn max_memory(&self) -> Option<u64> {
        self.max_memory
    }

    /// The feed, if any.
    pub fn feed(&self) -> Option<&std::sync::Arc<Feed>> {
        self.feed.as_ref().map(|(feed, _)| feed)
    }

    /// The most tasks the run may schedule: `-n`, and the rows of a `once` feed.
    pub fn task_limit(&self) -> Option<u64> {
        let max_tasks = match &self.model {
            Model::Open { max_tasks, .. } | Model::Closed { max_tasks, .. } => *max_tasks,
        };
        let rows = match &self.feed {
            Some((feed, FeedMode::Once)) => Some(feed.len() as u64),
            _ => None,
        };
        match (max_tasks, rows) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether this is the open model.
    pub fn is_open(&self) -> bool {
        matches!(self.model, Model::Open { .. })
    }

    /// The load model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Start this long after the run starts (scenarios run together, each from its offset).
    pub fn with_start_delay(mut self, delay: Duration) -> Self {
        self.start_delay = delay;
        self
    }

    /// Run only `segment`'s share: its slots and iterations (k mod N), and its split of the
    /// workers. Counts and limits stay the whole plan's; the engine takes the share.
    pub fn with_segment(mut self, segment: Segment) -> Self {
        match &mut self.model {
            Model::Open { workers, max_workers, .. } => {
                *workers = segment.workers(*workers);
                *max_workers = segment.workers(*max_workers).max(*workers);
            }
            Model::Closed { workers, .. } => *workers = segment.workers(*workers),
        }
        self.segment = segment;
        self
    }

    /// This process's share of the plan.
    pub fn segment(&self) -> Segment {
        self.segment
    }

    /// How long after the run's start this plan starts.
    pub fn start_delay(&self) -> Duration {
        self.start_delay
    }

    /// The scenario name.
    pub fn scenario(&self) -> &str {
        &self.scenario
    }

    /// The reporting interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Workers started before the load begins.
    pub fn workers(&self) -> u32 {
        match self.model {
            Model::Open { workers, .. } | Model::Closed { workers, .. } => workers,
        }
    }

    /// The most workers the crew may have (the open model grows to it; the closed model is fixed).
    pub fn max_workers(&self) -> u32 {
        match self.model {
            Model::Open { max_workers, .. } => max_workers,
            Model::Closed { workers, .. } => {
                let ramp_peak = self.worker_curve.as_ref().map_or(0.0, |curve| curve.peak_rate());
                workers.max(ramp_peak.ceil() as u32)
            }
        }
    }

    /// Whether the planned count is exact; with Poisson arrivals it is the expected count (the
    /// curve's integral), and the run schedules about that many.
    pub fn planned_is_exact(&self) -> bool {
        !(self.is_open() && self.arrivals.is_random())
    }

    /// Tasks this process will schedule: its segment's share of the whole plan's (expected, with
    /// Poisson arrivals: see [`Plan::planned_is_exact`]).
    pub fn planned_tasks(&self) -> Option<u64> {
        self.planned_tasks_whole().map(|n| self.segment.share_of(n))
    }

    /// Tasks the whole plan schedules: the curve's total capped by `max_tasks`.
    fn planned_tasks_whole(&self) -> Option<u64> {
        match &self.model {
            Model::Open { curve, .. } => match (curve.total_tasks(), self.task_limit()) {
                (Some(total), Some(max)) => Some(total.min(max)),
                (Some(total), None) => Some(total),
                (None, max) => max,
            },
            Model::Closed { .. } => self.task_limit(),
        }
    }

    /// How long the open model generates load: until the curve ends, or until the first task past
    /// `max_tasks` would have been due, whichever is first.
    pub fn planned_generation(&self) -> Option<Duration> {
        match &self.model {
            Model::Open { curve, .. } => {
                let planned = self.planned_tasks_whole()?;
                let mut hint = 0;
                match curve.due(planned, &mut hint) {
                    Some(t) => Some(crate::schedule::clamped_secs(t)),
                    None => curve.end(),
                }
            }
            Model::Closed { duration, .. } => *duration,
        }
    }

    /// The planned average rate (tasks/s) of the open model, which the run must achieve; `None`
    /// with Poisson arrivals, whose count is random (a run 3% short of the expected rate is no
    /// emitter's fault): see [`Plan::expected_rate`].
    pub fn target_rate(&self) -> Option<f64> {
        if self.planned_is_exact() { self.expected_rate() } else { None }
    }

    /// The open model's average rate (tasks/s) over its planned generation: exact with even
    /// arrivals, the expectation with Poisson ones.
    pub fn expected_rate(&self) -> Option<f64> {
        self.rate_of(self.planned_tasks()?)
    }

    /// [`Plan::target_rate`] of the whole plan, every segment's share together (the same without
    /// `--segment`): what a merge of the segments states the achieved rate against, so a missing
    /// segment shows as a shortfall rather than shrinking the plan.
    pub fn target_rate_whole(&self) -> Option<f64> {
        if self.planned_is_exact() { self.rate_of(self.planned_tasks_whole()?) } else { None }
    }

    /// `tasks` over the open model's planned generation, per second; `None` in the closed model.
    fn rate_of(&self, tasks: u64) -> Option<f64> {
        match &self.model {
            Model::Open { .. } => {
                let secs = self.planned_generation()?.as_secs_f64();
                Some(if secs > 0.0 { tasks as f64 / secs } else { 0.0 })
            }
            Model::Closed { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_model_needs_an_end_and_workers() {
        let forever = RateCurve::constant(10.0, None).unwrap();
        let open = |max_tasks, workers| Model::Open {
            curve: forever.clone(),
            max_tasks,
            workers,
            max_workers: workers,
            overload: Overload::Drop,
        };
        assert_eq!(Plan::new(open(None, 1)), Err(PlanError::Unbounded));
        assert_eq!(Plan::new(open(Some(5), 0)), Err(PlanError::NoWorkers));
        let plan = Plan::new(open(Some(50), 1)).unwrap();
        assert_eq!(plan.planned_tasks(), Some(50));
        assert_eq!(plan.planned_generation(), Some(Duration::from_secs(5)));
        assert_eq!(plan.target_rate(), Some(10.0));
    }

    #[test]
    fn automatic_event_loops_follow_the_rate_and_the_workers() {
        let open = |rate: f64, workers| {
            let curve = RateCurve::constant(rate, Some(Duration::from_secs(1))).unwrap();
            Plan::new(Model::Open { curve, max_tasks: None, workers, max_workers: workers, overload: Overload::Drop })
                .unwrap()
        };
        let auto = Threads::Auto(4);
        assert_eq!(open(5_000.0, 100).with_threads(auto).event_loops(false), 1);
        assert_eq!(open(25_000.0, 100).with_threads(auto).event_loops(false), 3);
        assert_eq!(open(25_000.0, 100).with_threads(auto).event_loops(true), 4, "a live rate may rise");
        assert_eq!(open(5_000.0, 100).with_threads(Threads::Exactly(4)).event_loops(false), 4);
        assert_eq!(open(90_000.0, 2).with_threads(auto).event_loops(false), 2, "never more than the workers");
        let quarter = open(25_000.0, 100).with_segment(Segment::new(0, 4).unwrap()).with_threads(auto);
        assert_eq!(quarter.event_loops(false), 1, "a segment's share of the rate");
        assert_eq!(quarter.target_rate_whole(), open(25_000.0, 100).target_rate(), "the whole plan's rate");
        assert_eq!(quarter.target_rate(), Some(6_250.0), "the segment's share");
        let closed = Plan::new(Model::Closed { workers: 3, duration: Some(Duration::from_secs(1)), max_tasks: None });
        assert_eq!(closed.unwrap().with_threads(auto).event_loops(false), 3);
    }

    #[test]
    fn closed_model_needs_an_end() {
        let closed = Model::Closed { workers: 2, duration: None, max_tasks: None };
        assert_eq!(Plan::new(closed), Err(PlanError::Unbounded));
    }
}
