//! The crew grows on demand and retires when surplus, within its bounds.

use loadhost_engine::{Model, Overload, Plan, Ramp, RateCurve};

use crate::fake::{FakeFactory, assert_accounting, ms, run, secs};

fn plan(curve: RateCurve, workers: u32, max_workers: u32, overload: Overload) -> Plan {
    Plan::new(Model::Open { curve, max_tasks: None, workers, max_workers, overload }).unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_crew_grows_to_what_the_load_needs_and_no_further() {
    // 200/s × 50 ms = 10 tasks in flight: the crew needs about 10 workers (plus a reserve of one).
    let curve = RateCurve::constant(200.0, Some(secs(3))).unwrap();
    let (report, rows) = run(&plan(curve, 2, 100, Overload::Drop), FakeFactory::sleeping(ms(50))).await;
    let w = report.workers;
    assert!(w.grown >= 8, "grown {}", w.grown);
    assert!((10..=14).contains(&w.peak), "peak {}: growth only when nobody is idle", w.peak);
    assert_eq!(w.min, 2);
    // A few tasks may drop while the crew grows from 2; after that none.
    let late_drops: u64 = rows.iter().skip(1).map(|r| r.counts.dropped).sum();
    assert_eq!(late_drops, 0, "once grown, nothing drops");
    assert!(report.counts().dropped < 20, "dropped {}", report.counts().dropped);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn a_slow_init_grows_one_peer_at_a_time_not_one_per_task() {
    // 100/s × 10 ms = 1 task in flight: two workers (one and its reserve) carry it. Each peer takes
    // 500 ms to make; asking for a peer per task that arrives meanwhile would make ~50.
    let curve = RateCurve::constant(100.0, Some(secs(3))).unwrap();
    let mut factory = FakeFactory::sleeping(ms(10));
    factory.init_delay = ms(500);
    let (report, rows) = run(&plan(curve, 1, 100, Overload::Queue), factory).await;
    let w = report.workers;
    assert!(w.peak <= 3, "peers on the way count as the reserve: {w:?}");
    assert_eq!(report.counts().passed, 300);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn growth_stops_at_the_ceiling() {
    let curve = RateCurve::constant(200.0, Some(secs(2))).unwrap();
    let (report, rows) = run(&plan(curve, 1, 5, Overload::Drop), FakeFactory::sleeping(ms(50))).await;
    assert_eq!(report.workers.peak, 5);
    assert_eq!(report.workers.grown, 4);
    assert!(report.counts().dropped > 100, "a capped crew drops: {:?}", report.counts());
    assert!(rows.iter().all(|r| r.workers <= 5));
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn a_surplus_crew_retires_down_to_its_floor_and_never_below() {
    // One busy second needing ~20 workers, then fifteen quiet seconds at 5/s (a worker retires
    // after 5 s idle).
    let ramps = [
        Ramp { duration: ms(1), target: 1000.0 },
        Ramp { duration: secs(1), target: 1000.0 },
        Ramp { duration: ms(1), target: 5.0 },
        Ramp { duration: secs(15), target: 5.0 },
    ];
    let curve = RateCurve::new(0.0, &ramps, None).unwrap();
    let (report, rows) = run(&plan(curve, 3, 200, Overload::Queue), FakeFactory::sleeping(ms(20))).await;
    let w = report.workers;
    assert!(w.peak >= 15, "peak {}", w.peak);
    assert_eq!(w.final_, 3, "the quiet phase retires the surplus: {w:?}");
    assert_eq!(w.retired, w.grown + 3 - 3, "everything grown retired: {w:?}");
    assert!(rows.iter().all(|r| r.workers >= 3), "never below the floor");
    assert_eq!(report.counts().dropped, 0);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn a_fixed_crew_neither_grows_nor_retires() {
    let curve = RateCurve::constant(50.0, Some(secs(5))).unwrap();
    let (report, rows) = run(&plan(curve, 4, 4, Overload::Queue), FakeFactory::sleeping(ms(1))).await;
    assert_eq!((report.workers.grown, report.workers.retired), (0, 0));
    assert_eq!((report.workers.min, report.workers.peak, report.workers.final_), (4, 4, 4));
    assert_accounting(&report, &rows);
}
