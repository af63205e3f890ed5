//! Comparing two runs (`loadhost compare BASE NEW`): `--fail-on` rules and how a change is judged.
//!
//! A rule fails only when the change is **both** past its tolerance **and** real:
//! - *past the tolerance*: the whole-run figures (from the full histograms and counts) moved in the
//!   worse direction by more than the rule allows;
//! - *real*: Welch's t-test on the two runs' per-interval values of the statistic ([`stats`])
//!   rejects "no difference" at the level the caller gives (the CLI divides its α over the rules).
//!
//! When there is nothing to test (a summary JSON has no intervals, or a run has fewer than two
//! usable ones) the tolerance alone decides, and the outcome says the test was skipped and why.
//! The method, and the false-alarm rate measured on identical runs, are in docs/compare.md.

pub mod rule;
pub mod stats;

pub use rule::{Direction, Rule, RuleError, Tolerance};
pub use stats::{Floor, MIN_UNITS, Unit, Welch};

use crate::catalogue::MetricKind;

/// Why no test was made when a run is a summary JSON.
pub const NO_INTERVALS: &str = "summary JSON has no per-interval data";

/// What one run says about a rule's statistic.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    /// The whole run's value.
    pub value: f64,
    /// Its usable intervals' values (see [`Rule::unit`]); `None` when the run has no intervals
    /// (a summary JSON).
    pub units: Option<&'a [Unit]>,
}

/// How a figure moved from base to new.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Change {
    /// The base run's value.
    pub base: f64,
    /// The new run's value.
    pub new: f64,
    /// new − base.
    pub delta: f64,
    /// (new − base) ÷ base; `None` when the base is 0.
    pub relative: Option<f64>,
}

impl Change {
    /// The change from `base` to `new`.
    pub fn new(base: f64, new: f64) -> Self {
        let relative = (base != 0.0).then(|| (new - base) / base.abs());
        Change { base, new, delta: new - base, relative }
    }
}

/// The significance test of one rule, or why there was none.
#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    /// Welch's t-test on the per-interval values.
    Welch(Welch),
    /// No test: why (the tolerance alone decided).
    Skipped(String),
}

/// How one rule ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The whole-run figures.
    pub change: Change,
    /// The change went past the tolerance in the worse direction.
    pub past_tolerance: bool,
    /// The test, or why there was none.
    pub test: Test,
    /// The level the p-value was held to.
    pub alpha: f64,
    /// Past the tolerance and significant (or past it with no test possible): the rule failed.
    pub failed: bool,
}

impl Judged {
    /// Whether the test found the change real (`None`: no test).
    pub fn significant(&self) -> Option<bool> {
        match &self.test {
            Test::Welch(w) => Some(w.p_value < self.alpha),
            Test::Skipped(_) => None,
        }
    }

    /// The test's p-value, when there was a test.
    pub fn p_value(&self) -> Option<f64> {
        match &self.test {
            Test::Welch(w) => Some(w.p_value),
            Test::Skipped(_) => None,
        }
    }
}

/// Judge `rule` (of a metric of `kind`) on the two runs, holding the test to `alpha`.
pub fn judge(rule: &Rule, kind: MetricKind, base: Evidence<'_>, new: Evidence<'_>, alpha: f64) -> Judged {
    let change = Change::new(base.value, new.value);
    let past_tolerance = past_tolerance(rule, &change);
    let test = match (base.units, new.units) {
        (Some(b), Some(n)) => match stats::welch(b, n, rule.floor(kind), rule.direction == Direction::Higher) {
            Some(w) => Test::Welch(w),
            None => Test::Skipped(format!(
                "too few intervals to test ({} and {} usable; {MIN_UNITS} a side needed: run longer)",
                b.len(),
                n.len()
            )),
        },
        _ => Test::Skipped(NO_INTERVALS.to_owned()),
    };
    let real = match &test {
        Test::Welch(w) => w.p_value < alpha,
        Test::Skipped(_) => true,
    };
    Judged { change, past_tolerance, test, alpha, failed: past_tolerance && real }
}

/// Whether the change went past the rule's tolerance in the worse direction. A relative
/// tolerance from a base of 0 is passed by any worsening (every rise from nothing is infinite).
pub fn past_tolerance(rule: &Rule, change: &Change) -> bool {
    let sign = if rule.direction == Direction::Higher { 1.0 } else { -1.0 };
    let worse = sign * change.delta;
    match rule.tolerance {
        Tolerance::Percent(n) => match change.relative {
            Some(r) => sign * r * 100.0 > n,
            None => worse > 0.0,
        },
        Tolerance::Points(n) => worse * 100.0 > n,
        Tolerance::Millis(n) | Tolerance::Units(n) => worse > n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Rule {
        text.parse().unwrap()
    }

    fn units(values: &[f64]) -> Vec<Unit> {
        values.iter().map(|&value| Unit { value, samples: Some(200), secs: 1.0 }).collect()
    }

    #[test]
    fn tolerances_in_every_unit_and_direction() {
        let past = |text: &str, base: f64, new: f64| past_tolerance(&rule(text), &Change::new(base, new));
        assert!(past("latency_ms:p(50)>+20%", 5.0, 6.1));
        assert!(!past("latency_ms:p(50)>+20%", 5.0, 6.0), "exactly the tolerance is within it");
        assert!(!past("latency_ms:p(50)>+20%", 5.0, 2.0), "better is never past");
        assert!(past("service_ms:p(50)>+2ms", 5.0, 7.5));
        assert!(!past("service_ms:p(50)>+2ms", 5.0, 6.5));
        assert!(past("http_req_failed:rate>+0.5pp", 0.001, 0.007));
        assert!(!past("http_req_failed:rate>+0.5pp", 0.001, 0.005));
        assert!(past("http_req_failed:rate>+10%", 0.0, 0.001), "any rise from nothing");
        assert!(!past("http_req_failed:rate>+10%", 0.0, 0.0));
        assert!(past("tasks_started:rate<-5%", 200.0, 180.0));
        assert!(!past("tasks_started:rate<-5%", 200.0, 195.0));
        assert!(!past("tasks_started:rate<-5%", 200.0, 400.0));
        assert!(past("checks:rate<-1pp", 1.0, 0.98));
    }

    #[test]
    fn a_rule_fails_only_when_past_tolerance_and_significant() {
        let p50 = rule("latency_ms:p(50)>+20%");
        let (five, eight) = (units(&[5.2, 5.3, 5.25]), units(&[8.2, 8.3, 8.25]));
        let judged = |b: &[Unit], bv, n: &[Unit], nv| {
            judge(
                &p50,
                MetricKind::Trend,
                Evidence { value: bv, units: Some(b) },
                Evidence { value: nv, units: Some(n) },
                0.01,
            )
        };
        let real = judged(&five, 5.25, &eight, 8.25);
        assert!(real.failed && real.significant() == Some(true), "{real:?}");
        // Past the tolerance on the whole, but the intervals are all over the place: not real.
        let noisy = judged(&five, 5.25, &units(&[4.0, 12.0, 5.0]), 7.0);
        assert!(noisy.past_tolerance && noisy.significant() == Some(false) && !noisy.failed, "{noisy:?}");
        // Real but small: within the tolerance.
        let small = judged(&five, 5.25, &units(&[5.5, 5.6, 5.55]), 5.55);
        assert!(!small.past_tolerance && small.significant() == Some(true) && !small.failed, "{small:?}");
    }

    #[test]
    fn without_intervals_the_tolerance_alone_decides_and_says_so() {
        let p50 = rule("latency_ms:p(50)>+20%");
        let j = judge(
            &p50,
            MetricKind::Trend,
            Evidence { value: 5.0, units: None },
            Evidence { value: 8.0, units: None },
            0.01,
        );
        assert!(j.failed);
        assert_eq!(j.test, Test::Skipped(NO_INTERVALS.to_owned()));
        let one = units(&[5.0]);
        let j = judge(
            &p50,
            MetricKind::Trend,
            Evidence { value: 5.0, units: Some(&one) },
            Evidence { value: 5.1, units: Some(&one) },
            0.01,
        );
        assert!(!j.failed && matches!(&j.test, Test::Skipped(why) if why.contains("too few intervals")), "{j:?}");
    }
}
