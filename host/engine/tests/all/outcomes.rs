//! Failures, traps and aborts: the run goes on (or stops) and the identity holds.

use std::sync::atomic::Ordering;

use loadhost_engine::{EngineError, Model, Overload, Plan, RateCurve, TaskOutcome};
use loadhost_metrics::ErrorKind;

use crate::fake::{FakeFactory, assert_accounting, ms, run, secs};

#[tokio::test(start_paused = true)]
async fn traps_replace_the_worker_and_the_run_goes_on() {
    let factory = FakeFactory::new(|task| {
        let outcome = if task.iteration % 10 == 9 {
            TaskOutcome::Error(ErrorKind::Trapped, "unreachable".into())
        } else {
            TaskOutcome::Passed
        };
        (ms(1), outcome)
    });
    let made = factory.made.clone();
    let plan = Plan::new(Model::Closed { workers: 2, duration: None, max_tasks: Some(1000) }).unwrap();
    let (report, rows) = run(&plan, factory).await;
    let c = report.counts();
    assert_eq!((c.trapped, c.passed), (100, 900));
    assert_eq!(report.workers.replaced, 100);
    assert_eq!(made.load(Ordering::Relaxed), 102, "2 workers, then one fresh instance per trap");
    assert_eq!(report.workers.final_, 2);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn failures_drops_and_traps_together_keep_the_identity() {
    let factory = FakeFactory::new(|task| {
        let outcome = match task.iteration % 7 {
            0 => TaskOutcome::Error(ErrorKind::Failed, "no".into()),
            1 => TaskOutcome::Error(ErrorKind::Retryable, "later".into()),
            2 => TaskOutcome::Error(ErrorKind::Trapped, "boom".into()),
            _ => TaskOutcome::Passed,
        };
        (ms(30), outcome)
    });
    let curve = RateCurve::constant(300.0, Some(secs(2))).unwrap();
    let plan = Plan::new(Model::Open { curve, max_tasks: None, workers: 6, max_workers: 6, overload: Overload::Drop })
        .unwrap();
    let (report, rows) = run(&plan, factory).await;
    let c = report.counts();
    assert_eq!(c.scheduled, 600);
    assert!(c.dropped > 0 && c.failed > 0 && c.trapped > 0, "{c:?}");
    assert_eq!(c.retries, 0, "no retries without a retry policy");
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn abort_stops_the_run_and_interrupts_what_had_not_started() {
    let factory = FakeFactory::new(|task| {
        let outcome = if task.iteration == 50 {
            TaskOutcome::Error(ErrorKind::Aborted, "target is down".into())
        } else {
            TaskOutcome::Passed
        };
        (ms(100), outcome)
    });
    let curve = RateCurve::constant(100.0, Some(secs(10))).unwrap();
    // Two workers at 100 ms per task fall behind a 100/s schedule, so the queue holds tasks.
    let plan = Plan::new(Model::Open { curve, max_tasks: None, workers: 2, max_workers: 2, overload: Overload::Queue })
        .unwrap();
    let (report, rows) = run(&plan, factory).await;
    let c = report.counts();
    assert_eq!(c.aborted, 1);
    assert!(c.interrupted > 0, "{c:?}");
    assert!(c.scheduled < 1000, "the run must stop early: {c:?}");
    assert!(report.elapsed < secs(5), "elapsed {:?}", report.elapsed);
    assert_eq!(report.aborted.as_deref(), Some("target is down"));
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn a_worker_that_cannot_start_stops_the_run_before_any_load() {
    let mut factory = FakeFactory::sleeping(ms(1));
    factory.fail_from = 3;
    let plan = Plan::new(Model::Closed { workers: 5, duration: Some(secs(1)), max_tasks: None }).unwrap();
    let result = loadhost_engine::run(&plan, factory, &mut |_: &loadhost_metrics::IntervalRow| {}).await;
    match result {
        Err(EngineError::WorkerStart { id, .. }) => assert!(id >= 3),
        other => panic!("expected a start failure, got {:?}", other.map(|r| *r.counts())),
    }
}

#[tokio::test(start_paused = true)]
async fn a_bug_after_the_load_started_keeps_what_was_measured() {
    // A worker loop that panics is a bug of the host, not a plugin's trap: the run reports it as an
    // error, but with the report of everything measured until then, for the outputs.
    let factory = FakeFactory::new(|task| {
        assert!(task.iteration != 5, "a bug in the worker on purpose");
        (ms(1), TaskOutcome::Passed)
    });
    let plan = Plan::new(Model::Closed { workers: 2, duration: None, max_tasks: Some(50) }).unwrap();
    let result = loadhost_engine::run(&plan, factory, &mut |_: &loadhost_metrics::IntervalRow| {}).await;
    let Err(EngineError::Broken { report, reason }) = result else {
        panic!("expected a broken run, got {result:?}");
    };
    assert!(reason.contains("panicked"), "{reason}");
    assert!(report.counts().passed >= 5, "what ran is kept: {:?}", report.counts());
}
