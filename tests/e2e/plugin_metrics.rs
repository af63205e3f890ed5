//! Metrics a plugin records through the `loadhost:plugin/metrics` import, and declares in its file
//! (`loadhost:metrics`): thresholds on declared ones need no `--metric`, and a misspelt one is caught.

use serde_json::json;

use crate::common::{Example, Fixture, Loadhost, assert_ok, fixture, plugin};

#[test]
fn counters_gauges_trends_and_checks_are_aggregated_per_name_and_tags() {
    let run = Loadhost::run_plugin(&fixture(Fixture::Metrics), &["-n", "100", "-w", "1"]);
    assert_ok(&run);
    let s = run.summary();
    let m = &s["metrics"];
    assert_eq!(m["tasks"], json!({ "count": 100 }));
    assert_eq!(m["tasks{parity:even}"], json!({ "count": 50 }));
    assert_eq!(m["tasks{parity:odd}"], json!({ "count": 50 }));
    assert_eq!(m["last_iteration"], json!({ "value": 99.0 }), "one worker: the latest value is the last task's");
    assert_eq!(m["size"]["count"], json!(100));
    assert_eq!(m["size"]["min"], json!(0.0));
    assert_eq!(m["size"]["max"], json!(99.0));
    assert!((m["size"]["mean"].as_f64().unwrap() - 49.5).abs() < 1e-9);
    assert_eq!(m["even"], json!({ "rate": 0.5, "passes": 50, "fails": 50 }));
    assert_eq!(s["checks"]["even"], json!({ "passes": 50, "fails": 50 }));
    assert!(run.stdout.contains("✗ even: 50.00% (50 passed, 50 failed)"), "{}", run.stdout);
}

/// The Rust fixture that declares the metrics it records: `journey_ms:trend` (`10 * (i % 10)`)
/// and `orders{tier}:counter` (`bulk` when `i % 3 == 0`).
const DECLARING: Example = Example::Debugging;

#[test]
fn a_threshold_on_a_declared_metric_needs_no_metric_flag_and_is_judged() {
    // The metrics fixture declares size:trend, tasks{parity}:counter, even:check, … in its file.
    let run = Loadhost::run_plugin(
        &fixture(Fixture::Metrics),
        &[
            "-n",
            "100",
            "--threshold",
            "size:max<=99",
            "--threshold",
            "tasks{parity:even}:count==50",
            "--threshold",
            "even:rate>0.9",
        ],
    );
    assert_eq!(run.code, 99, "judged, and one fails: {}\n{}", run.stderr, run.stdout);
    let t = &run.summary()["thresholds"];
    assert_eq!(t["size:max<=99"], json!({ "value": 99.0, "ok": true, "abort_on_fail": false, "aborted_run": false }));
    assert_eq!(t["tasks{parity:even}:count==50"]["ok"], json!(true), "{t}");
    assert_eq!((t["even:rate>0.9"]["value"].as_f64(), &t["even:rate>0.9"]["ok"]), (Some(0.5), &json!(false)));
    // A flag that agrees is accepted; one that does not names both kinds, before any load.
    let agree = Loadhost::run_plugin(&fixture(Fixture::Metrics), &["-n", "5", "--metric", "size:trend"]);
    assert_ok(&agree);
    let disagree = Loadhost::run_plugin(&fixture(Fixture::Metrics), &["-n", "5", "--metric", "size:counter"]);
    assert_eq!(disagree.code, 2, "{}", disagree.stderr);
    assert_eq!(
        disagree.stderr.trim(),
        "error: --metric size:counter: the plugin declares size as a trend (leave the flag out: a declared metric needs none)"
    );
}

#[test]
fn a_misspelt_metric_exits_2_before_any_load_with_a_suggestion() {
    let cases = [
        (DECLARING, "jorney_ms:p(95)<300", "no metric named jorney_ms: did you mean journey_ms?"),
        (DECLARING, "Orders{tier:bulk}:count>0", "no metric named Orders: did you mean orders?"),
        (Example::Noop, "latncy_ms:p(99)<200", "no metric named latncy_ms: did you mean latency_ms?"),
    ];
    for (example, expr, says) in cases {
        let run = Loadhost::run_plugin(&plugin(example), &["-n", "5", "--threshold", expr]);
        assert_eq!(run.code, 2, "{expr}: {}", run.stderr);
        assert_eq!(run.stderr.trim(), format!("error: --threshold '{expr}': {says}"), "one line naming the flag");
        assert!(run.stdout.is_empty() && !run.dir.path().join("summary.json").exists(), "no load: {}", run.stdout);
    }
    // Nothing close: the names there are, the plugin's among them.
    let run = Loadhost::run_plugin(&plugin(DECLARING), &["-n", "5", "--threshold", "basket:count>0"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no metric named basket (built in: latency_ms,"), "{}", run.stderr);
    assert!(run.stderr.contains("; declared: journey_ms, orders;"), "{}", run.stderr);
}

#[test]
fn the_terminal_lists_tagged_series_as_the_json_keys_them() {
    let run = Loadhost::run_plugin(&plugin(DECLARING), &["-n", "30", "--plugin-output", "none"]);
    let m = &run.summary()["metrics"];
    assert_eq!(
        (&m["orders{tier:bulk}"], &m["orders{tier:retail}"]),
        (&json!({ "count": 10 }), &json!({ "count": 20 }))
    );
    let lines: Vec<&str> = run.stdout.lines().skip_while(|l| !l.starts_with("    orders ")).take(3).collect();
    assert_eq!(
        lines,
        ["    orders count=30", "      orders{tier:bulk} count=10", "      orders{tier:retail} count=20"],
        "{}",
        run.stdout
    );
}
