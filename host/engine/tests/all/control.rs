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
async fn a_run_paused_at_its_planned_end_ends_there() {
    // Found by the fuzzed test below: a pause used to hold the run past its end for ever.
    let (report, rows, _) = run_controlled(&open(100.0, secs(2), 2, 2), FakeFactory::sleeping(ms(1)), |c| {
        tokio::spawn(async move {
            tokio::time::sleep(secs(1)).await;
            change(&c, Changes { paused: Some(true), ..Changes::default() });
        })
    })
    .await;
    assert!(report.elapsed < ms(2100), "the planned end holds while paused: {:?}", report.elapsed);
    assert!((99..=101).contains(&report.counts().scheduled), "{:?}", report.counts());
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

mod fuzzed {
    //! Any PATCH a client may send, with extreme numbers, at any moment: the engine answers each
    //! with a change or a refusal, and the run still ends at its planned end with every task
    //! accounted for (issue 26: no hang, panic or wrap).

    use proptest::prelude::*;

    use super::*;
    use loadhost_engine::schedule::{MAX_RATE, MIN_RATE};

    fn rate() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(0.0),
            Just(5e-324),
            Just(1e-300),
            Just(f64::MIN_POSITIVE),
            Just(MAX_RATE / 100.0),
            Just(MAX_RATE * 10.0),
            Just(1e308),
            Just(f64::INFINITY),
            Just(f64::NAN),
            Just(-1.0),
            0.0..5_000.0_f64,
            any::<f64>(),
        ]
    }

    fn count() -> impl Strategy<Value = u32> {
        prop_oneof![Just(0), Just(1), Just(u32::MAX), Just(1 << 30), 1..64_u32, any::<u32>()]
    }

    fn changes() -> impl Strategy<Value = Changes> {
        (
            proptest::option::of(rate()),
            proptest::option::of(count()),
            proptest::option::of(count()),
            any::<Option<bool>>(),
        )
            .prop_map(|(rate, max_workers, max_in_flight, paused)| Changes {
                rate,
                max_workers,
                max_in_flight,
                paused,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn any_patch_at_any_time_leaves_a_run_that_ends_on_plan(
            patches in proptest::collection::vec((0..1_500_u64, changes()), 1..6),
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
            let (report, rows, _) = runtime.block_on(run_controlled(
                &open(100.0, secs(1), 2, 16),
                FakeFactory::sleeping(ms(5)),
                move |c| {
                    tokio::spawn(async move {
                        let mut patches = patches;
                        patches.sort_by_key(|(at, _)| *at);
                        let began = tokio::time::Instant::now();
                        for (at, changes) in patches {
                            tokio::time::sleep_until(began + ms(at)).await;
                            // Applied or refused with a reason; never a panic.
                            let refused = c.apply(changes).is_err();
                            let bad_rate = changes.rate.is_some_and(|r| !(r == 0.0 || (MIN_RATE..=MAX_RATE).contains(&r)));
                            assert!(refused || !bad_rate, "{changes:?} must be refused");
                        }
                    })
                },
            ));
            prop_assert!(report.elapsed < secs(3), "the planned end (1 s) holds: {:?}", report.elapsed);
            prop_assert!(report.counts().identity_holds(), "{:?}", report.counts());
            assert_accounting(&report, &rows);
        }
    }
}
