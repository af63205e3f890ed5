//! Why options cannot run: [`ConfigError`], whose messages name the flags.

use loadhost_engine::PlanError;
use thiserror::Error;

use crate::units::Size;

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
    /// A push option that cannot be met (`--out-interval` not a whole number of intervals, a
    /// push option without a push receiver).
    #[error("{0}")]
    Push(String),
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
