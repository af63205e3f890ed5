//! Thresholds judged while the run goes (for `abort_on_fail` and the live endpoint) and once at
//! its end (for the verdict and exit 99). A `{scenario:NAME}` tag judges that scenario alone.

use std::collections::HashMap;
use std::time::Duration;

use loadhost_config::criteria::ThresholdSpec;
use loadhost_metrics::{IntervalRow, RunReport, ThresholdResult, Window};

/// Running totals, per scenario and for the whole run, folded in one interval at a time.
pub struct LiveJudge {
    specs: Vec<ThresholdSpec>,
    all: Window,
    by_scenario: HashMap<String, (Window, Duration)>,
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
        Self { specs, all: Window::default(), by_scenario: HashMap::new(), elapsed: Duration::ZERO, aborted_by: None }
    }

    /// Whether there is anything to judge.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Fold one interval in and judge every threshold on the run so far.
    pub fn fold(&mut self, row: &IntervalRow, window: &Window) -> Standing {
        self.all.merge(window);
        self.elapsed = self.elapsed.max(row.end);
        let scenario = self.by_scenario.entry(row.scenario.to_string()).or_default();
        scenario.0.merge(window);
        scenario.1 = scenario.1.max(row.end);
        let mut standing = Standing { passing: Vec::with_capacity(self.specs.len()), abort: None };
        for spec in &self.specs {
            let t = &spec.threshold;
            let (window, elapsed) = match t.scenario().and_then(|name| self.by_scenario.get(name)) {
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
