//! `loadhost http URL`: a load test with the plugin the binary carries, against the built-in
//! target; the same report, outputs and exit codes as `run`.

use crate::common::{Loadhost, Run, assert_identity, assert_none_passed, assert_ok, task_count};
use crate::target_process::TargetProcess;

fn metric(run: &Run, name: &str, field: &str) -> u64 {
    run.summary()["metrics"][name][field]
        .as_u64()
        .unwrap_or_else(|| panic!("metrics.{name}.{field} in {}", run.summary()["metrics"]))
}

/// `loadhost http ARGS… --summary-json summary.json`, with `files` written into its folder first.
fn http(args: &[&str], files: &[(&str, &[u8])]) -> Run {
    let cmd = Loadhost::new();
    for (name, bytes) in files {
        std::fs::write(cmd.path().join(name), bytes).unwrap();
    }
    cmd.args(["http"]).args(args).args(["--summary-json", "summary.json"]).run()
}

#[test]
fn a_url_alone_is_a_load_test_reported_like_run() {
    let target = TargetProcess::start(&[]);
    let url = format!("{}/", target.url);
    // Queue rather than drop: on a busy machine a burst may find every worker busy, and this test
    // is about the command, not the overload policy.
    let run = http(&[&url, "-r", "500", "-d", "3s", "--overload", "queue"], &[]);
    assert_ok(&run);
    let s = run.summary();
    assert_eq!((task_count(&s, "scheduled"), task_count(&s, "passed")), (1500, 1500), "{}", run.stderr);
    assert_eq!(metric(&run, "http_reqs", "count"), 1500);
    assert_eq!(s["metrics"]["http_status"]["200"], 1500);
    assert_eq!(s["plugin"]["path"], "loadhost http (built-in)", "outputs name the built-in plugin");
    assert!(run.stdout.contains("loadhost http (built-in)") && run.stdout.contains("http_reqs"), "{}", run.stdout);
    assert!(run.stderr.contains(&format!("allowed {}", target.authority)), "the grant is said: {}", run.stderr);
    assert_eq!(target.stats()["requests"].as_u64(), Some(1501), "every request reached the target (+1 for /stats)");
    assert_identity(&s);
}

#[test]
fn a_post_with_a_body_file_passes_on_the_expected_status() {
    let target = TargetProcess::start(&[]);
    let body: &[u8] = br#"{"order":7,"items":["a","b"]}"#;
    let created = format!("{}/status?code=201", target.url);
    let run = http(
        &[&created, "--method", "POST", "--body-file", "order.json", "--expect-status", "201", "-n", "20"],
        &[("order.json", body)],
    );
    assert_ok(&run);
    assert_eq!(task_count(&run.summary(), "passed"), 20, "{}", run.stderr);
    assert_eq!(run.summary()["metrics"]["http_status"]["201"], 20);
    // /echo answers with the body it got: the response bytes show the file was sent whole.
    let echo = format!("{}/echo", target.url);
    let run = http(&[&echo, "-X", "post", "--body-file", "order.json", "-n", "20"], &[("order.json", body)]);
    assert_ok(&run);
    assert_eq!(metric(&run, "http_response_bytes", "count"), 20 * body.len() as u64, "{}", run.stderr);
}

#[test]
fn an_unexpected_status_fails_every_task_and_names_the_status() {
    let target = TargetProcess::start(&[]);
    let url = format!("{}/", target.url);
    let run = http(&[&url, "--expect-status", "201", "-r", "50", "-d", "1s"], &[]);
    assert_none_passed(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "failed"), task_count(&s, "scheduled"), "{}", s["tasks"]);
    assert!(run.stdout.contains(&format!("GET {url} answered 200 (expected 201)")), "{}", run.stdout);
}

#[test]
fn a_targets_file_in_either_format_drives_each_target_in_turn() {
    let body: &[u8] = b"hello, target";
    for format in ["jsonl", "txt"] {
        let target = TargetProcess::start(&[]);
        let u = &target.url;
        let file = match format {
            // vegeta's JSON targets carry the body base64-encoded ("hello, target").
            "jsonl" => format!(
                "{{\"method\":\"GET\",\"url\":\"{u}/status?code=203\",\"header\":{{\"X-Test\":[\"1\"]}}}}\n\
                 {{\"method\":\"POST\",\"url\":\"{u}/echo\",\"body\":\"aGVsbG8sIHRhcmdldA==\"}}\n"
            ),
            _ => format!("GET {u}/status?code=203\nX-Test: 1\n\nPOST {u}/echo\nContent-Type: text/plain\n@body.txt\n"),
        };
        let name = format!("targets.{format}");
        let run = http(&["--targets", &name, "-n", "40"], &[(&name, file.as_bytes()), ("body.txt", body)]);
        assert_ok(&run);
        let s = run.summary();
        assert_eq!(task_count(&s, "passed"), 40, "{format}: {}", run.stderr);
        assert_eq!(
            (s["metrics"]["http_status"]["203"].as_u64(), s["metrics"]["http_status"]["200"].as_u64()),
            (Some(20), Some(20)),
            "{format}: both targets, in turn"
        );
        assert_eq!(
            metric(&run, "http_response_bytes", "count"),
            20 * ("status 203\n".len() + body.len()) as u64,
            "{format}"
        );
        assert_eq!(target.stats()["requests"].as_u64(), Some(41), "{format}");
    }
}

#[test]
fn http_help_tells_the_grant_and_the_defaults() {
    let run = Loadhost::new().args(["http", "--help"]).run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let help = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    for says in [
        "Typing it is the grant",
        "it sends 50 requests/s",
        "it runs 10s",
        "--expect-status <CODE>",
        "--max-workers <N>",
    ] {
        assert!(help.contains(says), "`http --help` should say '{says}':\n{}", run.stdout);
    }
}

#[test]
fn a_missing_rate_is_filled_in_and_said() {
    let target = TargetProcess::start(&[]);
    let run = http(&[&format!("{}/", target.url), "-d", "1s"], &[]);
    assert_ok(&run);
    assert_eq!(task_count(&run.summary(), "scheduled"), 50, "50/s for 1s");
    assert!(run.stderr.contains("no load given: -r 50 (the defaults of loadhost http)"), "{}", run.stderr);
}
