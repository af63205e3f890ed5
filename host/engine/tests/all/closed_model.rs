//! The closed model: workers loop back to back.

use loadhost_engine::{Model, Plan};

use crate::fake::{FakeFactory, assert_accounting, ms, run, secs};

#[tokio::test(start_paused = true)]
async fn runs_exactly_the_iterations_asked_for() {
    let plan = Plan::new(Model::Closed { workers: 4, duration: None, max_tasks: Some(1000) }).unwrap();
    let (report, rows) = run(&plan, FakeFactory::sleeping(ms(1))).await;
    let c = report.counts();
    assert_eq!((c.scheduled, c.passed), (1000, 1000));
    assert_eq!(report.started, 1000);
    assert_eq!(report.target_rate, None);
    // 4 loops of 1 ms tasks: 4,000/s.
    assert!((report.achieved_rate() - 4000.0).abs() < 50.0, "achieved {}", report.achieved_rate());
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn a_duration_stops_new_tasks_and_lets_running_ones_finish() {
    let plan = Plan::new(Model::Closed { workers: 2, duration: Some(secs(1)), max_tasks: None }).unwrap();
    let (report, rows) = run(&plan, FakeFactory::sleeping(ms(10))).await;
    let c = report.counts();
    assert!((198..=202).contains(&c.scheduled), "scheduled {}", c.scheduled);
    assert_eq!(c.passed, c.scheduled);
    assert!((report.achieved_rate() - 200.0).abs() < 3.0, "achieved {}", report.achieved_rate());
    assert_eq!(report.totals.wait.percentiles().max, 0.0, "a closed loop never waits");
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn stages_ramp_the_closed_crew_up_and_down() {
    use loadhost_engine::Ramp;
    // 1 → 10 workers over 2 s, 10 for 1 s, then 10 → 0 over 1 s; each worker runs 100 tasks/s. As
    // k6 counts VUs, a worker starts once the ramp reaches it and leaves once it falls below.
    let ramps = [
        Ramp { duration: secs(2), target: 10.0 },
        Ramp { duration: secs(1), target: 10.0 },
        Ramp { duration: secs(1), target: 0.0 },
    ];
    let plan = Plan::new(Model::Closed { workers: 1, duration: Some(secs(4)), max_tasks: None })
        .unwrap()
        .with_worker_stages(1, &ramps)
        .unwrap();
    assert_eq!(plan.max_workers(), 10);
    let (report, rows) = run(&plan, FakeFactory::sleeping(ms(10))).await;
    assert_eq!(report.workers.peak, 10);
    assert!(report.workers.grown >= 9 && report.workers.retired >= 9, "{:?}", report.workers);
    // About (5 · 2 s + 10 · 1 s + 5.5 · 1 s) worker-seconds at 100 tasks each.
    let passed = report.counts().passed;
    assert!((2300..=2800).contains(&passed), "passed {passed}");
    assert!(
        rows[1].workers > rows[0].workers && rows[3].workers < rows[2].workers,
        "{:?}",
        rows.iter().map(|r| r.workers).collect::<Vec<_>>()
    );
    assert_accounting(&report, &rows);
}
