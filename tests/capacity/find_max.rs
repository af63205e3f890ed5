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
    assert_eq!(run.code, 0, "{}", run.stderr);
    let result = serde_json::from_str(&run.file("result.json")).unwrap();
    (run, result)
}

#[test]
fn a_gate_of_16_in_front_of_a_20_ms_target_is_named_as_the_limit() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/delay?ms=20", target.url);
    let args = ["-e", &url, "--allow-host", &target.authority, "--max-in-flight", "16"];
    let steps = ["--start", "100", "--factor", "2", "--step-duration", "2s", "--slo", "latency_ms:p(99)<200"];
    let (run, result) = search(&plugin("http-get"), &[&args[..], &steps[..]].concat());
    // 16 permits × 20 ms ≈ 800 tasks/s: 400/s passes, 800/s does not.
    assert_eq!(result["limit"], "gate", "{result:#}");
    let best = result["highest_passing_per_s"].as_f64().unwrap();
    assert!((200.0..=400.0).contains(&best), "{best}");
    assert!(run.stdout.contains("the limit is the gate"), "{}", run.stdout);
}

#[test]
fn a_plugin_that_burns_cpu_finds_the_host_as_the_limit() {
    let steps = ["--start", "400", "--factor", "4", "--step-duration", "2s", "--slo", "latency_ms:p(99)<500"];
    let (_, result) = search(&fixture("burn"), &steps);
    let limit = result["limit"].as_str().unwrap();
    assert!(limit == "emitter" || limit == "crew", "the host, not the (absent) target: {result:#}");
    assert!(result["highest_passing_per_s"].as_f64().unwrap() >= 400.0);
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
