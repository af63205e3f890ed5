//! The summary JSON, the CSV and the config file, read back from disk.

use loadhost_output::json;
use loadhost_output::summary::{PluginMetric, Summary};
use serde_json::Value;

use crate::common::{Example, Fixture, Loadhost, assert_ok, fixture, plugin, task_count};
use crate::target_process::TargetProcess;

#[test]
fn the_summary_json_has_every_contract_key() {
    let run = Loadhost::run_plugin(&plugin(Example::Noop), &["-r", "100", "-d", "1s"]);
    assert_ok(&run);
    let s = run.summary();
    // Every key docs/outputs.md lists for a run without scenarios, and no other.
    let (mut documented, conditional) = documented_summary_keys();
    assert!(documented.len() > 20, "docs/outputs.md lists the summary's keys: {documented:?}");
    assert_eq!(conditional, ["merged", "scenarios"], "keys documented as present only sometimes");
    documented.sort_unstable();
    let documented: Vec<&str> = documented.iter().map(String::as_str).collect();
    let keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, documented, "the summary's top-level keys");
    for key in [
        "scheduled",
        "passed",
        "failed",
        "aborted",
        "dropped",
        "timed_out",
        "trapped",
        "interrupted",
        "retries",
        "started",
    ] {
        assert!(s["tasks"][key].is_u64(), "missing tasks.{key}");
    }
    for key in ["total", "passed", "retryable", "failed", "aborted", "trapped", "timed_out"] {
        assert!(s["attempts"][key].is_u64(), "missing attempts.{key}");
    }
    for key in ["count", "limit", "folded_samples", "discarded_samples", "invalid_samples"] {
        assert!(s["series"][key].is_u64(), "missing series.{key}");
    }
    assert!(s["host"]["peak_rss_mb"].is_f64() && s["rate"]["generation_s"].is_f64());
    assert!(s["verdict"].get("limit").is_some() && s["verdict"].get("why").is_some());
    assert!(s["teardown_error"].is_null() && s["aborted"].is_null() && s["stopped"].is_null());
    for view in ["latency_ms", "service_ms", "wait_ms"] {
        for key in ["min", "mean", "p50", "p90", "p95", "p99", "p999", "max"] {
            assert!(s[view][key].is_f64(), "missing {view}.{key}");
        }
    }
    for key in ["min", "peak", "final", "grown", "retired", "replaced", "ceiling"] {
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
    let run = Loadhost::run_plugin(&plugin(Example::Noop), &["-r", "100", "-d", "3s", "--csv", "intervals.csv"]);
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
    assert!(rows.len() >= 3, "one row per second of a 3 s run (+ a short tail): {}", rows.len());
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let mut scheduled = 0;
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.len(), header.len());
        assert_eq!(row[0], i.to_string());
        scheduled += row[column("scheduled")].parse::<u64>().unwrap();
    }
    // Rows are cut on the run's own clock: each starts where the one before ended, each but the last
    // spans exactly one second, and the last ends with the run. A busy machine that ends the run
    // late only makes the last row longer (or adds one), never a second of another length.
    let at = |row: &Vec<&str>, name: &str| row[column(name)].parse::<f64>().unwrap();
    let mut previous_end = 0.0;
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(at(row, "start_s"), previous_end, "row {i} starts where the one before ended");
        if i + 1 < rows.len() {
            assert_eq!(at(row, "end_s"), (i + 1) as f64, "row {i} is a one-second interval");
        }
        previous_end = at(row, "end_s");
    }
    let duration = run.summary()["duration_s"].as_f64().unwrap();
    assert!((previous_end - duration).abs() < 0.002, "the last row ends with the run: {previous_end} vs {duration} s");
    assert_eq!(scheduled, 300, "rows add up to the run's total");
    assert_eq!(footer["scheduled"].as_u64(), Some(300));
    assert_eq!(task_count(&run.summary(), "scheduled"), 300);
}

#[test]
fn a_config_file_uses_the_flag_names_and_flags_win() {
    let cmd = Loadhost::new();
    std::fs::write(cmd.path().join("run.toml"), "rate = 50\nduration = \"1s\"\nenv = [\"SLEEP_MS=1\"]\n").unwrap();
    let run = cmd.arg_run(&plugin(Example::Sleep), &["-c", "run.toml", "-r", "100"]).run();
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "scheduled"), 100, "the flag's 100/s wins over the file's 50/s for the file's 1 s");
    // The file's environment reached the plugin (1 ms per task) but its value no output.
    assert_eq!(s["config"]["env"][0], Value::String("SLEEP_MS=[redacted]".into()));
    assert!(s["service_ms"]["p50"].as_f64().unwrap() >= 1.0, "{}", s["service_ms"]);
}

/// The summary's top-level keys as docs/outputs.md's "Summary JSON" list names them: those always
/// present, and those it says appear "only" in some runs. Each bullet names keys in backquotes
/// before its first colon or full stop, once what is in brackets (the keys inside a key, remarks)
/// is left out.
fn documented_summary_keys() -> (Vec<String>, Vec<String>) {
    let doc = std::fs::read_to_string(crate::common::root().join("docs/outputs.md")).unwrap();
    let section = doc.split("## Summary JSON").nth(1).expect("a Summary JSON section");
    let list = section.split("\n\n").nth(1).expect("the list of keys after the section's first paragraph");
    let (mut always, mut sometimes) = (Vec::new(), Vec::new());
    for bullet in list.split("\n- ") {
        let bullet = bullet.trim_start_matches("- ").replace("\n  ", " ");
        let flat = without_brackets(&bullet);
        let head = flat.split([':', '.']).next().unwrap_or_default();
        let keys = head.split('`').skip(1).step_by(2).map(str::to_owned);
        if flat.contains("only when") || flat.contains("only from") {
            sometimes.extend(keys)
        } else {
            always.extend(keys)
        }
    }
    sometimes.sort_unstable();
    (always, sometimes)
}

/// `text` without what is inside (), {} or [] at any depth.
fn without_brackets(text: &str) -> String {
    let mut depth = 0usize;
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// The summary JSON of a run, read into the typed `Summary` every output is built from, written
/// again, must be the file byte for byte: the type holds every key and value the file has.
fn assert_summary_round_trips(run: &crate::common::Run) -> Summary {
    let text = run.file("summary.json");
    let summary: Summary =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("summary.json is a Summary: {e}\n{text}"));
    let again = json::to_bytes(&summary).unwrap();
    assert_eq!(String::from_utf8(again).unwrap(), text, "summary.json → Summary → JSON is the same bytes");
    summary
}

#[test]
fn a_real_runs_summary_json_reads_into_the_typed_summary_and_back_byte_for_byte() {
    // Plugin checks, counters, a gauge and a tagged trend; tags; a threshold without samples
    // (null), one that fails and one that passes.
    let run = Loadhost::run_plugin(
        &fixture(Fixture::Metrics),
        &[
            "-r",
            "400",
            "-n",
            "400",
            "--tag",
            "team=checkout",
            "--tag",
            "build=7",
            "--metric",
            "size:trend",
            "--metric",
            "login_ms:trend",
            "--threshold",
            "size:p(99)<1",
            "--threshold",
            "login_ms:max<1",
            "--threshold",
            "tasks_not_passed:rate<0.5",
        ],
    );
    assert_eq!(run.code, 99, "{}", run.stderr);
    let summary = assert_summary_round_trips(&run);
    assert_eq!(summary.tasks.scheduled, 400);
    assert_eq!(summary.checks["even"].passes, 200);
    assert_eq!(summary.tags["team"], "checkout");
    assert_eq!(summary.thresholds.get("login_ms:max<1").map(|t| t.value), Some(None));
    assert!(matches!(summary.metrics.plugin["size"], PluginMetric::Trend(_)));
    assert!(summary.metrics.http.is_none());

    // The host's HTTP metrics, against the built-in target.
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/", target.url);
    let run = Loadhost::run_plugin(
        &plugin(Example::HttpGet),
        &["-e", &url, "--allow-host", &target.authority, "-n", "50", "-w", "2", "--max-connections-per-host", "1"],
    );
    assert_ok(&run);
    let summary = assert_summary_round_trips(&run);
    let http = summary.metrics.http.expect("HTTP metrics");
    assert_eq!((http.reqs.count, http.by_status.get(&200).copied()), (50, Some(50)));
    assert_eq!(http.failed.passes, 0, "http_req_failed.passes counts failed requests: none");
}

#[test]
fn a_one_task_smoke_run_prints_no_rate() {
    let run = Loadhost::run_plugin(&plugin(Example::Noop), &[]);
    assert_ok(&run);
    assert!(run.stdout.contains("rate.............: no rate: 1 task started"), "{}", run.stdout);
    assert_eq!(task_count(&run.summary(), "scheduled"), 1);
}

/// Run `loadhost ARGS…` in the run's folder inside a mount namespace of its own, where `full/` is
/// a 1 MiB tmpfs filled to the last block and `small/` a 4 KiB one with room for a few lines: a
/// real full disk, gone when the command ends. Afterwards `full.ls` and `small.ls` list what was
/// left on each, and `small/` is copied to `small-copy/`. `None` (the test skips, saying so) where
/// mounting is not permitted.
fn on_full_disks(cmd: Loadhost, args: &[&str]) -> Option<crate::common::Run> {
    const SCRIPT: &str = r#"
        mkdir -p full small small-copy
        mount -t tmpfs -o size=1m loadhost-full full || exit 111
        mount -t tmpfs -o size=4k loadhost-small small || exit 111
        echo "tmpfs mounted" >&2
        dd if=/dev/zero of=full/filler bs=4096 2>/dev/null
        "$@"
        rc=$?
        ls -A full > full.ls
        ls -A small > small.ls
        cp -a small/. small-copy/
        exit $rc
    "#;
    let loadhost = env!("CARGO_BIN_EXE_loadhost");
    let mut script = vec!["--mount", "--map-root-user", "sh", "-c", SCRIPT, "sh", loadhost];
    script.extend_from_slice(args);
    let run = cmd.program("unshare").args(script).run();
    if !run.stderr.contains("tmpfs mounted") {
        eprintln!("SKIPPED: a tmpfs cannot be mounted here (unshare --mount --map-root-user): {}", run.stderr);
        return None;
    }
    Some(run)
}

#[test]
fn a_full_disk_for_some_outputs_leaves_the_others_whole_and_the_summary_printed() {
    // The summary JSON, HTML and Markdown on a full disk; the results file on one that fills up
    // as the run goes; the JUnit file and the CSV on a healthy one.
    let noop = plugin(Example::Noop);
    let args = [
        "run",
        noop.to_str().unwrap(),
        "-r",
        "100",
        "-d",
        "6s",
        "--summary-json",
        "full/summary.json",
        "--html",
        "full/report.html",
        "--markdown",
        "full/summary.md",
        "--results",
        "small/part.lhr",
        "--junit",
        "junit.xml",
        "--csv",
        "rows.csv",
    ];
    let Some(run) = on_full_disks(Loadhost::new(), &args) else { return };
    assert_eq!(run.code, 6, "exit 6: an output failed\nstderr: {}\nstdout: {}", run.stderr, run.stdout);
    // The terminal summary is printed whatever became of the files.
    assert!(run.stdout.contains("every scheduled task is accounted for"), "{}", run.stdout);
    for flag in ["--summary-json full/summary.json", "--html full/report.html", "--markdown full/summary.md"] {
        assert!(
            run.stderr.contains(&format!("{flag}: writing failed: No space left on device"))
                && run.stderr.contains("no file is left"),
            "{flag}: {}",
            run.stderr
        );
    }
    assert!(run.stderr.contains("--results small/part.lhr: writing failed: No space left on device"), "{}", run.stderr);
    let last = run.stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("error: outputs could not be written: ") && !last.contains("--junit"), "{last}");
    // The healthy disk's outputs are whole.
    let junit = run.file("junit.xml");
    assert!(junit.starts_with("<?xml") && junit.trim_end().ends_with("</testsuites>"), "{junit}");
    let csv = run.file("rows.csv");
    assert!(csv.lines().last().is_some_and(|l| l.starts_with("# end ")), "the CSV has its footer: {csv}");
    // Nothing cut off is left on the full disk: no output, no temporary file.
    assert_eq!(run.file("full.ls").trim(), "filler", "only the filler is left on the full disk");
    // The streaming results file keeps its whole lines (the completed intervals), and no end.
    assert_eq!(run.file("small.ls").trim(), "part.lhr");
    let results = run.file("small-copy/part.lhr");
    assert!(results.ends_with('\n'), "cut back to its last whole line");
    for line in results.lines().skip(1) {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("every line is whole JSON: {e}: {line}"));
    }
    assert!(results.lines().any(|l| l.starts_with("{\"interval\"")), "{results}");
    assert!(!results.lines().any(|l| l.starts_with("{\"end\"")), "no end line: the file says it was cut off");
}
