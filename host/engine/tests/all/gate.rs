//! The gate (`--max-in-flight`): it bounds tasks executing at once, whatever the crew,
//! and its wait is measured on every pass.

use std::sync::atomic::Ordering;

use loadhost_engine::{Model, Overload, Plan, RateCurve};

use crate::fake::{FakeFactory, assert_accounting, ms, run, secs};

fn open(rate: f64, workers: u32, gate: u32, overload: Overload) -> Plan {
    let curve = RateCurve::constant(rate, Some(secs(2))).unwrap();
    Plan::new(Model::Open { curve, max_tasks: None, workers, max_workers: workers, overload })
        .unwrap()
        .with_max_in_flight(gate)
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_gate_bounds_tasks_in_flight_below_the_crew() {
    let factory = FakeFactory::sleeping(ms(100));
    let peak = factory.peak_active.clone();
    // 100/s × 100 ms wants 10 in flight; 20 workers; the gate allows 3.
    let (report, rows) = run(&open(100.0, 20, 3, Overload::Queue), factory).await;
    assert_eq!(peak.load(Ordering::SeqCst), 3);
    assert_eq!(report.counts().passed, 200);
    let gate = report.totals.gate_wait.percentiles();
    assert_eq!(report.totals.gate_wait.count(), 200, "every task passes the gate once");
    // 17 of the 20 workers hold a ticket at the gate, which passes 30 tasks/s: ~0.57 s each.
    assert!((450.0..700.0).contains(&gate.max), "a saturated gate shows as wait: max {} ms", gate.max);
    // The backlog beyond the crew waits in the queue: the last task is due at 2 s and runs at ~6.7 s.
    let wait = report.totals.wait.percentiles();
    assert!(wait.max > 4000.0 && wait.max >= gate.max, "gate wait is part of the wait: {} ms", wait.max);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn under_the_drop_policy_a_full_gate_drops_even_with_idle_workers() {
    let factory = FakeFactory::sleeping(ms(100));
    let peak = factory.peak_active.clone();
    let (report, rows) = run(&open(100.0, 20, 3, Overload::Drop), factory).await;
    assert_eq!(peak.load(Ordering::SeqCst), 3);
    let c = report.counts();
    assert_eq!(c.scheduled, 200);
    // 3 slots of 100 ms: about 30 tasks/s of the 100/s get through.
    assert!((50..=70).contains(&c.passed), "passed {}", c.passed);
    assert_eq!(c.passed + c.dropped, 200);
    assert_eq!(report.totals.gate_wait.percentiles().max, 0.0, "drop never waits at the gate");
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn the_gate_bounds_a_closed_crew_too() {
    let factory = FakeFactory::sleeping(ms(10));
    let peak = factory.peak_active.clone();
    let plan = Plan::new(Model::Closed { workers: 8, duration: None, max_tasks: Some(200) })
        .unwrap()
        .with_max_in_flight(2)
        .unwrap();
    let (report, rows) = run(&plan, factory).await;
    assert_eq!(peak.load(Ordering::SeqCst), 2);
    assert_eq!(report.counts().passed, 200);
    assert!(report.totals.gate_wait.percentiles().p50 > 0.0, "six of eight workers wait at any time");
    assert_accounting(&report, &rows);
}
