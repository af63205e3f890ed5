//! How the closed model spaces a worker's tasks: pace (`--pace`) and think time (`--think`).

use loadhost_engine::{Model, Plan, Spacing, Think};

use crate::fake::{FakeFactory, assert_accounting, ms, run, secs};

fn closed(workers: u32, seconds: u64, spacing: Spacing) -> Plan {
    Plan::new(Model::Closed { workers, duration: Some(secs(seconds)), max_tasks: None })
        .unwrap()
        .with_spacing(spacing)
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_pace_longer_than_the_task_holds_its_rate_per_worker() {
    let plan = closed(2, 5, Spacing { pace: Some(ms(100)), think: None });
    let (report, rows) = run(&plan, FakeFactory::sleeping(ms(50))).await;
    let c = report.counts();
    // 2 workers × 10 iterations/s × 5 s.
    assert!((99..=102).contains(&c.scheduled), "scheduled {}", c.scheduled);
    assert!((report.achieved_rate() - 20.0).abs() < 1.0, "achieved {}", report.achieved_rate());
    assert_eq!(report.totals.wait.percentiles().max, 0.0, "on time, nothing waits");
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn a_task_overrunning_its_pace_starts_at_once_and_its_lateness_grows_as_wait() {
    let plan = closed(1, 3, Spacing { pace: Some(ms(100)), think: None });
    let (report, rows) = run(&plan, FakeFactory::sleeping(ms(150))).await;
    let c = report.counts();
    // Back to back at 150 ms: the pace cannot hold, so nothing sleeps.
    assert!((20..=21).contains(&c.scheduled), "scheduled {}", c.scheduled);
    let wait = report.totals.wait.percentiles();
    // Task k starts at 150k ms but was meant for 100k ms: 50 ms later each time.
    assert!(wait.max >= 900.0, "the lateness accumulates: {wait:?}");
    assert!(report.totals.latency.percentiles().max >= 1000.0, "latency counts from the intended start");
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn think_time_pauses_between_a_workers_tasks() {
    let think = Think::uniform(ms(100), ms(100)).unwrap();
    let plan = closed(1, 2, Spacing { pace: None, think: Some(think) });
    let (report, rows) = run(&plan, FakeFactory::sleeping(ms(0))).await;
    let c = report.counts();
    // A task at once, then one every 100 ms of thinking.
    assert!((20..=21).contains(&c.scheduled), "scheduled {}", c.scheduled);
    assert_eq!(report.totals.wait.percentiles().max, 0.0, "thinking is not waiting");
    assert_accounting(&report, &rows);

    let mean = ms(50);
    let plan = closed(4, 10, Spacing { pace: None, think: Some(Think::Exponential { mean }) });
    let (report, _) = run(&plan, FakeFactory::sleeping(ms(0))).await;
    // 4 workers each starting a task every 50 ms on average: about 800 in 10 s (σ ≈ 28).
    let n = report.counts().scheduled;
    assert!((700..=900).contains(&n), "scheduled {n}");
}

#[test]
fn spacing_is_refused_with_the_open_model() {
    let open = Plan::new(Model::Open {
        curve: loadhost_engine::RateCurve::constant(10.0, Some(secs(1))).unwrap(),
        max_tasks: None,
        workers: 1,
        max_workers: 1,
        overload: loadhost_engine::Overload::Drop,
    })
    .unwrap();
    let err = open.with_spacing(Spacing { pace: Some(ms(10)), think: None }).unwrap_err();
    assert!(err.to_string().contains("--pace and --think"), "{err}");
}
