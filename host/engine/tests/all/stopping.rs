//! Limits and stopping: a task past its timeout, and a stop (an interrupt) that gives tasks under
//! way a grace period, then ends the rest as interrupted without losing any.

use std::sync::Arc;
use std::time::Duration;

use loadhost_engine::{Interrupt, Live, Model, Overload, Plan, RateCurve, TaskOutcome};
use loadhost_metrics::{IntervalRow, RunReport};

use crate::fake::{FakeFactory, assert_accounting, ms, secs};

fn open(rate: f64, duration: Duration, workers: u32) -> Plan {
    let curve = RateCurve::constant(rate, Some(duration)).unwrap();
    Plan::new(Model::Open { curve, max_tasks: None, workers, max_workers: 1000, overload: Overload::Drop }).unwrap()
}

/// Run `plan`, asking it to stop once at each of `at` (times from the start).
async fn run_interrupted(plan: &Plan, factory: FakeFactory, at: &[Duration]) -> (RunReport, Vec<IntervalRow>) {
    let interrupt = Arc::new(Interrupt::new());
    let times = at.to_vec();
    let driver = tokio::spawn({
        let interrupt = interrupt.clone();
        async move {
            let began = tokio::time::Instant::now();
            for t in times {
                tokio::time::sleep_until(began + t).await;
                interrupt.request();
            }
        }
    });
    let mut rows = Vec::new();
    let live = Live { control: None, interrupt: Some(interrupt) };
    let report =
        loadhost_engine::run_live(plan, factory, &mut |row: &IntervalRow| rows.push(row.clone()), live).await.unwrap();
    driver.await.unwrap();
    (report, rows)
}

#[tokio::test(start_paused = true)]
async fn a_task_past_its_timeout_ends_timed_out_and_its_worker_is_replaced() {
    let plan = Plan::new(Model::Closed { workers: 2, duration: None, max_tasks: Some(20) })
        .unwrap()
        .with_task_timeout(secs(1));
    // Every fifth task would take a minute.
    let factory = FakeFactory::new(|task| {
        let took = if task.iteration % 5 == 0 { secs(60) } else { ms(10) };
        (took, TaskOutcome::Passed)
    });
    let (report, rows) = crate::fake::run(&plan, factory).await;
    let c = report.counts();
    assert_eq!((c.timed_out, c.passed), (4, 16), "{c:?}");
    assert_eq!(report.workers.replaced, 4);
    assert!(report.elapsed < secs(5), "timed-out tasks do not hold the run: {:?}", report.elapsed);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_lets_tasks_under_way_finish_within_the_grace() {
    let plan = open(100.0, secs(10), 50).with_grace(secs(1));
    let (report, rows) = run_interrupted(&plan, FakeFactory::sleeping(ms(200)), &[secs(2)]).await;
    let c = report.counts();
    assert!(report.stopped.is_some(), "the report says the user stopped it");
    assert!((199..=202).contains(&c.scheduled), "nothing is scheduled after the stop: {c:?}");
    assert_eq!((c.passed, c.interrupted), (c.scheduled, 0), "200 ms tasks finish within 1 s: {c:?}");
    assert!(report.elapsed < ms(2300), "the run ends as the last task does: {:?}", report.elapsed);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn tasks_longer_than_the_grace_end_interrupted() {
    let plan = open(10.0, secs(10), 50).with_grace(secs(1));
    let (report, rows) = run_interrupted(&plan, FakeFactory::sleeping(secs(5)), &[secs(2)]).await;
    let c = report.counts();
    assert_eq!(c.passed, 0, "{c:?}");
    assert!((20..=21).contains(&c.interrupted), "the tasks under way: {c:?}");
    assert_eq!(c.interrupted, c.scheduled);
    let elapsed = report.elapsed;
    assert!(elapsed >= secs(3) && elapsed < ms(3100), "the grace is 1 s after the stop at 2 s: {elapsed:?}");
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn a_second_interrupt_cuts_the_grace_short_and_skips_teardown() {
    let plan = open(10.0, secs(10), 50).with_grace(secs(30));
    let mut factory = FakeFactory::sleeping(secs(5));
    factory.setup = Some(Ok("data".into()));
    let lifecycle = factory.lifecycle_calls.clone();
    let (report, rows) = run_interrupted(&plan, factory, &[secs(2), ms(2500)]).await;
    let c = report.counts();
    assert!(report.elapsed < ms(2600), "{:?}", report.elapsed);
    assert_eq!((c.passed, c.interrupted), (0, c.scheduled), "{c:?}");
    assert_eq!(lifecycle.load(std::sync::atomic::Ordering::Relaxed), 1, "setup ran, teardown did not");
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn closed_workers_waiting_at_the_gate_are_accounted_when_cut() {
    let plan = Plan::new(Model::Closed { workers: 8, duration: Some(secs(60)), max_tasks: None })
        .unwrap()
        .with_max_in_flight(2)
        .unwrap()
        .with_grace(ms(100));
    let (report, rows) = run_interrupted(&plan, FakeFactory::sleeping(secs(1)), &[ms(1500)]).await;
    let c = report.counts();
    // Two tasks per second for 1.5 s: 2 passed, 2 cut mid-task, 6 waiting at the gate.
    assert_eq!(c.passed, 2, "{c:?}");
    assert_eq!(c.interrupted, 8, "{c:?}");
    assert!(report.elapsed < ms(1700), "{:?}", report.elapsed);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_before_the_load_sends_nothing() {
    let plan = open(100.0, secs(10), 10);
    let interrupt = Arc::new(Interrupt::new());
    interrupt.request();
    let live = Live { control: None, interrupt: Some(interrupt) };
    let report =
        loadhost_engine::run_live(&plan, FakeFactory::sleeping(ms(1)), &mut |_: &IntervalRow| {}, live).await.unwrap();
    assert_eq!(report.started, 0);
    assert!(report.stopped.is_some());
    assert!(report.counts().identity_holds());
}

#[tokio::test(start_paused = true)]
async fn tasks_still_running_at_the_plans_end_have_the_graceful_stop_then_are_interrupted() {
    // Issue 27: a stuck task stretched a 5 s run to its 60 s task timeout.
    let plan = open(10.0, secs(2), 50).with_graceful_stop(secs(3));
    let factory = FakeFactory::new(|task| {
        let took = if task.iteration == 15 { secs(50) } else { ms(10) };
        (took, TaskOutcome::Passed)
    });
    let (report, rows) = crate::fake::run(&plan, factory).await;
    let c = report.counts();
    assert_eq!((c.scheduled, c.passed, c.interrupted), (20, 19, 1), "{c:?}");
    assert!(report.stopped.is_none() && report.aborted.is_none(), "the plan ended; nobody stopped it");
    let elapsed = report.elapsed;
    assert!(elapsed >= ms(4900) && elapsed < ms(5200), "2 s of plan and 3 s of graceful stop: {elapsed:?}");
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn the_closed_models_deadline_has_the_graceful_stop_too() {
    let plan = Plan::new(Model::Closed { workers: 2, duration: Some(secs(2)), max_tasks: None })
        .unwrap()
        .with_graceful_stop(secs(1));
    let factory = FakeFactory::new(|task| (if task.iteration == 3 { secs(100) } else { ms(100) }, TaskOutcome::Passed));
    let (report, rows) = crate::fake::run(&plan, factory).await;
    let c = report.counts();
    assert_eq!(c.interrupted, 1, "{c:?}");
    assert!(report.elapsed < ms(3200), "2 s and 1 s of graceful stop: {:?}", report.elapsed);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_during_the_graceful_stop_ends_the_wait_at_once() {
    let plan = open(10.0, secs(2), 50).with_graceful_stop(secs(30));
    let (report, rows) = run_interrupted(&plan, FakeFactory::sleeping(secs(60)), &[secs(4)]).await;
    let c = report.counts();
    assert_eq!(c.interrupted, c.scheduled, "{c:?}");
    assert!(report.elapsed < ms(4200), "the interrupt at 4 s ends the 30 s wait: {:?}", report.elapsed);
    assert!(report.stopped.is_some());
    assert_accounting(&report, &rows);
}
