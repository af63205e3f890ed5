//! Counts that add up without ever wrapping: the one rule every merge of measurements follows.
//!
//! A results file is input, and a damaged or crafted one can hold any number. Added with `+`, two
//! counts wrap round in a release build: u64::MAX and 600 make 599, and the merge would report
//! "599 scheduled, 599 passed, every scheduled task is accounted for". So every count that
//! windows, reports and gauges add up goes through a [`Tally`]: it adds checked, never past
//! [`MAX_COUNT`], and remembers the first figure that did not fit. The host's own recording,
//! whose counts never come near 2^53, merges through it too and ignores the answer (a count then
//! saturates rather than wraps); a merge of files asks for it (`Window::try_merge`,
//! `RunReport::try_absorb`) and refuses the file, naming the figure.
//!
//! Why 2^53: past it a count is no longer exact as a JSON number in most readers (JavaScript's and
//! jq's numbers are f64), and below it any sum of up to 2,048 counts — every total an output adds
//! up: the outcomes, a check's passes and fails, the error rows — fits in a u64. A run releasing
//! ten million tasks a second would take 28 years to reach it.

use std::fmt::Display;
use std::time::{Duration, SystemTime};

/// The largest count loadhost keeps: 2^53.
pub const MAX_COUNT: u64 = 1 << 53;

/// A figure that did not fit: a count past [`MAX_COUNT`], or a time past what a clock can say.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} comes to more than loadhost counts (2^53 = {MAX_COUNT} for a count; no real run is near it)")]
pub struct Overflow {
    /// The figure, as a person names it ("tasks scheduled", "HTTP requests").
    pub what: String,
}

/// Adds counts (and durations, and times) checked: a sum that does not fit saturates, and the
/// first one is remembered for [`Tally::result`].
#[derive(Debug, Default)]
pub struct Tally {
    overflow: Option<String>,
}

impl Tally {
    /// `*total += n`, at most [`MAX_COUNT`].
    pub fn add(&mut self, total: &mut u64, n: u64, what: impl Display) {
        match total.checked_add(n).filter(|sum| *sum <= MAX_COUNT) {
            Some(sum) => *total = sum,
            None => {
                *total = MAX_COUNT;
                self.note(what);
            }
        }
    }

    /// `*total += n`, at most `Duration::MAX`.
    pub fn add_duration(&mut self, total: &mut Duration, n: Duration, what: impl Display) {
        match total.checked_add(n) {
            Some(sum) => *total = sum,
            None => {
                *total = Duration::MAX;
                self.note(what);
            }
        }
    }

    /// `at + after`, or `at` when the clock cannot say it.
    pub fn at(&mut self, at: SystemTime, after: Duration, what: impl Display) -> SystemTime {
        at.checked_add(after).unwrap_or_else(|| {
            self.note(what);
            at
        })
    }

    /// Remember that `what` did not fit (the first such figure is the one said).
    pub fn note(&mut self, what: impl Display) {
        if self.overflow.is_none() {
            self.overflow = Some(what.to_string());
        }
    }

    /// Whether everything fitted; else the first figure that did not.
    pub fn result(self) -> Result<(), Overflow> {
        match self.overflow {
            None => Ok(()),
            Some(what) => Err(Overflow { what }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sum_that_does_not_fit_saturates_and_is_named() {
        let mut t = Tally::default();
        let mut total = 5;
        t.add(&mut total, 7, "tasks");
        assert_eq!(total, 12);
        t.add(&mut total, u64::MAX, "tasks passed");
        assert_eq!(total, MAX_COUNT, "never wrapped round to a small number");
        t.add(&mut total, 1, "retries");
        let err = t.result().unwrap_err();
        assert_eq!(err.what, "tasks passed", "the first figure that did not fit");
        assert!(err.to_string().starts_with("tasks passed comes to more than"), "{err}");

        let mut t = Tally::default();
        let mut at_most = MAX_COUNT - 1;
        t.add(&mut at_most, 1, "x");
        assert!(t.result().is_ok(), "2^53 itself fits");

        let mut t = Tally::default();
        let mut lag = Duration::MAX;
        t.add_duration(&mut lag, Duration::from_secs(1), "lag");
        let late = t.at(SystemTime::UNIX_EPOCH, Duration::MAX, "the end");
        assert_eq!((lag, late), (Duration::MAX, SystemTime::UNIX_EPOCH));
        assert_eq!(t.result().unwrap_err().what, "lag");
    }
}
