//! Ctrl-C and SIGTERM: the run stops releasing tasks, gives the ones under way `--grace`, counts
//! the rest as interrupted, writes every output and exits 130. A second signal skips the grace.
//!
//! A busy machine can delay any step by seconds, so time is judged against what the run would
//! have taken otherwise (the grace, the tasks' own length, the unstopped run), never a tight bound.

use std::time::{Duration, Instant};

use crate::common::{Example, Loadhost, Run, Running, assert_identity, plugin, task_count};

/// `sleep` taking `sleep_ms` per task at 50/s for 60 s, with the CSV and the summary JSON.
fn start(sleep_ms: u64, grace: &str) -> Running {
    let sleep = format!("SLEEP_MS={sleep_ms}");
    let args = ["-e", &sleep, "-r", "50", "-d", "60s", "--grace", grace, "--csv", "rows.csv"];
    let mut running = Loadhost::new().arg_run(&plugin(Example::Sleep), &args).spawn();
    // Two interval rows: the load is well under way.
    running.wait_for_file("rows.csv", |csv| csv.lines().filter(|l| !l.starts_with('#')).count() >= 3);
    running
}

/// No task of 20 s ended but by the stop: each was interrupted, or dropped when it came due with
/// no idle worker (the crew grows on demand, and a busy machine can leave it a step behind).
fn assert_cut_short(s: &serde_json::Value) {
    let (interrupted, dropped) = (task_count(s, "interrupted"), task_count(s, "dropped"));
    assert_eq!(interrupted + dropped, task_count(s, "scheduled"), "{}", s["tasks"]);
    assert!(interrupted > 0, "{}", s["tasks"]);
}

/// The outputs a stopped run must still have written in full.
fn assert_complete_outputs(run: &Run) {
    assert_eq!(run.code, 130, "stderr: {}", run.stderr);
    let s = run.summary();
    assert!(s["stopped"].as_str().is_some_and(|why| why.contains("interrupted")), "{}", s["stopped"]);
    assert_identity(&s);
    let csv = run.file("rows.csv");
    let footer = csv.lines().last().unwrap_or_default();
    assert!(footer.starts_with('#'), "the CSV ends with its footer: {footer}");
    let rows_scheduled: u64 = csv
        .lines()
        .skip_while(|l| l.starts_with('#'))
        .skip(1)
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(',').nth(3).and_then(|v| v.parse::<u64>().ok()).expect("a scheduled column"))
        .sum();
    assert_eq!(rows_scheduled, task_count(&s, "scheduled"), "the rows add up to the summary");
    assert!(run.stdout.contains("every scheduled task is accounted for"), "{}", run.stdout);
}

#[test]
fn sigint_lets_tasks_under_way_finish_within_the_grace() {
    let running = start(500, "5s");
    running.signal(libc::SIGINT);
    let run = running.finish();
    assert_complete_outputs(&run);
    let s = run.summary();
    // Every task that started finishes within the grace; only tasks that never started (released at
    // the moment of the signal, or dropped for want of an idle worker) end otherwise.
    let (scheduled, started, passed) =
        (task_count(&s, "scheduled"), task_count(&s, "started"), task_count(&s, "passed"));
    assert_eq!(passed, started, "{}", s["tasks"]);
    let never_started = task_count(&s, "interrupted") + task_count(&s, "dropped");
    assert_eq!(never_started, scheduled - started, "{}", s["tasks"]);
    assert!(scheduled < 60 * 50, "nothing is released after the signal");
    assert!(run.stderr.contains("press Ctrl-C again"), "{}", run.stderr);
}

#[test]
fn sigterm_interrupts_what_outlasts_the_grace() {
    let running = start(20_000, "1s");
    let sent = Instant::now();
    running.signal(libc::SIGTERM);
    let run = running.finish();
    let took = sent.elapsed();
    assert_complete_outputs(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "passed"), 0, "{}", s["tasks"]);
    assert_cut_short(&s);
    // The grace is waited out, the 20 s tasks are not (none passed), and the 60 s run is cut short.
    assert!(took >= Duration::from_secs(1), "the 1 s grace is waited out: {took:?}");
    assert!(took < Duration::from_secs(60), "less than the unstopped run: {took:?}");
}

#[test]
fn a_second_sigint_skips_the_grace() {
    let running = start(20_000, "60s");
    let sent = Instant::now();
    running.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    running.signal(libc::SIGINT);
    let run = running.finish();
    let took = sent.elapsed();
    assert_complete_outputs(&run);
    // With the 60 s grace honoured the 20 s tasks would have run to their end and passed: none did,
    // and the run ended before the grace would have.
    let s = run.summary();
    assert_eq!(task_count(&s, "passed"), 0, "{}", s["tasks"]);
    assert_cut_short(&s);
    assert!(took < Duration::from_secs(60), "no 60 s grace after the second signal: {took:?}");
    assert!(run.stderr.contains("stopping at once"), "{}", run.stderr);
}

#[test]
fn sigint_stops_find_max_and_still_writes_its_report() {
    // One long step, stopped well inside it: a busy machine cannot end the search first (a
    // short step could be judged "emitter" under load and end the search before the signal).
    let args = ["find-max", "--start", "50", "--step-duration", "60s", "--slo", "latency_ms:p(99)<1000"];
    let running =
        Loadhost::new().args(args).args([plugin(Example::Noop)]).args(["--summary-json", "search.json"]).spawn();
    std::thread::sleep(Duration::from_secs(3));
    running.signal(libc::SIGINT);
    let started = Instant::now();
    let run = running.finish();
    assert_eq!(run.code, 130, "stderr: {}", run.stderr);
    assert!(started.elapsed() < Duration::from_secs(57), "the 60 s step was cut short, not run out");
    assert!(run.stdout.contains("stopped by the user before the step ended: not judged"), "{}", run.stdout);
    let search: serde_json::Value = serde_json::from_str(&run.file("search.json")).unwrap();
    assert_eq!(search["stopped_at_per_s"].as_f64(), Some(50.0), "{search}");
    assert_eq!(search["steps"].as_array().map(Vec::len), Some(0), "a step cut short is not judged: {search}");
}

#[test]
fn a_task_still_running_when_the_plan_ends_has_the_graceful_stop_and_says_where_it_was() {
    // Issue 27: one stuck request stretched a 5 s run to its 60 s task timeout, silently.
    let target = crate::target_process::TargetProcess::start(&[]);
    let url = format!("{}/delay?ms=60000", target.url);
    let args = ["http", &url, "-r", "2", "-d", "2s", "--graceful-stop", "2s", "--summary-json", "summary.json"];
    let begun = Instant::now();
    let run = Loadhost::new().args(args).run();
    assert!(begun.elapsed() < Duration::from_secs(30), "2 s of plan and 2 s of graceful stop: {:?}", begun.elapsed());
    assert_eq!(run.code, 98, "every task was cut: none passed\n{}", run.stderr);
    assert!(
        run.stderr.contains("the plan has ended; waiting for 4 tasks still running: 2s left (Ctrl-C to stop now)"),
        "{}",
        run.stderr
    );
    let cut = "4 tasks still running when --graceful-stop (2s) ran out end as interrupted: worker ";
    assert!(run.stderr.contains(cut), "{}", run.stderr);
    assert!(run.stderr.contains(&format!("for GET {url}")), "the request each task was in: {}", run.stderr);
    let s = run.summary();
    assert_eq!((task_count(&s, "scheduled"), task_count(&s, "interrupted")), (4, 4), "{}", s["tasks"]);
    assert!(s["duration_s"].as_f64().unwrap() < 5.0, "{}", s["duration_s"]);
    assert_identity(&s);
}

#[test]
fn a_timed_out_task_says_which_call_it_was_in() {
    let target = crate::target_process::TargetProcess::start(&[]);
    let url = format!("{}/delay?ms=60000", target.url);
    let run =
        Loadhost::new().args(["http", &url, "-n", "1", "--task-timeout", "1s", "--summary-json", "summary.json"]).run();
    let example = run.summary()["errors"][0]["example"].as_str().unwrap_or_default().to_owned();
    assert!(example.starts_with("still running after 1s (--task-timeout), waiting 1."), "{example}");
    assert!(example.ends_with(&format!(" s for GET {url}")), "{example}");
}

/// The interval lines of a results file, as JSON.
fn interval_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|mut v| v.get_mut("interval").map(serde_json::Value::take))
        .collect()
}

#[test]
fn a_killed_run_leaves_its_completed_intervals_for_merge_partial() {
    // 3 s into a 30 s run, SIGKILL (an out-of-memory kill, a CI job's hard timeout): no signal
    // handler runs, nothing is finished.
    let args = ["-r", "100", "-d", "30s", "--results", "part.lhr", "--csv", "rows.csv"];
    let mut running = Loadhost::new().arg_run(&plugin(Example::Noop), &args).spawn();
    running.wait_for_file("rows.csv", |csv| csv.lines().filter(|l| !l.starts_with('#')).count() >= 4);
    running.signal(libc::SIGKILL);
    let run = running.finish();
    assert_eq!(run.code, -1, "killed by the signal: {}", run.stderr);
    let text = run.file("part.lhr");
    let intervals = interval_lines(&text);
    assert!(intervals.len() >= 2, "the intervals completed before the kill are in the file: {} bytes", text.len());
    assert!(!text.lines().any(|l| l.starts_with("{\"end\"")), "no end line: the run never finished");
    let sum =
        |key: &str| -> u64 { intervals.iter().map(|i| i["window"]["counts"][key].as_u64().expect("a count")).sum() };

    let merge = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_loadhost"))
            .arg("merge")
            .arg("part.lhr")
            .args(extra)
            .current_dir(run.dir.path())
            .output()
            .expect("merge runs")
    };
    // Without --partial, refused: one line naming the file and the flag that merges it.
    let refused = merge(&["--summary-json", "refused.json"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("part.lhr") && stderr.contains("truncated") && stderr.contains("--partial"), "{stderr}");
    assert!(!run.dir.path().join("refused.json").exists(), "nothing written for a refused merge");

    // With --partial: the completed intervals, flagged as cut off.
    let merged = merge(&["--partial", "--summary-json", "merged.json", "--csv", "merged.csv"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&merged.stdout), String::from_utf8_lossy(&merged.stderr));
    assert_eq!(merged.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("part.lhr: cut off after"), "a warning names the file: {stderr}");
    assert!(stdout.contains("cut off before the end: part.lhr"), "the terminal says so: {stdout}");
    let s: serde_json::Value = serde_json::from_str(&run.file("merged.json")).expect("the summary is JSON");
    assert_eq!(s["merged"]["cut"], serde_json::json!(["part.lhr"]), "{}", s["merged"]);
    assert!(s["stopped"].as_str().is_some_and(|why| why.contains("cut off")), "{}", s["stopped"]);
    for key in ["scheduled", "passed", "failed", "dropped", "interrupted"] {
        assert_eq!(task_count(&s, key), sum(key), "tasks.{key} is the sum of the completed intervals");
    }
    // Some of the load ran in the completed intervals (how much of it, a busy machine decides).
    assert!(task_count(&s, "passed") > 0, "{}", s["tasks"]);
    let csv = run.file("merged.csv");
    let rows = csv.lines().filter(|l| !l.starts_with('#')).count() - 1;
    assert_eq!(rows, intervals.len(), "a row per completed interval");
    assert!(csv.lines().last().is_some_and(|l| l.contains("\"complete\":false")), "{csv}");
}
