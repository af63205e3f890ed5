//! `--data`: one row per task, shared, once or looping.

use crate::common::{Fixture, Loadhost, assert_identity, assert_ok, fixture, task_count};

fn sum_below(n: u64) -> u64 {
    n * (n - 1) / 2
}

#[test]
fn a_once_feed_of_10000_rows_runs_each_row_exactly_once() {
    let cmd = Loadhost::new();
    let rows: String = (0..10_000).map(|n| format!("{{\"n\": {n}}}\n")).collect();
    std::fs::write(cmd.path().join("rows.jsonl"), rows).unwrap();
    // No duration and no -n: the rows bound the run.
    let run = cmd
        .arg_run(
            &fixture(Fixture::FeedSum),
            &["--data", "rows.jsonl", "--data-mode", "once", "-r", "5000", "--overload", "queue"],
        )
        .run();
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "scheduled"), 10_000);
    assert_eq!(task_count(&s, "passed"), 10_000, "{}", run.stderr);
    assert_eq!(s["metrics"]["rows"]["count"], 10_000);
    assert_eq!(s["metrics"]["row_sum"]["count"].as_u64(), Some(sum_below(10_000)), "each row once");
    assert_identity(&s);
}

#[test]
fn a_looping_feed_wraps_around() {
    let cmd = Loadhost::new();
    std::fs::write(cmd.path().join("rows.csv"), "n,name\n0,a\n1,b\n2,c\n3,d\n").unwrap();
    let run = cmd.arg_run(&fixture(Fixture::FeedSum), &["--data", "rows.csv", "-n", "10", "-w", "2"]).run();
    assert_ok(&run);
    let s = run.summary();
    // Rows 0 1 2 3 0 1 2 3 0 1.
    assert_eq!(s["metrics"]["row_sum"]["count"].as_u64(), Some(2 * 6 + 1));
    assert_eq!(task_count(&s, "passed"), 10);
}

#[test]
fn a_bad_data_file_is_refused_before_any_load() {
    let cmd = Loadhost::new();
    std::fs::write(cmd.path().join("rows.jsonl"), "{\"n\": 1}\nnot json\n").unwrap();
    let run = cmd.arg_run(&fixture(Fixture::FeedSum), &["--data", "rows.jsonl", "-n", "5"]).run();
    assert_eq!(run.code, 2);
    assert!(run.stderr.trim().starts_with("error: --data rows.jsonl:2: not JSON"), "{}", run.stderr);
}
