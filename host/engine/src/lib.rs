//! loadhost's scheduler: it decides *when* and *how much*, and knows nothing of WebAssembly.
//!
//! A run is a [`Plan`] (an open model on a [`RateCurve`], or a closed model of looping workers),
//! a batched [pacer](pacer) that releases due tasks on an absolute schedule, a crew of workers
//! made by a [`WorkerFactory`], and a metrics [`Recorder`](loadhost_metrics::Recorder) that every
//! task outcome goes into. [`run`] returns a [`RunReport`](loadhost_metrics::RunReport) whose
//! counts satisfy the accounting identity (every scheduled task ends in exactly one state).
//!
//! # Layout
//! - [`plan`] and [`schedule`]: the model and the rate curve, validated before the run, and the
//!   due times a curve implies.
//! - [`arrivals`]: how arrivals are spaced on the curve: even, Poisson (time-rescaling) or
//!   periodic, seeded; the schedule draws them.
//! - [`pacer`]: releases every due task on each wake; records lag and underrun.
//! - [`retry`]: the retry policy, backoff and the bounded queue the pacer drains.
//! - [`spacing`]: how a closed-model worker spaces its tasks (`--pace`, `--think`).
//! - [`feed`]: the data feed, one row per task as `task.input`, held once for the run.
//! - [`segment`]: one process's share of a plan several processes run (`--segment I/N`).
//! - `stop`: the run's stop state, read on every task and awaited by the pacer.
//! - `dispatch`: the pacer → crew hand-off, with the idle-worker count behind `--overload drop`.
//! - `crew`: worker loops, trap replacement, outcome recording.
//! - `crews`: every event loop's crew as one: counters summed, the ceiling dealt out.
//! - `event_loop`: one event loop's share of a run (its pacer, crew and dispatch); a run has one per core.
//! - `shared`: what the event loops of a run share.
//! - `timer`: the precise in-loop timer (`timerfd`) the pacer sleeps on.
//! - [`control`]: live changes (rate, pause, crew ceiling, gate, stop) and a status snapshot.
//! - [`worker`]: the [`Worker`]/[`WorkerFactory`] seam the runtime implements.
//! - `run`: the entry points (one plan, scenarios).
//! - `lifecycle`: the plugin's setup and teardown around a run.
//! - `coordinator`: one scenario's run loop: event loops start together; live control, stops, report.
//! - `ticker`: interval rows from the recorder and the crews' gauges.
//! - `health`: the generator's health per interval (process CPU, the event loops' run-queue
//!   delay, throttling, steal), read from the kernel once per interval.
//! - [`memory`]: this process's resident memory and what it may still take (cgroup or machine),
//!   which keeps the crew's default ceiling within memory.

#![deny(missing_docs)]

pub mod arrivals;
pub mod control;
mod coordinator;
mod crew;
mod crews;
mod dispatch;
mod event_loop;
pub mod feed;
mod health;
mod lifecycle;
pub mod memory;
pub mod pacer;
pub mod plan;
pub mod retry;
mod run;
pub mod schedule;
pub mod segment;
mod shared;
pub mod spacing;
mod stop;
mod ticker;
mod timer;
pub mod worker;

use loadhost_metrics::IntervalRow;
use thiserror::Error;

pub use arrivals::{Arrivals, Process};
pub use control::{Changes, Control, ControlError, RunState, Status};
pub use coordinator::Live;
pub use feed::{Feed, FeedMode};
pub use plan::{Model, Overload, PacerClock, Plan, PlanError, RATE_PER_EVENT_LOOP, Threads};
pub use retry::{RetryError, RetryPolicy};
pub use run::{ScenarioPlugins, ScenarioRuns, run, run_live, run_scenarios, run_with_control};
pub use schedule::{CurveError, Ramp, RateCurve, Schedule, sine_ramps};
pub use segment::{Segment, SegmentError};
pub use spacing::{Spacing, Think, ThinkError};
pub use stop::Interrupt;
pub use worker::{MetricsHandle, Task, TaskOutcome, Worker, WorkerContext, WorkerError, WorkerFactory};

/// Why a run could not go ahead.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EngineError {
    /// A worker could not be made before the load started (nothing was sent).
    #[error("worker {id} could not start")]
    WorkerStart {
        /// The worker's id.
        id: u32,
        /// Why.
        #[source]
        source: WorkerError,
    },
    /// The plugin's `setup` failed or timed out: nothing was sent.
    #[error("the plugin's setup failed: {0}")]
    Setup(String),
    /// A bug: a task of the engine panicked before the load started.
    #[error("internal error: {0}")]
    Panicked(String),
    /// The run did not end cleanly after the load started: a task of the engine panicked (a bug),
    /// or event loops were left behind after the grace (a task blocking its thread). What was
    /// measured is kept.
    #[error("the run did not end cleanly after the load started: {reason}")]
    Broken {
        /// Everything measured until then.
        report: Box<loadhost_metrics::RunReport>,
        /// What broke.
        reason: String,
    },
}

/// Told about each interval as the run goes (CSV rows, the progress line).
pub trait Observer: Send {
    /// A scenario's load has started (`scenario` is "default" without `[[scenario]]` blocks): its
    /// rows' `start` and `end` count from `started_at`. Told before its first row, so an output
    /// written as the run goes (the results file) can place the rows of a run that never ends.
    fn on_start(&mut self, scenario: &str, started_at: std::time::SystemTime) {
        let _ = (scenario, started_at);
    }

    /// One interval has ended.
    fn on_interval(&mut self, row: &IntervalRow);

    /// One interval has ended, with everything it recorded (plugin metrics, histograms) for
    /// observers that keep running totals, such as thresholds judged while the run goes.
    fn on_window(&mut self, row: &IntervalRow, window: &loadhost_metrics::Window) {
        let _ = window;
        self.on_interval(row);
    }
}

impl<F: FnMut(&IntervalRow) + Send> Observer for F {
    fn on_interval(&mut self, row: &IntervalRow) {
        self(row)
    }
}
