//! The closed model, failures, traps and aborts with real plugins.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::{Example, Loadhost, Run, assert_identity, assert_ok, plugin, task_count};

#[test]
fn no_options_runs_one_task_on_one_worker() {
    let run = Loadhost::run_plugin(&plugin(Example::Noop), &[]);
    assert_ok(&run);
    let s = run.summary();
    assert_eq!((task_count(&s, "scheduled"), task_count(&s, "passed")), (1, 1));
    assert!(s["rate"]["target_per_s"].is_null(), "the closed model has no target rate");
}

#[test]
fn a_trap_every_10th_task_of_1000_traps_100_and_the_run_goes_on() {
    let run = Loadhost::run_plugin(&plugin(Example::Trap), &["-e", "TRAP_EVERY=10", "-n", "1000", "-w", "2"]);
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "trapped"), 100);
    assert_eq!(task_count(&s, "passed"), 900);
    assert_eq!(s["workers"]["replaced"].as_u64(), Some(100));
    assert_eq!(s["workers"]["final"].as_u64(), Some(2));
    assert!(run.stderr.contains("trapped"), "the first trap is logged: {}", run.stderr);
    assert_identity(&s);
}

#[test]
fn flaky_failures_are_counted_as_failed() {
    let run = Loadhost::run_plugin(
        &plugin(Example::Flaky),
        &["-e", "FAIL_PCT=30", "-e", "FATAL_PCT=10", "-n", "2000", "-w", "2"],
    );
    assert_ok(&run);
    let s = run.summary();
    let failed = task_count(&s, "failed");
    // 40% of 2000 tasks fail (30% retryable, 10% fatal; no retries yet).
    assert!((700..=900).contains(&failed), "failed {failed}");
    assert_eq!(task_count(&s, "retries"), 0);
    assert_identity(&s);
}

#[test]
fn a_closed_run_for_a_duration_stops_on_time() {
    let run = Loadhost::run_plugin(&plugin(Example::Sleep), &["-e", "SLEEP_MS=20", "-w", "4", "-d", "1s"]);
    assert_ok(&run);
    let s = run.summary();
    let scheduled = task_count(&s, "scheduled");
    let seconds = s["duration_s"].as_f64().unwrap();
    // It ran the whole second. Each of the 4 loops claims a 20 ms task at a time, so it cannot claim
    // more than one per 20 ms of the run (plus one at the end): a busy machine only makes the loops
    // slower, or the deadline late, which the measured duration includes.
    assert!(seconds >= 1.0, "{seconds} s");
    let ceiling = 4 * ((seconds * 50.0).ceil() as u64 + 1);
    assert!((4..=ceiling).contains(&scheduled), "scheduled {scheduled} in {seconds} s");
    // It stopped claiming at the deadline and let the tasks under way end.
    assert!(s["stopped"].is_null(), "it ended by its duration: {}", s["stopped"]);
    assert_eq!(task_count(&s, "passed"), scheduled, "nothing cut at the deadline: {}", s["tasks"]);
    assert_identity(&s);
}

#[test]
fn the_gate_holds_eight_workers_to_two_tasks_at_a_time() {
    // 200 tasks of 20 ms: 8 workers finish in ~0.5 s; through a gate of 2 they need ~2 s.
    let run = Loadhost::run_plugin(
        &plugin(Example::Sleep),
        &["-e", "SLEEP_MS=20", "-w", "8", "-n", "200", "--max-in-flight", "2"],
    );
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "passed"), 200);
    let seconds = s["duration_s"].as_f64().unwrap();
    assert!(seconds > 1.9, "the gate must serialise to 2 at a time: {seconds} s");
    assert!(s["gate_wait_ms"]["p50"].as_f64().unwrap() > 10.0, "waiting at the gate shows: {}", s["gate_wait_ms"]);
    assert!(run.stdout.contains("gate_wait_ms"), "{}", run.stdout);
}

#[test]
fn flaky_with_three_retries_fails_about_a_third_to_the_fourth() {
    let args = ["-e", "FAIL_PCT=30", "--retries", "3", "--retry-backoff", "1ms", "-w", "4", "-n", "20000"];
    let run = Loadhost::run_plugin(&plugin(Example::Flaky), &args);
    assert_ok(&run);
    let s = run.summary();
    let (scheduled, failed, retries) =
        (task_count(&s, "scheduled"), task_count(&s, "failed"), task_count(&s, "retries"));
    assert_eq!(scheduled, 20000);
    let ratio = failed as f64 / scheduled as f64;
    // 0.3⁴ = 0.81%; the binomial spread over 20,000 tasks is about ±0.13 points (2σ).
    assert!((0.0055..0.0110).contains(&ratio), "failed {failed} of {scheduled}");
    // Expected extra attempts per task: 0.3 + 0.09 + 0.027 = 0.417.
    assert!((0.39..0.44).contains(&(retries as f64 / scheduled as f64)), "retries {retries}");
    assert_eq!(s["attempts"]["total"].as_u64(), Some(scheduled + retries));
    assert_identity(&s);
}

#[test]
fn stages_without_a_rate_ramp_the_workers() {
    let run = Loadhost::run_plugin(
        &plugin(Example::Sleep),
        // Tasks of 100 ms: 20 workers start about 200 a second, few enough that the number of
        // workers, not a busy machine's CPU, bounds each second's work (at 10 ms, 2,000 a second
        // leaned on the CPU, and the steady second of a loaded machine looked like a ramp's).
        &["-e", "SLEEP_MS=100", "--stage", "1s:20", "--stage", "1s:20", "--stage", "1s:0", "--csv", "rows.csv"],
    );
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(s["workers"]["peak"].as_u64(), Some(20));
    assert!(s["rate"]["target_per_s"].is_null(), "a closed model");
    assert!(run.stdout.contains("closed model"));
    let rows = run.file("rows.csv");
    // The worker count sampled at a row's end may already have reached the stage's target, so the
    // ramp is judged by work started: a 0→20 ramp averages 10 workers, half of a steady 20.
    let started: Vec<u64> = rows
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("interval"))
        .map(|l| l.split(',').nth(4).unwrap().parse().unwrap())
        .collect();
    assert!(started.len() >= 3, "three stages, three rows: {started:?}");
    let steady = started[1] as f64;
    assert!((started[0] as f64) < 0.75 * steady, "ramping up starts about half as much: {started:?}");
    assert!((started[2] as f64) < 0.75 * steady, "ramping down starts about half as much: {started:?}");
    assert_identity(&s);
}

#[test]
fn a_run_that_logs_more_than_a_pipe_holds_ends_while_the_test_waits() {
    // Trace logging writes about half a KiB per worker made: 300 workers log far more than a pipe's
    // 64 KiB. The harness reads the child's output as it comes, so the run is never blocked on a
    // full pipe while the test waits for the CSV's footer.
    let args = ["-w", "300", "-n", "300", "--csv", "rows.csv"];
    let mut running = Loadhost::new().env("RUST_LOG", "trace").arg_run(&plugin(Example::Noop), &args).spawn();
    running.wait_for_file("rows.csv", |csv| csv.lines().last().is_some_and(|l| l.starts_with("# end")));
    let run = running.finish();
    assert_ok(&run);
    assert!(run.stderr.len() > 64 << 10, "the run logged more than a pipe holds: {} bytes", run.stderr.len());
    assert_eq!(task_count(&run.summary(), "passed"), 300);
}

/// When each worker's tasks printed their first line (ms since the epoch, from the JSON lines'
/// `log` lines), in the order the worker ran them (its claims' iterations only grow): the
/// `debugging` example prints it as its task starts, and the host stamps a line as it is written,
/// so each stamp lies between its task's start and end. Its iteration 3 traps, and the worker that
/// takes over has an id of its own but carries on the same loop (and its pace): the tasks of an
/// id are the later part of one worker's.
fn printed_by_worker(run: &Run) -> BTreeMap<u64, Vec<u64>> {
    let mut tasks: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for line in run.file("lines.jsonl").lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["type"] != "log" || v["stream"] != "stdout" {
            continue;
        }
        let (worker, iteration) = (v["worker"].as_u64().unwrap(), v["iteration"].as_u64().unwrap());
        tasks.entry(worker).or_default().push((iteration, epoch_ms(&v["time"])));
    }
    tasks
        .into_iter()
        .map(|(worker, mut printed)| {
            printed.sort_unstable();
            (worker, printed.into_iter().map(|(_, at)| at).collect())
        })
        .collect()
}

/// An RFC 3339 time of the outputs (milliseconds, truncated) as ms since the epoch.
fn epoch_ms(time: &Value) -> u64 {
    let text = time.as_str().unwrap_or_else(|| panic!("a time: {time}"));
    let at = humantime::parse_rfc3339(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    at.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

/// A worker may not start more tasks than its spacing leaves room for in the measured duration (a
/// busy machine only makes it fewer; the duration includes any lateness at the deadline).
#[track_caller]
fn assert_at_most_one_per(spacing_ms: u64, printed: &BTreeMap<u64, Vec<u64>>, summary: &Value) {
    let duration_ms = (summary["duration_s"].as_f64().unwrap() * 1000.0).ceil() as u64;
    let most = duration_ms / spacing_ms + 1;
    for (worker, times) in printed {
        assert!(times.len() as u64 <= most, "worker {worker}: {} tasks in {duration_ms} ms", times.len());
    }
    let printed: usize = printed.values().map(Vec::len).sum();
    assert_eq!(printed as u64, task_count(summary, "scheduled"), "one line per task");
}

#[test]
fn pace_and_think_space_each_workers_tasks() {
    let debugging = plugin(Example::Debugging);
    let out = ["--out", "json=lines.jsonl", "--plugin-output", "none"];
    // Two workers paced at 100 ms for 2 s: a worker's task k is meant to start k × 100 ms after
    // its first was due (at the start or later), and never starts before that.
    let run = Loadhost::run_plugin(&debugging, &[&["-w", "2", "-d", "2s", "--pace", "100ms"][..], &out].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let s = run.summary();
    assert_eq!(s["config"]["pace"], "100ms");
    let started = epoch_ms(&s["started_at"]);
    let printed = printed_by_worker(&run);
    assert!(printed.len() >= 2, "both workers ran: {printed:?}");
    for (worker, times) in &printed {
        for (k, &at) in times.iter().enumerate() {
            // Both stamps are truncated to the millisecond: 1 ms of slack, never more.
            let after = at as i64 - started as i64;
            assert!(after + 1 >= 100 * k as i64, "worker {worker}'s task {k} at {after} ms: {printed:?}");
        }
    }
    assert_at_most_one_per(100, &printed, &s);

    // One worker thinking 200 ms between tasks for 2 s: a task starts at least 200 ms after the
    // one before ended, so its line at least 200 ms after the one before was printed.
    let run =
        Loadhost::run_plugin(&debugging, &[&["-w", "1", "-d", "2s", "--think", "200ms..200ms"][..], &out].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let printed = printed_by_worker(&run);
    // One loop at a time, whatever ids the trap gave it: its tasks in order of their stamps.
    let mut times: Vec<u64> = printed.values().flatten().copied().collect();
    times.sort_unstable();
    assert!(!times.is_empty(), "{printed:?}");
    for pair in times.windows(2) {
        assert!(pair[1] - pair[0] + 1 >= 200, "tasks {} ms apart: {times:?}", pair[1] - pair[0]);
    }
    assert_at_most_one_per(200, &printed, &run.summary());
}
