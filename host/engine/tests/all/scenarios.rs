//! Several scenarios at once: each its own model and offset, one setup and one teardown.

use std::sync::atomic::Ordering;

use loadhost_engine::{Model, Overload, Plan, RateCurve};
use loadhost_metrics::{IntervalRow, RunReport};

use crate::fake::{FakeFactory, ms, secs};

#[tokio::test(start_paused = true)]
async fn scenarios_run_together_each_with_its_model_offset_and_name() {
    let mut factory = FakeFactory::sleeping(ms(5));
    factory.setup = Some(Ok("shared".into()));
    let (scenarios, calls, inits) = (factory.scenarios.clone(), factory.lifecycle_calls.clone(), factory.inits.clone());
    let browse = Plan::new(Model::Open {
        curve: RateCurve::constant(100.0, Some(secs(2))).unwrap(),
        max_tasks: None,
        workers: 4,
        max_workers: 4,
        overload: Overload::Queue,
    })
    .unwrap()
    .with_scenario("browse");
    let checkout = Plan::new(Model::Closed { workers: 2, duration: None, max_tasks: Some(50) })
        .unwrap()
        .with_scenario("checkout")
        .with_start_delay(secs(1));
    let mut rows: Vec<IntervalRow> = Vec::new();
    let runs = loadhost_engine::run_scenarios(
        &[browse, checkout],
        factory,
        &mut |row: &IntervalRow| rows.push(row.clone()),
        None,
    )
    .await
    .unwrap();
    let [a, b] = &runs.reports[..] else { panic!("two reports") };
    assert_eq!((a.scenario.as_str(), a.counts().scheduled), ("browse", 200));
    assert_eq!((b.scenario.as_str(), b.counts().passed), ("checkout", 50));
    assert_eq!(b.offset, secs(1));
    assert_eq!(calls.load(Ordering::Relaxed), 2, "one setup and one teardown for the whole run");
    assert!(inits.lock().unwrap().iter().all(|d| d.as_deref() == Some("shared")));
    let names = scenarios.lock().unwrap();
    assert_eq!(names.iter().filter(|n| *n == "browse").count(), 4);
    assert_eq!(names.iter().filter(|n| *n == "checkout").count(), 2);
    assert!(rows.iter().any(|r| &*r.scenario == "browse") && rows.iter().any(|r| &*r.scenario == "checkout"));
    let all = RunReport::combine(&runs.reports).unwrap();
    assert_eq!(all.counts().scheduled, 250);
    assert!(all.counts().identity_holds());
    assert!(all.elapsed >= ms(1990), "the span of both: {:?}", all.elapsed);
    assert_eq!(all.workers.peak, 6);
}
