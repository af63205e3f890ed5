//! `loadhost find-max`: the capacity search names what limits the load.

use serde_json::Value;

use crate::cgroup::Cgroup;
use crate::common::{Example, Fixture, Loadhost, fixture, plugin};
use crate::target_process::TargetProcess;

fn search(plugin_path: &std::path::Path, args: &[&str]) -> (crate::common::Run, Value) {
    search_in(None, plugin_path, args)
}

/// A search, run inside `cgroup` when there is one.
fn search_in(cgroup: Option<&Cgroup>, plugin_path: &std::path::Path, args: &[&str]) -> (crate::common::Run, Value) {
    let _turn = crate::ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut cmd = Loadhost::new()
        .args(["find-max".as_ref(), plugin_path.as_os_str()])
        .args(args)
        .args(["--summary-json", "result.json"]);
    if let Some(cgroup) = cgroup {
        cmd = cmd.in_cgroup(&cgroup.procs());
    }
    let run = cmd.run();
    let result: Value = serde_json::from_str(&run.file("result.json")).unwrap();
    (run, result)
}

fn rate(step: &Value) -> f64 {
    step["rate_per_s"].as_f64().unwrap()
}

/// What a search reports follows from its steps, whatever the machine made of them (a busy one
/// fails sooner, even the first step): the climb multiplies from `start` by `factor` and stops at
/// its first failure; the bisection tries only rates between the highest passing and that
/// failure; the bounds, the limit (the failure nearest the capacity), the exit status (0 when a
/// step passed, 99 when none did, so a CI job never passes on a search that found nothing) and
/// the terminal's lines say the same.
#[track_caller]
fn assert_consistent(run: &crate::common::Run, result: &Value, start: f64, factor: f64) {
    let steps = result["steps"].as_array().unwrap();
    let climb: Vec<&Value> = steps.iter().filter(|s| s["phase"] == "climb").collect();
    for (k, step) in climb.iter().enumerate() {
        assert_eq!(rate(step), start * factor.powi(k as i32), "climb step {k}: {result:#}");
    }
    let (first_fail, passed) = climb.split_last().expect("at least one step was judged");
    assert!(!first_fail["limit"].is_null() && passed.iter().all(|step| step["limit"].is_null()), "{result:#}");
    let floor = passed.last().map(|s| rate(s));
    let bisected: Vec<f64> = steps.iter().filter(|s| s["phase"] == "bisect").map(rate).collect();
    assert!(bisected.iter().all(|r| floor.is_some_and(|f| f < *r) && *r < rate(first_fail)), "{result:#}");
    let best = steps.iter().filter(|s| s["limit"].is_null()).map(rate).reduce(f64::max);
    assert_eq!(result["highest_passing_per_s"].as_f64(), best, "{result:#}");
    let lowest = steps.iter().filter(|s| !s["limit"].is_null()).min_by(|a, b| rate(a).total_cmp(&rate(b))).unwrap();
    let fail = rate(lowest);
    assert_eq!(result["lowest_failing_per_s"].as_f64(), Some(fail), "{result:#}");
    assert_eq!(lowest["limit"], result["limit"], "the verdict is the failure nearest the capacity: {result:#}");
    let limit = result["limit"].as_str().unwrap();
    assert!(run.stdout.contains(&format!("the limit is the {limit}")), "{}", run.stdout);
    assert_eq!(run.code, if best.is_some() { 0 } else { 99 }, "{}\n{result:#}", run.stderr);
    if let Some(best) = best {
        let line = format!("highest passing rate: {best:.0}/s; lowest failing: {fail:.0}/s");
        assert!(run.stdout.contains(&line), "{}", run.stdout);
    }
}

#[test]
fn a_gate_of_16_in_front_of_a_20_ms_target_is_found_within_the_precision() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/delay?ms=20", target.url);
    let args = ["-e", &url, "--allow-host", &target.authority, "--max-in-flight", "16"];
    let steps = ["--start", "200", "--factor", "2", "--step-duration", "2s", "--slo", "latency_ms:p(99)<200"];
    let (run, result) = search(&plugin(Example::HttpGet), &[&args[..], &steps[..], &["--precision", "5%"]].concat());
    assert_consistent(&run, &result, 200.0, 2.0);
    // 16 permits × 20 ms: no step above 800/s can pass, however fast the machine (each task takes
    // a little more than 20 ms, so the true ceiling is a little lower still). Above it, due tasks
    // outnumber the gate's room, so such a step fails on the host's side: at the gate, or before
    // it where a busy machine fell behind (the emitter, the crew); never at the target, whose
    // 20 ms stay far inside the SLO.
    let steps = result["steps"].as_array().unwrap();
    for step in steps.iter().filter(|s| rate(s) > 800.0) {
        let limit =
            step["limit"].as_str().unwrap_or_else(|| panic!("{}/s passed a gate of 800/s: {result:#}", rate(step)));
        assert!(["gate", "emitter", "crew"].contains(&limit), "the host, never the target: {result:#}");
    }
    // The failure nearest the capacity is the gate's, or the host's where it fell behind first.
    let limit = result["limit"].as_str().unwrap();
    assert!(["gate", "emitter", "crew"].contains(&limit), "the gate or the host, never the target: {result:#}");
    // A search that found a passing rate closes in on the capacity: the bisection (at most 5
    // steps after the first failure at --factor 2, well within --max-steps) brings the bounds
    // within 5% of each other.
    if let Some(best) = result["highest_passing_per_s"].as_f64() {
        let fail = result["lowest_failing_per_s"].as_f64().unwrap();
        assert!(best < fail && fail - best <= 0.05 * best, "bounds within 5%: {result:#}");
        assert_eq!(result["precision_reached"], true, "{result:#}");
    }
}

#[test]
fn a_plugin_that_burns_cpu_finds_the_host_as_the_limit() {
    let steps = ["--start", "400", "--factor", "4", "--step-duration", "2s", "--slo", "latency_ms:p(99)<500"];
    let (run, result) = search(&fixture(Fixture::Burn), &[&steps[..], &["--precision", "25%"]].concat());
    assert_consistent(&run, &result, 400.0, 4.0);
    // No target: what fails the search is the host (how many steps pass depends on how busy the
    // machine is, not what limits it).
    let limit = result["limit"].as_str().unwrap();
    assert!(limit == "emitter" || limit == "crew", "the host, not the (absent) target: {result:#}");
}

#[test]
fn a_search_on_a_fifth_of_a_cpu_stops_where_the_generator_saturates_and_says_so() {
    let Some(cgroup) = Cgroup::cpu(0.2) else {
        eprintln!("skipped: no CPU cgroup can be made here (not root, or no cpu controller)");
        return;
    };
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/", target.url);
    let args = ["-e", &url, "--allow-host", &target.authority];
    let steps = ["--start", "400", "--factor", "4", "--step-duration", "2s", "--slo", "latency_ms:p(99)<500"];
    let (run, result) =
        search_in(Some(&cgroup), &plugin(Example::HttpGet), &[&args[..], &steps[..], &["--precision", "25%"]].concat());
    assert_consistent(&run, &result, 400.0, 4.0);
    // The target answers in well under a millisecond and is not in the cgroup: what gives out is
    // the generator, held to 20 ms of CPU in every 100 ms (measured: from 2,800–6,400/s), and the
    // verdict says so in the generator's own words — as the limit itself (saturated in a tenth of
    // the step or more), or beside the pacer's late releases it explains (throttled: degraded).
    assert_eq!(result["limit"], "emitter", "{result:#}");
    let why = result["why"].as_str().unwrap_or_default();
    assert!(
        why.contains("the generator was saturated from ") || why.contains("the generator was degraded from "),
        "{result:#}"
    );
    eprintln!("a fifth of a CPU: {why}");
    assert!(run.stdout.contains(&format!("the limit is the emitter: {why}")), "{}", run.stdout);
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
