//! The comparison as one model, [`Report`], that the terminal, the Markdown and the JSON all show,
//! so the three cannot disagree: the two files, the table (see [`super::table`]), each rule and how
//! it ended, and the verdict line.

use loadhost_metrics::MetricKind;
use loadhost_metrics::catalogue;
use loadhost_metrics::catalogue::Aggregate;
use loadhost_metrics::compare::{Change, Judged, Rule, Test, Tolerance, Welch};
use serde_json::{Value, json};

use super::read::Run;
use super::render::{delta, p_value, relative, short, value};
use super::table::metric_rows;

/// How a figure is shown: its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shown {
    /// Milliseconds.
    Ms,
    /// Per second.
    PerS,
    /// A share of 0..=1, shown in percent; changes in percentage points.
    Share,
    /// A count.
    Count,
    /// The metric's own unit.
    Plain,
}

/// The whole comparison.
#[derive(Debug)]
pub(super) struct Report {
    pub base: Side,
    pub new: Side,
    pub method: Method,
    pub notes: Vec<String>,
    pub metrics: Vec<MetricRow>,
    pub rules: Vec<RuleRow>,
    /// Rules that failed.
    pub failed: usize,
    /// The last line: what failed, or that every rule held.
    pub verdict: String,
}

/// One of the two files.
#[derive(Debug)]
pub(super) struct Side {
    pub path: String,
    /// `results` or `summary`.
    pub kind: &'static str,
    /// Interval lines of a results file.
    pub intervals: Option<usize>,
    pub plugin_sha256: String,
    pub started_at: String,
    pub describe: String,
}

/// How the rules were judged.
#[derive(Debug)]
pub(super) struct Method {
    pub test: &'static str,
    /// The chance of a false alarm shared by the rules.
    pub alpha: f64,
    /// Each rule's level: alpha ÷ rules (Bonferroni).
    pub alpha_per_rule: f64,
}

/// One figure of both runs.
#[derive(Debug)]
pub(super) struct MetricRow {
    pub metric: String,
    pub unit: Shown,
    pub base: Option<f64>,
    pub new: Option<f64>,
    pub delta: Option<f64>,
    pub relative: Option<f64>,
}

/// One `--fail-on` rule and how it ended.
#[derive(Debug)]
pub(super) struct RuleRow {
    pub rule: String,
    pub metric: String,
    pub unit: Shown,
    pub tolerance: String,
    pub change: Change,
    pub past_tolerance: bool,
    pub test: Option<Welch>,
    pub test_skipped: Option<String>,
    pub alpha: f64,
    pub significant: Option<bool>,
    /// `failed`, `held` or `not significant` (past the tolerance, but not shown real).
    pub verdict: &'static str,
    pub change_text: String,
}

pub(super) const TEST: &str = "Welch's t-test, one-sided, on per-interval values";

impl Shown {
    /// The unit's name in the JSON.
    fn name(self) -> &'static str {
        match self {
            Shown::Ms => "ms",
            Shown::PerS => "per_s",
            Shown::Share => "share",
            Shown::Count => "count",
            Shown::Plain => "",
        }
    }
}

impl Report {
    /// The comparison as JSON (`--json`): the same facts as the terminal, in docs/compare.md's keys.
    pub fn json(&self) -> Value {
        let side = |s: &Side| {
            json!({"path": s.path, "kind": s.kind, "intervals": s.intervals,
                   "plugin_sha256": s.plugin_sha256, "started_at": s.started_at})
        };
        let metrics: Vec<Value> = self
            .metrics
            .iter()
            .map(|m| {
                json!({"metric": m.metric, "unit": m.unit.name(), "base": m.base, "new": m.new,
                       "delta": m.delta.map(tidy), "relative": m.relative})
            })
            .collect();
        let rules: Vec<Value> = self.rules.iter().map(RuleRow::json).collect();
        json!({
            "base": side(&self.base),
            "new": side(&self.new),
            "method": {"test": self.method.test, "alpha": self.method.alpha, "alpha_per_rule": self.method.alpha_per_rule},
            "notes": self.notes,
            "metrics": metrics,
            "rules": rules,
            "failed": self.failed,
            "verdict": self.verdict,
        })
    }
}

impl RuleRow {
    fn json(&self) -> Value {
        let test = self
            .test
            .map(|w| json!({"p_value": w.p_value, "t": finite(w.t), "df": w.df, "n_base": w.n_base, "n_new": w.n_new}));
        json!({
            "rule": self.rule, "metric": self.metric, "unit": self.unit.name(), "tolerance": self.tolerance,
            "base": self.change.base, "new": self.change.new, "delta": tidy(self.change.delta),
            "relative": self.change.relative, "past_tolerance": self.past_tolerance,
            "test": test, "test_skipped": self.test_skipped, "alpha": self.alpha,
            "significant": self.significant, "verdict": self.verdict,
        })
    }
}

/// A difference of two figures without the float noise of subtracting them (2.944, not
/// 2.943999999999999): no figure has more than nine decimals.
fn tidy(v: f64) -> f64 {
    (v * 1e9).round() / 1e9
}

/// JSON has no infinity: a t with no noise around it is written as null.
fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

impl Report {
    /// The report of two runs, their rules (with kinds) and how each was judged.
    pub fn new(
        base: &Run,
        new: &Run,
        rules: &[Rule],
        kinds: &[MetricKind],
        judged: &[Judged],
        alpha: f64,
        notes: Vec<String>,
    ) -> Self {
        let rules: Vec<RuleRow> =
            rules.iter().zip(kinds).zip(judged).map(|((rule, kind), j)| RuleRow::new(rule, *kind, j)).collect();
        let failed = rules.iter().filter(|r| r.verdict == "failed").count();
        let verdict = verdict(&rules);
        Report {
            base: Side::new(base),
            new: Side::new(new),
            method: Method { test: TEST, alpha, alpha_per_rule: alpha / rules.len().max(1) as f64 },
            notes,
            metrics: metric_rows(&base.summary, &new.summary),
            rules,
            failed,
            verdict,
        }
    }
}

impl Side {
    fn new(run: &Run) -> Self {
        Side {
            path: run.path.display().to_string(),
            kind: if run.results.is_some() { "results" } else { "summary" },
            intervals: run.results.as_ref().map(|_| run.intervals),
            plugin_sha256: run.summary.plugin.sha256.clone(),
            started_at: run.summary.started_at.clone(),
            describe: run.describe(),
        }
    }
}

impl RuleRow {
    fn new(rule: &Rule, kind: MetricKind, j: &Judged) -> Self {
        let unit = rule_unit(rule, kind);
        let (test, test_skipped) = match &j.test {
            Test::Welch(w) => (Some(*w), None),
            Test::Skipped(why) => (None, Some(why.clone())),
        };
        let verdict = match (j.failed, j.past_tolerance) {
            (true, _) => "failed",
            (false, true) => "not significant",
            (false, false) => "held",
        };
        RuleRow {
            rule: rule.source.clone(),
            metric: rule.stat.clone(),
            unit,
            tolerance: rule.tolerance.signed(rule.direction),
            change: j.change,
            past_tolerance: j.past_tolerance,
            test,
            test_skipped,
            alpha: j.alpha,
            significant: j.significant(),
            verdict,
            change_text: change_in(rule, unit, &j.change),
        }
    }

    /// `5.25 → 8.30 ms, +58.1%`.
    pub(super) fn moved(&self) -> String {
        let (b, n) = (self.change.base, self.change.new);
        format!("{} → {}, {}", value(b, self.unit), value(n, self.unit), self.change_text)
    }

    /// `p=0.0003 < 0.005` or why there was no test.
    pub(super) fn evidence(&self) -> String {
        match (&self.test, &self.test_skipped) {
            (Some(w), _) => {
                let cmp = if w.p_value < self.alpha { "<" } else { "≥" };
                format!("{} {cmp} {} ({} and {} intervals)", p_value(w.p_value), short(self.alpha), w.n_base, w.n_new)
            }
            (None, Some(why)) => format!("no significance test: {why}"),
            (None, None) => String::new(),
        }
    }
}

/// The unit a rule's figures are shown in.
fn rule_unit(rule: &Rule, kind: MetricKind) -> Shown {
    let duration = catalogue::find(rule.metric()).is_some_and(|m| m.unit == catalogue::Unit::Millis);
    match (kind, rule.aggregate()) {
        (_, Aggregate::Count) => Shown::Count,
        (MetricKind::Rate, _) => Shown::Share,
        (MetricKind::Counter, _) => Shown::PerS,
        (MetricKind::Trend, _) if duration => Shown::Ms,
        _ => Shown::Plain,
    }
}

/// The change in the tolerance's own terms: percent, points, or the unit.
fn change_in(rule: &Rule, unit: Shown, change: &Change) -> String {
    match rule.tolerance {
        Tolerance::Percent(_) => relative(change),
        Tolerance::Points(_) => format!("{:+.2}pp", change.delta * 100.0),
        Tolerance::Millis(_) | Tolerance::Units(_) => delta(change.delta, unit),
    }
}

/// The verdict line.
fn verdict(rules: &[RuleRow]) -> String {
    if rules.is_empty() {
        return "compare: no --fail-on rules, nothing judged".to_owned();
    }
    let failed: Vec<String> = rules
        .iter()
        .filter(|r| r.verdict == "failed")
        .map(|r| {
            let why = match &r.test {
                Some(w) => p_value(w.p_value),
                None => "no significance test".to_owned(),
            };
            format!("{} {} ({why})", r.metric, r.change_text)
        })
        .collect();
    let unproven: Vec<&str> =
        rules.iter().filter(|r| r.verdict == "not significant").map(|r| r.metric.as_str()).collect();
    let n = rules.len();
    let rules_word = if n == 1 { "rule" } else { "rules" };
    if !failed.is_empty() {
        return format!("compare: {} of {n} {rules_word} failed: {}", failed.len(), failed.join("; "));
    }
    let mut line = format!("compare: every rule held ({n} {rules_word})");
    if !unproven.is_empty() {
        line.push_str(&format!("; past the tolerance but not significant: {}", unproven.join(", ")));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(rule: &str, verdict: &'static str, text: &str, p: Option<f64>) -> RuleRow {
        let parsed: Rule = rule.parse().unwrap();
        RuleRow {
            rule: rule.into(),
            metric: parsed.stat.clone(),
            unit: Shown::Ms,
            tolerance: parsed.tolerance.signed(parsed.direction),
            change: Change::new(5.0, 8.0),
            past_tolerance: verdict != "held",
            test: p.map(|p_value| Welch { p_value, t: 9.0, df: 4.0, n_base: 3, n_new: 3 }),
            test_skipped: None,
            alpha: 0.005,
            significant: p.map(|p| p < 0.005),
            verdict,
            change_text: text.into(),
        }
    }

    #[test]
    fn the_verdict_names_each_failure_with_its_change_and_p_value() {
        let rules = [
            row("latency_ms:p(50)>+20%", "failed", "+61.2%", Some(0.0003)),
            row("http_req_failed:rate>+0.5pp", "held", "+0.00pp", Some(0.5)),
        ];
        assert_eq!(verdict(&rules), "compare: 1 of 2 rules failed: latency_ms:p(50) +61.2% (p=0.0003)");
        let rules = [row("latency_ms:p(99)>+10%", "not significant", "+23.0%", Some(0.2))];
        assert_eq!(
            verdict(&rules),
            "compare: every rule held (1 rule); past the tolerance but not significant: latency_ms:p(99)"
        );
        assert_eq!(verdict(&[]), "compare: no --fail-on rules, nothing judged");
    }
}
