//! Live control of a run: settings changed while
//! the run goes, and a point-in-time status of every counter.
//!
//! The handle is made before the run and shared with whoever drives it (the CLI serves it over
//! HTTP). The pacer reads the rate and the pause on every wake; the run loop applies the crew's
//! ceiling, the gate and a stop every [`APPLY_EVERY`], and publishes the status as it does.
//!
//! A rate change or a resume re-bases the schedule at that moment: from then on tasks are due at
//! the new constant rate until the planned end, and nothing that would have been due while paused
//! is owed afterwards (a pause is not counted as lag or underrun).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use loadhost_metrics::Counts;
use serde::Serialize;
use thiserror::Error;

/// How often the run loop applies changes and publishes the status.
pub const APPLY_EVERY: Duration = Duration::from_millis(100);

/// Changes requested while the run goes; fields left `None` stay as they are.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Changes {
    /// Tasks per second from now on (open model); 0 pauses.
    pub rate: Option<f64>,
    /// The crew's ceiling (growth stops above it; a surplus retires on its own).
    pub max_workers: Option<u32>,
    /// The gate's size.
    pub max_in_flight: Option<u32>,
    /// Pause or resume generation.
    pub paused: Option<bool>,
}

/// A change that cannot be applied.
#[derive(Debug, Error, PartialEq)]
#[non_exhaustive]
pub enum ControlError {
    /// Rates are finite and not negative.
    #[error("rate must be a finite number of tasks per second, 0 or more")]
    Rate,
    /// Rates above the ceiling ([`crate::schedule::MAX_RATE`]) are refused, as at start.
    #[error("rate {0:e} is above loadhost's ceiling of {max} tasks/s per process", max = crate::schedule::MAX_RATE as u64)]
    RateTooHigh(f64),
    /// Rates other than 0 below [`crate::schedule::MIN_RATE`] (one task a day) are refused.
    #[error("rate {0:e} is below the lowest rate, 1 task a day (0 pauses)")]
    RateTooLow(f64),
    /// Counts are at least 1.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    /// The run is over.
    #[error("the run is over")]
    Over,
    /// More workers than the run was sized for at start (its instance pool and channels).
    #[error("max_workers {requested} is above this run's ceiling {ceiling} (set at start with {flag})")]
    AboveCeiling {
        /// The ceiling asked for.
        requested: u32,
        /// The most workers the run was sized for.
        ceiling: u32,
        /// The flag that sets the ceiling, such as `--max-workers`.
        flag: &'static str,
    },
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Not started yet.
    #[default]
    Starting,
    /// Generating load.
    Running,
    /// Generation paused.
    Paused,
    /// No new tasks; the ones under way are finishing.
    Stopping,
    /// Over.
    Done,
}

/// Crew figures in a status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CrewStatus {
    /// Workers alive.
    pub resident: u64,
    /// Of those, waiting for a task.
    pub idle: u64,
    /// The ceiling.
    pub max: u64,
}

/// A point-in-time snapshot of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Status {
    /// Where the run stands.
    pub state: RunState,
    /// Seconds since the load started.
    pub elapsed_s: f64,
    /// The rate the pacer follows now (tasks/s; `None` in the closed model).
    pub rate_per_s: Option<f64>,
    /// Workers.
    pub workers: CrewStatus,
    /// Tasks executing now.
    pub in_flight: u64,
    /// The gate's size, if there is one.
    pub max_in_flight: Option<u32>,
    /// Retries waiting for their time.
    pub retries_pending: u64,
    /// Attempts started so far.
    pub started: u64,
    /// Counts through the last completed interval.
    pub tasks: Counts,
}

/// The shared handle.
#[derive(Debug, Default)]
pub struct Control {
    requested: Mutex<Requested>,
    version: AtomicU64,
    status: Mutex<Status>,
    /// The most workers `max_workers` may ask for, and the flag that set it.
    ceiling: Option<(u32, &'static str)>,
}

#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Requested {
    pub(crate) rate: Option<f64>,
    pub(crate) paused: bool,
    pub(crate) max_workers: Option<u32>,
    pub(crate) max_in_flight: Option<u32>,
    pub(crate) stop: bool,
}

impl Control {
    /// A handle with nothing requested.
    pub fn new() -> Self {
        Self::default()
    }

    /// A handle that refuses a `max_workers` above `ceiling`: what the run's instances and channels
    /// were sized for at start, set with `flag` (named in the refusal).
    pub fn with_ceiling(ceiling: u32, flag: &'static str) -> Self {
        Self { ceiling: Some((ceiling, flag)), ..Self::default() }
    }

    /// Request changes; they apply within [`APPLY_EVERY`] (the rate at the pacer's next wake).
    pub fn apply(&self, changes: Changes) -> Result<(), ControlError> {
        if self.status().state == RunState::Done {
            return Err(ControlError::Over);
        }
        if changes.rate.is_some_and(|r| !r.is_finite() || r < 0.0) {
            return Err(ControlError::Rate);
        }
        if let Some(rate) = changes.rate.filter(|r| *r > crate::schedule::MAX_RATE) {
            return Err(ControlError::RateTooHigh(rate));
        }
        if let Some(rate) = changes.rate.filter(|r| *r > 0.0 && *r < crate::schedule::MIN_RATE) {
            return Err(ControlError::RateTooLow(rate));
        }
        if changes.max_workers == Some(0) {
            return Err(ControlError::Zero("max_workers"));
        }
        if let (Some(requested), Some((ceiling, flag))) = (changes.max_workers, self.ceiling)
            && requested > ceiling
        {
            return Err(ControlError::AboveCeiling { requested, ceiling, flag });
        }
        if changes.max_in_flight == Some(0) {
            return Err(ControlError::Zero("max_in_flight"));
        }
        let mut requested = self.requested.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(rate) = changes.rate {
            requested.rate = Some(rate);
        }
        if let Some(paused) = changes.paused {
            requested.paused = paused;
        }
        if changes.max_workers.is_some() {
            requested.max_workers = changes.max_workers;
        }
        if changes.max_in_flight.is_some() {
            requested.max_in_flight = changes.max_in_flight;
        }
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Ask the run to stop: no new tasks, tasks not yet started end as interrupted.
    pub fn request_stop(&self) {
        self.requested.lock().unwrap_or_else(|p| p.into_inner()).stop = true;
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    /// The latest status.
    pub fn status(&self) -> Status {
        self.status.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn publish(&self, status: Status) {
        *self.status.lock().unwrap_or_else(|p| p.into_inner()) = status;
    }

    /// A number that changes whenever something is requested.
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    pub(crate) fn requested(&self) -> Requested {
        *self.requested.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_changes_are_refused_and_good_ones_bump_the_version() {
        let control = Control::new();
        assert_eq!(control.apply(Changes { rate: Some(-1.0), ..Changes::default() }), Err(ControlError::Rate));
        let err = control.apply(Changes { rate: Some(1e8), ..Changes::default() }).unwrap_err();
        assert_eq!(err.to_string(), "rate 1e8 is above loadhost's ceiling of 10000000 tasks/s per process");
        assert_eq!(
            control.apply(Changes { max_workers: Some(0), ..Changes::default() }),
            Err(ControlError::Zero("max_workers"))
        );
        assert_eq!(control.version(), 0);
        control.apply(Changes { rate: Some(50.0), paused: Some(true), ..Changes::default() }).unwrap();
        let requested = control.requested();
        assert_eq!((requested.rate, requested.paused), (Some(50.0), true));
        assert_eq!(control.version(), 1);
        control.publish(Status { state: RunState::Done, ..Status::default() });
        assert_eq!(control.apply(Changes::default()), Err(ControlError::Over));
    }

    #[test]
    fn max_workers_above_the_ceiling_is_refused_naming_it_and_its_flag() {
        let control = Control::with_ceiling(100, "--max-workers");
        let err = control.apply(Changes { max_workers: Some(500), rate: Some(5.0), ..Changes::default() }).unwrap_err();
        assert_eq!(err, ControlError::AboveCeiling { requested: 500, ceiling: 100, flag: "--max-workers" });
        assert_eq!(
            err.to_string(),
            "max_workers 500 is above this run's ceiling 100 (set at start with --max-workers)"
        );
        // Nothing of a refused change applies, not even its other fields.
        assert_eq!((control.version(), control.requested().rate), (0, None));
        control.apply(Changes { max_workers: Some(100), ..Changes::default() }).unwrap();
        control.apply(Changes { max_workers: Some(3), ..Changes::default() }).unwrap();
        assert_eq!(control.requested().max_workers, Some(3));
        // Without a ceiling (an engine driven directly), any count of at least 1 goes.
        assert!(Control::new().apply(Changes { max_workers: Some(u32::MAX), ..Changes::default() }).is_ok());
    }
}
