//! The one-call HTTP path's request options (`send-opts`, used by the Rust SDK by default) against
//! the built-in target: redirects, the worker's cookie jar, decoded bodies and the body cap on a
//! gzip bomb. The fixture is `tests/plugins/http-features`.

use serde_json::Value;

use crate::common::{
    Example, Fixture, Loadhost, Run, assert_identity, assert_none_passed, assert_ok, fixture, task_count,
};
use crate::target_process::TargetProcess;

/// `metrics.NAME.count`, 0 when the metric never got a sample.
fn count(run: &Run, name: &str) -> u64 {
    run.summary()["metrics"][name]["count"].as_u64().unwrap_or(0)
}

fn check(run: &Run, name: &str) -> (u64, u64) {
    let c = &run.summary()["checks"][name];
    (c["passes"].as_u64().unwrap_or(0), c["fails"].as_u64().unwrap_or(0))
}

/// Every error message of the run, joined.
fn errors(run: &Run) -> String {
    let s = run.summary();
    let list = s["errors"].as_array().cloned().unwrap_or_default();
    list.iter().map(|e| format!("{} | {}", e["message"], e["example"])).collect::<Vec<_>>().join("\n")
}

fn run(target: &TargetProcess, env: &[&str], args: &[&str]) -> Run {
    let mut all = vec!["--allow-host", target.authority.as_str()];
    for pair in env {
        all.extend(["-e", pair]);
    }
    all.extend(args);
    Loadhost::run_plugin(&fixture(Fixture::HttpFeatures), &all)
}

#[test]
fn a_chain_of_three_redirects_is_followed() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/redirect?n=3&to=/bytes%3Fn%3D7", target.url);
    let expect = format!("EXPECT_FINAL={}/bytes?n=7", target.url);
    let limits =
        ["--threshold", "http_reqs{redirect:true}:count==15", "--threshold", "http_reqs{redirect:false}:count==5"];
    let run = run(&target, &[&url, &expect], &[&["-n", "5", "-w", "1"][..], &limits].concat());
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "passed"), 5, "{}", run.stderr);
    assert_eq!(count(&run, "http_reqs"), 20, "4 requests a task: 3 redirects and the last");
    assert_eq!(count(&run, "http_reqs{redirect:true}"), 15, "each hop is tagged a redirect");
    assert_eq!(count(&run, "http_reqs{status:302}"), 15);
    assert_eq!(count(&run, "http_reqs{status:200}"), 5);
    assert_eq!(check(&run, "final url as expected"), (5, 0));
    assert_eq!(count(&run, "redirects_followed"), 15);
    assert_eq!(count(&run, "http_response_bytes"), 5 * 7, "redirects have empty bodies");
    assert_identity(&s);
}

#[test]
fn a_303_and_a_posts_302_become_a_get_while_307_and_308_keep_the_body() {
    let target = TargetProcess::start(&[]);
    for (code, kept) in [(301, 0), (302, 0), (303, 0), (307, 2), (308, 2)] {
        let url = format!("TARGET_URL={}/redirect?n=2&code={code}&to=/echo", target.url);
        let run = run(&target, &[&url, "MODE=post"], &["-n", "2", "-w", "1"]);
        assert_ok(&run);
        assert_eq!(check(&run, "body kept"), (kept, 2 - kept), "{code}: {}", run.stderr);
        assert_eq!(count(&run, &format!("http_reqs{{status:{code}}}")), 4, "{code}");
    }
}

#[test]
fn eleven_hops_fail_at_the_default_limit_and_redirects_raise_it() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/redirect?n=11", target.url);
    let run_default = run(&target, &[&url], &["-n", "2", "-w", "1"]);
    assert_none_passed(&run_default);
    assert_eq!(task_count(&run_default.summary(), "failed"), 2);
    assert_eq!(count(&run_default, "http_reqs"), 22, "each hop is a request: the first and 10 redirects");
    let why = errors(&run_default);
    assert!(why.contains("stopped after 10 redirects (the limit; set redirects to raise it)"), "{why}");

    let raised = run(&target, &[&url, "REDIRECTS=11"], &["-n", "2", "-w", "1"]);
    assert_ok(&raised);
    assert_eq!(count(&raised, "http_reqs"), 24);

    // 0 turns following off: the 302 itself comes back.
    let off = run(&target, &[&url, "REDIRECTS=0"], &["-n", "2", "-w", "1"]);
    assert_eq!(count(&off, "http_reqs{status:302}"), 2, "{}", off.stderr);
    assert_eq!(check(&off, "status is 200"), (0, 2));
}

#[test]
fn a_redirect_to_a_host_not_allowed_is_denied_without_a_connection() {
    let allowed = TargetProcess::start(&[]);
    let other = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/redirect?n=2&to={}/", allowed.url, other.url);
    let run = run(&allowed, &[&url], &["-n", "3", "-w", "1"]);
    assert_none_passed(&run);
    assert_eq!(task_count(&run.summary(), "failed"), 3);
    assert_eq!(count(&run, "http_denied"), 3);
    assert_eq!(count(&run, "http_reqs"), 6, "the two allowed hops of each task");
    let why = errors(&run);
    assert!(why.contains("denied") && why.contains(&other.authority), "names the host: {why}");
    assert!(run.stderr.contains(&format!("--allow-host {}", other.authority)), "{}", run.stderr);
    let stats = other.stats();
    assert_eq!((stats["requests"].as_u64(), stats["connections"].as_u64()), (Some(1), Some(1)), "only our /stats");
}

#[test]
fn a_cookie_stays_with_its_worker() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}", target.url);
    let run_jar = run(&target, &[&url, "MODE=cookies"], &["-n", "40", "-w", "2"]);
    assert_ok(&run_jar);
    assert_eq!(task_count(&run_jar.summary(), "passed"), 40, "{}", run_jar.stderr);
    assert_eq!(count(&run_jar, "cookie_foreign"), 0, "no worker sent another's cookie");
    let none = count(&run_jar, "cookie_none");
    assert!((1..=2).contains(&none), "only each worker's first task went without: {none}");
    assert_eq!(count(&run_jar, "cookie_own") + none, 40);
    assert_eq!(check(&run_jar, "jar has own cookie"), (40, 0));

    let off = run(&target, &[&url, "MODE=cookies"], &["-n", "10", "-w", "2", "--no-cookies"]);
    assert_ok(&off);
    assert_eq!(count(&off, "cookie_none"), 10, "--no-cookies: no jar, nothing sent");
    assert_eq!(check(&off, "jar has own cookie"), (0, 10));
}

#[test]
fn a_replaced_instance_starts_with_an_empty_jar() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}", target.url);
    let run = run(&target, &[&url, "MODE=cookies", "TRAP_AT=5"], &["-n", "10", "-w", "1"]);
    assert_ok(&run);
    assert_eq!(task_count(&run.summary(), "trapped"), 1, "{}", run.stderr);
    // Task 0 and the replacement's first task (6) sent nothing; the others their own cookie.
    assert_eq!((count(&run, "cookie_none"), count(&run, "cookie_own")), (2, 8));
    assert_eq!(count(&run, "cookie_foreign"), 0);
}

#[test]
fn a_gzip_body_arrives_decoded_and_both_byte_counts_are_right() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/gzip?bytes=100000", target.url);
    let run = run(&target, &[&url, "MODE=gzip"], &["-n", "10", "-w", "1"]);
    assert_ok(&run);
    assert_eq!(check(&run, "decoded"), (10, 0), "{}", run.stderr);
    assert_eq!(check(&run, "no content-encoding"), (10, 0));
    assert_eq!(count(&run, "http_response_bytes"), 10 * 100_000, "body bytes are decoded bytes");
    let wire = count(&run, "data_received");
    // The text compresses about 100:1: the wire saw a small fraction of what the plugin got.
    assert!((10 * 200..10 * 20_000).contains(&wire), "data_received stays wire bytes: {wire}");
}

/// The peak resident memory of the run, from the summary.
fn peak_rss_mb(summary: &Value) -> f64 {
    summary["host"]["peak_rss_mb"].as_f64().unwrap_or_else(|| panic!("host.peak_rss_mb in {}", summary["host"]))
}

#[test]
fn a_gzip_bomb_fails_at_the_body_cap_in_bounded_memory() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/gzip-bomb?mb=1024", target.url);
    let run = run(&target, &[&url], &["-n", "2", "-w", "1"]);
    assert_none_passed(&run);
    let why = errors(&run);
    assert!(why.contains("body too large") && why.contains("--max-response-body"), "{why}");
    let peak = peak_rss_mb(&run.summary());
    eprintln!("peak RSS with a 1 GiB gzip bomb: {peak} MiB");
    assert!(peak < 256.0, "peak RSS {peak} MiB");
    assert!(count(&run, "data_received") < 16 << 20, "the host stopped reading at the cap");
}

/// The Python and JavaScript SDKs send through `send-opts` with the Rust SDK's defaults: a 3-hop
/// redirect is followed to a gzip body that arrives decoded, and the response says where it came
/// from. The fixtures are `plugins/http-features-python` and `plugins/http-features-js`.
#[test]
fn python_and_js_plugins_follow_redirects_and_get_gzip_bodies_decoded() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/redirect?n=3&to=/gzip%3Fbytes%3D5000", target.url);
    let expect = format!("EXPECT_FINAL={}/gzip?bytes=5000", target.url);
    for example in [Example::HttpFeaturesPython, Example::HttpFeaturesJs] {
        let name = example.name();
        let plugin = crate::common::plugin(example);
        let args = ["--allow-host", target.authority.as_str(), "-e", &url, "-e", &expect, "-e", "EXPECT_REDIRECTS=3"];
        let run = Loadhost::run_plugin(&plugin, &[&args[..], &["-n", "3", "-w", "1"]].concat());
        assert_ok(&run);
        assert_eq!(task_count(&run.summary(), "passed"), 3, "{name}: {}", run.stderr);
        for name_of_check in ["status is 200", "redirects as expected", "final url as expected", "decoded"] {
            assert_eq!(check(&run, name_of_check), (3, 0), "{name}: {name_of_check}\n{}", errors(&run));
        }
        assert_eq!(count(&run, "http_reqs"), 12, "{name}: 4 requests a task: 3 redirects and the last");
        assert_eq!(count(&run, "http_reqs{status:302}"), 9, "{name}");
        assert_eq!(count(&run, "http_response_bytes"), 3 * 5000, "{name}: body bytes are decoded bytes");
    }
}
