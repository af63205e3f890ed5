//! The open model: the batched pacer, its accounting, and the overload policies.

use loadhost_engine::{Model, Overload, Plan, Ramp, RateCurve};

use crate::fake::{FakeFactory, assert_accounting, ms, run, secs};

fn open(rate: f64, duration: u64, workers: u32, overload: Overload) -> Plan {
    let curve = RateCurve::constant(rate, Some(secs(duration))).unwrap();
    Plan::new(Model::Open { curve, max_tasks: None, workers, max_workers: workers, overload }).unwrap()
}

#[tokio::test(start_paused = true)]
async fn constant_rate_schedules_and_achieves_exactly() {
    let (report, rows) = run(&open(1000.0, 3, 8, Overload::Drop), FakeFactory::sleeping(ms(2))).await;
    let c = report.counts();
    assert_eq!((c.scheduled, c.passed, c.dropped), (3000, 3000, 0));
    assert!((report.achieved_rate() - 1000.0).abs() < 1e-6, "achieved {}", report.achieved_rate());
    assert_eq!(report.target_rate, Some(1000.0));
    assert_eq!(report.totals.underrun, 0, "a paused clock never wakes late");
    // Three full seconds, then the tail where the last tasks finish.
    assert!(rows.len() >= 3 && rows.len() <= 4, "{} rows", rows.len());
    assert_eq!(rows[0].counts.scheduled, 1000);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn latency_counts_from_the_scheduled_time() {
    let (report, _) = run(&open(100.0, 1, 4, Overload::Drop), FakeFactory::sleeping(ms(20))).await;
    let latency = report.totals.latency.percentiles();
    let service = report.totals.service.percentiles();
    assert!((service.p50 - 20.0).abs() < 0.1, "service p50 {}", service.p50);
    assert!(latency.p50 >= service.p50, "latency includes service");
}

#[tokio::test(start_paused = true)]
async fn a_ramp_from_0_to_1000_over_10s_schedules_5000() {
    let curve = RateCurve::new(0.0, &[Ramp { duration: secs(10), target: 1000.0 }], None).unwrap();
    let plan =
        Plan::new(Model::Open { curve, max_tasks: None, workers: 16, max_workers: 16, overload: Overload::Drop })
            .unwrap();
    let (report, rows) = run(&plan, FakeFactory::sleeping(ms(1))).await;
    assert_eq!(report.counts().scheduled, 5000);
    assert_eq!(report.counts().passed, 5000);
    // Second i of a linear ramp schedules 100·(i + 0.5) tasks, give or take one at the edges.
    for (i, row) in rows.iter().take(10).enumerate() {
        let expected = 100.0 * (i as f64 + 0.5);
        assert!((row.counts.scheduled as f64 - expected).abs() <= 1.0, "second {i}: {}", row.counts.scheduled);
    }
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn max_tasks_cuts_the_schedule_and_sets_the_generation_time() {
    let curve = RateCurve::constant(500.0, None).unwrap();
    let plan =
        Plan::new(Model::Open { curve, max_tasks: Some(1000), workers: 4, max_workers: 4, overload: Overload::Drop })
            .unwrap();
    let (report, rows) = run(&plan, FakeFactory::sleeping(ms(1))).await;
    assert_eq!(report.counts().scheduled, 1000);
    assert!((report.achieved_rate() - 500.0).abs() < 1e-6, "achieved {}", report.achieved_rate());
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn drop_policy_drops_what_the_crew_cannot_take() {
    // 5 workers × 50 ms per task = 100 tasks/s of capacity against 200/s.
    let (report, rows) = run(&open(200.0, 2, 5, Overload::Drop), FakeFactory::sleeping(ms(50))).await;
    let c = report.counts();
    assert_eq!(c.scheduled, 400);
    assert!((190..=210).contains(&c.dropped), "dropped {}", c.dropped);
    assert_eq!(c.passed + c.dropped, 400);
    // Nothing queues in drop mode: every task that ran started on time.
    assert!(report.totals.wait.percentiles().max < 1.0);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn queue_policy_drops_nothing_and_the_wait_shows_in_latency() {
    let (report, rows) = run(&open(200.0, 2, 5, Overload::Queue), FakeFactory::sleeping(ms(50))).await;
    let c = report.counts();
    assert_eq!((c.scheduled, c.passed, c.dropped), (400, 400, 0));
    let wait = report.totals.wait.percentiles();
    let latency = report.totals.latency.percentiles();
    // The last task is due at ~2 s but the crew only gets to it at ~4 s.
    assert!(wait.max > 1900.0 && wait.max < 2100.0, "max wait {}", wait.max);
    assert!(latency.max >= wait.max + 49.0, "latency {} must include the wait", latency.max);
    // Wait grows over the run.
    assert!(rows[1].wait.p50 > rows[0].wait.p50);
    assert!(report.elapsed >= secs(4), "the queue drains after generation: {:?}", report.elapsed);
    assert!((report.achieved_rate() - 100.0).abs() < 2.0, "achieved {}", report.achieved_rate());
    assert_eq!(report.totals.underrun, 0, "held-back tasks are the crew's limit, not underrun");
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn a_stalled_runtime_shows_as_lag_and_underrun() {
    // Enough workers to take the late batch of ~50 tasks at once.
    let plan = open(1000.0, 1, 64, Overload::Drop);
    let stall = tokio::spawn(async {
        tokio::time::sleep(ms(100)).await;
        // Jump the clock while the pacer is asleep: it wakes 50 ms late, as if the runtime stalled.
        tokio::time::advance(ms(50)).await;
    });
    let (report, rows) = run(&plan, FakeFactory::sleeping(ms(0))).await;
    stall.await.unwrap();
    assert!(report.totals.lag_max >= ms(45), "lag {:?}", report.totals.lag_max);
    assert!(report.totals.lag_total >= ms(40), "lag total {:?}", report.totals.lag_total);
    assert!((40..=55).contains(&report.totals.underrun), "underrun {}", report.totals.underrun);
    assert_eq!(report.counts().scheduled, 1000, "late tasks are released late, never lost");
    assert_eq!(report.counts().passed, 1000);
    assert_accounting(&report, &rows);
}
