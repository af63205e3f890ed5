//! The summary JSON, the CSV and the config file, read back from disk.

use serde_json::Value;

use crate::common::{Loadhost, assert_ok, plugin, task_count};

#[test]
fn the_summary_json_has_every_contract_key() {
    let run = Loadhost::run_plugin(&plugin("noop"), &["-r", "100", "-d", "1s"]);
    assert_ok(&run);
    let s = run.summary();
    for key in [
        "version",
        "plugin",
        "config",
        "started_at",
        "duration_s",
        "tasks",
        "rate",
        "latency_ms",
        "service_ms",
        "wait_ms",
        "lag",
        "underrun",
        "workers",
        "metrics",
        "checks",
        "thresholds",
    ] {
        assert!(s.get(key).is_some(), "missing top-level key {key}");
    }
    for key in ["scheduled", "passed", "failed", "aborted", "dropped", "timed_out", "trapped", "interrupted", "retries"]
    {
        assert!(s["tasks"][key].is_u64(), "missing tasks.{key}");
    }
    for view in ["latency_ms", "service_ms", "wait_ms"] {
        for key in ["min", "mean", "p50", "p90", "p95", "p99", "p999", "max"] {
            assert!(s[view][key].is_f64(), "missing {view}.{key}");
        }
    }
    for key in ["min", "peak", "final", "grown", "retired", "replaced"] {
        assert!(s["workers"][key].is_u64(), "missing workers.{key}");
    }
    assert!(s["rate"]["target_per_s"].is_f64() && s["rate"]["achieved_per_s"].is_f64());
    assert!(s["lag"]["max_ms"].is_f64() && s["lag"]["total_ms"].is_f64());
    assert_eq!(s["plugin"]["sha256"].as_str().map(str::len), Some(64));
    assert_eq!(s["config"]["rate"], Value::String("100/s".into()));
    assert!(s["started_at"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn the_csv_has_a_config_comment_a_header_a_row_per_second_and_a_footer() {
    let run = Loadhost::run_plugin(&plugin("noop"), &["-r", "100", "-d", "3s", "--csv", "intervals.csv"]);
    assert_ok(&run);
    let csv = run.file("intervals.csv");
    let lines: Vec<&str> = csv.lines().collect();
    let config: Value =
        serde_json::from_str(lines[0].strip_prefix("# config ").expect("a config comment first")).unwrap();
    assert_eq!(config["duration"], Value::String("3s".into()));
    let header: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(header[..5], ["interval", "start_s", "end_s", "scheduled", "started"]);
    let footer: Value =
        serde_json::from_str(lines.last().unwrap().strip_prefix("# end ").expect("a footer last")).unwrap();
    assert_eq!(footer["complete"], Value::Bool(true));
    assert_eq!(footer["identity_holds"], Value::Bool(true));

    let rows: Vec<Vec<&str>> = lines[2..lines.len() - 1].iter().map(|l| l.split(',').collect()).collect();
    assert!((3..=4).contains(&rows.len()), "one row per second of a 3 s run (+ a short tail): {}", rows.len());
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let mut scheduled = 0;
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.len(), header.len());
        assert_eq!(row[0], i.to_string());
        scheduled += row[column("scheduled")].parse::<u64>().unwrap();
    }
    for row in &rows[..3] {
        let span: f64 = row[column("end_s")].parse::<f64>().unwrap() - row[column("start_s")].parse::<f64>().unwrap();
        assert!((span - 1.0).abs() < 0.1, "a one-second interval: {span}");
    }
    assert_eq!(scheduled, 300, "rows add up to the run's total");
    assert_eq!(footer["scheduled"].as_u64(), Some(300));
    assert_eq!(task_count(&run.summary(), "scheduled"), 300);
}

#[test]
fn a_config_file_uses_the_flag_names_and_flags_win() {
    let cmd = Loadhost::new();
    std::fs::write(cmd.path().join("run.toml"), "rate = 50\nduration = \"1s\"\nenv = [\"SLEEP_MS=1\"]\n").unwrap();
    let run = cmd.arg_run(&plugin("sleep"), &["-c", "run.toml", "-r", "100"]).run();
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "scheduled"), 100, "the flag's 100/s wins over the file's 50/s for the file's 1 s");
    // The file's environment reached the plugin (1 ms per task) but its value no output.
    assert_eq!(s["config"]["env"][0], Value::String("SLEEP_MS=[redacted]".into()));
    assert!(s["service_ms"]["p50"].as_f64().unwrap() >= 1.0, "{}", s["service_ms"]);
}
