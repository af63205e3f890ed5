//! Arrivals: Poisson by time-rescaling over any curve, seeded, dealt to segments and event loops
//! from one global sequence; sine stages. The statistics are on the pure schedule (no clock); the
//! engine runs check that the pacer releases exactly that schedule.

use std::sync::{Arc, Mutex};

use loadhost_engine::{
    Arrivals, Changes, Control, Model, Overload, Plan, Process, Ramp, RateCurve, Schedule, Segment, TaskOutcome,
    sine_ramps,
};

use loadhost_metrics::IntervalRow;

use crate::fake::{FakeFactory, assert_accounting, ms, run, secs};

fn poisson(seed: u64) -> Process {
    Process::new(Arrivals::Poisson, seed, "default")
}

/// The due times (seconds) of every arrival of `curve` in one process.
fn times(curve: &RateCurve, process: Process) -> Vec<f64> {
    Schedule::new(curve.clone(), process, Segment::whole()).map(|(_, t)| t).collect()
}

/// The Kolmogorov–Smirnov statistic of `samples` against the unit exponential.
fn ks_exponential(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len() as f64;
    samples.iter().enumerate().fold(0.0, |d, (i, x)| {
        let cdf = 1.0 - (-x).exp();
        d.max(cdf - i as f64 / n).max((i + 1) as f64 / n - cdf)
    })
}

#[test]
fn poisson_at_1000_per_second_for_100s_counts_and_spaces_like_poisson() {
    let curve = RateCurve::constant(1000.0, Some(secs(100))).unwrap();
    let at = times(&curve, poisson(42));
    let n = at.len() as f64;
    // The count is Poisson(100,000): σ = √100,000 ≈ 316.
    assert!((n - 100_000.0).abs() < 3.0 * 100_000f64.sqrt(), "{n} arrivals");
    // Gaps times the rate are unit exponentials (the first gap is from the start).
    let mut gaps: Vec<f64> =
        std::iter::once(at[0]).chain(at.windows(2).map(|w| w[1] - w[0])).map(|g| g * 1000.0).collect();
    let d = ks_exponential(&mut gaps);
    let critical = 1.63 / (gaps.len() as f64).sqrt();
    eprintln!("KS D = {d:.5} over {} gaps (1% critical value {critical:.5})", gaps.len());
    assert!(d < critical, "KS statistic {d} ≥ {critical}");
    // An even schedule of the same curve fails the same test: the test can tell.
    let mut even: Vec<f64> = times(&curve, Process::default()).windows(2).map(|w| (w[1] - w[0]) * 1000.0).collect();
    assert!(ks_exponential(&mut even) > critical);
}

#[test]
fn the_same_seed_gives_the_same_schedule_and_another_seed_another() {
    let curve = RateCurve::constant(500.0, Some(secs(4))).unwrap();
    let a = times(&curve, poisson(7));
    assert_eq!(a, times(&curve, poisson(7)), "bit for bit");
    assert_ne!(a, times(&curve, poisson(8)));
    assert_ne!(a, times(&curve, Process::new(Arrivals::Poisson, 7, "checkout")), "each scenario its own stream");
}

#[test]
fn four_segments_and_their_event_loops_deal_the_single_process_plan() {
    let curve = RateCurve::new(50.0, &[Ramp { duration: secs(5), target: 800.0 }], Some(secs(8))).unwrap();
    let whole: Vec<(u64, f64)> = Schedule::new(curve.clone(), poisson(3), Segment::whole()).collect();
    for parts in [1, 3] {
        let mut dealt: Vec<(u64, f64)> = (0..4)
            .flat_map(|i| (0..parts).map(move |p| Segment::new(i, 4).unwrap().split(p, parts)))
            .flat_map(|part| Schedule::new(curve.clone(), poisson(3), part))
            .collect();
        dealt.sort_by_key(|(k, _)| *k);
        assert_eq!(dealt, whole, "4 segments of {parts} event loops each");
    }
}

#[test]
fn a_poisson_ramp_from_0_to_1000_over_10s_averages_5000() {
    let curve = RateCurve::new(0.0, &[Ramp { duration: secs(10), target: 1000.0 }], None).unwrap();
    let seeds = 30;
    let counts: Vec<f64> = (0..seeds).map(|seed| times(&curve, poisson(seed)).len() as f64).collect();
    let mean = counts.iter().sum::<f64>() / seeds as f64;
    let tolerance = 3.0 * 5000f64.sqrt() / (seeds as f64).sqrt();
    eprintln!("mean of {seeds} Poisson ramps: {mean:.1} (5000 ± {tolerance:.1})");
    assert!((mean - 5000.0).abs() < tolerance, "mean {mean}");
    assert!(counts.windows(2).any(|w| w[0] != w[1]), "the count is random");
    // And a ramp stays a ramp: the last second has far more arrivals than the first.
    let at = times(&curve, poisson(1));
    let (first, last) = (at.iter().filter(|t| **t < 1.0).count(), at.iter().filter(|t| **t >= 9.0).count());
    assert!(first < 150 && last > 800, "first second {first}, last {last}");
}

/// A seeded Poisson plan of `rate` for `duration` seconds on plenty of workers.
fn poisson_plan(rate: f64, duration: u64, seed: u64) -> Plan {
    let curve = RateCurve::constant(rate, Some(secs(duration))).unwrap();
    Plan::new(Model::Open { curve, max_tasks: None, workers: 64, max_workers: 64, overload: Overload::Queue })
        .unwrap()
        .with_arrivals(Arrivals::Poisson)
        .with_seed(seed)
}

/// Run `plan`; the iterations the workers saw, sorted.
async fn iterations(plan: &Plan) -> Vec<u64> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let factory = FakeFactory::new(move |task| {
        record.lock().unwrap().push(task.iteration);
        (ms(1), TaskOutcome::Passed)
    });
    let (report, rows) = run(plan, factory).await;
    assert_accounting(&report, &rows);
    assert_eq!(report.counts().scheduled, report.counts().passed);
    let mut seen = std::mem::take(&mut *seen.lock().unwrap());
    seen.sort_unstable();
    seen
}

#[tokio::test(start_paused = true)]
async fn the_pacer_releases_the_seeded_schedule_and_segments_add_up_to_it() {
    let plan = poisson_plan(300.0, 3, 11);
    assert_eq!((plan.seed(), plan.arrivals(), plan.planned_is_exact()), (11, Arrivals::Poisson, false));
    assert_eq!((plan.target_rate(), plan.expected_rate()), (None, Some(300.0)), "no exact target to miss");
    let whole = iterations(&plan).await;
    let Model::Open { curve, .. } = plan.model() else { unreachable!() };
    let expected = Schedule::new(curve.clone(), curve.process(), Segment::whole()).count();
    assert_eq!(whole, (0..expected as u64).collect::<Vec<_>>(), "the pacer ends where the schedule does");
    assert_eq!(whole, iterations(&poisson_plan(300.0, 3, 11)).await, "the same seed, the same run");
    assert_ne!(whole.len(), iterations(&poisson_plan(300.0, 3, 12)).await.len(), "another seed, another count");
    let mut dealt = Vec::new();
    for i in 0..4 {
        let part = iterations(&plan.clone().with_segment(Segment::new(i, 4).unwrap())).await;
        assert!(part.iter().all(|k| k % 4 == u64::from(i)), "segment {i} keeps its share");
        dealt.extend(part);
    }
    dealt.sort_unstable();
    assert_eq!(dealt, whole, "4 segments together run the single-process plan");
    assert_eq!(iterations(&plan.clone().with_event_loops(3)).await, whole, "3 event loops too");
}

#[tokio::test(start_paused = true)]
async fn a_sine_stage_schedules_its_integral() {
    // 100 → 300 → 100/s every 2 s for 6 s: three whole periods, 200/s on average.
    let ramps = sine_ramps(secs(2), 100.0, 300.0, secs(6)).unwrap();
    let curve = RateCurve::new(100.0, &ramps, None).unwrap();
    let plan =
        Plan::new(Model::Open { curve, max_tasks: None, workers: 16, max_workers: 16, overload: Overload::Drop })
            .unwrap();
    let (report, rows) = run(&plan, FakeFactory::sleeping(ms(1))).await;
    assert_eq!(report.counts().scheduled, 1200);
    // The first second climbs from 100 to 300 (150 + … on average 200/s), like a sine.
    let per_second: Vec<u64> = rows.iter().take(6).map(|r| r.counts.scheduled).collect();
    assert!(per_second.iter().all(|n| (190..=210).contains(n)), "{per_second:?}");
    assert_accounting(&report, &rows);
}

#[tokio::test(start_paused = true)]
async fn a_live_rate_change_and_a_pause_keep_poisson_going() {
    let plan = poisson_plan(100.0, 12, 5);
    let control = Arc::new(Control::new());
    let driver = control.clone();
    tokio::spawn(async move {
        let set = |changes| driver.apply(changes).unwrap();
        tokio::time::sleep(secs(2)).await;
        set(Changes { rate: Some(200.0), ..Changes::default() });
        tokio::time::sleep(secs(4)).await;
        set(Changes { paused: Some(true), ..Changes::default() });
        tokio::time::sleep(secs(1)).await;
        set(Changes { paused: Some(false), ..Changes::default() });
    });
    let start = tokio::time::Instant::now();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let factory = FakeFactory::new(move |_| {
        record.lock().unwrap().push(start.elapsed().as_secs_f64());
        (ms(1), TaskOutcome::Passed)
    });
    let report =
        loadhost_engine::run_with_control(&plan, factory, &mut |_: &IntervalRow| {}, Some(control)).await.unwrap();
    let mut at = std::mem::take(&mut *seen.lock().unwrap());
    at.sort_by(f64::total_cmp);
    // 2 s at 100/s, 4 s at 200/s, paused 1 s, 5 s at 200/s: 2,000 expected, σ ≈ 45.
    let n = report.counts().scheduled as f64;
    assert!((n - 2000.0).abs() < 3.0 * 2000f64.sqrt(), "{n} arrivals");
    let within = |from: f64, to: f64| at.iter().filter(|t| (from..to).contains(*t)).count();
    assert_eq!(within(6.01, 6.99), 0, "nothing while paused");
    assert!(within(7.0, 7.1) < 60, "no burst to make up for the pause: {}", within(7.0, 7.1));
    // After the change the gaps are still exponential (coefficient of variation 1; an even grid
    // has 0), on the 1 ms clock of paused tokio time.
    let gaps: Vec<f64> = at.windows(2).filter(|w| w[0] >= 2.5 && w[1] < 6.0).map(|w| w[1] - w[0]).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    assert!((mean - 0.005).abs() < 0.001 && (0.8..1.2).contains(&(sd / mean)), "mean {mean}, cv {}", sd / mean);
}
