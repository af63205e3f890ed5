//! Every scheduled task ends in exactly one terminal state; [`Counts`] proves it.

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

/// How one attempt of a task ended (a retried task has several attempts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttemptEnd {
    /// `ok`.
    Passed,
    /// `retryable`: retried when attempts and room are left, else the task failed.
    Retryable,
    /// `failed`.
    Failed,
    /// `abort`.
    Aborted,
    /// A trap.
    Trapped,
    /// Over its deadline.
    TimedOut,
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
        match end {
            AttemptEnd::Passed => self.passed += 1,
            AttemptEnd::Retryable => self.retryable += 1,
            AttemptEnd::Failed => self.failed += 1,
            AttemptEnd::Aborted => self.aborted += 1,
            AttemptEnd::Trapped => self.trapped += 1,
            AttemptEnd::TimedOut => self.timed_out += 1,
        }
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
}
