//! `loadhost find-max`: the capacity search names what limits the load.

use serde_json::Value;

use crate::common::{Example, Fixture, Loadhost, fixture, plugin};
use crate::target_process::TargetProcess;

fn search(plugin_path: &std::path::Path, args: &[&str]) -> (crate::common::Run, Value) {
    let _turn = crate::ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let cmd = Loadhost::new()
        .args(["find-max".as_ref(), plugin_path.as_os_str()])
        .args(args)
        .args(["--summary-json", "result.json"]);
    let run = cmd.run();
    let result: Value = serde_json::from_str(&run.file("result.json")).unwrap();
    // 0 when a step passed; 99 when not even the first did (a busy machine can fail it), so a
    // CI job never passes on a search that found nothing.
    let expected = if result["highest_passing_per_s"].is_null() { 99 } else { 0 };
    assert_eq!(run.code, expected, "{}\n{result:#}", run.stderr);
    (run, result)
}

#[test]
fn a_gate_of_16_in_front_of_a_20_ms_target_is_found_within_the_precision() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/delay?ms=20", target.url);
    let args = ["-e", &url, "--allow-host", &target.authority, "--max-in-flight", "16"];
    let steps = ["--start", "200", "--factor", "2", "--step-duration", "2s", "--slo", "latency_ms:p(99)<200"];
    let (run, result) = search(&plugin(Example::HttpGet), &[&args[..], &steps[..], &["--precision", "5%"]].concat());
    // 16 permits × 20 ms ≈ 800 tasks/s (a little less: each task takes a little more than 20 ms).
    // A busy machine may fall behind first, which the search must then name as the emitter;
    // either way the host is the limit, never the target, whose 20 ms stay far inside the SLO.
    let limit = result["limit"].as_str().unwrap_or_default();
    assert!(limit == "gate" || limit == "emitter", "the gate or the host, never the target: {result:#}");
    assert!(run.stdout.contains(&format!("the limit is the {limit}")), "{}", run.stdout);
    let fail = result["lowest_failing_per_s"].as_f64().expect("a step failed");
    if let Some(best) = result["highest_passing_per_s"].as_f64() {
        let line = format!("highest passing rate: {best:.0}/s; lowest failing: {fail:.0}/s");
        assert!(run.stdout.contains(&line), "{}", run.stdout);
        // After the climb's first failure the bisection closes in until the bounds are within 5%.
        assert!(best < fail && fail - best <= 0.05 * best, "bounds within 5%: {result:#}");
        assert_eq!(result["precision_reached"], true, "{result:#}");
        assert!(best <= 800.0, "{best}/s passed through a gate of at most 800/s: {result:#}");
    }
    if limit == "gate" {
        // The climb passes 400/s and fails 800/s; the old search reported 400/s here. The ceiling
        // is a little under 800/s (each task takes a little more than 20 ms): allow a busy machine
        // 25% below it.
        let best = result["highest_passing_per_s"].as_f64().unwrap_or_default();
        assert!(best > 600.0, "the gate's ceiling is near 800/s: {result:#}");
        let steps = result["steps"].as_array().unwrap();
        assert!(steps.iter().any(|s| s["phase"] == "bisect"), "{result:#}");
    }
}

#[test]
fn a_plugin_that_burns_cpu_finds_the_host_as_the_limit() {
    let steps = ["--start", "400", "--factor", "4", "--step-duration", "2s", "--slo", "latency_ms:p(99)<500"];
    let (_, result) = search(&fixture(Fixture::Burn), &[&steps[..], &["--precision", "25%"]].concat());
    let limit = result["limit"].as_str().unwrap();
    assert!(limit == "emitter" || limit == "crew", "the host, not the (absent) target: {result:#}");
    // The climb stops at its first failing step, and the steps before it passed; the bisection
    // then tries only rates between the two. How many pass depends on how busy the machine is (a
    // busy one may fail the first), the order does not.
    let steps = result["steps"].as_array().unwrap();
    let climb: Vec<&Value> = steps.iter().filter(|s| s["phase"] == "climb").collect();
    let (first_fail, passed) = climb.split_last().expect("at least one step was judged");
    assert!(!first_fail["limit"].is_null() && passed.iter().all(|step| step["limit"].is_null()), "{result:#}");
    let rate = |step: &Value| step["rate_per_s"].as_f64().unwrap();
    let floor = passed.last().map(|s| rate(s));
    let bisected: Vec<f64> = steps.iter().filter(|s| s["phase"] == "bisect").map(rate).collect();
    assert!(bisected.iter().all(|r| floor.is_some_and(|f| f < *r) && *r < rate(first_fail)), "{result:#}");
    let best = steps.iter().filter(|s| s["limit"].is_null()).map(rate).reduce(f64::max);
    assert_eq!(result["highest_passing_per_s"].as_f64(), best, "{result:#}");
    let lowest = steps.iter().filter(|s| !s["limit"].is_null()).min_by(|a, b| rate(a).total_cmp(&rate(b))).unwrap();
    assert_eq!(result["lowest_failing_per_s"].as_f64(), Some(rate(lowest)), "{result:#}");
    assert_eq!(lowest["limit"], result["limit"], "the verdict is the failure nearest the capacity: {result:#}");
}

#[test]
fn find_max_sets_the_rate_itself() {
    let run = Loadhost::new()
        .args(["find-max".as_ref(), plugin(Example::Noop).as_os_str()])
        .args(["--slo", "latency_ms:p(99)<5", "-r", "10"])
        .run();
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("find-max sets the rate and duration itself"), "{}", run.stderr);
    let run = Loadhost::new()
        .args(["find-max".as_ref(), plugin(Example::Noop).as_os_str()])
        .args(["--slo", "latency_ms:p99<5"])
        .run();
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("unknown aggregate 'p99'"), "{}", run.stderr);
}
