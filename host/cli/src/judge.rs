//! Thresholds judged while the run goes (for `abort_on_fail` and the live endpoint) and once at
//! its end (for the verdict and exit 99). A `{scenario:NAME}` tag judges that scenario alone.
//! While the run goes this runs on the outputs' thread (`crate::run::observe`), not the run loop.

use std::collections::HashMap;
use std::time::Duration;

use loadhost_config::criteria::ThresholdSpec;
use loadhost_metrics::{IntervalRow, RunReport, ThresholdResult, Window};

/// Running totals, per scenario and for the whole run, folded in one interval at a time.
pub struct LiveJudge {
    specs: Vec<ThresholdSpec>,
    all: Window,
    /// Only kept when a threshold names a scenario: otherwise every interval would be merged twice.
    by_scenario: Option<HashMap<String, (Window, Duration)>>,
    elapsed: Duration,
    aborted_by: Option<String>,
}

/// What the thresholds say after an interval.
pub struct Standing {
    /// Each threshold's expression and whether it holds so far (no samples yet counts as holding).
    pub passing: Vec<(String, bool)>,
    /// An `abort_on_fail` threshold that has just failed past its delay: the run must stop.
    pub abort: Option<String>,
}

impl LiveJudge {
    /// Judge `specs`.
    pub fn new(specs: Vec<ThresholdSpec>) -> Self {
        for spec in &specs {
            if let Some((old, new)) = spec.threshold.renamed() {
                tracing::warn!(
                    "threshold '{}': {old} is now called {new} (the share of tasks that did not pass: failed, \
                     dropped, timed out, trapped, aborted or interrupted); the old name still works",
                    spec.threshold.source
                );
            }
        }
        let by_scenario = specs.iter().any(|s| s.threshold.scenario().is_some()).then(HashMap::new);
        Self { specs, all: Window::default(), by_scenario, elapsed: Duration::ZERO, aborted_by: None }
    }

    /// Whether there is anything to judge.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Fold one interval in and judge every threshold on the run so far.
    pub fn fold(&mut self, row: &IntervalRow, window: &Window) -> Standing {
        self.all.merge(window);
        self.elapsed = self.elapsed.max(row.end);
        if let Some(by_scenario) = self.by_scenario.as_mut() {
            let scenario = by_scenario.entry(row.scenario.to_string()).or_default();
            scenario.0.merge(window);
            scenario.1 = scenario.1.max(row.end);
        }
        let mut standing = Standing { passing: Vec::with_capacity(self.specs.len()), abort: None };
        for spec in &self.specs {
            let t = &spec.threshold;
            let scenario = t.scenario().and_then(|name| self.by_scenario.as_ref()?.get(name));
            let (window, elapsed) = match scenario {
                Some((window, elapsed)) => (window, *elapsed),
                None => (&self.all, self.elapsed),
            };
            let holds = match t.measure(window, elapsed) {
                Ok(Some(value)) => t.holds(value),
                Ok(None) | Err(_) => true,
            };
            standing.passing.push((t.source.clone(), holds));
            if !holds && spec.abort_on_fail && self.elapsed >= spec.delay && self.aborted_by.is_none() {
                self.aborted_by = Some(t.source.clone());
                standing.abort = Some(t.source.clone());
            }
        }
        standing
    }

    /// The threshold that stopped the run, if one did.
    pub fn aborted_by(&self) -> Option<&str> {
        self.aborted_by.as_deref()
    }

    /// Judge every threshold on the finished run: `all` is the whole run, `scenarios` each
    /// scenario's own report (empty for a single run). A metric with no samples fails.
    pub fn finish(&self, all: &RunReport, scenarios: &[RunReport]) -> Vec<ThresholdResult> {
        self.specs
            .iter()
            .map(|spec| {
                let t = &spec.threshold;
                let report = t.scenario().and_then(|name| scenarios.iter().find(|r| r.scenario == name)).unwrap_or(all);
                let value = t.measure(&report.totals, report.elapsed).ok().flatten();
                // One that stopped the run failed, even if the whole run's value came back under it.
                let aborted_run = self.aborted_by.as_deref() == Some(t.source.as_str());
                ThresholdResult {
                    expr: t.source.clone(),
                    value,
                    passed: value.is_some_and(|v| t.holds(v)) && !aborted_run,
                    abort_on_fail: spec.abort_on_fail,
                    aborted_run,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use loadhost_metrics::{Gauges, Outcome};

    use super::*;

    fn interval(scenario: &str, outcome: Outcome) -> (IntervalRow, Window) {
        let mut w = Window::default();
        w.counts.scheduled = 1;
        w.record_task(outcome, None);
        let mut row = IntervalRow::from_window(0, Duration::ZERO, Duration::from_secs(1), &w, Gauges::default());
        row.scenario = Arc::from(scenario);
        (row, w)
    }

    fn judge(thresholds: &[&str]) -> LiveJudge {
        LiveJudge::new(thresholds.iter().map(|t| t.parse().expect("a threshold")).collect())
    }

    #[test]
    fn a_scenario_tag_judges_that_scenario_alone_and_the_rest_the_whole_run() {
        let mut judge = judge(&["tasks_not_passed{scenario:buy}:rate<0.5", "tasks_not_passed:rate<0.6"]);
        for (scenario, outcome) in [("browse", Outcome::Passed), ("buy", Outcome::Failed)] {
            let (row, window) = interval(scenario, outcome);
            judge.fold(&row, &window);
        }
        let (row, window) = interval("browse", Outcome::Passed);
        let standing = judge.fold(&row, &window);
        let passing: Vec<bool> = standing.passing.iter().map(|(_, ok)| *ok).collect();
        assert_eq!(passing, [false, true], "buy: 1 of 1 did not pass; the run: 1 of 3");
    }

    #[test]
    fn without_a_scenario_tag_no_window_is_kept_per_scenario() {
        let mut judge = judge(&["tasks_not_passed:rate<0.5"]);
        let (row, window) = interval("browse", Outcome::Dropped);
        let standing = judge.fold(&row, &window);
        assert!(judge.by_scenario.is_none());
        assert_eq!(standing.passing, [("tasks_not_passed:rate<0.5".to_owned(), false)], "a drop did not pass");
    }
}
