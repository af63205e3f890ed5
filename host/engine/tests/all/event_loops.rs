//! Event loops: a run split over several event loops schedules exactly the plan, each event loop
//! running its own share of the slots on its own workers.

use loadhost_engine::{Model, Overload, PacerClock, Plan, Ramp, RateCurve, Segment};

use crate::fake::{FakeFactory, assert_accounting, ms, run, secs};

fn open(curve: RateCurve, workers: u32, event_loops: u32) -> Plan {
    Plan::new(Model::Open { curve, max_tasks: None, workers, max_workers: workers, overload: Overload::Drop })
        .unwrap()
        .with_event_loops(event_loops)
}

/// The iterations run, sorted.
fn iterations(factory: &FakeFactory) -> Vec<u64> {
    let mut seen: Vec<u64> = factory.ran.lock().unwrap().iter().map(|(_, k)| *k).collect();
    seen.sort_unstable();
    seen
}

/// Every task ran on a worker of the event loop that owns its slot: worker ids and iterations agree
/// modulo the event-loop count (event loop s has workers s, s + S, …).
fn assert_each_event_loop_keeps_its_share(factory: &FakeFactory, event_loops: u32) {
    let ran = factory.ran.lock().unwrap();
    let strays: Vec<_> =
        ran.iter().filter(|(id, k)| u64::from(*id % event_loops) != *k % u64::from(event_loops)).collect();
    assert!(
        strays.is_empty(),
        "tasks that crossed event loops (worker, iteration): {:?}",
        &strays[..strays.len().min(5)]
    );
}

#[tokio::test(start_paused = true)]
async fn event_loops_at_1000_per_second_for_3s_release_exactly_3000_each_iteration_once() {
    for event_loops in [2, 3] {
        let factory = FakeFactory::sleeping(ms(2));
        let plan = open(RateCurve::constant(1000.0, Some(secs(3))).unwrap(), 12, event_loops);
        let (report, rows) = run(&plan, factory.clone()).await;
        let c = report.counts();
        assert_eq!((c.scheduled, c.passed, c.dropped), (3000, 3000, 0), "{event_loops} event loops");
        for (second, row) in rows.iter().take(3).enumerate() {
            assert_eq!(row.counts.scheduled, 1000, "{event_loops} event loops, second {second}");
        }
        assert_eq!(
            iterations(&factory),
            (0..3000).collect::<Vec<_>>(),
            "{event_loops} event loops: every iteration once"
        );
        assert_each_event_loop_keeps_its_share(&factory, event_loops);
        assert_eq!(report.workers.peak, 12, "the crew is split, not multiplied");
        assert_accounting(&report, &rows);
    }
}

#[tokio::test(start_paused = true)]
async fn a_ramp_over_event_loops_stays_a_ramp() {
    let curve = RateCurve::new(0.0, &[Ramp { duration: secs(10), target: 1000.0 }], None).unwrap();
    let factory = FakeFactory::sleeping(ms(1));
    let (report, rows) = run(&open(curve, 16, 4), factory.clone()).await;
    assert_eq!(report.counts().scheduled, 5000);
    // Second i of a linear ramp schedules 100·(i + 0.5) tasks, give or take one at the edges.
    for (i, row) in rows.iter().take(10).enumerate() {
        let expected = 100.0 * (i as f64 + 0.5);
        assert!((row.counts.scheduled as f64 - expected).abs() <= 1.0, "second {i}: {}", row.counts.scheduled);
    }
    assert_eq!(iterations(&factory), (0..5000).collect::<Vec<_>>());
    assert_each_event_loop_keeps_its_share(&factory, 4);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn event_loops_split_a_segment_without_leaving_it() {
    let curve = RateCurve::constant(900.0, Some(secs(2))).unwrap();
    let plan = open(curve, 6, 3).with_segment(Segment::new(1, 2).unwrap());
    let factory = FakeFactory::sleeping(ms(1));
    let (report, rows) = run(&plan, factory.clone()).await;
    assert_eq!(report.counts().scheduled, 900, "segment 1 of 2 of 1,800 slots");
    let expected: Vec<u64> = (0..1800).filter(|k| k % 2 == 1).collect();
    assert_eq!(iterations(&factory), expected);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn an_iteration_cap_over_event_loops_is_exact() {
    let curve = RateCurve::constant(1000.0, Some(secs(5))).unwrap();
    let plan =
        Plan::new(Model::Open { curve, max_tasks: Some(1001), workers: 4, max_workers: 4, overload: Overload::Drop })
            .unwrap()
            .with_event_loops(2);
    let factory = FakeFactory::sleeping(ms(1));
    let (report, rows) = run(&plan, factory.clone()).await;
    assert_eq!(report.counts().scheduled, 1001);
    assert_eq!(iterations(&factory), (0..1001).collect::<Vec<_>>());
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn the_closed_model_over_event_loops_claims_each_iteration_once() {
    let plan =
        Plan::new(Model::Closed { workers: 5, duration: None, max_tasks: Some(2000) }).unwrap().with_event_loops(2);
    let factory = FakeFactory::sleeping(ms(1));
    let (report, rows) = run(&plan, factory.clone()).await;
    assert_eq!((report.counts().scheduled, report.counts().passed), (2000, 2000));
    assert_eq!(iterations(&factory), (0..2000).collect::<Vec<_>>());
    let workers: std::collections::BTreeSet<u32> = factory.ran.lock().unwrap().iter().map(|(id, _)| *id).collect();
    assert_eq!(workers.len(), 5, "every worker of both event loops looped: {workers:?}");
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn event_loops_never_outnumber_the_workers() {
    let factory = FakeFactory::sleeping(ms(1));
    let plan = open(RateCurve::constant(100.0, Some(secs(1))).unwrap(), 1, 4);
    let (report, _) = run(&plan, factory.clone()).await;
    assert_eq!(report.counts().passed, 100);
    assert_eq!(report.workers.peak, 1, "one worker, so one event loop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn precise_event_loops_on_their_own_threads_schedule_exactly() {
    let curve = RateCurve::constant(2000.0, Some(ms(400))).unwrap();
    let plan = open(curve, 8, 2).with_pacer_clock(PacerClock::Precise);
    let factory = FakeFactory::sleeping(ms(0));
    let (report, rows) = run(&plan, factory.clone()).await;
    let c = report.counts();
    assert_eq!((c.scheduled, c.passed + c.dropped), (800, 800));
    assert_eq!(c.dropped, 0, "no-op tasks on 8 workers never find the crew busy");
    assert_eq!(iterations(&factory), (0..800).collect::<Vec<_>>());
    assert_each_event_loop_keeps_its_share(&factory, 2);
    assert_accounting(&report, &rows);
}
