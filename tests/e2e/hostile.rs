//! The hostile-plugin suite: plugins that misbehave on purpose (`tests/plugins/hostile`, `abort`,
//! `bad-import`, `env-probe`). For each misdeed the run either goes on or stops with its documented
//! exit code, the counters say exactly what happened, and the host's peak RSS (from the summary)
//! stays bounded.

use serde_json::Value;

use crate::common::{
    Example, Fixture, Loadhost, Run, assert_identity, assert_none_passed, assert_ok, fixture, plugin, task_count,
};

/// `hostile` in `mode`, misbehaving on every `every`-th task.
fn hostile(mode: &str, every: u32, args: &[&str]) -> Run {
    let (mode, every) = (format!("MODE={mode}"), format!("EVERY={every}"));
    let mut all = vec!["-e", mode.as_str(), "-e", every.as_str()];
    all.extend_from_slice(args);
    Loadhost::run_plugin(&fixture(Fixture::Hostile), &all)
}

fn assert_rss_below(summary: &Value, mib: f64) {
    let rss = summary["host"]["peak_rss_mb"].as_f64().expect("host.peak_rss_mb in the summary");
    assert!(rss < mib, "the host's peak RSS was {rss} MiB, expected under {mib}");
}

fn replaced(summary: &Value) -> u64 {
    summary["workers"]["replaced"].as_u64().unwrap()
}

#[test]
fn an_infinite_loop_times_out_and_the_run_goes_on() {
    let run = hostile("spin", 4, &["-n", "20", "-w", "2", "--task-timeout", "500ms"]);
    assert_ok(&run);
    let s = run.summary();
    assert_eq!((task_count(&s, "timed_out"), task_count(&s, "passed")), (5, 15), "{}", s["tasks"]);
    assert_eq!(replaced(&s), 5, "each spinning instance is replaced");
    assert!(run.stderr.contains("still running after 500ms (--task-timeout)"), "{}", run.stderr);
    assert!(s["duration_s"].as_f64().unwrap() < 10.0, "five 0.5 s timeouts on two workers");
    assert_eq!(s["config"]["task-timeout"], "500ms", "the limit in force is in the config");
    assert_rss_below(&s, 200.0);
    assert_identity(&s);
}

#[test]
fn a_task_that_never_returns_times_out() {
    let run = hostile("hang", 1, &["-n", "4", "-w", "4", "--task-timeout", "300ms"]);
    assert_none_passed(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "timed_out"), 4);
    assert!(s["duration_s"].as_f64().unwrap() < 5.0);
    assert_identity(&s);
}

#[test]
fn a_memory_bomb_hits_the_memory_cap_and_rss_stays_bounded() {
    let run = hostile("memory", 2, &["-n", "20", "-w", "4", "--max-memory", "32MiB"]);
    assert_ok(&run);
    let s = run.summary();
    assert_eq!((task_count(&s, "trapped"), task_count(&s, "passed")), (10, 10), "{}", s["tasks"]);
    assert!(run.stderr.contains("memory limit: the plugin asked for"), "{}", run.stderr);
    assert!(run.stderr.contains("--max-memory is 32.0 MiB"), "{}", run.stderr);
    // Four instances of at most 32 MiB, plus the host itself.
    assert_rss_below(&s, 4.0 * 32.0 + 100.0);
    assert_identity(&s);
}

#[test]
fn the_default_limits_are_in_force_and_shown() {
    let run = hostile("memory", 1, &["-n", "1"]);
    assert_none_passed(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "trapped"), 1);
    assert!(run.stderr.contains("--max-memory is 128.0 MiB"), "{}", run.stderr);
    assert_eq!(s["config"]["max-memory"], "128MiB");
    assert_eq!(s["config"]["task-timeout"], "60s");
    assert_eq!(s["config"]["grace"], "5s");
    assert!(run.stdout.contains("limits: 128MiB memory per instance, 60s per task, 5s grace"), "{}", run.stdout);
}

#[test]
fn unbounded_recursion_traps_on_the_stack_limit() {
    let run = hostile("recurse", 2, &["-n", "10", "-w", "2"]);
    assert_ok(&run);
    let s = run.summary();
    assert_eq!((task_count(&s, "trapped"), task_count(&s, "passed")), (5, 5), "{}", s["tasks"]);
    assert!(run.stderr.contains("call stack exhausted"), "{}", run.stderr);
    assert_rss_below(&s, 200.0);
    assert_identity(&s);
}

#[test]
fn a_trap_in_half_the_tasks_replaces_those_instances_and_the_rest_pass() {
    let run = hostile("panic", 2, &["-n", "100", "-w", "4"]);
    assert_ok(&run);
    let s = run.summary();
    assert_eq!((task_count(&s, "trapped"), task_count(&s, "passed")), (50, 50), "{}", s["tasks"]);
    assert_eq!(replaced(&s), 50);
    assert_identity(&s);
}

#[test]
fn a_trap_in_init_stops_the_run_before_any_load_with_exit_4() {
    let run = hostile("trap-init", 1, &["-n", "100", "-w", "2"]);
    assert_eq!(run.code, 4, "stderr: {}", run.stderr);
    assert!(run.stderr.contains("init trapped"), "{}", run.stderr);
    assert_eq!(
        run.stderr.lines().filter(|l| l.contains("ERROR") || l.starts_with("error")).count(),
        1,
        "{}",
        run.stderr
    );
    assert!(!run.dir.path().join("summary.json").exists(), "nothing was measured, so nothing is written");
}

#[test]
fn a_request_to_a_host_not_allowed_is_denied() {
    // Nothing listens on the discard port; a denied request never gets as far as connecting.
    let run = Loadhost::run_plugin(&plugin(Example::HttpGet), &["-e", "TARGET_URL=http://127.0.0.1:9/", "-n", "10"]);
    assert_none_passed(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "failed"), 10);
    assert_eq!(s["metrics"]["http_denied"]["count"], 10);
    assert_eq!(s["metrics"]["http_connections_opened"]["count"], 0);
}

#[test]
fn a_file_is_unreadable_without_dir_and_readable_with_it() {
    let run = hostile("read-file", 1, &["-e", "FILE=/etc/passwd", "-n", "3"]);
    assert_none_passed(&run);
    assert_eq!(task_count(&run.summary(), "failed"), 3);
    // The path came with -e, and a plugin's text carries no -e value into an output.
    assert!(run.stderr.contains("cannot read [redacted]: "), "{}", run.stderr);

    let cmd = Loadhost::new();
    std::fs::create_dir(cmd.path().join("fixtures")).unwrap();
    std::fs::write(cmd.path().join("fixtures/users.csv"), "id\n1\n").unwrap();
    let args = ["-e", "MODE=read-file", "-e", "FILE=/data/users.csv", "--dir", "fixtures::/data", "-n", "3"];
    let run = cmd.arg_run(&fixture(Fixture::Hostile), &args).run();
    assert_ok(&run);
    assert_eq!(task_count(&run.summary(), "passed"), 3, "{}", run.stderr);
}

#[test]
fn a_directory_grant_does_not_reach_outside_itself() {
    let cmd = Loadhost::new();
    std::fs::create_dir(cmd.path().join("fixtures")).unwrap();
    std::fs::write(cmd.path().join("secret.txt"), "no").unwrap();
    let args = ["-e", "MODE=read-file", "-e", "FILE=/data/../secret.txt", "--dir", "fixtures::/data", "-n", "2"];
    let run = cmd.arg_run(&fixture(Fixture::Hostile), &args).run();
    assert_none_passed(&run);
    assert_eq!(task_count(&run.summary(), "failed"), 2, "{}", run.stderr);
}

#[test]
fn a_plugin_sees_only_the_environment_passed_with_e() {
    let run = Loadhost::new()
        .env("SECRET_TOKEN", "do-not-leak")
        .arg_run(&fixture(Fixture::EnvProbe), &["-e", "PROBE_EXPECTED=yes", "-n", "20", "-w", "2"])
        .run();
    assert_ok(&run);
    assert_eq!(task_count(&run.summary(), "passed"), 20, "the sandbox leaked: {}", run.stderr);
    // Without -e the probe must notice, or the run above would prove nothing.
    let run = Loadhost::run_plugin(&fixture(Fixture::EnvProbe), &["-n", "5"]);
    assert_none_passed(&run);
    assert_eq!(task_count(&run.summary(), "failed"), 5);
    assert!(run.stderr.contains("PROBE_EXPECTED=yes was passed with -e but is not visible"), "{}", run.stderr);
}

#[test]
fn ten_thousand_tag_values_fold_into_one_overflow_series() {
    let run = hostile("tags", 1, &["-n", "10000", "-w", "4"]);
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(s["metrics"]["hostile_series"]["count"], 10_000, "no sample is lost");
    assert_eq!(s["metrics"]["hostile_series{overflow:true}"]["count"], 9_000);
    assert_eq!(s["series"]["count"], 1001, "1,000 series and the overflow series");
    assert_eq!(s["series"]["folded_samples"], 9_000);
    assert_eq!(run.stderr.matches("more than 1000 metric series").count(), 1, "one warning: {}", run.stderr);
    assert_rss_below(&s, 100.0);
    assert_identity(&s);
}

#[test]
fn a_plugin_abort_stops_the_run_with_exit_4() {
    let run = Loadhost::run_plugin(&fixture(Fixture::Abort), &["-e", "ABORT_AT=10", "-w", "1", "-n", "1000"]);
    assert_eq!(run.code, 4, "stderr: {}", run.stderr);
    let s = run.summary();
    assert_eq!(task_count(&s, "aborted"), 1);
    assert!(task_count(&s, "scheduled") < 1000);
    assert_eq!(s["aborted"].as_str(), Some("stopping at iteration 10"));
    assert!(run.stdout.contains("the plugin aborted the run"));
    assert_identity(&s);
}

#[test]
fn a_component_importing_what_the_host_does_not_offer_is_refused_with_exit_3() {
    let run = Loadhost::run_plugin(&fixture(Fixture::BadImport), &["-n", "1"]);
    assert_eq!(run.code, 3, "stderr: {}", run.stderr);
    assert!(run.stderr.contains("imports instance `test:bad-import/secret-store`"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn an_e_value_a_plugin_echoes_reaches_no_output() {
    // Issue 26: the plugin writes its secret into its error, its stdout and stderr lines, a tag
    // value, a check's name, an endpoint's name and a URL path; every output is read back.
    let target = crate::target_process::TargetProcess::start(&[]);
    let secret = "hunter2-s3cret";
    let url = format!("TARGET_URL={}/", target.url);
    let args = [
        "-e",
        &format!("SECRET={secret}"),
        "-e",
        &url,
        "--allow-host",
        &target.authority,
        "-n",
        "3",
        "-w",
        "1",
        "--out",
        "json=lines.jsonl",
        "--csv",
        "rows.csv",
        "--html",
        "report.html",
        "--results",
        "r.lhr",
        "--junit",
        "junit.xml",
        "--markdown",
        "summary.md",
        "--plugin-output",
        "file=plugin.log",
        "--http-debug=headers",
    ];
    let run = hostile("echo-secret", 1, &args);
    assert_none_passed(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "failed"), 3, "{}", s["tasks"]);
    let summary = s.to_string();
    assert!(summary.contains("SECRET=[redacted] was refused (the value [redacted])"), "{}", s["errors"]);
    assert!(summary.contains("check named [redacted]"), "the check, by its redacted name: {}", s["checks"]);
    for file in
        ["summary.json", "lines.jsonl", "rows.csv", "report.html", "r.lhr", "junit.xml", "summary.md", "plugin.log"]
    {
        let text = run.file(file);
        assert!(!text.contains(secret), "{file} carries the secret");
    }
    assert!(run.file("plugin.log").contains("stdout says [redacted]"), "{}", run.file("plugin.log"));
    assert!(!run.stderr.contains(secret) && !run.stdout.contains(secret), "stderr: {}", run.stderr);
}

#[test]
fn a_huge_error_message_is_cut_with_a_note_everywhere() {
    let run = hostile("huge-error", 1, &["-n", "2", "-w", "1"]);
    assert_none_passed(&run);
    let s = run.summary();
    let example = s["errors"][0]["example"].as_str().unwrap();
    assert!(example.len() <= 1024, "the message is cut: {} bytes", example.len());
    assert!(example.ends_with("… [cut: 104857600 bytes]"), "{}", &example[example.len() - 60..]);
    assert!(run.stderr.len() < 64 << 10, "stderr carries the cut message only: {} bytes", run.stderr.len());
    assert_rss_below(&s, 600.0);
}
