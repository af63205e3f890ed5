//! Thresholds on a real run: pass and fail, tag filters, exit 99 marked in every output, and
//! `abort_on_fail` stopping a run early.

use serde_json::Value;

use crate::common::{Example, Fixture, Loadhost, assert_identity, fixture, plugin};

fn footer(csv: &str) -> Value {
    let line = csv.lines().last().and_then(|l| l.strip_prefix("# end ")).expect("a CSV footer");
    serde_json::from_str(line).expect("the footer is JSON")
}

#[test]
fn a_failed_threshold_exits_99_and_every_output_marks_it() {
    // The metrics fixture: `even` passes on even iterations (rate 0.5), `tasks` counts 1 per task
    // tagged by parity, `size` is the iteration (0..199).
    let run = Loadhost::run_plugin(
        &fixture(Fixture::Metrics),
        &[
            "-n",
            "200",
            "-w",
            "2",
            "--metric",
            "size:trend",
            "--metric",
            "tasks:counter",
            "--metric",
            "even:rate",
            "--threshold",
            "checks:rate>0.4",
            "--threshold",
            "even:rate>0.9",
            "--threshold",
            "size:max<=199",
            "--threshold",
            "tasks{parity:even}:count==100",
            "--threshold",
            "latency_ms:p(99)<10000",
            "--csv",
            "rows.csv",
            "--out",
            "json=run.jsonl",
        ],
    );
    assert_eq!(run.code, 99, "one threshold fails: {}\n{}", run.stderr, run.stdout);
    let s = run.summary();
    assert_identity(&s);
    let t = &s["thresholds"];
    let ok = |expr: &str| t[expr]["ok"].as_bool().unwrap_or_else(|| panic!("{expr} missing in {t}"));
    assert!(ok("checks:rate>0.4"));
    assert!(!ok("even:rate>0.9"));
    assert_eq!(t["even:rate>0.9"]["value"].as_f64(), Some(0.5));
    assert!(ok("size:max<=199"));
    assert!(ok("tasks{parity:even}:count==100"), "the tag filter picks one series: {t}");
    assert!(ok("latency_ms:p(99)<10000"));
    assert!(run.stdout.contains("✗ even:rate>0.9  (0.5)"), "{}", run.stdout);
    assert!(run.stdout.contains("✓ checks:rate>0.4"), "{}", run.stdout);
    assert!(run.stdout.contains("1 of 5 thresholds failed (exit 99)"), "{}", run.stdout);
    let foot = footer(&run.file("rows.csv"));
    assert_eq!(foot["thresholds_ok"], Value::Bool(false), "{foot}");
    assert_eq!(foot["thresholds"]["even:rate>0.9"]["ok"], Value::Bool(false));
    let jsonl = run.file("run.jsonl");
    let last: Value = serde_json::from_str(jsonl.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "summary");
    assert_eq!(last["thresholds"], s["thresholds"]);
}

#[test]
fn passing_thresholds_exit_0() {
    let run = Loadhost::run_plugin(
        &plugin(Example::Noop),
        &["-n", "500", "-w", "2", "--threshold", "tasks_failed:rate==0", "--threshold", "service_ms:max<5000"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("all 2 thresholds passed"), "{}", run.stdout);
}

#[test]
fn a_declared_metric_the_plugin_never_records_fails_instead_of_passing() {
    let run = Loadhost::run_plugin(
        &plugin(Example::Noop),
        &["-n", "50", "--metric", "login_ms:trend", "--threshold", "login_ms:p(95)<100"],
    );
    assert_eq!(run.code, 99, "{}", run.stderr);
    let t = &run.summary()["thresholds"]["login_ms:p(95)<100"];
    assert_eq!(t["ok"], Value::Bool(false));
    assert_eq!(t["value"], Value::Null);
    assert!(run.stdout.contains("✗ login_ms:p(95)<100  (no samples)"), "{}", run.stdout);
}

#[test]
fn abort_on_fail_stops_the_run_once_the_delay_is_over() {
    // Every task sleeps 20 ms, so a 5 ms median fails from the first interval; the delay holds the
    // abort until 1 s has passed, then the run stops long before its 30 s.
    let run = Loadhost::run_plugin(
        &plugin(Example::Sleep),
        &["-e", "SLEEP_MS=20", "-r", "50", "-d", "30s", "--threshold", "latency_ms:p(50)<5;abort_on_fail;delay=1s"],
    );
    assert_eq!(run.code, 99, "{}\n{}", run.stderr, run.stdout);
    let s = run.summary();
    assert_identity(&s);
    let seconds = s["duration_s"].as_f64().unwrap();
    assert!((1.0..10.0).contains(&seconds), "stopped after the delay, well before 30 s: {seconds}");
    let t = &s["thresholds"]["latency_ms:p(50)<5"];
    assert_eq!(t["aborted_run"], Value::Bool(true), "{t}");
    assert_eq!(t["ok"], Value::Bool(false));
    let stopped = s["stopped"].as_str().unwrap_or_default();
    assert!(stopped.contains("threshold 'latency_ms:p(50)<5' failed (abort_on_fail)"), "{stopped}");
    assert!(run.stdout.contains("stopped the run: abort_on_fail"), "{}", run.stdout);
}
