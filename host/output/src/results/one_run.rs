//! Whether parts are one run's, before anything is added up: the same run (its id), plugin, plan
//! (the config without the keys each process sets for itself), row interval and segment split;
//! and which segments of the split no part was.

use std::collections::BTreeMap;

use loadhost_engine::Segment;
use serde_json::Value;

use super::merge::{MergeError, Part};

/// Config keys that may differ between the parts of one run: where each process writes, which
/// segment it is, when it starts, and its live endpoints. Every other key must be equal.
pub const PER_PROCESS_KEYS: &[&str] = &[
    "run-id",
    "segment",
    "segments",
    "results",
    "start-at",
    "summary-json",
    "csv",
    "html",
    "out",
    "metrics-addr",
    "control",
    "control-token",
];

/// Refuse parts that ran different plugins, plans or row intervals; the plan's config (without
/// the keys each process sets for itself) when they are one run's.
pub(super) fn check_one_plan(parts: &[Part<'_>]) -> Result<serde_json::Map<String, Value>, MergeError> {
    let Some(first_part) = parts.first() else {
        return Err(MergeError::NoParts);
    };
    let (first_label, first) = (first_part.label, first_part.results);
    let first_config = plan_config(&first.config);
    for part in &parts[1..] {
        let (label, p) = (part.label, part.results);
        if let (Some(a), Some(b)) = (&first.run_id, &p.run_id)
            && a != b
        {
            return Err(MergeError::Run {
                first: first_label.to_owned(),
                other: label.to_owned(),
                first_run: a.clone(),
                other_run: b.clone(),
            });
        }
        if p.plugin_sha256 != first.plugin_sha256 {
            return Err(MergeError::Plugin {
                first: first_label.to_owned(),
                other: label.to_owned(),
                first_sha256: first.plugin_sha256.clone(),
                other_sha256: p.plugin_sha256.clone(),
            });
        }
        if let Some((key, a, b)) = config_difference(&first_config, &plan_config(&p.config)) {
            return Err(MergeError::Config {
                first: first_label.to_owned(),
                other: label.to_owned(),
                key,
                first_value: a.to_string(),
                other_value: b.to_string(),
            });
        }
        if p.interval != first.interval {
            return Err(MergeError::Interval {
                first: first_label.to_owned(),
                other: label.to_owned(),
                first_interval: first.interval,
                other_interval: p.interval,
            });
        }
        if p.loadhost_version != first.loadhost_version {
            tracing::warn!(
                "{label} was written by loadhost {} and {first_label} by {}",
                p.loadhost_version,
                first.loadhost_version
            );
        }
    }
    Ok(first_config)
}

/// The config without the keys each process may set its own way.
fn plan_config(config: &Value) -> serde_json::Map<String, Value> {
    match config {
        Value::Object(map) => map
            .iter()
            .filter(|(k, _)| !PER_PROCESS_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        Value::Null => serde_json::Map::new(),
        other => std::iter::once(("config".to_owned(), other.clone())).collect(),
    }
}

/// The first key (in order) whose values differ; an absent key is null.
fn config_difference(
    a: &serde_json::Map<String, Value>,
    b: &serde_json::Map<String, Value>,
) -> Option<(String, Value, Value)> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter().find_map(|key| {
        let (x, y) = (a.get(key).unwrap_or(&Value::Null), b.get(key).unwrap_or(&Value::Null));
        (x != y).then(|| (key.clone(), x.clone(), y.clone()))
    })
}

/// The parts' segments (sorted) and the missing ones; an error when they cannot be one plan.
pub(super) fn check_segments(parts: &[Part<'_>]) -> Result<(Vec<Segment>, Vec<Segment>), MergeError> {
    let segmented: Vec<(&str, Segment)> =
        parts.iter().filter_map(|p| p.results.segment.map(|s| (p.label, s))).collect();
    let Some(&(first, first_segment)) = segmented.first() else {
        return Ok((Vec::new(), Vec::new()));
    };
    if let Some(whole) = parts.iter().find(|p| p.results.segment.is_none()) {
        return Err(MergeError::SegmentMix {
            segmented: first.to_owned(),
            segment: first_segment,
            whole: whole.label.to_owned(),
        });
    }
    let mut seen: BTreeMap<u32, &str> = BTreeMap::new();
    for &(label, segment) in &segmented {
        if segment.count() != first_segment.count() {
            return Err(MergeError::SegmentCount {
                first: first.to_owned(),
                other: label.to_owned(),
                first_segment,
                other_segment: segment,
            });
        }
        if let Some(earlier) = seen.insert(segment.index(), label) {
            return Err(MergeError::SegmentTwice { first: earlier.to_owned(), other: label.to_owned(), segment });
        }
    }
    let count = first_segment.count();
    // Every index below the count makes a segment that exists.
    let segment = |index| Segment::new(index, count).ok();
    let present = seen.keys().filter_map(|&index| segment(index)).collect();
    let missing = (0..count).filter(|i| !seen.contains_key(i)).filter_map(segment).collect();
    Ok((present, missing))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::results::testkit::*;
    use crate::results::{RunResults, merge, merge_labelled, segment_name};

    #[test]
    fn parts_that_are_not_one_run_are_refused_naming_both() {
        let seg = |index, count| Some(crate::results::testkit::seg(index, count));
        let refuse = |parts: Vec<RunResults>, says: &str| {
            let labelled = parts.into_iter().enumerate().map(|(i, p)| (format!("seg-{i}.lhr"), p)).collect();
            let err = merge_labelled(labelled).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
            err
        };
        assert!(matches!(merge(Vec::new()), Err(MergeError::NoParts)));

        let mut other_plugin = synthetic(2, seg(1, 2), Duration::ZERO, 1, 1);
        other_plugin.plugin_sha256 = "cd".repeat(32);
        let err = refuse(vec![synthetic(1, seg(0, 2), Duration::ZERO, 1, 1), other_plugin], "different plugins");
        let mut stale = synthetic(1, seg(1, 2), Duration::ZERO, 1, 1);
        stale.run_id = Some("run-6".into());
        refuse(vec![synthetic(1, seg(0, 2), Duration::ZERO, 1, 1), stale], "is part of run 'run-6' but");
        assert!(
            err.starts_with("seg-1.lhr: the plugin's sha256 is cdcd") && err.contains("seg-0.lhr's is abab"),
            "{err}"
        );

        let mut other_rate = synthetic(2, seg(1, 2), Duration::ZERO, 1, 1);
        other_rate.config["rate"] = json!("2000/s");
        let err = refuse(vec![synthetic(1, seg(0, 2), Duration::ZERO, 1, 1), other_rate], "option 'rate'");
        assert!(err.contains("\"2000/s\"") && err.contains("\"4000/s\"") && err.contains("seg-0.lhr"), "{err}");
        let mut extra = synthetic(2, seg(1, 2), Duration::ZERO, 1, 1);
        extra.config["insecure"] = json!(true);
        refuse(
            vec![synthetic(1, seg(0, 2), Duration::ZERO, 1, 1), extra],
            "option 'insecure' is true but seg-0.lhr's is null",
        );

        // Per-process keys may differ.
        let mut own = synthetic(2, seg(1, 2), Duration::ZERO, 1, 1);
        for (k, v) in [
            ("csv", "b.csv"),
            ("summary-json", "b.json"),
            ("start-at", "2026-01-01T00:00:00Z"),
            ("control", "127.0.0.1:1"),
        ] {
            own.config[k] = json!(v);
        }
        assert!(merge(vec![synthetic(1, seg(0, 2), Duration::ZERO, 1, 1), own]).is_ok());

        let mut slower = synthetic(2, seg(1, 2), Duration::ZERO, 1, 1);
        slower.interval = Duration::from_secs(2);
        refuse(vec![synthetic(1, seg(0, 2), Duration::ZERO, 1, 1), slower], "row interval is 2s but seg-0.lhr's is 1s");

        refuse(
            vec![synthetic(1, seg(0, 2), Duration::ZERO, 1, 1), synthetic(2, seg(0, 2), Duration::ZERO, 1, 1)],
            "seg-0.lhr and seg-1.lhr are both segment 0/2",
        );
        refuse(
            vec![synthetic(1, seg(0, 2), Duration::ZERO, 1, 1), synthetic(2, seg(1, 3), Duration::ZERO, 1, 1)],
            "seg-1.lhr is segment 1/3 but seg-0.lhr is segment 0/2",
        );
        refuse(
            vec![synthetic(1, None, Duration::ZERO, 1, 1), synthetic(2, seg(1, 2), Duration::ZERO, 1, 1)],
            "seg-1.lhr is segment 1/2 but seg-0.lhr ran the whole plan",
        );

        // A missing segment merges (with a warning) and is reported.
        let merged =
            merge(vec![synthetic(1, seg(0, 3), Duration::ZERO, 1, 1), synthetic(2, seg(2, 3), Duration::ZERO, 1, 1)])
                .unwrap();
        let named: Vec<String> = merged.segments.iter().map(segment_name).collect();
        assert_eq!(named, ["0/3", "2/3"]);
        assert_eq!(merged.missing.iter().map(segment_name).collect::<Vec<_>>(), ["1/3"]);
    }
}
