//! Saying why tasks fail: what a plugin prints reaches the terminal (or a file, or nowhere) with
//! its worker and iteration, a panic explains itself, an errors table groups the failures in every
//! output and merges exactly, and the verdict never hides a failing run. On the `debugging`
//! fixtures: iteration 3 panics (traps), `i % 5 == 1` fails with "upstream said 503 for order i",
//! `i % 5 == 2` with "checkout timed out after i ms", each task prints one stdout and one stderr
//! line.

use serde_json::Value;

use crate::common::{Example, Loadhost, assert_identity, plugin, task_count, twin};

/// The errors table of a summary as (outcome, message) → count.
fn groups(summary: &Value) -> Vec<(String, String, u64)> {
    let mut rows: Vec<(String, String, u64)> = summary["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["outcome"].as_str().unwrap().to_owned(),
                e["message"].as_str().unwrap().to_owned(),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn printed_lines_a_panic_and_the_errors_table_reach_every_output() {
    let run = Loadhost::run_plugin(&plugin(Example::Debugging), &["-n", "10", "--out", "json=run.jsonl"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Printed lines, with their worker and iteration, stdout and stderr alike.
    assert!(run.stderr.contains("[worker 0, iteration 0] debug: starting iteration 0"), "{}", run.stderr);
    assert!(run.stderr.contains("[worker 1, iteration 9] note: worker 1 on iteration 9"), "{}", run.stderr);
    // The panic's message and place, not just "unreachable".
    let panic = "panicked at debugging/src/lib.rs:";
    let message = "index out of bounds: the len is 0 but the index is 3";
    assert!(run.stderr.contains(&format!("a task trapped on worker 0: {panic}")), "{}", run.stderr);
    assert!(run.stderr.contains(message) && run.stderr.contains("do-task"), "{}", run.stderr);
    // The errors table: two kinds of failure, one trap, adding up to the outcomes.
    let s = run.summary();
    let rows = groups(&s);
    assert_eq!(
        rows,
        [
            ("failed".to_owned(), "checkout timed out after <n> ms".to_owned(), 2),
            ("failed".to_owned(), "upstream said <n> for order <n>".to_owned(), 2),
            ("trapped".to_owned(), rows[2].1.clone(), 1),
        ]
    );
    assert!(rows[2].1.starts_with("panicked at debugging/src/lib.rs:<n>:<n>: index out of bounds"), "{rows:?}");
    let counted: u64 = rows.iter().map(|r| r.2).sum();
    assert_eq!(counted, task_count(&s, "failed") + task_count(&s, "trapped"));
    let upstream = s["errors"].as_array().unwrap().iter().find(|e| e["message"] == "upstream said <n> for order <n>");
    let upstream = upstream.unwrap();
    assert_eq!(
        (upstream["example"].as_str(), upstream["iteration"].as_u64()),
        (Some("upstream said 503 for order 1"), Some(1))
    );
    assert!(upstream["first_s"].as_f64() <= upstream["last_s"].as_f64(), "{upstream}");
    // The terminal's table and a verdict that says half the tasks ended in an error.
    assert!(run.stdout.contains("errors...........: 3 kinds · 5 attempts"), "{}", run.stdout);
    assert!(run.stdout.contains("  2  failed     upstream said 503 for order 1"), "{}", run.stdout);
    assert!(
        run.stdout.contains("verdict: 50.0% of tasks ended in an error (most frequent, 2 failed"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("nothing limited the run"), "{}", run.stdout);
    // Every line also in the JSON lines, as `log` lines: 10 stdout, 10 stderr, the panic's.
    let logs: Vec<Value> = run
        .file("run.jsonl")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "log")
        .collect();
    assert_eq!(logs.len(), 21, "{logs:?}");
    assert_eq!(logs.iter().filter(|l| l["stream"] == "stdout").count(), 10);
    assert!(logs.iter().any(|l| l["iteration"] == 3 && l["line"].as_str().unwrap().starts_with(panic)));
    assert_identity(&s);
}

#[test]
fn plugin_output_none_prints_nothing_and_file_gets_every_line() {
    let quiet = Loadhost::run_plugin(&plugin(Example::Debugging), &["-n", "10", "--plugin-output", "none"]);
    assert_eq!(quiet.code, 0, "{}", quiet.stderr);
    assert!(!quiet.stderr.contains("debug: starting") && !quiet.stderr.contains("note: worker"), "{}", quiet.stderr);
    // The trap still explains itself: that is the host's report, not the plugin's output.
    assert!(quiet.stderr.contains("panicked at debugging/src/lib.rs:"), "{}", quiet.stderr);

    let filed = Loadhost::run_plugin(&plugin(Example::Debugging), &["-n", "300", "--plugin-output", "file=lines.txt"]);
    assert_eq!(filed.code, 0, "{}", filed.stderr);
    assert!(!filed.stderr.contains("debug: starting"), "a file, not the log: {}", filed.stderr);
    let text = filed.file("lines.txt");
    let lines: Vec<&str> = text.lines().collect();
    // Every line, past the log's 100: 300 stdout, 300 stderr and the panic's.
    assert_eq!(lines.len(), 601, "{}", &text[..text.len().min(2000)]);
    let line = lines.iter().find(|l| l.ends_with("debug: starting iteration 250")).unwrap();
    assert!(line.contains("[default, worker ") && line.contains("iteration 250] stdout "), "{line}");
    assert!(line.starts_with("20") && line.contains('T'), "a timestamp first: {line}");
}

#[test]
fn a_plugin_printing_a_megabyte_per_task_is_rate_limited_and_bounded_in_memory() {
    let peak = |tasks: &str| {
        let run = Loadhost::run_plugin(&plugin(Example::Debugging), &["-n", tasks, "-e", "PRINT_BYTES=1000000"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let shown = run.stderr.lines().filter(|l| l.contains("[worker ")).count();
        assert!(shown <= 100, "the log shows the first 100 lines, not {shown}");
        assert!(run.stderr.contains("[cut at 64 KiB]"), "a 1 MB line is cut");
        assert!(run.stderr.contains("plugin lines in all were not shown (the first 100 were)"), "{}", run.stderr);
        run.summary()["host"]["peak_rss_mb"].as_f64().unwrap()
    };
    let (few, many) = (peak("200"), peak("5000"));
    // 5,000 MB printed: memory does not grow with it (each line is held until its newline, at most
    // 64 KiB of it).
    assert!(many < few + 16.0, "peak RSS {few:.1} MB after 200 tasks, {many:.1} MB after 5,000");
}

#[test]
fn merging_two_segments_adds_their_errors_exactly() {
    let whole = Loadhost::run_plugin(&plugin(Example::Debugging), &["-n", "40", "--plugin-output", "none"]);
    let expected = groups(&whole.summary());
    let dir = tempfile::tempdir().unwrap();
    let mut parts = Vec::new();
    for i in 0..2 {
        let results = dir.path().join(format!("part{i}.lhr"));
        let segment = format!("{i}/2");
        let args =
            ["-n", "40", "--plugin-output", "none", "--segment", &segment, "--results", results.to_str().unwrap()];
        let part = Loadhost::run_plugin(&plugin(Example::Debugging), &args);
        assert_eq!(part.code, 0, "{}", part.stderr);
        parts.push(results);
    }
    let merged = dir.path().join("merged.json");
    let run = Loadhost::new()
        .args([
            "merge".as_ref(),
            parts[0].as_os_str(),
            parts[1].as_os_str(),
            "--summary-json".as_ref(),
            merged.as_os_str(),
        ])
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(groups(&summary), expected, "the merged table is the single run's");
    assert_eq!(groups(&summary).iter().map(|g| g.2).sum::<u64>(), 17, "8 × 503, 8 timeouts, 1 trap");
}

#[test]
fn every_task_failing_is_named_in_the_verdict_and_a_failed_threshold_never_held() {
    let run = Loadhost::run_plugin(&plugin(Example::Flaky), &["-n", "50", "-e", "FAIL_PCT=100"]);
    assert!(
        run.stdout.contains("verdict: 100.0% of tasks ended in an error (most frequent, 50 retryable"),
        "{}",
        run.stdout
    );
    assert!(run.summary()["verdict"]["why"].as_str().unwrap().contains("100.0% of tasks ended in an error"));

    let args = ["-n", "5", "--metric", "journey_ms:trend", "--threshold", "journey_ms:p(99)<100"];
    let run = Loadhost::run_plugin(&plugin(Example::Noop), &args);
    assert_eq!(run.code, 99, "{}", run.stderr);
    assert!(!run.stdout.contains("every threshold held"), "{}", run.stdout);
    assert!(run.stdout.contains("verdict: journey_ms:p(99)<100 failed: no samples"), "{}", run.stdout);
}

#[test]
fn python_and_javascript_exceptions_are_in_the_errors_table() {
    let debugging = [
        ("python", Example::DebuggingPython, "app.py", "IndexError"),
        ("js", Example::DebuggingJs, "plugin.js", "TypeError"),
    ];
    for (lang, example, file, kind) in debugging {
        let Some(fixture) = twin(lang, example) else { continue };
        let run = Loadhost::run_plugin(&fixture, &["-n", "10"]);
        assert_eq!(run.code, 0, "{lang}: {}", run.stderr);
        assert!(run.stderr.contains("[worker 0, iteration 0] debug: starting iteration 0"), "{lang}: {}", run.stderr);
        let s = run.summary();
        let errors = s["errors"].as_array().unwrap();
        let exception = errors.iter().find(|e| e["iteration"] == 3).unwrap_or_else(|| panic!("{lang}: {errors:?}"));
        let text = exception["example"].as_str().unwrap();
        assert!(text.starts_with(kind) && text.contains(&format!("({file}:")), "{lang}: {text}");
        let counted: u64 = errors.iter().map(|e| e["count"].as_u64().unwrap()).sum();
        assert_eq!(counted, task_count(&s, "failed") + task_count(&s, "trapped"), "{lang}: {errors:?}");
        assert_eq!(errors.len(), 3, "{lang}: two kinds of failure and the exception: {errors:?}");
    }
}

#[test]
fn http_debug_shows_requests_and_responses_with_credentials_redacted() {
    let target = crate::target_process::TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/echo", target.url);
    let args = ["-e", &url, "-e", "AUTH_TOKEN=s3cr3t-token", "--allow-host", &target.authority];
    let run = Loadhost::run_plugin(
        &plugin(Example::HttpPostJson),
        &[&args[..], &["-n", "200", "--http-debug=full"]].concat(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The URL came with -e, so it is redacted like every -e value the plugin's requests carry.
    assert!(run.stderr.contains("[worker 0, iteration 0] > POST [redacted]"), "{}", run.stderr);
    assert!(run.stderr.contains("authorization: [redacted]"), "{}", run.stderr);
    assert!(!run.stderr.contains("s3cr3t-token"), "the credential never shows: {}", run.stderr);
    assert!(!run.stderr.contains(&format!("{}/echo", target.url)), "{}", run.stderr);
    assert!(run.stderr.contains("[worker 0, iteration 0] < 200 [redacted] ("), "{}", run.stderr);
    // =full shows the bodies: the JSON document going out and coming back.
    assert_eq!(run.stderr.matches(r#"{"scenario":"default","worker":0,"iteration":0,"attempt":0}"#).count(), 2);
    // The first of 400 exchanges' halves are shown, then only counted.
    let shown = run.stderr.matches("] > POST ").count() + run.stderr.matches("] < 200 ").count();
    assert_eq!(shown, 100, "the log's budget: {}", run.stderr.len());
    assert!(run.stderr.contains("300 plugin lines in all were not shown"), "{}", run.stderr);

    // Without =full, no bodies.
    let run = Loadhost::run_plugin(&plugin(Example::HttpPostJson), &[&args[..], &["--http-debug", "-n", "2"]].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("] > POST ") && !run.stderr.contains(r#"{"scenario""#), "{}", run.stderr);
}
