//! The plugin's lifecycle through the CLI: setup, init per worker, teardown, and their failures.

use crate::common::{Fixture, Loadhost, assert_identity, assert_ok, fixture, task_count};

#[test]
fn setup_init_and_teardown_run_once_per_run_worker_and_run() {
    let run = Loadhost::run_plugin(&fixture(Fixture::Lifecycle), &["-w", "3", "-n", "30"]);
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "passed"), 30, "{}", run.stderr);
    assert_eq!(s["metrics"]["inits"]["count"], 3);
    assert_eq!(s["metrics"]["tasks_with_setup"]["count"], 30);
    assert_eq!(s["metrics"]["teardowns"]["count"], 1, "teardown got the setup data");
    assert!(s["teardown_error"].is_null());
    assert_identity(&s);
}

#[test]
fn a_failing_setup_or_init_stops_the_run_before_any_load_with_exit_4() {
    for (env, says) in [
        ("SETUP_FAIL=1", "the plugin's setup failed: setup returned an error: setup failed on purpose"),
        ("INIT_FAIL=1", "could not start: init returned an error: init failed on purpose"),
    ] {
        let run = Loadhost::run_plugin(&fixture(Fixture::Lifecycle), &["-e", env, "-w", "2", "-n", "10"]);
        assert_eq!(run.code, 4, "{env}: {}", run.stderr);
        let errors: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{env}: {}", run.stderr);
        assert!(errors[0].contains(says), "{env}: {}", errors[0]);
        assert!(!run.dir.path().join("summary.json").exists(), "{env}: nothing ran, nothing written");
    }
}

#[test]
fn a_slow_setup_times_out() {
    let args = ["-e", "SETUP_SLEEP_MS=5000", "--lifecycle-timeout", "300ms", "-n", "1"];
    let run = Loadhost::run_plugin(&fixture(Fixture::Lifecycle), &args);
    assert_eq!(run.code, 4);
    assert!(run.stderr.contains("setup failed: took longer than 300ms"), "{}", run.stderr);
}

#[test]
fn a_failing_teardown_keeps_the_results_and_exits_4() {
    let run = Loadhost::run_plugin(&fixture(Fixture::Lifecycle), &["-e", "TEARDOWN_FAIL=1", "-w", "2", "-n", "10"]);
    assert_eq!(run.code, 4);
    let s = run.summary();
    assert_eq!(task_count(&s, "passed"), 10);
    assert_eq!(s["teardown_error"].as_str(), Some("teardown returned an error: teardown failed on purpose"));
    assert!(run.stdout.contains("✗ the plugin's teardown failed"));
}

#[test]
fn a_slow_init_grows_the_crew_one_peer_at_a_time() {
    // One worker, 50 fast tasks/s, and a 300 ms login per worker: a peer being made is the
    // crew's reserve, so the crew does not make one per task that arrives while it logs in.
    let args = ["-e", "INIT_SLEEP_MS=300", "-w", "1", "-r", "50", "-d", "2s", "--max-workers", "100"];
    let run = Loadhost::run_plugin(&fixture(Fixture::Lifecycle), &args);
    assert_ok(&run);
    let s = run.summary();
    let peak = s["workers"]["peak"].as_u64().unwrap();
    assert!(peak <= 4, "the crew grew to {peak} for one task in flight: {}", s["workers"]);
    assert_eq!(task_count(&s, "passed"), 100);
}
