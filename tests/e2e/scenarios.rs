//! TOML `[[scenario]]` blocks: several loads at once, each named, with its own model and offset.

use crate::common::{Example, Fixture, Loadhost, assert_identity, assert_ok, fixture, task_count};

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
    let run = cmd.arg_run(&fixture(Fixture::Metrics), &["-c", "run.toml", "--csv", "rows.csv"]).run();
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
    // `scenario` is followed by the generator's columns.
    assert!(csv.lines().any(|l| l.contains(",checkout,")) && csv.lines().any(|l| l.contains(",browse,")));
    assert_identity(&s);
}

#[test]
fn a_plugins_abort_in_one_scenario_stops_the_whole_run_with_exit_4() {
    let cmd = Loadhost::new();
    let abort = fixture(Fixture::Abort).display().to_string();
    let config = format!(
        "[[scenario]]\nname = \"login\"\nplugin = \"{abort}\"\nworkers = 1\niterations = 100\n\n\
         [[scenario]]\nname = \"browse\"\nrate = 50\nduration = \"60s\"\n"
    );
    std::fs::write(cmd.path().join("run.toml"), config).unwrap();
    let started = std::time::Instant::now();
    let run = cmd.arg_run(&crate::common::plugin(Example::Noop), &["-c", "run.toml", "-e", "ABORT_AT=5"]).run();
    assert_eq!(run.code, 4, "a plugin's abort is the run's: {}", run.stderr);
    assert!(started.elapsed().as_secs() < 30, "browse's 60 s did not run: {:?}", started.elapsed());
    let s = run.summary();
    let why = s["scenarios"]["browse"]["aborted"].as_str().or(s["aborted"].as_str()).unwrap_or_default().to_owned();
    assert!(why.contains("stopping at iteration 5"), "{why}");
    assert!(task_count(&s, "scheduled") < 60 * 50, "{}", s["tasks"]);
    assert_identity(&s);
}

#[test]
fn a_periodic_scenario_ticks_beside_the_load_on_a_worker_of_its_own() {
    let cmd = Loadhost::new();
    let config = "duration = \"3s\"\nseed = 11\n\n[[scenario]]\nname = \"browse\"\nrate = 20\n\n\
                  [[scenario]]\nname = \"refresh-token\"\nevery = \"500ms\"\njitter = \"100ms\"\n";
    std::fs::write(cmd.path().join("run.toml"), config).unwrap();
    let run = cmd.arg_run(&crate::common::plugin(Example::Noop), &["-c", "run.toml", "--csv", "rows.csv"]).run();
    assert_ok(&run);
    let s = run.summary();
    let timer = &s["scenarios"]["refresh-token"];
    let ticks = timer["tasks"]["scheduled"].as_u64().unwrap();
    // Ticks 500–600 ms apart from 0 for 3 s: 5 or 6.
    assert!((5..=6).contains(&ticks), "{ticks} ticks: {timer}");
    assert_eq!(timer["tasks"]["passed"], ticks);
    assert_eq!(timer["workers"]["peak"], 1, "a worker of its own");
    assert_eq!(s["scenarios"]["browse"]["tasks"]["scheduled"], 60);
    assert!(run.file("rows.csv").contains(",refresh-token"), "the CSV has the periodic scenario's rows");
    assert_identity(&s);
}
