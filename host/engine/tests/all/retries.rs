//! Retries: backoff with full jitter, rate slots within the budget, a bounded queue, a
//! flush with a timeout, and the identity through all of it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use loadhost_engine::{Model, Overload, Plan, RateCurve, RetryPolicy, TaskOutcome};
use loadhost_metrics::ErrorKind;
use tokio::time::Instant;

use crate::fake::{FakeFactory, assert_accounting, ms, run, secs};

fn policy(max_retries: u32, backoff: Duration, budget: f64) -> RetryPolicy {
    RetryPolicy { max_retries, backoff, budget, flush_timeout: secs(30), queue_limit: 100_000 }
}

fn open(rate: f64, duration: Duration, workers: u32, policy: RetryPolicy) -> Plan {
    let curve = RateCurve::constant(rate, Some(duration)).unwrap();
    Plan::new(Model::Open { curve, max_tasks: None, workers, max_workers: workers, overload: Overload::Queue })
        .unwrap()
        .with_retries(policy)
        .unwrap()
}

/// Fails attempts below `pass_from` as retryable; records when each attempt started.
fn failing_until(pass_from: u32, starts: Arc<Mutex<Vec<(u64, u32, Instant)>>>) -> FakeFactory {
    FakeFactory::new(move |task| {
        starts.lock().unwrap().push((task.iteration, task.attempt, Instant::now()));
        let outcome = if task.attempt < pass_from {
            TaskOutcome::Error(ErrorKind::Retryable, "try again".into())
        } else {
            TaskOutcome::Passed
        };
        (Duration::ZERO, outcome)
    })
}

#[tokio::test(start_paused = true)]
async fn a_retry_waits_a_full_jitter_backoff_then_takes_the_next_slot() {
    // Every tenth task fails once; 1 ms slots are plentiful, so a retry runs at the first slot
    // after its backoff.
    let starts: Arc<Mutex<Vec<(u64, u32, Instant)>>> = Arc::default();
    let seen = Arc::clone(&starts);
    let factory = FakeFactory::new(move |task| {
        seen.lock().unwrap().push((task.iteration, task.attempt, Instant::now()));
        let fail = task.iteration % 10 == 0 && task.attempt == 0;
        (
            Duration::ZERO,
            if fail { TaskOutcome::Error(ErrorKind::Retryable, "once".into()) } else { TaskOutcome::Passed },
        )
    });
    let plan = open(1000.0, secs(1), 20, policy(3, ms(50), 1.0));
    let (report, rows) = run(&plan, factory).await;
    let c = report.counts();
    assert_eq!(c.failed, 0);
    let failing_once = c.scheduled.div_ceil(10);
    assert_eq!(c.retries, failing_once, "every tenth task needed exactly one retry");
    assert_eq!(report.totals.attempts.total, c.scheduled + failing_once);
    assert_eq!(report.totals.attempts.retryable, failing_once);
    let starts = starts.lock().unwrap();
    let mut delays = Vec::new();
    for &(iteration, attempt, at) in starts.iter().filter(|s| s.1 == 1) {
        let first = starts.iter().find(|s| s.0 == iteration && s.1 == 0).map(|s| s.2).unwrap();
        assert_eq!(attempt, 1);
        delays.push((at - first).as_secs_f64() * 1000.0);
    }
    // Uniform in [0, 50 ms), then at most a 1 ms slot.
    assert!(delays.iter().all(|d| (0.0..52.0).contains(d)), "delays out of range: {delays:?}");
    let mean = delays.iter().sum::<f64>() / delays.len() as f64;
    assert!((18.0..33.0).contains(&mean), "full jitter averages half the ceiling: {mean}");
    assert!(delays.iter().any(|d| *d < 10.0) && delays.iter().any(|d| *d > 40.0), "jitter spreads the retries");
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn retries_take_rate_slots_but_never_more_than_the_budget() {
    // Every attempt fails: without a budget, retries would crowd out fresh tasks.
    let plan = open(100.0, secs(10), 10, policy(10, ms(1), 0.2));
    let (report, rows) = run(&plan, failing_until(u32::MAX, Arc::default())).await;
    let c = report.counts();
    // 1,000 slots in the schedule: 20% to retries, 80% to fresh tasks.
    assert!((799..=801).contains(&c.scheduled), "fresh tasks {}", c.scheduled);
    let during_schedule: u64 = rows.iter().take(10).map(|r| r.started).sum();
    assert!((995..=1002).contains(&during_schedule), "the target saw the rate, not more: {during_schedule}");
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn exhausted_retries_end_as_failed_and_the_identity_holds() {
    let plan = open(50.0, secs(1), 5, policy(3, ms(5), 1.0));
    let (report, rows) = run(&plan, failing_until(u32::MAX, Arc::default())).await;
    let c = report.counts();
    assert_eq!(c.failed, c.scheduled, "{c:?}");
    assert_eq!(c.retries, 3 * c.scheduled);
    assert_eq!(report.totals.attempts.total, 4 * c.scheduled);
    assert!(c.scheduled >= 10 && c.scheduled < 50, "retries took some of the 50 slots: {}", c.scheduled);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn retries_still_pending_when_the_flush_times_out_end_as_failed() {
    let mut policy = policy(3, secs(20), 1.0);
    policy.flush_timeout = ms(100);
    let plan = open(100.0, ms(500), 10, policy);
    let (report, rows) = run(&plan, failing_until(1, Arc::default())).await;
    let c = report.counts();
    // Backoffs of up to 20 s cannot all come due within the schedule and a 100 ms flush.
    assert!(c.failed > 10, "{c:?}");
    assert_eq!(c.passed + c.failed, c.scheduled);
    assert!(report.elapsed < secs(2), "the flush stops at its timeout: {:?}", report.elapsed);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn a_full_retry_queue_fails_the_task_at_once() {
    let mut policy = policy(3, secs(10), 1.0);
    policy.queue_limit = 1;
    policy.flush_timeout = Duration::ZERO;
    let plan = open(100.0, ms(100), 4, policy);
    let (report, rows) = run(&plan, failing_until(u32::MAX, Arc::default())).await;
    let c = report.counts();
    assert_eq!(c.scheduled, 10);
    assert_eq!(c.failed, 10, "one queued (then flushed out), nine refused: {c:?}");
    assert_eq!(c.retries, 0);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn the_closed_model_retries_in_place() {
    let plan = Plan::new(Model::Closed { workers: 2, duration: None, max_tasks: Some(100) })
        .unwrap()
        .with_retries(policy(2, ms(10), 0.2))
        .unwrap();
    let (report, rows) = run(&plan, failing_until(1, Arc::default())).await;
    let c = report.counts();
    assert_eq!((c.scheduled, c.passed, c.retries), (100, 100, 100));
    assert_eq!(report.totals.attempts.total, 200);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn closed_model_retries_end_at_the_flush_timeout_after_the_duration() {
    // Every attempt fails retryably; 50 retries with a 1 s backoff would hold the run for minutes.
    let factory = FakeFactory::new(|_| (ms(10), TaskOutcome::Error(ErrorKind::Retryable, "503".into())));
    let policy = RetryPolicy { flush_timeout: secs(2), ..policy(50, secs(1), 1.0) };
    let plan = Plan::new(Model::Closed { workers: 2, duration: Some(secs(1)), max_tasks: None })
        .unwrap()
        .with_retries(policy)
        .unwrap();
    let started = Instant::now();
    let (report, rows) = run(&plan, factory).await;
    let took = started.elapsed();
    assert!(took <= secs(1) + secs(2) + secs(2), "the duration, the flush and one backoff at most: {took:?}");
    let c = report.counts();
    assert!(c.failed >= 2, "the tasks still retrying end as failed: {c:?}");
    assert_eq!(c.passed, 0);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn a_retried_tasks_latency_runs_from_its_first_scheduled_time_to_its_last_end() {
    // Each task's first attempt fails after 50 ms, its retry passes after 50 ms: the task took
    // both attempts and the backoff between, which its latency shows; service stays per attempt.
    let factory = FakeFactory::new(|task| {
        let outcome = if task.attempt == 0 {
            TaskOutcome::Error(ErrorKind::Retryable, "503".into())
        } else {
            TaskOutcome::Passed
        };
        (ms(50), outcome)
    });
    let (report, rows) = run(&open(10.0, secs(1), 4, policy(1, ms(100), 1.0)), factory).await;
    let t = &report.totals;
    let c = report.counts();
    assert!(c.passed >= 5 && c.retries >= c.passed, "{c:?}");
    assert_eq!(t.latency.count(), c.passed + c.failed, "one latency per task that ran: {c:?}");
    assert_eq!(t.service.count(), c.passed + c.failed + c.retries, "one service time per attempt: {c:?}");
    let p = t.latency.percentiles();
    assert!(p.min >= 99.0, "both attempts are in every task's latency: min {:?}", p.min);
    assert!(t.service.percentiles().max < 60.0, "service is one attempt's");
    assert_accounting(&report, &rows);
}
