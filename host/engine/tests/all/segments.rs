//! Segments: N processes each running `--segment i/N` of one plan schedule exactly the plan,
//! second by second, with iteration numbers that never collide.

use std::sync::{Arc, Mutex};

use loadhost_engine::{Model, Overload, Plan, Ramp, RateCurve, Segment, TaskOutcome};

use crate::fake::{FakeFactory, assert_accounting, ms, run, secs};

/// Run each of `count` segments of `plan`; the iterations each saw, and its scheduled counts
/// per interval.
async fn run_segments(plan: &Plan, count: u32) -> Vec<(Vec<u64>, Vec<u64>)> {
    let mut out = Vec::new();
    for index in 0..count {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let factory = FakeFactory::new(move |task| {
            record.lock().unwrap().push(task.iteration);
            (ms(1), TaskOutcome::Passed)
        });
        let segment = plan.clone().with_segment(Segment::new(index, count).unwrap());
        let (report, rows) = run(&segment, factory).await;
        assert_accounting(&report, &rows);
        let iterations = std::mem::take(&mut *seen.lock().unwrap());
        out.push((iterations, rows.iter().map(|r| r.counts.scheduled).collect()));
    }
    out
}

#[tokio::test(start_paused = true)]
async fn three_segments_of_1000_per_second_add_up_to_1000_every_second() {
    let curve = RateCurve::constant(1000.0, Some(secs(2))).unwrap();
    let plan = Plan::new(Model::Open { curve, max_tasks: None, workers: 9, max_workers: 9, overload: Overload::Drop })
        .unwrap();
    let runs = run_segments(&plan, 3).await;
    for second in 0..2 {
        let shares: Vec<u64> = runs.iter().map(|(_, per_second)| per_second[second]).collect();
        assert_eq!(shares.iter().sum::<u64>(), 1000, "second {second}: {shares:?}");
        assert!(shares.iter().all(|n| (333..=334).contains(n)), "second {second}: {shares:?}");
    }
    let totals: Vec<usize> = runs.iter().map(|(seen, _)| seen.len()).collect();
    assert_eq!(totals, [667, 667, 666]);
    let mut all: Vec<u64> = runs.iter().flat_map(|(seen, _)| seen.iter().copied()).collect();
    all.sort_unstable();
    assert_eq!(all, (0..2000).collect::<Vec<_>>(), "every iteration exactly once across the segments");
}

#[tokio::test(start_paused = true)]
async fn a_capped_ramp_splits_exactly_and_each_segment_keeps_its_share() {
    let curve = RateCurve::new(0.0, &[Ramp { duration: secs(4), target: 500.0 }], None).unwrap();
    let plan =
        Plan::new(Model::Open { curve, max_tasks: Some(777), workers: 8, max_workers: 8, overload: Overload::Drop })
            .unwrap();
    let runs = run_segments(&plan, 4).await;
    let counts: Vec<usize> = runs.iter().map(|(seen, _)| seen.len()).collect();
    assert_eq!(counts, [195, 194, 194, 194]);
    for (i, (seen, _)) in runs.iter().enumerate() {
        assert!(seen.iter().all(|k| k % 4 == i as u64), "segment {i} runs only iterations ≡ {i} mod 4");
    }
    assert_eq!(plan.clone().with_segment(Segment::new(0, 4).unwrap()).workers(), 2, "workers split too");
}

#[tokio::test(start_paused = true)]
async fn closed_model_segments_share_the_iterations() {
    let plan = Plan::new(Model::Closed { workers: 4, duration: None, max_tasks: Some(1001) }).unwrap();
    let runs = run_segments(&plan, 2).await;
    let mut all: Vec<u64> = runs.iter().flat_map(|(seen, _)| seen.iter().copied()).collect();
    assert_eq!((runs[0].0.len(), runs[1].0.len()), (501, 500));
    all.sort_unstable();
    assert_eq!(all, (0..1001).collect::<Vec<_>>());
}
