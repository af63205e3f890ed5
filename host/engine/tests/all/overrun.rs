//! Schedules the host cannot follow, and stops that take effect whatever the event loops are doing
//! (issue 26). These run on the precise clock in real time, each on a runtime of its own behind a
//! guard thread: a run that hangs fails the test instead of holding the suite. Only counts and
//! generous bounds are asserted; how fast the pacer is belongs to the benchmark.

use std::sync::Arc;
use std::time::Duration;

const MAX_RATE: f64 = 10_000_000.0;
use loadhost_engine::{EngineError, Interrupt, Live, Model, Overload, PacerClock, Plan, RateCurve, TaskOutcome};
use loadhost_metrics::limit::{Limit, limiting};
use loadhost_metrics::{IntervalRow, RunReport};

use crate::fake::{FakeFactory, assert_accounting, ms};

fn plan(rate: f64, duration: Duration, workers: u32, overload: Overload) -> Plan {
    let curve = RateCurve::constant(rate, Some(duration)).unwrap();
    Plan::new(Model::Open { curve, max_tasks: None, workers, max_workers: workers, overload })
        .unwrap()
        .with_pacer_clock(PacerClock::Precise)
}

/// Run `plan` on a runtime of its own, asking it to stop at each of `stops`; the run must end
/// within `limit` of real time.
fn guarded(
    plan: Plan,
    factory: FakeFactory,
    stops: &[Duration],
    limit: Duration,
) -> Result<(RunReport, Vec<IntervalRow>), EngineError> {
    let (done, finished) = std::sync::mpsc::channel();
    let stops = stops.to_vec();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let result = runtime.block_on(async move {
            let interrupt = Arc::new(Interrupt::new());
            let asker = interrupt.clone();
            tokio::spawn(async move {
                for at in stops {
                    tokio::time::sleep(at).await;
                    asker.request();
                }
            });
            let mut rows = Vec::new();
            let live = Live { control: None, interrupt: Some(interrupt) };
            loadhost_engine::run_live(&plan, factory, &mut |row: &IntervalRow| rows.push(row.clone()), live)
                .await
                .map(|report| (report, rows))
        });
        let _ = done.send(result);
        // A loop the run left behind may still hold the runtime: let the test go on without it.
        runtime.shutdown_background();
    });
    finished.recv_timeout(limit).expect("the run must end, not hang")
}

#[test]
fn a_rate_the_host_cannot_follow_ends_on_time_and_names_a_limit() {
    // 5,000,000 tasks due in half a second: far beyond what fake workers on two threads release.
    let (report, rows) = guarded(
        plan(MAX_RATE, ms(500), 64, Overload::Drop),
        FakeFactory::sleeping(ms(1)),
        &[],
        Duration::from_secs(30),
    )
    .unwrap();
    let c = report.counts();
    assert_eq!(c.scheduled, 5_000_000, "every slot of the plan is accounted for: {c:?}");
    assert!(c.dropped > c.scheduled / 2, "what the pacer could not release is dropped: {c:?}");
    assert!(
        report.elapsed < Duration::from_secs(4),
        "the run ends about a catch-up window after its planned end, not after its backlog: {:?}",
        report.elapsed
    );
    // The defect was "the host kept up". Which limit the verdict names depends on who fell behind
    // first on this machine: the pacer (slots reached late: the emitter) or the crew (slots
    // released to no idle worker); both are true of this run, none is not.
    let limit = limiting(&report, report.target_rate, None);
    assert!(
        matches!(limit.as_ref().map(|(l, _)| *l), Some(Limit::Emitter | Limit::Crew)),
        "{limit:?}, underrun {}, {c:?}",
        report.totals.underrun
    );
    assert_accounting(&report, &rows);
}

#[test]
fn a_stop_during_an_impossible_rate_takes_effect_within_the_grace() {
    for overload in [Overload::Drop, Overload::Queue] {
        let plan = plan(MAX_RATE, Duration::from_secs(100), 8, overload).with_grace(ms(500));
        let (report, rows) = guarded(plan, FakeFactory::sleeping(ms(1)), &[ms(300)], Duration::from_secs(30)).unwrap();
        let c = report.counts();
        assert!(report.stopped.is_some(), "{overload:?}: the report says the user stopped it");
        assert!(
            report.elapsed < Duration::from_secs(3),
            "{overload:?}: a stop at 0.3 s with 0.5 s of grace: {:?}",
            report.elapsed
        );
        // About 3,000,000 slots were due at the stop: those never released end interrupted,
        // counted in one step rather than one by one.
        assert!(c.scheduled > 1_000_000, "{overload:?}: {c:?}");
        assert_accounting(&report, &rows);
    }
}

#[test]
fn a_task_blocking_its_thread_cannot_hold_a_stopped_run() {
    // Every task blocks its event loop's thread for a minute: no await point, no way to cut it.
    let factory = FakeFactory::new(|_| {
        std::thread::sleep(Duration::from_secs(60));
        (Duration::ZERO, TaskOutcome::Passed)
    });
    let plan = plan(10.0, Duration::from_secs(100), 2, Overload::Drop).with_grace(ms(200));
    let err = guarded(plan, factory, &[ms(300)], Duration::from_secs(20)).expect_err("the loops were left behind");
    let EngineError::Broken { report, reason } = err else { panic!("a broken run that still has its report") };
    assert!(reason.contains("had not ended"), "{reason}");
    assert!(report.stopped.is_some());
    let c = report.counts();
    assert!(c.interrupted >= 1, "the blocked tasks count as interrupted: {c:?}");
    assert!(c.identity_holds(), "{c:?}");
}
