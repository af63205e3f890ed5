//! Several scenarios at once: each its own model and offset, one setup and one teardown.

use std::sync::atomic::Ordering;

use loadhost_engine::{Model, Overload, Plan, RateCurve, ScenarioPlugins};
use loadhost_metrics::{ErrorKind, IntervalRow, RunReport};

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
        ScenarioPlugins::one("fake", factory, 2),
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

/// Two plans over `secs(1)` with 10 closed tasks each, named `a` and `b`.
fn two_closed() -> [Plan; 2] {
    let plan = |name: &str| {
        Plan::new(Model::Closed { workers: 1, duration: None, max_tasks: Some(10) }).unwrap().with_scenario(name)
    };
    [plan("a"), plan("b")]
}

#[tokio::test(start_paused = true)]
async fn each_scenario_runs_its_own_plugin_with_its_own_setup_data() {
    let mut first = FakeFactory::sleeping(ms(5));
    first.setup = Some(Ok("first".into()));
    let mut second = FakeFactory::sleeping(ms(5));
    second.setup = Some(Ok("second".into()));
    let (inits_1, inits_2) = (first.inits.clone(), second.inits.clone());
    let (down_1, down_2) = (first.teardown.clone(), second.teardown.clone());
    let (seen_1, seen_2) = (first.scenarios.clone(), second.scenarios.clone());
    let plugins =
        ScenarioPlugins { plugins: vec![("one".into(), first), ("two".into(), second)], plugin_of: vec![1, 0] };
    let runs = loadhost_engine::run_scenarios(&two_closed(), plugins, &mut |_: &IntervalRow| {}, None).await.unwrap();
    assert_eq!(runs.reports.iter().map(|r| r.counts().passed).collect::<Vec<_>>(), [10, 10]);
    assert_eq!(*seen_1.lock().unwrap(), ["b"], "scenario b runs plugin one");
    assert_eq!(*seen_2.lock().unwrap(), ["a"], "scenario a runs plugin two");
    assert_eq!(*inits_1.lock().unwrap(), [Some("first".to_owned())]);
    assert_eq!(*inits_2.lock().unwrap(), [Some("second".to_owned())]);
    assert_eq!(down_1.lock().unwrap().as_deref(), Some("first"));
    assert_eq!(down_2.lock().unwrap().as_deref(), Some("second"));
}

#[tokio::test(start_paused = true)]
async fn a_second_plugins_failed_setup_sends_nothing_names_it_and_tears_down_the_first() {
    let mut first = FakeFactory::sleeping(ms(5));
    first.setup = Some(Ok("first".into()));
    let mut second = FakeFactory::sleeping(ms(5));
    second.setup = Some(Err("no token".into()));
    let (down_1, made_1, made_2) = (first.teardown.clone(), first.made.clone(), second.made.clone());
    let plugins =
        ScenarioPlugins { plugins: vec![("one".into(), first), ("two".into(), second)], plugin_of: vec![0, 1] };
    let err =
        loadhost_engine::run_scenarios(&two_closed(), plugins, &mut |_: &IntervalRow| {}, None).await.unwrap_err();
    assert!(err.to_string().contains("two: no token"), "{err}");
    assert_eq!(made_1.load(Ordering::Relaxed) + made_2.load(Ordering::Relaxed), 0, "no worker made");
    assert_eq!(down_1.lock().unwrap().as_deref(), Some("first"), "the first plugin is torn down");
}

#[tokio::test(start_paused = true)]
async fn a_plugins_abort_in_one_scenario_stops_every_scenario() {
    // `a` aborts on its fifth task; `b` would run 60 s at 50/s.
    let aborting = FakeFactory::new(|task| {
        if task.iteration == 4 {
            (ms(1), loadhost_engine::TaskOutcome::Error(ErrorKind::Aborted, "the token expired".into()))
        } else {
            (ms(5), loadhost_engine::TaskOutcome::Passed)
        }
    });
    let plugins = ScenarioPlugins {
        plugins: vec![("a".into(), aborting), ("b".into(), FakeFactory::sleeping(ms(5)))],
        plugin_of: vec![0, 1],
    };
    let a = Plan::new(Model::Closed { workers: 1, duration: None, max_tasks: Some(100) }).unwrap().with_scenario("a");
    let b = Plan::new(Model::Open {
        curve: RateCurve::constant(50.0, Some(secs(60))).unwrap(),
        max_tasks: None,
        workers: 2,
        max_workers: 2,
        overload: Overload::Queue,
    })
    .unwrap()
    .with_scenario("b");
    let started = tokio::time::Instant::now();
    let runs = loadhost_engine::run_scenarios(&[a, b], plugins, &mut |_: &IntervalRow| {}, None).await.unwrap();
    assert!(started.elapsed() < secs(10), "the run stops at once, not after b's 60 s: {:?}", started.elapsed());
    let [a, b] = &runs.reports[..] else { panic!("two reports") };
    assert_eq!(a.aborted.as_deref(), Some("the token expired"));
    let why = b.aborted.as_deref().unwrap_or_default();
    assert!(why.contains("scenario 'a' aborted the run: the token expired"), "{why}");
    assert!(b.counts().scheduled < 60 * 50, "{:?}", b.counts());
    assert!(RunReport::combine(&runs.reports).unwrap().counts().identity_holds());
}

#[tokio::test(start_paused = true)]
async fn a_stop_during_a_scenarios_start_offset_ends_the_wait_at_once() {
    let early = Plan::new(Model::Closed { workers: 1, duration: Some(secs(60)), max_tasks: None })
        .unwrap()
        .with_scenario("early");
    let late = Plan::new(Model::Closed { workers: 1, duration: Some(secs(10)), max_tasks: None })
        .unwrap()
        .with_scenario("late")
        .with_start_delay(secs(30));
    let interrupt = std::sync::Arc::new(loadhost_engine::Interrupt::new());
    let asker = interrupt.clone();
    tokio::spawn(async move {
        tokio::time::sleep(secs(1)).await;
        asker.request();
    });
    let started = tokio::time::Instant::now();
    let runs = loadhost_engine::run_scenarios(
        &[early, late],
        ScenarioPlugins::one("fake", FakeFactory::sleeping(ms(10)), 2),
        &mut |_: &IntervalRow| {},
        Some(interrupt),
    )
    .await
    .unwrap();
    assert!(started.elapsed() < secs(5), "not after the 30 s offset: {:?}", started.elapsed());
    assert_eq!(runs.reports[1].counts().scheduled, 0, "the late scenario sends nothing");
    assert!(runs.reports[1].stopped.is_some());
}
