//! The open model with real plugins: exact schedules, drops, queueing.

use crate::common::{Example, Loadhost, assert_identity, assert_ok, plugin, task_count};

#[test]
fn noop_at_2000_per_second_schedules_exactly_and_drops_nothing() {
    let run = Loadhost::run_plugin(&plugin(Example::Noop), &["-r", "2000", "-d", "2s"]);
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "scheduled"), 4000);
    assert_eq!(task_count(&s, "passed"), 4000);
    assert_eq!(task_count(&s, "dropped"), 0);
    // Tasks are never released early, so the rate never beats the plan; it falls short only by
    // how late the host released the last ones (the pacer's lag, longer on a busy machine).
    let achieved = s["rate"]["achieved_per_s"].as_f64().unwrap();
    let lag_s = s["lag"]["max_ms"].as_f64().unwrap() / 1000.0;
    let floor = 4000.0 / (2.0 + lag_s + 0.02);
    assert!(achieved <= 2000.0 + 1e-6 && achieved >= floor, "achieved {achieved}/s, lag max {lag_s} s");
    assert_eq!(s["rate"]["target_per_s"].as_f64(), Some(2000.0));
    assert_identity(&s);
}

#[test]
fn a_ramp_schedules_the_integral_of_the_rate() {
    let run = Loadhost::run_plugin(&plugin(Example::Noop), &["--rate", "0", "--stage", "2s:1000"]);
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "scheduled"), 1000, "0→1000/s over 2 s is 1000 tasks");
    assert_identity(&s);
}

#[test]
fn iterations_cap_an_open_schedule() {
    let run = Loadhost::run_plugin(&plugin(Example::Noop), &["-r", "1000", "-n", "500"]);
    assert_ok(&run);
    assert_eq!(task_count(&run.summary(), "scheduled"), 500);
}

#[test]
fn drop_overload_counts_what_the_crew_could_not_take() {
    // 5 workers × 50 ms = 100 tasks/s of capacity against 200/s.
    let args = ["-e", "SLEEP_MS=50", "-r", "200", "-d", "2s", "--max-workers", "5", "--overload", "drop"];
    let run = Loadhost::run_plugin(&plugin(Example::Sleep), &args);
    assert_ok(&run);
    let s = run.summary();
    let (dropped, passed) = (task_count(&s, "dropped"), task_count(&s, "passed"));
    assert_eq!(task_count(&s, "scheduled"), 400);
    // Each worker ends at most one 50 ms task per 50 ms of the run (a busy machine only fewer),
    // so at most about half the 400 pass and the rest are dropped, never queued.
    let most = 5 * ((s["duration_s"].as_f64().unwrap() * 1000.0 / 50.0).ceil() as u64 + 1);
    assert!(passed > 0 && passed <= most, "passed {passed}, at most {most}");
    assert_eq!(dropped + passed, 400, "dropped {dropped}, passed {passed}: {}", s["tasks"]);
    // Drop mode never queues: a task waits only as long as the host was late releasing it (the
    // pacer's lag, which a busy machine makes longer), never for a worker, which would add up to a
    // 50 ms task per place in the queue (see the queue test, where the wait passes a second).
    let (wait_p99, lag_max) = (s["wait_ms"]["p99"].as_f64().unwrap(), s["lag"]["max_ms"].as_f64().unwrap());
    assert!(wait_p99 < lag_max + 25.0, "drop mode never queues: wait p99 {wait_p99} ms, lag max {lag_max} ms");
    assert_identity(&s);
}

#[test]
fn queue_overload_drops_nothing_and_latency_includes_the_wait() {
    let args = ["-e", "SLEEP_MS=50", "-r", "200", "-d", "2s", "--max-workers", "5", "--overload", "queue"];
    let run = Loadhost::run_plugin(&plugin(Example::Sleep), &args);
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "dropped"), 0);
    assert_eq!(task_count(&s, "passed"), 400);
    let wait_max = s["wait_ms"]["max"].as_f64().unwrap();
    let latency_max = s["latency_ms"]["max"].as_f64().unwrap();
    assert!(wait_max > 1000.0, "the backlog must show as wait: {wait_max} ms");
    assert!(latency_max >= wait_max + 40.0, "latency {latency_max} must include the wait {wait_max}");
    assert_identity(&s);
}

#[test]
fn the_crew_grows_to_the_load_and_retires_after_it_drops() {
    // 1,000/s of 50 ms tasks needs about 50 workers; then 10/s needs one.
    let args = ["-e", "SLEEP_MS=50", "-w", "2", "--max-workers", "200", "--overload", "queue"];
    let stages =
        ["--rate", "0", "--stage", "100ms:1000", "--stage", "2s:1000", "--stage", "100ms:10", "--stage", "10s:10"];
    let run = Loadhost::run_plugin(&plugin(Example::Sleep), &[&args[..], &stages[..]].concat());
    assert_ok(&run);
    let s = run.summary();
    let w = &s["workers"];
    let (peak, last, grown, retired) = (
        w["peak"].as_u64().unwrap(),
        w["final"].as_u64().unwrap(),
        w["grown"].as_u64().unwrap(),
        w["retired"].as_u64().unwrap(),
    );
    // Little's law: 1,000/s of tasks that take at least 50 ms keep at least 50 in flight, so the
    // crew must grow well past -w 2; a busy machine makes tasks slower and the crew larger, but
    // never past --max-workers.
    assert!((40..=200).contains(&peak), "peak {peak}: at least about 50 needed, at most 200 allowed");
    assert!(grown + 2 >= peak, "the crew got to its peak by growing: grown {grown}, peak {peak}");
    // Workers come and go only by growing and retiring (replacements keep the count).
    assert_eq!(last, 2 + grown - retired, "final = -w + grown - retired");
    assert!(last <= 12 && retired >= 30, "after the drop the surplus retires: final {last}, retired {retired}");
    assert!(w["min"].as_u64().unwrap() >= 2, "never below -w");
    assert_eq!(task_count(&s, "dropped"), 0);
    assert_identity(&s);
}

#[test]
fn retries_take_rate_slots_so_the_target_sees_only_the_rate() {
    let args = [
        "-e",
        "FAIL_PCT=30",
        "--retries",
        "3",
        "--retry-backoff",
        "1ms",
        "--retry-budget",
        "100",
        "-r",
        "1000",
        "-d",
        "2s",
    ];
    let run = Loadhost::run_plugin(&plugin(Example::Flaky), &[&args[..], &["--overload", "queue"]].concat());
    assert_ok(&run);
    let s = run.summary();
    let (scheduled, retries) = (task_count(&s, "scheduled"), task_count(&s, "retries"));
    let attempts = s["attempts"]["total"].as_u64().unwrap();
    // 2,000 slots shared by fresh tasks and retries; the flush after the schedule adds a few.
    assert!((2000..=2030).contains(&attempts), "attempts {attempts}");
    assert!(
        scheduled < 1500 && retries > 500,
        "retries took slots from fresh tasks: {scheduled} fresh, {retries} retries"
    );
    let failed_ratio = task_count(&s, "failed") as f64 / scheduled as f64;
    assert!(failed_ratio < 0.02, "failed {failed_ratio}");
    assert_identity(&s);
}

#[test]
fn poisson_arrivals_are_seeded_recorded_and_repeatable() {
    let args = ["--arrivals", "poisson", "--seed", "7", "-r", "200", "-d", "1s"];
    let runs: Vec<_> = (0..2).map(|_| Loadhost::run_plugin(&plugin(Example::Noop), &args)).collect();
    let mut counts = Vec::new();
    for run in &runs {
        assert_ok(run);
        let s = run.summary();
        assert_eq!((s["arrivals"].as_str(), s["seed"].as_u64()), (Some("poisson"), Some(7)), "recorded");
        assert_eq!((s["config"]["arrivals"].as_str(), s["config"]["seed"].as_u64()), (Some("poisson"), Some(7)));
        assert!(run.stderr.contains("seed 7, poisson arrivals"), "logged: {}", run.stderr);
        // A random count has no exact plan to fall short of: no target rate, no emitter verdict.
        assert!(s["rate"]["target_per_s"].is_null(), "{}", s["rate"]);
        let printed = format!("{}{}", run.stdout, run.stderr);
        assert!(printed.contains("open model: about 200 tasks"), "{printed}");
        assert_identity(&s);
        counts.push(task_count(&s, "scheduled"));
    }
    assert_eq!(counts[0], counts[1], "the same seed schedules the same count");
    // Poisson(200): within 4σ of the mean.
    assert!(counts[0].abs_diff(200) < 57, "{} scheduled", counts[0]);
    // Without the flags: even arrivals, and a seed drawn, recorded and logged all the same.
    let even = Loadhost::run_plugin(&plugin(Example::Noop), &["-r", "200", "-d", "1s"]);
    assert_ok(&even);
    let s = even.summary();
    assert_eq!((s["arrivals"].as_str(), task_count(&s, "scheduled")), (Some("even"), 200));
    let seed = s["seed"].as_u64().expect("a drawn seed");
    assert!(even.stderr.contains(&format!("seed {seed}, even arrivals")), "{}", even.stderr);
}
