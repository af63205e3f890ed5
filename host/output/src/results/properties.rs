//! A fuzz-style property test of the results-file reader and the merge (issue 26): a real results
//! file with random and extreme numbers put in its integer fields (counts, gauges, durations,
//! times, line counts, segments), whole or cut off, is read and merged with a real 600-task file,
//! and every output is made from the merge. Whatever the numbers, nothing panics or hangs, and
//! nothing wraps: every count the merge gives is the exact sum of what the two files say (added
//! without bound), or a file is refused.

use std::sync::mpsc;
use std::time::Duration;

use loadhost_metrics::{MAX_COUNT, Outcome};
use proptest::prelude::*;
use serde_json::Value;

use super::merge::{Merged, merge_files};
use super::testkit::synthetic;
use super::{CutFiles, read_for_merge, write};
use crate::RunInfo;
use crate::summary::Summary;

/// How long one case may take before it counts as a hang (each takes milliseconds).
const HANG: Duration = Duration::from_secs(30);

/// JSON pointers to every integer in `v`.
fn integers(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Number(n) if n.is_u64() => out.push(at.to_owned()),
        Value::Object(map) => map.iter().for_each(|(k, v)| integers(v, &format!("{at}/{k}"), out)),
        Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| integers(v, &format!("{at}/{i}"), out)),
        _ => {}
    }
}

/// Random and extreme numbers, and a few that are not counts at all.
fn extreme() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop_oneof![
            Just(0u64),
            Just(1),
            Just(u64::MAX),
            Just(u64::MAX - 1),
            Just(MAX_COUNT),
            Just(MAX_COUNT + 1),
            Just(MAX_COUNT / 2 + 1),
            Just(1 << 63),
            Just(u64::from(u32::MAX)),
            Just(u64::from(u32::MAX) + 1),
            any::<u64>(),
            0u64..2_000,
        ]
        .prop_map(Value::from),
        1 => prop_oneof![Just(Value::from(-1)), Just(Value::from(1e300)), Just(Value::from(0.5))],
    ]
}

/// The 600-task file every crafted one is merged with, and the crafted file's lines (as JSON).
fn files(dir: &std::path::Path) -> (std::path::PathBuf, Vec<Value>) {
    let real = dir.join("real.lhr");
    write(&real, &synthetic(9, None, Duration::ZERO, 3, 200)).unwrap();
    let base = dir.join("base.lhr");
    write(&base, &synthetic(3, None, Duration::ZERO, 3, 20)).unwrap();
    let text = std::fs::read_to_string(&base).unwrap();
    (real, text.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect())
}

/// What a file's interval lines say `outcome` (or `scheduled`) came to, added without bound.
fn said(lines: &[Value], key: &str) -> u128 {
    let count = |v: &Value| v.pointer(&format!("/interval/window/counts/{key}")).and_then(Value::as_u64);
    lines.iter().filter_map(count).map(u128::from).sum()
}

/// Read `crafted` as `loadhost merge --partial` does, merge it after `real`, and make every output
/// of the merge; `Err` says what wrapped.
fn read_merge_render(real: &std::path::Path, crafted: &std::path::Path, lines: &[Value]) -> Result<(), String> {
    // Refused or read, never a panic.
    let _ = read_for_merge(crafted, CutFiles::Refuse);
    let Ok(file) = read_for_merge(crafted, CutFiles::Accept) else { return Ok(()) };
    let real_file = read_for_merge(real, CutFiles::Refuse).map_err(|e| e.to_string())?;
    let (mine, theirs) = (*file.results.report.counts(), *real_file.results.report.counts());
    let real_lines: Vec<Value> =
        std::fs::read_to_string(real).unwrap().lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    let Ok(merged) = merge_files(vec![("real.lhr".into(), real_file), ("crafted.lhr".into(), file)]) else {
        return Ok(());
    };
    let totals = merged.report.counts();
    let keys = ["scheduled", "retries"].into_iter().chain(Outcome::ALL.iter().map(|o| o.name()));
    for key in keys {
        let of = |c: &loadhost_metrics::Counts| -> u64 {
            match key {
                "scheduled" => c.scheduled,
                "retries" => c.retries,
                _ => Outcome::ALL.iter().find(|o| o.name() == key).map_or(0, |&o| c.get(o)),
            }
        };
        let sum = u128::from(of(&mine)) + u128::from(of(&theirs));
        if u128::from(of(totals)) != sum || of(totals) > MAX_COUNT {
            return Err(format!("tasks {key}: merged {} but the files say {sum}", of(totals)));
        }
        // The rows hold every interval of both files, each once.
        let rows: u128 = merged.rows.iter().map(|r| u128::from(of(&r.counts))).sum();
        if rows != said(lines, key) + said(&real_lines, key) {
            return Err(format!("tasks {key}: the rows add up to {rows}"));
        }
    }
    render(&merged);
    Ok(())
}

/// Every output of a merge, as `loadhost merge` makes them.
fn render(merged: &Merged) {
    let info = RunInfo {
        plugin_path: merged.plugin_path.clone(),
        plugin_sha256: merged.plugin_sha256.clone(),
        plugin_ref: None,
        plugin_digest: None,
        scenario_plugins: Default::default(),
        config: merged.config.clone(),
        model: String::new(),
        peak_rss: None,
        tags: Vec::new(),
    };
    let summary = Summary::new(&info, &merged.report, &merged.scenarios, &[]);
    let _ = crate::terminal::render(&summary);
    let _ = crate::json::to_bytes(&summary);
    let _ = crate::markdown::render(&summary);
    let _ = crate::junit::to_string(&summary, 1.0);
    let _ = crate::html::render(&summary, &merged.rows.iter().collect::<crate::html::ChartRows>());
    let mut csv = crate::csv::CsvWriter::new(Vec::new(), &summary.config).unwrap();
    for row in &merged.rows {
        csv.row(row).unwrap();
    }
    let _ = csv.finish(&summary);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn crafted_numbers_never_panic_hang_or_wrap(
        changes in proptest::collection::vec((any::<bool>(), any::<usize>(), any::<usize>(), extreme()), 1..8),
        cut in proptest::option::of(any::<usize>()),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (real, mut lines) = files(dir.path());
        for (counts_only, line, leaf, value) in changes {
            let count = lines.len();
            let line = &mut lines[line % count];
            let mut leaves = Vec::new();
            integers(line, "", &mut leaves);
            // Half the changes go to the task counts and gauges, which every output adds up.
            if counts_only {
                leaves.retain(|at| at.contains("/counts/") || at.contains("/gauges/") || at.ends_with("/started"));
            }
            if let Some(at) = leaves.get(leaf % leaves.len().max(1)) {
                *line.pointer_mut(at).unwrap() = value;
            }
        }
        if let Some(keep) = cut {
            // A killed run: its first lines only, each whole.
            lines.truncate(keep % (lines.len() + 1));
        }
        let crafted = dir.path().join("crafted.lhr");
        let text: String =
            std::iter::once("loadhost-results 2".to_owned()).chain(lines.iter().map(Value::to_string)).collect::<Vec<_>>().join("\n") + "\n";
        std::fs::write(&crafted, text).unwrap();

        let (done, answer) = mpsc::channel();
        let worker = std::thread::spawn(move || {
            let _ = done.send(read_merge_render(&real, &crafted, &lines));
        });
        match answer.recv_timeout(HANG) {
            Ok(result) => prop_assert!(result.is_ok(), "a count wrapped: {:?}", result),
            Err(mpsc::RecvTimeoutError::Timeout) => prop_assert!(false, "reading and merging hung for {HANG:?}"),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let panic = worker.join().err().map(|p| {
                    p.downcast_ref::<String>().cloned().or(p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                });
                prop_assert!(false, "reading or merging panicked: {:?}", panic);
            }
        }
    }
}
