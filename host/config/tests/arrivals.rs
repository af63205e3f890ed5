//! `--arrivals`, `--seed` and sine stages: from flags and TOML to the plan, and bad input named.

#![allow(clippy::unwrap_used, reason = "a test that cannot set up must fail loudly")]

use std::path::Path;

use clap::Parser;
use loadhost_config::options::ArrivalsArg;
use loadhost_config::{RunOptions, resolve};
use loadhost_engine::Arrivals;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    options: RunOptions,
}

fn flags(args: &[&str]) -> RunOptions {
    Cli::try_parse_from(std::iter::once("run").chain(args.iter().copied())).unwrap().options
}

fn toml(text: &str) -> Result<RunOptions, String> {
    loadhost_config::file::parse(Path::new("run.toml"), text).map_err(|e| e.to_string())
}

#[test]
fn arrivals_and_seed_reach_the_plan_and_the_config() {
    let s = resolve(flags(&["--arrivals", "poisson", "--seed", "7", "-r", "200", "-d", "1s"])).unwrap();
    assert_eq!(
        (s.plans[0].arrivals(), s.plans[0].seed(), s.plans[0].planned_is_exact()),
        (Arrivals::Poisson, 7, false)
    );
    let config = serde_json::to_value(&s.options).unwrap();
    assert_eq!((&config["arrivals"], &config["seed"]), (&serde_json::json!("poisson"), &serde_json::json!(7)));
    let file = resolve(toml("rate = 200\nduration = \"1s\"\narrivals = \"poisson\"\nseed = 7\n").unwrap()).unwrap();
    assert_eq!(file.plans, s.plans, "the file says the same as the flags");
}

#[test]
fn without_flags_arrivals_are_even_and_the_seed_is_drawn_and_shown() {
    let a = resolve(flags(&["-r", "10", "-d", "1s"])).unwrap();
    let b = resolve(flags(&["-r", "10", "-d", "1s"])).unwrap();
    assert_eq!((a.plans[0].arrivals(), a.options.arrivals), (Arrivals::Even, Some(ArrivalsArg::Even)));
    let seed = a.options.seed.unwrap();
    assert_eq!(a.plans[0].seed(), seed);
    assert!(seed < 1 << 53, "exact in JSON and TOML: {seed}");
    assert_ne!(seed, b.options.seed.unwrap(), "drawn afresh");
    let closed = resolve(flags(&["-n", "3"])).unwrap();
    assert_eq!(closed.options.arrivals, None, "the closed model has no arrivals");
    assert!(closed.options.seed.is_some());
}

#[test]
fn poisson_arrivals_need_the_open_model_and_a_known_process() {
    let err = resolve(flags(&["--arrivals", "poisson", "-n", "5"])).unwrap_err().to_string();
    assert!(err.starts_with("--arrivals applies to the open model"), "{err}");
    let err = Cli::try_parse_from(["run", "--arrivals", "bursty"]).err().unwrap().to_string();
    assert!(err.contains("invalid value 'bursty' for '--arrivals <PROCESS>'"), "{err}");
    let err = toml("arrivals = \"bursty\"\n").unwrap_err();
    assert!(err.starts_with("run.toml:1:") && err.contains("bursty"), "{err}");
    let err = Cli::try_parse_from(["run", "--seed", "x"]).err().unwrap().to_string();
    assert!(err.contains("invalid value 'x' for '--seed <N>'"), "{err}");
}

#[test]
fn a_sine_stage_mixes_with_ramps_and_schedules_its_integral() {
    let text = r#"
        rate = 100
        stage = ["10s:100", { shape = "sine", period = "60s", min = 100, max = 1000, duration = "10m" }, "10s:0"]
        arrivals = "poisson"
    "#;
    let options = toml(text).unwrap();
    let s = resolve(options.clone()).unwrap();
    // 10 s at 100/s, ten whole periods averaging 550/s, and a ramp from 100 to 0 over 10 s.
    assert_eq!(s.plans[0].planned_tasks(), Some(1_000 + 330_000 + 500));
    // The config echoes the stage as it was written, and reads back the same.
    let written = serde_json::to_value(&options.stage).unwrap();
    assert_eq!(written[1]["shape"], "sine");
    assert_eq!(written[1]["period"], "60s");
    assert_eq!(written[0], "10s:100/s");
    let back: Vec<loadhost_config::units::Stage> = serde_json::from_value(written).unwrap();
    assert_eq!(back, options.stage);
}

#[test]
fn a_bad_sine_stage_names_the_key() {
    let stage = |table: &str| toml(&format!("rate = 10\nstage = [{table}]\n")).unwrap_err();
    let cases = [
        (
            "{ shape = \"sine\", period = \"0s\", min = 1, max = 2, duration = \"1m\" }",
            "`period` must be longer than 0s",
        ),
        (
            "{ shape = \"sine\", period = \"1s\", min = 5, max = 2, duration = \"1m\" }",
            "`min` (5/s) is more than `max` (2/s)",
        ),
        ("{ shape = \"square\", period = \"1s\", min = 1, max = 2, duration = \"1m\" }", "unknown `shape` 'square'"),
        ("{ shape = \"sine\", period = \"1s\", min = 1, duration = \"1m\" }", "a sine stage needs `max`"),
        (
            "{ shape = \"sine\", period = \"1s\", min = 1, max = 2, duration = \"0s\" }",
            "`duration` must be longer than 0s",
        ),
        (
            "{ shape = \"sine\", period = \"1s\", min = 1, max = 2, duration = \"1m\", phase = 1 }",
            "unknown field `phase`",
        ),
        ("{ period = \"1s\" }", "missing field `shape`"),
        ("5", "expected a \"DURATION:TARGET\" string or a { shape = \"sine\", … } table"),
    ];
    for (table, says) in cases {
        let err = stage(table);
        assert!(err.starts_with("run.toml:2:") && err.contains(says), "{table}: expected '{says}', got '{err}'");
    }
    let err = resolve(
        toml("rate = 1\nstage = [{ shape = \"sine\", period = \"1ms\", min = 1, max = 2, duration = \"1000h\" }]\n")
            .unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("--stage: sine stage:") && err.contains("use a longer period"), "{err}");
}

#[test]
fn the_segments_of_a_split_run_agree_on_a_seed_without_being_told() {
    let segment = |i: &str| {
        let at = "2026-11-29T23:00:00Z";
        resolve(flags(&["--arrivals", "poisson", "-r", "100", "-d", "1s", "--segment", i, "--start-at", at])).unwrap()
    };
    let (a, b) = (segment("0/2"), segment("1/2"));
    assert_eq!(a.plans[0].seed(), b.plans[0].seed(), "one plan, one seed");
    assert_eq!(a.options.seed, b.options.seed, "and the same config for merge");
    let told = resolve(flags(&["-r", "100", "-d", "1s", "--segment", "0/2", "--seed", "9"])).unwrap();
    assert_eq!(told.plans[0].seed(), 9);
}
