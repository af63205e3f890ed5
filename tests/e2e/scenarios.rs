//! TOML `[[scenario]]` blocks: several loads at once, each named, with its own model and offset.

use crate::common::{Loadhost, assert_identity, assert_ok, fixture, task_count};

#[test]
fn scenarios_run_together_and_the_plugin_sees_their_names() {
    let cmd = Loadhost::new();
    let config = r#"
        duration = "2s"

        [[scenario]]
        name = "browse"
        rate = 100

        [[scenario]]
        name = "checkout"
        workers = 2
        iterations = 40
        start-after = "500ms"
    "#;
    std::fs::write(cmd.path().join("run.toml"), config).unwrap();
    let run = cmd.arg_run(&fixture("metrics"), &["-c", "run.toml", "--csv", "rows.csv"]).run();
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(s["scenarios"]["browse"]["tasks"]["scheduled"], 200);
    assert_eq!(s["scenarios"]["checkout"]["tasks"]["scheduled"], 40);
    assert_eq!(s["scenarios"]["checkout"]["start_after_s"], 0.5);
    assert_eq!(task_count(&s, "scheduled"), 240, "the run is both scenarios together");
    assert_eq!(s["metrics"]["by_scenario{scenario:browse}"]["count"], 200, "task.scenario reaches the plugin");
    assert_eq!(s["metrics"]["by_scenario{scenario:checkout}"]["count"], 40);
    assert!(s["rate"]["target_per_s"].is_null(), "a closed scenario has no planned rate");
    assert!(
        run.stdout.contains("browse: 200 scheduled") && run.stdout.contains("checkout: 40 scheduled"),
        "{}",
        run.stdout
    );
    let csv = run.file("rows.csv");
    assert!(csv.lines().any(|l| l.ends_with(",checkout")) && csv.lines().any(|l| l.ends_with(",browse")));
    assert_identity(&s);
}
