//! Made for CI: JUnit XML that a real parser reads, a Markdown summary (also into a GitHub job
//! summary), and failing closed: a run where no task passed, thresholds on empty aggregates,
//! find-max with no passing step, and results files of different runs.

use std::process::Command;

use crate::common::{Example, Fixture, Loadhost, plugin, task_count};
use crate::target_process::TargetProcess;

/// The JUnit file read by Python's XML parser: per suite (name, tests, failures), and each
/// failing case as "suite / case: message".
pub(crate) fn parse_junit(path: &std::path::Path) -> String {
    let script = r#"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites", root.tag
for suite in root.findall("testsuite"):
    cases = suite.findall("testcase")
    assert int(suite.get("tests")) == len(cases), "tests attribute"
    failures = [c for c in cases if c.find("failure") is not None]
    assert int(suite.get("failures")) == len(failures), "failures attribute"
    print("suite", suite.get("name"), len(cases), len(failures))
    for c in failures:
        print("failed", c.get("name"), "|", c.find("failure").get("message"))
"#;
    let out = Command::new("python3").arg("-c").arg(script).arg(path).output().expect("python3 runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn junit_and_markdown_carry_the_thresholds_and_checks() {
    let step_summary = tempfile::NamedTempFile::new().unwrap();
    let args = [
        "-n",
        "40",
        "--metric",
        "size:trend",
        "--threshold",
        "size:p(99)<1",
        "--threshold",
        "tasks_not_passed:rate<0.5",
        "--junit",
        "report.xml",
        "--markdown",
        "report.md",
    ];
    let run = Loadhost::new()
        .env("GITHUB_STEP_SUMMARY", step_summary.path())
        .arg_run(&crate::common::fixture(Fixture::Metrics), &args)
        .run();
    assert_eq!(run.code, 99, "{}", run.stderr);
    let junit = parse_junit(&run.dir.path().join("report.xml"));
    // Two thresholds, two checks, the accounting and the verdict: 6 cases, 3 failed (a threshold,
    // the 50% check, the verdict that names the broken threshold).
    assert!(junit.contains("suite loadhost ") && junit.contains(" 6 3\n"), "{junit}");
    assert!(junit.contains("failed threshold size:p(99)<1 | size:p(99)<1 failed: measured 39"), "{junit}");
    assert!(junit.contains(", limit < 1"), "{junit}");
    assert!(
        junit.contains("failed check even | check 'even' passed 50.00% (20 of 40 failed), required 100.00%"),
        "{junit}"
    );
    assert!(!junit.contains("failed check known"), "the 100% check passes: {junit}");
    assert!(!junit.contains("failed threshold tasks_not_passed"), "{junit}");
    assert!(!junit.contains("failed every scheduled task accounted for"), "{junit}");
    // The target, or the generator where a busy machine saturated it first (its own verdict).
    assert!(
        junit.contains("failed verdict | limited by the target: size:p(99)<1 broke")
            || junit.contains("failed verdict | limited by the emitter: the generator was saturated"),
        "{junit}"
    );

    let markdown = run.file("report.md");
    for needle in [
        "### ❌ loadhost",
        "| ✗ | `size:p(99)<1` | 39 |",
        "| ✓ | `tasks_not_passed:rate<0.5` | 0 |",
        "| ✗ | even | 50.00% (20 failed) |",
        "**Tasks:** 40 scheduled · 40 passed",
    ] {
        assert!(markdown.contains(needle), "{needle} missing in\n{markdown}");
    }
    // The job summary got the same Markdown, and the run said so.
    assert_eq!(std::fs::read_to_string(step_summary.path()).unwrap().trim_end(), markdown.trim_end());
    assert!(run.stderr.contains("appended the Markdown summary to $GITHUB_STEP_SUMMARY"), "{}", run.stderr);

    // With a lower bar, the 50% check passes.
    let run = Loadhost::run_plugin(
        &crate::common::fixture(Fixture::Metrics),
        &["-n", "40", "--junit", "r.xml", "--check-rate", "40"],
    );
    let junit = parse_junit(&run.dir.path().join("r.xml"));
    assert!(!junit.contains("failed check even"), "{junit}");
}

#[test]
fn a_run_in_which_no_task_passed_fails_unless_allowed() {
    let target = TargetProcess::start(&[]);
    // No --allow-host: every request is denied, every task fails.
    let url = format!("TARGET_URL={}/", target.url);
    let run = Loadhost::run_plugin(&plugin(Example::HttpGet), &["-e", &url, "-n", "20"]);
    assert_eq!(run.code, 98, "{}", run.stderr);
    assert!(run.stderr.contains("no task passed (20 scheduled): exit 98"), "{}", run.stderr);
    assert_eq!(task_count(&run.summary(), "passed"), 0);
    assert_eq!(run.summary()["metrics"]["http_denied"]["count"], 20, "{}", run.summary()["metrics"]);
    let run = Loadhost::run_plugin(&plugin(Example::HttpGet), &["-e", &url, "-n", "20", "--allow-failures"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn thresholds_on_empty_aggregates_fail_with_no_samples() {
    for threshold in ["http_req_failed:rate<0.01", "checks:rate>0.99"] {
        let run = Loadhost::run_plugin(&plugin(Example::Noop), &["-n", "10", "--threshold", threshold]);
        assert_eq!(run.code, 99, "{threshold}: {}", run.stderr);
        let s = run.summary();
        assert_eq!(s["thresholds"][threshold]["value"], serde_json::Value::Null, "{threshold}: {}", s["thresholds"]);
        assert!(run.stdout.contains(&format!("✗ {threshold}  (no samples)")), "{}", run.stdout);
    }
}

#[test]
fn find_max_with_no_passing_step_fails_and_refuses_what_it_would_ignore() {
    let search = ["--start", "50", "--step-duration", "1s", "--max-steps", "2", "--slo", "latency_ms:max<0"];
    let run = Loadhost::new().args(["find-max", plugin(Example::Noop).to_str().unwrap()]).args(search).run();
    assert_eq!(run.code, 99, "not even the first step passed: {}", run.stdout);
    for flag in [["--html", "r.html"], ["--threshold", "latency_ms:p(99)<1"], ["--csv", "r.csv"]] {
        let run =
            Loadhost::new().args(["find-max", plugin(Example::Noop).to_str().unwrap()]).args(search).args(flag).run();
        assert_eq!(run.code, 2, "{flag:?}: {}", run.stderr);
        assert!(run.stderr.contains(&format!("find-max does not take {}", flag[0])), "{}", run.stderr);
    }
}

#[test]
fn merge_refuses_parts_of_different_runs_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let part = |segment: &str, run_id: &str, file: &str| {
        let path = dir.path().join(file);
        let args = ["-n", "20", "--segment", segment, "--run-id", run_id, "--results", path.to_str().unwrap()];
        let run = Loadhost::run_plugin(&plugin(Example::Noop), &args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        path
    };
    let fresh = part("0/2", "tuesday", "fresh.lhr");
    let stale = part("1/2", "monday", "stale.lhr");
    let run = Loadhost::new().args(["merge".as_ref(), fresh.as_os_str(), stale.as_os_str()]).run();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("stale.lhr is part of run 'monday' but")
            && run.stderr.contains("fresh.lhr of run 'tuesday'"),
        "{}",
        run.stderr
    );
    let same = part("1/2", "tuesday", "same.lhr");
    let run = Loadhost::new().args(["merge".as_ref(), fresh.as_os_str(), same.as_os_str()]).run();
    assert_eq!(run.code, 0, "one run's parts merge: {}", run.stderr);
}
