//! The plugin's lifecycle: setup once before any load, its result to every init and to teardown.

use std::sync::atomic::Ordering;

use loadhost_engine::{EngineError, Model, Overload, Plan, RateCurve};

use crate::fake::{FakeFactory, assert_accounting, ms, run, secs};

#[tokio::test(start_paused = true)]
async fn setup_data_reaches_every_init_including_grown_workers_and_teardown() {
    let mut factory = FakeFactory::sleeping(ms(50));
    factory.setup = Some(Ok("token-42".into()));
    let (inits, teardown) = (factory.inits.clone(), factory.teardown.clone());
    let curve = RateCurve::constant(200.0, Some(secs(1))).unwrap();
    let plan =
        Plan::new(Model::Open { curve, max_tasks: None, workers: 2, max_workers: 50, overload: Overload::Queue })
            .unwrap();
    let (report, rows) = run(&plan, factory).await;
    let inits = inits.lock().unwrap();
    assert!(inits.len() >= 10, "the crew grew: {} inits", inits.len());
    assert!(inits.iter().all(|d| d.as_deref() == Some("token-42")), "{inits:?}");
    assert_eq!(teardown.lock().unwrap().as_deref(), Some("token-42"));
    assert_eq!(report.teardown_error, None);
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn a_failed_setup_sends_nothing() {
    let mut factory = FakeFactory::sleeping(ms(1));
    factory.setup = Some(Err("no credentials".into()));
    let made = factory.made.clone();
    let plan = Plan::new(Model::Closed { workers: 4, duration: Some(secs(1)), max_tasks: None }).unwrap();
    let result = loadhost_engine::run(&plan, factory, &mut |_: &loadhost_metrics::IntervalRow| {}).await;
    match result {
        Err(EngineError::Setup(why)) => assert!(why.contains("no credentials"), "{why}"),
        other => panic!("expected a setup failure, got {:?}", other.map(|r| *r.counts())),
    }
    assert_eq!(made.load(Ordering::Relaxed), 0, "no worker was made");
}

#[tokio::test(start_paused = true)]
async fn without_a_lifecycle_nothing_is_called() {
    let factory = FakeFactory::sleeping(ms(1));
    let (inits, teardown) = (factory.inits.clone(), factory.teardown.clone());
    let plan = Plan::new(Model::Closed { workers: 2, duration: None, max_tasks: Some(10) }).unwrap();
    let (report, rows) = run(&plan, factory).await;
    assert!(inits.lock().unwrap().iter().all(Option::is_none));
    assert_eq!(*teardown.lock().unwrap(), None, "no setup, no teardown");
    assert_accounting(&report, &rows);
}
