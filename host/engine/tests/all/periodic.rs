//! Periodic scenarios: one task per tick (plus up to the jitter) on a worker of its own; a tick
//! that finds the previous task still running is dropped, never stacked.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use loadhost_engine::{Arrivals, Model, Overload, Plan, RateCurve, TaskOutcome};
use tokio::time::Instant;

use crate::fake::{FakeFactory, assert_accounting, ms, run, secs};

fn timer(every: Duration, jitter: Duration, run_for: Duration) -> Plan {
    let curve = RateCurve::constant(1.0 / every.as_secs_f64(), Some(run_for)).unwrap();
    Plan::new(Model::Open { curve, max_tasks: None, workers: 1, max_workers: 1, overload: Overload::Drop })
        .unwrap()
        .with_seed(7)
        .with_arrivals(Arrivals::Periodic { every, jitter })
}

#[tokio::test(start_paused = true)]
async fn ticks_come_a_period_plus_up_to_the_jitter_apart() {
    for seed in 0..5 {
        let starts = Arc::new(Mutex::new(Vec::new()));
        let seen = starts.clone();
        let factory = FakeFactory::new(move |_| {
            seen.lock().unwrap().push(Instant::now());
            (ms(10), TaskOutcome::Passed)
        });
        let (report, rows) = run(&timer(secs(1), ms(200), secs(10)).with_seed(seed), factory).await;
        let starts = starts.lock().unwrap();
        assert!((9..=10).contains(&starts.len()), "seed {seed}: {} ticks", starts.len());
        for pair in starts.windows(2) {
            let gap = pair[1] - pair[0];
            assert!(gap >= ms(999) && gap <= ms(1201), "seed {seed}: ticks {gap:?} apart");
        }
        assert_eq!(report.counts().dropped, 0);
        assert_accounting(&report, &rows);
    }
}

#[tokio::test(start_paused = true)]
async fn a_tick_that_finds_the_last_task_running_is_dropped_not_stacked() {
    let (report, rows) = run(&timer(secs(1), Duration::ZERO, secs(10)), FakeFactory::sleeping(ms(2500))).await;
    let c = report.counts();
    // Ticks at 0, 3, 6 and 9 s run; the two after each (still running) are dropped.
    assert_eq!((c.scheduled, c.passed, c.dropped), (10, 4, 6), "{c:?}");
    assert_eq!(report.workers.peak, 1);
    assert_accounting(&report, &rows);
}
