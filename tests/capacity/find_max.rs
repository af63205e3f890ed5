//! `loadhost find-max`: the capacity search names what limits the load.

use serde_json::Value;

use crate::common::{Loadhost, fixture, plugin};
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
fn a_gate_of_16_in_front_of_a_20_ms_target_is_named_as_the_limit() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/delay?ms=20", target.url);
    let args = ["-e", &url, "--allow-host", &target.authority, "--max-in-flight", "16"];
    let steps = ["--start", "100", "--factor", "2", "--step-duration", "2s", "--slo", "latency_ms:p(99)<200"];
    let (run, result) = search(&plugin("http-get"), &[&args[..], &steps[..]].concat());
    // 16 permits × 20 ms ≈ 800 tasks/s: 400/s passes, 800/s does not, and the gate says so. A busy
    // machine may fall behind first, which the search must then name as the emitter; either way
    // the host is the limit, never the target, whose 20 ms stay far inside the SLO.
    let limit = result["limit"].as_str().unwrap_or_default();
    assert!(limit == "gate" || limit == "emitter", "the gate or the host, never the target: {result:#}");
    assert!(run.stdout.contains(&format!("the limit is the {limit}")), "{}", run.stdout);
    // A step at or past the gate's capacity never passes.
    if let Some(best) = result["highest_passing_per_s"].as_f64() {
        assert!(best <= 400.0, "{best}/s passed through a gate of about 800/s: {result:#}");
    }
    if limit == "gate" {
        // Named from the gate's own measurements, and only once the steps reached it.
        let best = result["highest_passing_per_s"].as_f64().unwrap_or_default();
        assert!((200.0..=400.0).contains(&best), "{result:#}");
    }
}

#[test]
fn a_plugin_that_burns_cpu_finds_the_host_as_the_limit() {
    let steps = ["--start", "400", "--factor", "4", "--step-duration", "2s", "--slo", "latency_ms:p(99)<500"];
    let (_, result) = search(&fixture("burn"), &steps);
    let limit = result["limit"].as_str().unwrap();
    assert!(limit == "emitter" || limit == "crew", "the host, not the (absent) target: {result:#}");
    // The search stops at its first failing step, and the steps before it passed: how many pass
    // depends on how busy the machine is (a busy one may fail the first), the order does not.
    let steps = result["steps"].as_array().unwrap();
    let (last, passed) = steps.split_last().expect("at least one step was judged");
    assert_eq!(last["limit"], result["limit"], "{result:#}");
    assert!(passed.iter().all(|step| step["limit"].is_null()), "{result:#}");
    let best = passed.last().map(|step| step["rate_per_s"].as_f64().unwrap());
    assert_eq!(result["highest_passing_per_s"].as_f64(), best, "{result:#}");
}

#[test]
fn find_max_sets_the_rate_itself() {
    let run = Loadhost::new()
        .args(["find-max".as_ref(), plugin("noop").as_os_str()])
        .args(["--slo", "latency_ms:p(99)<5", "-r", "10"])
        .run();
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("find-max sets the rate and duration itself"), "{}", run.stderr);
    let run = Loadhost::new()
        .args(["find-max".as_ref(), plugin("noop").as_os_str()])
        .args(["--slo", "latency_ms:p99<5"])
        .run();
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("unknown aggregate 'p99'"), "{}", run.stderr);
}
