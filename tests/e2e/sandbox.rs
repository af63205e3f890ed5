//! The sandbox from inside a plugin: only `-e` variables, no files, no directories.

use crate::common::{Loadhost, assert_ok, fixture, task_count};

#[test]
fn a_plugin_sees_only_what_the_user_passed() {
    let run = Loadhost::new()
        .env("SECRET_TOKEN", "do-not-leak")
        .arg_run(&fixture("env-probe"), &["-e", "PROBE_EXPECTED=yes", "-n", "20", "-w", "2"])
        .run();
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "passed"), 20, "the sandbox leaked: {}", run.stderr);
}

#[test]
fn the_probe_fails_when_what_it_expects_is_missing() {
    // Without -e the probe must notice, or the test above would prove nothing.
    let run = Loadhost::run_plugin(&fixture("env-probe"), &["-n", "5"]);
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "failed"), 5);
    assert!(run.stderr.contains("PROBE_EXPECTED=yes was passed with -e but is not visible"), "{}", run.stderr);
}
