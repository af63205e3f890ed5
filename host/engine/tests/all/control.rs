//! Live control: rate changes and pauses re-base the schedule; the crew's ceiling and a stop
//! apply while the run goes; the status reports it all.

use std::sync::Arc;
use std::time::Duration;

use loadhost_engine::{Changes, Control, Model, Overload, Plan, RateCurve, RunState};
use loadhost_metrics::{IntervalRow, RunReport};

use crate::fake::{FakeFactory, assert_accounting, ms, secs};

fn open(rate: f64, duration: Duration, workers: u32, max_workers: u32) -> Plan {
    let curve = RateCurve::constant(rate, Some(duration)).unwrap();
    Plan::new(Model::Open { curve, max_tasks: None, workers, max_workers, overload: Overload::Drop }).unwrap()
}

/// Run `plan` while `script` drives the control.
async fn run_controlled(
    plan: &Plan,
    factory: FakeFactory,
    script: impl FnOnce(Arc<Control>) -> tokio::task::JoinHandle<()>,
) -> (RunReport, Vec<IntervalRow>, Arc<Control>) {
    let control = Arc::new(Control::new());
    let driver = script(control.clone());
    let mut rows = Vec::new();
    let report = loadhost_engine::run_with_control(
        plan,
        factory,
        &mut |row: &IntervalRow| rows.push(row.clone()),
        Some(control.clone()),
    )
    .await
    .unwrap();
    driver.await.unwrap();
    (report, rows, control)
}

fn change(control: &Control, changes: Changes) {
    control.apply(changes).unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_pause_schedules_nothing_and_resuming_owes_nothing() {
    let (report, rows, control) = run_controlled(&open(100.0, secs(10), 10, 10), FakeFactory::sleeping(ms(1)), |c| {
        tokio::spawn(async move {
            tokio::time::sleep(secs(2)).await;
            change(&c, Changes { paused: Some(true), ..Changes::default() });
            tokio::time::sleep(ms(500)).await;
            assert_eq!(c.status().state, RunState::Paused);
            tokio::time::sleep(ms(2500)).await;
            change(&c, Changes { paused: Some(false), ..Changes::default() });
        })
    })
    .await;
    let scheduled = report.counts().scheduled;
    // 2 s and 5 s at 100/s: the 3 paused seconds are skipped, not made up.
    assert!((698..=702).contains(&scheduled), "scheduled {scheduled}");
    assert_eq!(report.totals.underrun, 0, "a pause is not underrun");
    assert_eq!(control.status().state, RunState::Done);
    assert_eq!(control.status().tasks.scheduled, scheduled);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn a_new_rate_holds_until_the_planned_end() {
    let (report, rows, _) = run_controlled(&open(100.0, secs(10), 10, 10), FakeFactory::sleeping(ms(1)), |c| {
        tokio::spawn(async move {
            tokio::time::sleep(secs(2)).await;
            change(&c, Changes { rate: Some(500.0), ..Changes::default() });
            tokio::time::sleep(secs(1)).await;
            assert_eq!(c.status().rate_per_s, Some(500.0));
        })
    })
    .await;
    let scheduled = report.counts().scheduled;
    assert!((4195..=4205).contains(&scheduled), "200 then 8 s at 500/s: {scheduled}");
    assert!(report.elapsed < secs(11), "the planned end stays: {:?}", report.elapsed);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn raising_the_ceiling_lets_the_crew_grow() {
    // 200/s × 50 ms needs ~10 workers; the ceiling starts at 2.
    let (report, rows, _) = run_controlled(&open(200.0, secs(3), 2, 2), FakeFactory::sleeping(ms(50)), |c| {
        tokio::spawn(async move {
            tokio::time::sleep(secs(1)).await;
            change(&c, Changes { max_workers: Some(40), ..Changes::default() });
        })
    })
    .await;
    assert!(report.workers.peak >= 10, "peak {}", report.workers.peak);
    let first: u64 = rows[0].counts.dropped;
    let last: u64 = rows[2].counts.dropped;
    assert!(first > 50 && last == 0, "drops stop once the crew may grow: {first} then {last}");
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn a_stop_ends_the_run_and_counts_the_rest_interrupted() {
    let (report, rows, _) = run_controlled(&open(100.0, secs(10), 10, 10), FakeFactory::sleeping(ms(1)), |c| {
        tokio::spawn(async move {
            tokio::time::sleep(secs(1)).await;
            c.request_stop();
        })
    })
    .await;
    assert!(report.elapsed < secs(2), "elapsed {:?}", report.elapsed);
    assert_eq!(report.stopped.as_deref(), Some("stopped through the control API"));
    assert_eq!(report.aborted, None, "a user's stop is not the plugin's abort");
    assert_accounting(&report, &rows);
}
