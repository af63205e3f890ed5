//! How a task ends: one type per real distinction, and one count struct per level.
//!
//! Three things are told apart, each by one type; everything else is derived from them:
//! - [`ErrorKind`]: *what kind of failure* an attempt that did not pass had. The plugin says
//!   `retryable`, `failed` or `abort` (the WIT's `task-error`, translated once, where the runtime
//!   calls the plugin); the host adds a trap and a run past `--task-timeout`. The errors table
//!   groups by it, and the engine logs the first of each kind.
//! - [`AttemptEnd`]: *how one attempt ended*: passed, or an [`ErrorKind`] (so it cannot be a
//!   failure of no kind, nor a kind of failure that is a pass).
//! - [`Outcome`]: *a task's terminal state*. A task that ran ends as its last attempt did
//!   ([`AttemptEnd::terminal`]: a `retryable` with no retry to follow counts as `failed`); two
//!   states are of tasks that never ran to their end: dropped and interrupted.
//!
//! [`Counts`] counts tasks by [`Outcome`] (every scheduled task in exactly one: the accounting
//! identity), [`Attempts`] counts attempts by [`AttemptEnd`]; the engine, the results file and the
//! summary JSON all use these two.

use serde::{Deserialize, Serialize};

use crate::count::Tally;

/// The terminal state of one scheduled task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The plugin returned `ok`.
    Passed,
    /// The plugin returned `failed`, or `retryable` with no attempts left.
    Failed,
    /// The plugin returned `abort`, which also stops the run.
    Aborted,
    /// Never started: no worker was free at its scheduled time and the overload policy is `drop`.
    Dropped,
    /// The task overran its deadline.
    TimedOut,
    /// The plugin trapped; its instance was discarded and replaced.
    Trapped,
    /// Not finished because the run was stopped (a signal or an abort) before it could.
    Interrupted,
}

impl Outcome {
    /// All terminal states, in the order outputs show them.
    pub const ALL: [Outcome; 7] = [
        Outcome::Passed,
        Outcome::Failed,
        Outcome::Aborted,
        Outcome::Dropped,
        Outcome::TimedOut,
        Outcome::Trapped,
        Outcome::Interrupted,
    ];

    /// The snake_case name used in JSON keys and CSV headers.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::Aborted => "aborted",
            Outcome::Dropped => "dropped",
            Outcome::TimedOut => "timed_out",
            Outcome::Trapped => "trapped",
            Outcome::Interrupted => "interrupted",
        }
    }
}

/// How an attempt that did not pass ended. The order is the errors table's (rows of equal count
/// sort by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// `retryable`, whether or not it was retried.
    Retryable,
    /// `failed`.
    Failed,
    /// A trap (a panic, a limit, an unreachable instruction).
    Trapped,
    /// Over `--task-timeout`.
    TimedOut,
    /// `abort`: the run stopped.
    Aborted,
}

impl ErrorKind {
    /// Every kind, in order.
    pub const ALL: [ErrorKind; 5] =
        [ErrorKind::Retryable, ErrorKind::Failed, ErrorKind::Trapped, ErrorKind::TimedOut, ErrorKind::Aborted];

    /// The word outputs use (as in the JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Retryable => "retryable",
            ErrorKind::Failed => "failed",
            ErrorKind::Trapped => "trapped",
            ErrorKind::TimedOut => "timed_out",
            ErrorKind::Aborted => "aborted",
        }
    }

    /// The task's terminal state when an attempt that ended so is its last.
    pub fn terminal(self) -> Outcome {
        match self {
            ErrorKind::Retryable | ErrorKind::Failed => Outcome::Failed,
            ErrorKind::Trapped => Outcome::Trapped,
            ErrorKind::TimedOut => Outcome::TimedOut,
            ErrorKind::Aborted => Outcome::Aborted,
        }
    }
}

/// How one attempt of a task ended (a retried task has several).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttemptEnd {
    /// `ok`.
    Passed,
    /// Anything else.
    Error(ErrorKind),
}

impl AttemptEnd {
    /// The kind of failure, when it did not pass.
    pub fn error(self) -> Option<ErrorKind> {
        match self {
            AttemptEnd::Passed => None,
            AttemptEnd::Error(kind) => Some(kind),
        }
    }

    /// The task's terminal state when this is its last attempt.
    pub fn terminal(self) -> Outcome {
        self.error().map_or(Outcome::Passed, ErrorKind::terminal)
    }
}

/// Attempts by how they ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempts {
    /// Attempts that ran.
    pub total: u64,
    /// Ended `ok`.
    pub passed: u64,
    /// Ended `retryable`.
    pub retryable: u64,
    /// Ended `failed`.
    pub failed: u64,
    /// Ended `abort`.
    pub aborted: u64,
    /// Trapped.
    pub trapped: u64,
    /// Timed out.
    pub timed_out: u64,
}

impl Attempts {
    /// Count one attempt.
    pub fn add(&mut self, end: AttemptEnd) {
        self.total += 1;
        let slot = match end.error() {
            None => &mut self.passed,
            Some(ErrorKind::Retryable) => &mut self.retryable,
            Some(ErrorKind::Failed) => &mut self.failed,
            Some(ErrorKind::Aborted) => &mut self.aborted,
            Some(ErrorKind::Trapped) => &mut self.trapped,
            Some(ErrorKind::TimedOut) => &mut self.timed_out,
        };
        *slot += 1;
    }

    /// Add another set (each count at most [`crate::count::MAX_COUNT`]).
    pub fn merge(&mut self, other: &Attempts) {
        self.add_to(other, &mut Tally::default());
    }

    pub(crate) fn add_to(&mut self, other: &Attempts, t: &mut Tally) {
        t.add(&mut self.total, other.total, "attempts");
        t.add(&mut self.passed, other.passed, "attempts passed");
        t.add(&mut self.retryable, other.retryable, "attempts retryable");
        t.add(&mut self.failed, other.failed, "attempts failed");
        t.add(&mut self.aborted, other.aborted, "attempts aborted");
        t.add(&mut self.trapped, other.trapped, "attempts trapped");
        t.add(&mut self.timed_out, other.timed_out, "attempts timed out");
    }
}

/// Task counts: how many were scheduled, how each ended, and how many extra attempts ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Tasks whose scheduled time fell inside the run (or that the closed model started).
    pub scheduled: u64,
    /// See [`Outcome::Passed`].
    pub passed: u64,
    /// See [`Outcome::Failed`].
    pub failed: u64,
    /// See [`Outcome::Aborted`].
    pub aborted: u64,
    /// See [`Outcome::Dropped`].
    pub dropped: u64,
    /// See [`Outcome::TimedOut`].
    pub timed_out: u64,
    /// See [`Outcome::Trapped`].
    pub trapped: u64,
    /// See [`Outcome::Interrupted`].
    pub interrupted: u64,
    /// Extra attempts: a retried task still ends in one terminal state.
    pub retries: u64,
}

impl Counts {
    /// Count one task ending in `outcome`.
    pub fn add(&mut self, outcome: Outcome, n: u64) {
        *self.slot(outcome) += n;
    }

    /// How many tasks ended in `outcome`.
    pub fn get(&self, outcome: Outcome) -> u64 {
        match outcome {
            Outcome::Passed => self.passed,
            Outcome::Failed => self.failed,
            Outcome::Aborted => self.aborted,
            Outcome::Dropped => self.dropped,
            Outcome::TimedOut => self.timed_out,
            Outcome::Trapped => self.trapped,
            Outcome::Interrupted => self.interrupted,
        }
    }

    fn slot(&mut self, outcome: Outcome) -> &mut u64 {
        match outcome {
            Outcome::Passed => &mut self.passed,
            Outcome::Failed => &mut self.failed,
            Outcome::Aborted => &mut self.aborted,
            Outcome::Dropped => &mut self.dropped,
            Outcome::TimedOut => &mut self.timed_out,
            Outcome::Trapped => &mut self.trapped,
            Outcome::Interrupted => &mut self.interrupted,
        }
    }

    /// Tasks that reached a terminal state.
    pub fn ended(&self) -> u64 {
        Outcome::ALL.iter().map(|&o| self.get(o)).sum()
    }

    /// **errored**: tasks that ran and ended in an error of the task itself: `failed` +
    /// `timed_out` + `trapped` (the progress line and the per-scenario lines show this).
    pub fn errored(&self) -> u64 {
        self.failed + self.timed_out + self.trapped
    }

    /// **not passed**: every ended task but the passed ones, drops and interruptions included
    /// (`tasks_not_passed` in thresholds is this over [`Counts::ended`]).
    pub fn not_passed(&self) -> u64 {
        self.ended() - self.passed
    }

    /// The accounting identity: every scheduled task ended in exactly one terminal state.
    pub fn identity_holds(&self) -> bool {
        self.scheduled == self.ended()
    }

    /// Add another set of counts to this one (each at most [`crate::count::MAX_COUNT`]).
    pub fn merge(&mut self, other: &Counts) {
        self.add_to(other, &mut Tally::default());
    }

    pub(crate) fn add_to(&mut self, other: &Counts, t: &mut Tally) {
        t.add(&mut self.scheduled, other.scheduled, "tasks scheduled");
        for outcome in Outcome::ALL {
            t.add(self.slot(outcome), other.get(outcome), format_args!("tasks {}", outcome.name()));
        }
        t.add(&mut self.retries, other.retries, "retries");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_counts_every_terminal_state_once() {
        let mut counts = Counts { scheduled: 7, ..Counts::default() };
        for outcome in Outcome::ALL {
            counts.add(outcome, 1);
        }
        assert!(counts.identity_holds());
        counts.add(Outcome::Passed, 1);
        assert!(!counts.identity_holds(), "an extra ending must break the identity");
    }

    #[test]
    fn merge_adds_field_by_field() {
        let mut a = Counts { scheduled: 3, passed: 2, dropped: 1, retries: 4, ..Counts::default() };
        let b = Counts { scheduled: 2, failed: 1, trapped: 1, retries: 1, ..Counts::default() };
        a.merge(&b);
        assert_eq!((a.scheduled, a.passed, a.failed, a.dropped, a.trapped, a.retries), (5, 2, 1, 1, 1, 5));
        assert!(a.identity_holds());
    }

    #[test]
    fn an_attempt_ends_as_passed_or_one_kind_of_error_and_its_task_as_the_last_one() {
        let mut attempts = Attempts::default();
        attempts.add(AttemptEnd::Passed);
        for kind in ErrorKind::ALL {
            attempts.add(AttemptEnd::Error(kind));
        }
        let each = [attempts.passed, attempts.retryable, attempts.failed, attempts.trapped, attempts.timed_out];
        assert_eq!((attempts.total, each, attempts.aborted), (6, [1; 5], 1));
        assert_eq!(AttemptEnd::Passed.terminal(), Outcome::Passed);
        let ends: Vec<Outcome> = ErrorKind::ALL.iter().map(|&k| AttemptEnd::Error(k).terminal()).collect();
        let want = [Outcome::Failed, Outcome::Failed, Outcome::Trapped, Outcome::TimedOut, Outcome::Aborted];
        assert_eq!(ends, want, "a retryable with no retry left fails");
        for kind in ErrorKind::ALL {
            assert_eq!(serde_json::to_string(&kind).unwrap(), format!("\"{}\"", kind.as_str()));
        }
    }

    #[test]
    fn the_sums_outputs_show_count_the_states_they_name() {
        let mut counts = Counts { scheduled: 28, ..Counts::default() };
        for (i, outcome) in Outcome::ALL.into_iter().enumerate() {
            counts.add(outcome, i as u64 + 1);
        }
        assert_eq!(counts.errored(), 2 + 5 + 6, "failed + timed_out + trapped");
        assert_eq!(counts.not_passed(), 28 - 1, "everything but passed");
    }
}
