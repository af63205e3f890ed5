//! One plan run by several processes: `--segment i/N` shares that add up to the plan exactly,
//! with iteration numbers that never collide, started together with `--start-at`.

use serde_json::Value;

use crate::common::{Loadhost, assert_identity, fixture};

/// Run segment `i` of `n` of the metrics fixture's plan (`-n 1000`, open model), writing into
/// the run's folder.
fn segment(i: u32, n: u32, extra: &[&str]) -> crate::common::Run {
    let seg = format!("{i}/{n}");
    let mut args = vec!["-r", "2000", "-n", "1000", "--segment", seg.as_str()];
    args.extend_from_slice(extra);
    let run = Loadhost::run_plugin(&fixture("metrics"), &args);
    assert_eq!(run.code, 0, "segment {seg}: {}", run.stderr);
    run
}

#[test]
fn four_segments_run_the_plan_exactly_with_disjoint_iterations() {
    let start = humantime::format_rfc3339(std::time::SystemTime::now() + std::time::Duration::from_secs(2)).to_string();
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let start = start.clone();
            std::thread::spawn(move || segment(i, 4, &["--start-at", &start]))
        })
        .collect();
    let runs: Vec<crate::common::Run> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let summaries: Vec<Value> = runs.iter().map(|r| r.summary()).collect();
    let scheduled: Vec<u64> = summaries.iter().map(|s| s["tasks"]["scheduled"].as_u64().unwrap()).collect();
    assert_eq!(scheduled, [250, 250, 250, 250]);
    for (i, s) in summaries.iter().enumerate() {
        assert_identity(s);
        // The fixture records its iteration number as the trend `size`: segment i ran exactly
        // the iterations i, i+4, i+8, …
        let size = &s["metrics"]["size"];
        assert_eq!(size["count"], 250, "{size}");
        assert_eq!(size["min"].as_f64(), Some(i as f64));
        assert_eq!(size["max"].as_f64(), Some(996.0 + i as f64));
        assert!(runs[i].stdout.contains(&format!("segment {i} of 4")), "{}", runs[i].stdout);
        assert!((s["rate"]["target_per_s"].as_f64().unwrap() - 500.0).abs() < 1.0, "a quarter of 2000/s");
    }
    let started: Vec<std::time::SystemTime> =
        summaries.iter().map(|s| humantime::parse_rfc3339(s["started_at"].as_str().unwrap()).unwrap()).collect();
    let first = *started.iter().min().unwrap();
    let spread = started.iter().map(|t| t.duration_since(first).unwrap()).max().unwrap();
    assert!(spread < std::time::Duration::from_millis(500), "--start-at lines them up: {spread:?}");
}
