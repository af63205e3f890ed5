//! Per-endpoint HTTP metrics on a real run: a journey that hits a fast and a slow path of the
//! built-in target shows two `name` series with their own percentiles, and thresholds on
//! `http_req_duration{name:…}` judge one of them, at the end of the run and while it goes.

use serde_json::Value;

use crate::common::{Fixture, Loadhost, Run, assert_identity, fixture};
use crate::target_process::TargetProcess;

/// The default names of the `endpoints` fixture's two requests.
const FAST: &str = "GET /";
const SLOW: &str = "GET /delay";

/// The journey at 40 tasks a second for `duration`, against `target`.
fn run_journey(target: &TargetProcess, duration: &str, extra: &[&str]) -> Run {
    let url = format!("TARGET_URL={}", target.url);
    let args = ["-e", &url, "--allow-host", &target.authority, "-r", "40", "-d", duration, "--overload", "queue"];
    Loadhost::run_plugin(&fixture(Fixture::Endpoints), &[&args[..], extra].concat())
}

fn metric<'a>(s: &'a Value, metric: &str, name: &str) -> &'a Value {
    let key = format!("{metric}{{name:{name}}}");
    let value = &s["metrics"][&key];
    assert!(!value.is_null(), "metrics.{key} in {}", s["metrics"]);
    value
}

#[test]
fn two_endpoints_have_their_own_percentiles_and_a_threshold_judges_one() {
    let target = TargetProcess::start(&[]);
    let run = run_journey(
        &target,
        "2s",
        &[
            "--threshold",
            &format!("http_req_duration{{name:{FAST}}}:p(50)<10"),
            "--threshold",
            &format!("http_req_duration{{name:{SLOW}}}:p(50)<10"),
            "--threshold",
            "http_reqs{method:GET}:count>=160",
        ],
    );
    assert_eq!(run.code, 99, "the slow endpoint's threshold fails\n{}\n{}", run.stderr, run.stdout);
    let s = run.summary();
    assert_identity(&s);
    let tasks = s["tasks"]["passed"].as_u64().unwrap();
    assert_eq!(tasks, 80, "{}", run.stderr);
    for name in [FAST, SLOW] {
        assert_eq!(metric(&s, "http_reqs", name)["count"], tasks, "{name}: one request per task");
        assert_eq!(metric(&s, "http_req_failed", name)["passes"], 0, "{name}: none failed");
        assert_eq!(metric(&s, "http_req_duration", name)["count"], tasks);
    }
    let p50 = |name: &str| metric(&s, "http_req_duration", name)["p50"].as_f64().unwrap();
    assert!(p50(SLOW) >= 20.0, "/delay?ms=20 takes 20 ms or more: {}", p50(SLOW));
    assert!(p50(FAST) < 5.0, "/ answers at once: {}", p50(FAST));
    assert_eq!(s["metrics"]["http_reqs"]["count"], 2 * tasks, "the totals still blend both");

    let verdicts: Vec<(&str, bool)> = s["thresholds"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(expr, t)| (expr.as_str(), t["ok"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        verdicts.iter().filter(|(_, ok)| !ok).map(|(e, _)| *e).collect::<Vec<_>>(),
        [format!("http_req_duration{{name:{SLOW}}}:p(50)<10")],
        "only the slow endpoint's threshold fails: {}",
        s["thresholds"]
    );
    // The terminal's endpoint table: the slow endpoint's row says its own percentiles.
    let row = run.stdout.lines().find(|l| l.trim_start().starts_with(SLOW)).unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(row.split_whitespace().any(|cell| cell == tasks.to_string()), "{row}");
}

#[test]
fn a_live_threshold_on_one_endpoint_stops_the_run() {
    let target = TargetProcess::start(&[]);
    let expr = format!("http_req_duration{{name:{SLOW}}}:p(50)<5");
    let run = run_journey(&target, "30s", &["--threshold", &format!("{expr};abort_on_fail;delay=1s")]);
    assert_eq!(run.code, 99, "{}\n{}", run.stderr, run.stdout);
    let s = run.summary();
    let seconds = s["duration_s"].as_f64().unwrap();
    assert!((1.0..10.0).contains(&seconds), "stopped after the delay, well before 30 s: {seconds}");
    assert_eq!(s["thresholds"][&expr]["aborted_run"], Value::Bool(true), "{}", s["thresholds"]);
    let stopped = s["stopped"].as_str().unwrap_or_default();
    assert!(stopped.contains(&format!("threshold '{expr}' failed (abort_on_fail)")), "{stopped}");
}

#[test]
fn an_unknown_tag_on_an_http_metric_is_refused_before_any_load() {
    let target = TargetProcess::start(&[]);
    let run = run_journey(&target, "2s", &["--threshold", "http_req_duration{path:/delay}:p(95)<10"]);
    assert_eq!(run.code, 2, "{}\n{}", run.stderr, run.stdout);
    assert!(run.stderr.contains("name:ENDPOINT and method:METHOD"), "{}", run.stderr);
    assert_eq!(target.stats()["requests"].as_u64(), Some(1), "only the test's own /stats reached the target");
}

#[test]
fn compare_reads_one_endpoint_from_a_summary_json_as_from_the_results_file() {
    let target = TargetProcess::start(&[]);
    let run = run_journey(&target, "1s", &["--results", "run.lhr"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let dir = run.dir.path();
    let rule = format!("http_req_duration{{name:{SLOW}}}:p(50)>+20%");
    let report = dir.join("self.json");
    let same = Loadhost::new()
        .args(["compare".as_ref(), dir.join("run.lhr").as_os_str(), dir.join("summary.json").as_os_str()])
        .args(["--fail-on", rule.as_str(), "--json", report.to_str().unwrap()])
        .run();
    assert_eq!(same.code, 0, "{}\n{}", same.stdout, same.stderr);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let row = &report["rules"][0];
    assert_eq!(row["rule"], rule.as_str(), "{report}");
    // The same run read two ways: the endpoint's own p(50) (≥ 20 ms), not the blend of both paths.
    assert!(row["base"].as_f64().unwrap() >= 20.0, "{row}");
    assert_eq!(row["delta"].as_f64(), Some(0.0), "{row}");
}
