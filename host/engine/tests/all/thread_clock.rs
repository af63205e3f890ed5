//! The pacer on its own OS thread (what real runs use), in real time. Only exact counts are
//! asserted: timing figures belong to the benchmark, not to tests on a busy machine.

use loadhost_engine::{Model, Overload, PacerClock, Plan, RateCurve, TaskOutcome};
use loadhost_metrics::ErrorKind;

use crate::fake::{FakeFactory, assert_accounting, ms, run};

fn plan(rate: f64, millis: u64, workers: u32, overload: Overload) -> Plan {
    let curve = RateCurve::constant(rate, Some(ms(millis))).unwrap();
    Plan::new(Model::Open { curve, max_tasks: None, workers, max_workers: workers, overload })
        .unwrap()
        .with_pacer_clock(PacerClock::Precise)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_thread_clock_schedules_exactly() {
    let (report, rows) = run(&plan(1000.0, 300, 16, Overload::Queue), FakeFactory::sleeping(ms(1))).await;
    let c = report.counts();
    assert_eq!((c.scheduled, c.passed, c.dropped), (300, 300, 0));
    assert_accounting(&report, &rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_thread_clock_stops_promptly_on_abort() {
    let factory = FakeFactory::new(|task| {
        let outcome = if task.iteration == 20 {
            TaskOutcome::Error(ErrorKind::Aborted, "enough".into())
        } else {
            TaskOutcome::Passed
        };
        (ms(5), outcome)
    });
    // 10 s planned; the abort at task 20 must end it within moments.
    let (report, rows) = run(&plan(100.0, 10_000, 2, Overload::Queue), factory).await;
    assert_eq!(report.aborted.as_deref(), Some("enough"));
    assert!(report.elapsed < ms(2000), "elapsed {:?}", report.elapsed);
    assert!(report.counts().scheduled < 100);
    assert_accounting(&report, &rows);
}

#[test]
fn workers_that_never_wait_still_stop_at_the_deadline() {
    // Tasks that complete without ever returning Pending must not starve the runtime's timer. The
    // guard is a plain thread and channel: a tokio timeout would starve along with the run.
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let plan = Plan::new(Model::Closed { workers: 2, duration: Some(ms(200)), max_tasks: None }).unwrap();
        let _ = done.send(runtime.block_on(run(&plan, FakeFactory::sleeping(ms(0)))));
    });
    let (report, rows) = finished
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the run must end near its 200 ms deadline, not spin forever");
    assert!(report.counts().passed > 1000, "{:?}", report.counts());
    assert_accounting(&report, &rows);
}
