//! `--junit FILE`: the run as JUnit XML, the shape CI systems ingest (GitLab, Jenkins, Azure
//! DevOps, GitHub test-report actions), written with quick-junit.
//!
//! One test suite for the run, and one per scenario when there are several. The run's suite has a
//! case per threshold (failed: the expression, the measured value and the limit), per check
//! (failed when its pass rate is under `check_rate`, 100% by default), one for "every scheduled
//! task accounted for" and one for the verdict (failed as `Summary::failed` says; a host limit
//! alone is told in its output, not failed); a scenario's suite has its own accounting case and
//! the thresholds that name it (`{scenario:NAME}`).
//!
//! A merged run (`loadhost merge`) has a case "whole plan merged", failed for a partial merge
//! (segments missing, files cut off) with the sentence that names them, and the missing segments
//! as the suite property `merged.missing`: a run that is not the plan must not look green in a
//! CI's test view, even when every threshold held on what did run (the exit code stays the
//! thresholds', as `--partial` asked for the merge).
//!
//! A generator that could not keep up is a failure only when the user asks for it, with the
//! threshold `generator_saturated:rate==0`: that case's failure message is the generator's own
//! sentence (when it was saturated, what to do), not only the share measured.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::summary::{CheckCounts, Summary, ThresholdSummary};

/// The comparison operators of a threshold expression, longest first.
const OPERATORS: [&str; 6] = ["<=", ">=", "==", "!=", "<", ">"];

/// The limit side of a threshold expression (`< 200` of `latency_ms:p(99)<200`), for messages.
fn limit_of(expr: &str) -> Option<String> {
    let body = expr.split(';').next().unwrap_or(expr);
    OPERATORS
        .iter()
        .filter_map(|op| body.rfind(op).map(|at| (at, *op)))
        .max_by_key(|(at, op)| (*at, op.len()))
        .map(|(at, op)| format!("{op} {}", body[at + op.len()..].trim()))
}

fn passed(name: impl Into<String>) -> TestCase {
    TestCase::new(name.into(), TestCaseStatus::success())
}

fn failed(name: impl Into<String>, message: impl Into<String>) -> TestCase {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    status.set_message(message.into());
    TestCase::new(name.into(), status)
}

/// A threshold's case; a failed `generator_saturated` threshold says the generator's sentence.
fn threshold(s: &Summary, expr: &str, t: &ThresholdSummary) -> TestCase {
    let name = format!("threshold {expr}");
    if t.ok {
        return passed(name);
    }
    let measured = t.value.map_or_else(|| "no samples".to_owned(), |v| format!("measured {v}"));
    let limit = limit_of(expr).map(|l| format!(", limit {l}")).unwrap_or_default();
    let why = crate::summary::generator::threshold_why(s, expr).map(|why| format!(": {why}")).unwrap_or_default();
    failed(name, format!("{expr} failed: {measured}{limit}{why}"))
}

/// A check's case: failed when its pass rate is under `required`.
fn check(name: &str, c: &CheckCounts, required: f64) -> TestCase {
    let case = format!("check {name}");
    match c.rate() {
        Some(rate) if rate >= required => passed(case),
        Some(rate) => failed(
            case,
            format!(
                "check '{name}' passed {:.2}% ({} of {} failed), required {:.2}%",
                rate * 100.0,
                c.fails,
                c.passes + c.fails,
                required * 100.0
            ),
        ),
        None => failed(case, format!("check '{name}' was never run (no samples)")),
    }
}

/// "Every scheduled task accounted for": the run's identity.
fn accounting(scheduled: u64, ended: u64, holds: bool) -> TestCase {
    let name = "every scheduled task accounted for";
    if holds {
        passed(name)
    } else {
        failed(name, format!("{scheduled} scheduled but {ended} ended: tasks are unaccounted for"))
    }
}

/// The suite of the whole run.
fn run_suite(s: &Summary, name: &str, check_rate: f64, scenario_names: &[&str]) -> TestSuite {
    let mut suite = TestSuite::new(name.to_owned());
    suite.set_time(Duration::from_secs_f64(s.duration_s.max(0.0)));
    plugin_properties(&mut suite, &s.plugin);
    for (expr, t) in s.thresholds.iter() {
        if !scenario_names.iter().any(|n| names_scenario(expr, n)) {
            suite.add_test_case(threshold(s, expr, t));
        }
    }
    for (name, c) in &s.checks {
        suite.add_test_case(check(name, c, check_rate));
    }
    suite.add_test_case(accounting(s.tasks.scheduled, s.tasks.ended(), s.identity_holds));
    if let Some(merged) = &s.merged {
        if !merged.missing.is_empty() {
            suite.add_property(("merged.missing", merged.missing.join(",").as_str()));
        }
        suite.add_test_case(match merged.partial() {
            Some(partial) => failed("whole plan merged", partial),
            None => passed("whole plan merged"),
        });
    }
    let words = match (&s.verdict.limit, &s.verdict.why) {
        (None, None) => None,
        (Some(limit), why) => Some(format!("limited by the {limit}: {}", why.as_deref().unwrap_or(""))),
        (None, Some(why)) => Some(why.clone()),
    };
    // A host limit alone is said, not failed: the thresholds judge the figures (see Summary::failed).
    let verdict = match words {
        Some(why) if s.failed() => failed("verdict", why),
        Some(why) => {
            let mut case = passed("verdict");
            case.set_system_out(why);
            case
        }
        None => passed("verdict"),
    };
    suite.add_test_case(verdict);
    suite
}

/// The plugin that ran, as suite properties: a CI page shows what was measured, pinned.
fn plugin_properties(suite: &mut TestSuite, plugin: &crate::summary::PluginFile) {
    suite.add_property(("plugin.sha256", plugin.sha256.as_str()));
    if let (Some(reference), Some(digest)) = (&plugin.reference, &plugin.digest) {
        suite.add_property(("plugin.ref", reference.as_str()));
        suite.add_property(("plugin.digest", digest.as_str()));
    }
}

/// Whether a threshold expression is about scenario `name` (`…{scenario:NAME}…`).
fn names_scenario(expr: &str, name: &str) -> bool {
    expr.contains(&format!("scenario:{name}}}")) || expr.contains(&format!("scenario:{name},"))
}

/// The whole report: the run's suite, then one per scenario.
pub fn report(s: &Summary, check_rate: f64) -> Report {
    let title = format!("loadhost {}", s.plugin.path);
    let mut report = Report::new(title.clone());
    let scenario_names: Vec<&str> = s.scenarios.iter().flat_map(|named| named.iter().map(|(name, _)| name)).collect();
    report.add_test_suite(run_suite(s, &title, check_rate, &scenario_names));
    if let Some(scenarios) = &s.scenarios {
        for (name, sc) in scenarios.iter() {
            let mut suite = TestSuite::new(format!("{title} · scenario {name}"));
            suite.set_time(Duration::from_secs_f64(sc.duration_s.max(0.0)));
            if let Some(plugin) = &sc.plugin {
                plugin_properties(&mut suite, plugin);
            }
            for (expr, t) in s.thresholds.iter().filter(|(expr, _)| names_scenario(expr, name)) {
                suite.add_test_case(threshold(s, expr, t));
            }
            suite.add_test_case(accounting(sc.tasks.scheduled, sc.tasks.ended(), sc.identity_holds));
            report.add_test_suite(suite);
        }
    }
    report
}

/// The report as XML.
pub fn to_string(s: &Summary, check_rate: f64) -> std::io::Result<String> {
    report(s, check_rate).to_string().map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tests::sample;

    #[test]
    fn the_limit_is_the_side_after_the_operator() {
        assert_eq!(limit_of("latency_ms:p(99)<200").as_deref(), Some("< 200"));
        assert_eq!(limit_of("checks:rate>=0.99;abort_on_fail").as_deref(), Some(">= 0.99"));
        assert_eq!(limit_of("http_reqs{status:500}:count<10").as_deref(), Some("< 10"));
    }

    #[test]
    fn every_threshold_check_and_the_run_is_a_case() {
        let s = sample();
        let xml = to_string(&s, 1.0).unwrap();
        // The sample: three thresholds (two fail), one check, the accounting and the verdict.
        assert!(xml.contains("tests=\"6\""), "{xml}");
        assert!(xml.contains("failures=\"3\""), "{xml}");
        assert!(xml.contains("size:p(99)&lt;1 failed: measured 3.5, limit &lt; 1"), "{xml}");
        assert!(xml.contains("login_ms:max&lt;1 failed: no samples, limit &lt; 1"), "{xml}");
        assert!(xml.contains("name=\"check ok\""), "{xml}");
    }

    #[test]
    fn a_host_limit_alone_is_said_but_does_not_fail_the_verdict() {
        let mut s = sample();
        s.thresholds.0.retain(|(_, t)| t.ok);
        s.tasks.failed = 0;
        s.tasks.trapped = 0;
        s.verdict = crate::summary::Verdict {
            limit: Some(crate::summary::Limiter::Emitter),
            why: Some("122 tasks released late (underrun)".into()),
        };
        assert!(!s.failed());
        let xml = to_string(&s, 1.0).unwrap();
        assert!(xml.contains("122 tasks released late"), "{xml}");
        assert!(!xml.contains("<failure message=\"limited by"), "{xml}");
    }

    #[test]
    fn a_partial_merge_fails_its_whole_plan_case_naming_the_missing_segment() {
        let mut s = sample();
        assert!(!to_string(&s, 1.0).unwrap().contains("whole plan merged"), "a run is no merge");
        s.merged = Some(crate::summary::tests::partial());
        let xml = to_string(&s, 1.0).unwrap();
        assert!(
            xml.contains(
                "<testcase name=\"whole plan merged\">\n            <failure message=\"partial: 1 of 3 segments missing (segment 2/3): 33% of the plan did not run\"/>"
            ),
            "{xml}"
        );
        assert!(xml.contains("<property name=\"merged.missing\" value=\"2/3\"/>"), "{xml}");
        s.merged = Some(crate::summary::MergedFrom { missing: Vec::new(), ..crate::summary::tests::partial() });
        let xml = to_string(&s, 1.0).unwrap();
        assert!(xml.contains("<testcase name=\"whole plan merged\">\n        </testcase>"), "{xml}");
    }

    #[test]
    fn a_check_under_the_required_rate_fails() {
        let c = CheckCounts { passes: 99, fails: 1, ..CheckCounts::default() };
        assert!(matches!(check("c", &c, 0.99).status, TestCaseStatus::Success { .. }));
        let case = check("c", &c, 1.0);
        let TestCaseStatus::NonSuccess { message, .. } = &case.status else { panic!("failed") };
        assert_eq!(message.as_deref(), Some("check 'c' passed 99.00% (1 of 100 failed), required 100.00%"));
    }

    #[test]
    fn a_failed_generator_saturated_threshold_says_the_generators_sentence() {
        use loadhost_metrics::GeneratorVerdict::{Healthy, Saturated};
        let why = "the generator was saturated from 1 s to 2 s (1 of 2 intervals): x; add a segment";
        let mut s = crate::summary::generator::judged(&[Some(Healthy), Some(Saturated)], Some(why));
        let failing = ThresholdSummary { abort_on_fail: false, aborted_run: false, ok: false, value: Some(0.5) };
        s.thresholds.0 = vec![("generator_saturated:rate==0".into(), failing)];
        let case = threshold(&s, "generator_saturated:rate==0", &failing);
        let TestCaseStatus::NonSuccess { message, .. } = &case.status else { panic!("failed") };
        assert_eq!(
            message.as_deref(),
            Some(format!("generator_saturated:rate==0 failed: measured 0.5, limit == 0: {why}").as_str())
        );
        // Another threshold keeps its own message.
        let other = threshold(&s, "latency_ms:p(99)<1", &failing);
        let TestCaseStatus::NonSuccess { message, .. } = &other.status else { panic!("failed") };
        assert_eq!(message.as_deref(), Some("latency_ms:p(99)<1 failed: measured 0.5, limit < 1"));
        assert!(to_string(&s, 1.0).unwrap().contains("add a segment"));
    }
}
