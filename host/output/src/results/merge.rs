//! `loadhost merge`: the results files of one distributed run merged into the run one machine
//! would have reported (docs/merge.md).
//!
//! What is here is about files and parts: refusing parts that are not one run's (`one_run`:
//! different plugins, plans, row intervals or segment splits), noting missing segments and the
//! whole plan's rate, and building each merged row from the parts' intervals, decoding an encoded
//! window only while its row is built (and keeping it encoded for the merged run's own results
//! file when asked).
//! How the measurements add up — reports, windows, gauges, and which row an interval lands on —
//! is the merge policy, which is domain logic and lives in `loadhost_metrics::combine`, so
//! `loadhost run` combines its scenarios by the very same rules.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use loadhost_engine::Segment;
use loadhost_metrics::{Gauges, IntervalRow, MeasuredInterval, Overflow, RunReport, Timeline, Window};
use serde_json::Value;

use crate::summary::PluginFile;

use super::format::{IntervalRecord, IntervalRef, LineRef, RunResults, RunStart, segment_name};
use super::generator::{self, PartGenerator};
use super::one_run::{check_one_plan, check_segments};
use super::read::{EncodedInterval, ResultsFile};

/// Why parts cannot be merged. Parts are named by their labels (file names in `loadhost merge`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// Nothing to merge.
    #[error("nothing to merge: no results files were given")]
    NoParts,
    /// The parts belong to different runs (`--run-id`, or the planned start `--start-at`).
    #[error(
        "{other} is part of run '{other_run}' but {first} of run '{first_run}': the parts are not one run (a results file left from an earlier run?)"
    )]
    Run {
        /// The part compared against.
        first: String,
        /// The part that differs.
        other: String,
        /// `first`'s run.
        first_run: String,
        /// `other`'s run.
        other_run: String,
    },
    /// The parts ran different plugins.
    #[error(
        "{other}: the plugin's sha256 is {other_sha256} but {first}'s is {first_sha256}: the parts ran different plugins"
    )]
    Plugin {
        /// The part compared against.
        first: String,
        /// The part that differs.
        other: String,
        /// `first`'s plugin.
        first_sha256: String,
        /// `other`'s plugin.
        other_sha256: String,
    },
    /// The parts ran different plans.
    #[error("{other}: option '{key}' is {other_value} but {first}'s is {first_value}: the parts ran different plans")]
    Config {
        /// The part compared against.
        first: String,
        /// The part that differs.
        other: String,
        /// The option (its flag name).
        key: String,
        /// `first`'s value (JSON; null when unset).
        first_value: String,
        /// `other`'s value.
        other_value: String,
    },
    /// The parts cut their rows differently.
    #[error("{other}: the row interval is {other_interval:?} but {first}'s is {first_interval:?}")]
    Interval {
        /// The part compared against.
        first: String,
        /// The part that differs.
        other: String,
        /// `first`'s interval.
        first_interval: Duration,
        /// `other`'s interval.
        other_interval: Duration,
    },
    /// Some parts are segments and others are not.
    #[error(
        "{segmented} is segment {} but {whole} ran the whole plan (no --segment): they cannot be merged",
        segment_name(.segment)
    )]
    SegmentMix {
        /// A segmented part.
        segmented: String,
        /// Its segment.
        segment: Segment,
        /// A part without a segment.
        whole: String,
    },
    /// Segments of plans split differently.
    #[error(
        "{other} is segment {} but {first} is segment {}: the plan was split into different counts",
        segment_name(.other_segment),
        segment_name(.first_segment)
    )]
    SegmentCount {
        /// The part compared against.
        first: String,
        /// The part that differs.
        other: String,
        /// `first`'s segment.
        first_segment: Segment,
        /// `other`'s segment.
        other_segment: Segment,
    },
    /// An interval line that no longer decodes (the file changed after it was read).
    #[error("{part}: an interval cannot be read again: {why}")]
    Damaged {
        /// The part.
        part: String,
        /// What is wrong.
        why: String,
    },
    /// A count that would pass 2^53 (or a time no clock can say) once this part is added: a
    /// damaged or crafted file.
    #[error("{part}: cannot be added to the other parts: {overflow} (a damaged or crafted results file?)")]
    Overflow {
        /// The part whose figures did not fit.
        part: String,
        /// The figure.
        overflow: Overflow,
    },
    /// A part that is itself a merge (`loadhost merge --results`): merging it again with its own
    /// segments would count them twice.
    #[error("{part} is already a merged run (loadhost merge --results): merge the segments' own results files instead")]
    AlreadyMerged {
        /// The merged part.
        part: String,
    },
    /// The same segment twice.
    #[error("{first} and {other} are both segment {}: each segment must be merged once", segment_name(.segment))]
    SegmentTwice {
        /// The first part with it.
        first: String,
        /// The second.
        other: String,
        /// The segment.
        segment: Segment,
    },
}

/// Parts merged into one run.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The whole run.
    pub report: RunReport,
    /// Each scenario, merged across parts; empty for a single scenario.
    pub scenarios: Vec<RunReport>,
    /// The rows of the merged run, by interval then scenario.
    pub rows: Vec<IntervalRow>,
    /// The first part's plugin path.
    pub plugin_path: String,
    /// The plugin's sha256 (the same in every part).
    pub plugin_sha256: String,
    /// The first part's plugin reference and digest, when it was pulled from a registry.
    pub plugin_ref: Option<String>,
    /// The manifest digest of `plugin_ref`.
    pub plugin_digest: Option<String>,
    /// The first part's scenarios that ran plugins of their own.
    pub scenario_plugins: BTreeMap<String, PluginFile>,
    /// The plan's options: the first part's config without [`super::PER_PROCESS_KEYS`].
    pub config: Value,
    /// How many parts were merged.
    pub parts: usize,
    /// The parts' segments, sorted; empty when the parts ran the whole plan.
    pub segments: Vec<Segment>,
    /// Segments of the split that no part was (the merged run is then only part of the plan).
    pub missing: Vec<Segment>,
    /// The parts cut off before their end (killed): only the intervals they completed are in.
    pub cut: Vec<String>,
    /// Each part's generator, in the parts' order (those whose figures were measured).
    pub generators: Vec<PartGenerator>,
    /// The whole plan's planned average rate, missing segments included (see
    /// [`super::PlannedScenario::target_rate_whole`]), where `report.target_rate` is only the
    /// merged parts' plans added up: what the outputs state the achieved rate against. Parts
    /// that ran whole plans add up; for files that did not record it, the merged parts' rate
    /// scaled by the segments there should have been. `None` in the closed model.
    pub target_rate_whole: Option<f64>,
    /// Each scenario's whole-plan rate, by name, likewise (scenarios without one are absent).
    pub scenario_target_rates_whole: BTreeMap<String, f64>,
    /// The run the parts belong to (the first part's run id).
    pub run_id: Option<String>,
    /// The first part's planned start.
    pub planned_start: Option<SystemTime>,
    /// The row interval (the same in every part).
    pub interval: Duration,
    /// Each row's interval line, encoded, in the order of `rows` (for the merged run's own results
    /// file); empty unless asked for with [`Windows::Keep`].
    pub(super) lines: Vec<Box<str>>,
}

/// Whether a merge keeps each merged row's window (encoded, a few kilobytes a row) for writing the
/// merged run's results file, or only the row's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Windows {
    /// Only the rows' figures (for the outputs of `loadhost merge`).
    Drop,
    /// Also each row's whole window, for [`super::write_merged`].
    Keep,
}

/// Merge the parts of one distributed run (see docs/merge.md); parts are named "part 1", "part 2",
/// … in errors.
pub fn merge(parts: Vec<RunResults>) -> Result<Merged, MergeError> {
    merge_labelled(parts.into_iter().enumerate().map(|(i, p)| (format!("part {}", i + 1), p)).collect())
}

/// [`merge`], with a label (such as the file name) for each part, for errors and warnings.
pub fn merge_labelled(parts: Vec<(String, RunResults)>) -> Result<Merged, MergeError> {
    let views = parts
        .iter()
        .map(|(label, results)| Part {
            label,
            results,
            cut: false,
            start: None,
            records: results.intervals.iter().map(Placed::decoded).collect(),
        })
        .collect();
    merge_parts(views, Windows::Drop)
}

/// [`merge_labelled`] of files read with [`super::read_for_merge`]: each merged row decodes only its
/// own intervals, so memory holds the files' text and one row's windows at a time.
pub fn merge_files(files: Vec<(String, ResultsFile)>) -> Result<Merged, MergeError> {
    merge_files_with(files, Windows::Drop)
}

/// [`merge_files`], keeping each merged row's window when `windows` says so.
pub fn merge_files_with(files: Vec<(String, ResultsFile)>, windows: Windows) -> Result<Merged, MergeError> {
    let views = files
        .iter()
        .map(|(label, file)| Part {
            label,
            results: &file.results,
            cut: file.cut,
            start: file.start.as_ref(),
            records: file.intervals.iter().map(Placed::encoded).collect(),
        })
        .collect();
    merge_parts(views, windows)
}

/// One part as the merge sees it: its results (intervals aside) and its intervals, decoded or not.
pub(super) struct Part<'a> {
    pub(super) label: &'a str,
    pub(super) results: &'a RunResults,
    /// Cut off before its end line (its reports rebuilt from its intervals).
    cut: bool,
    /// Its start line, when it was read from a file that has one.
    start: Option<&'a RunStart>,
    records: Vec<Placed<'a>>,
}

/// An interval: what placing it needs, and its window.
struct Placed<'a> {
    scenario: &'a str,
    start: Duration,
    end: Duration,
    gauges: Gauges,
    generator: Option<MeasuredInterval>,
    window: WindowRef<'a>,
}

impl<'a> Placed<'a> {
    fn decoded(r: &'a IntervalRecord) -> Self {
        Placed {
            scenario: &r.scenario,
            start: r.start,
            end: r.end,
            gauges: r.gauges,
            generator: r.measured(),
            window: WindowRef::Decoded(&r.window),
        }
    }

    fn encoded(r: &'a EncodedInterval) -> Self {
        let (scenario, generator) = (&r.scenario, r.generator.clone());
        Placed { scenario, start: r.start, end: r.end, gauges: r.gauges, generator, window: WindowRef::Encoded(r) }
    }
}

enum WindowRef<'a> {
    Decoded(&'a Window),
    /// An interval line, decoded when its bucket is merged.
    Encoded(&'a EncodedInterval),
}

fn merge_parts(parts: Vec<Part<'_>>, windows: Windows) -> Result<Merged, MergeError> {
    let Some(first_part) = parts.first() else {
        return Err(MergeError::NoParts);
    };
    if let Some(merged) = parts.iter().find(|p| p.results.merged.is_some()) {
        return Err(MergeError::AlreadyMerged { part: merged.label.to_owned() });
    }
    let first = first_part.results;
    let first_config = check_one_plan(&parts)?;
    let (segments, missing) = check_segments(&parts)?;
    warn_of_gaps(&parts, &segments, &missing);
    let mut report = first.report.clone();
    for part in &parts[1..] {
        report.try_absorb(&part.results.report).map_err(|overflow| overflowed(part.label, overflow))?;
    }
    let mut scenarios = merge_scenarios(&parts)?;
    let (rows, lines) = merge_rows(&parts, first.interval, windows)?;
    if !rows.is_empty() {
        let mut per_scenario: HashMap<&str, u64> = HashMap::new();
        for row in &rows {
            *per_scenario.entry(&row.scenario).or_default() += 1;
        }
        for s in &mut scenarios {
            s.intervals = per_scenario.get(s.scenario.as_str()).copied().unwrap_or(0);
        }
        report.intervals = per_scenario.values().copied().max().unwrap_or(0);
    }
    let (target_rate_whole, scenario_target_rates_whole) = whole_rates(&parts, &segments, &report, &scenarios);
    Ok(Merged {
        target_rate_whole,
        scenario_target_rates_whole,
        run_id: first.run_id.clone(),
        planned_start: first.planned_start,
        interval: first.interval,
        lines,
        report,
        scenarios,
        rows,
        plugin_path: first.plugin_path.clone(),
        plugin_sha256: first.plugin_sha256.clone(),
        plugin_ref: first.plugin_ref.clone(),
        plugin_digest: first.plugin_digest.clone(),
        scenario_plugins: first.scenario_plugins.clone(),
        config: Value::Object(first_config),
        parts: parts.len(),
        segments,
        missing,
        cut: parts.iter().filter(|p| p.cut).map(|p| p.label.to_owned()).collect(),
        generators: parts
            .iter()
            .filter_map(|p| {
                generator::of_part(p.label, p.results, p.records.iter().map(|r| (r.scenario, r.generator.as_ref())))
            })
            .collect(),
    })
}

/// The whole plan's rate, and each scenario's (see [`Merged::target_rate_whole`]): as a part's
/// start line recorded it; else (parts that ran whole plans, or files written before it was
/// kept) the merged reports' own, scaled up by the segments missing when there are any.
fn whole_rates(
    parts: &[Part<'_>],
    segments: &[Segment],
    report: &RunReport,
    scenarios: &[RunReport],
) -> (Option<f64>, BTreeMap<String, f64>) {
    let whole = |merged: &RunReport| -> Option<f64> {
        let present = merged.target_rate?;
        let Some(count) = segments.first().map(|s| s.count()) else {
            // Whole plans side by side: their load adds up, as the report's rate does.
            return Some(present);
        };
        let recorded = parts.iter().find_map(|p| {
            p.start?.scenarios.iter().find(|planned| planned.scenario == merged.scenario)?.target_rate_whole
        });
        Some(recorded.unwrap_or(present * f64::from(count) / segments.len() as f64))
    };
    if scenarios.is_empty() {
        return (whole(report), BTreeMap::new());
    }
    let each: BTreeMap<String, f64> = scenarios.iter().filter_map(|s| Some((s.scenario.clone(), whole(s)?))).collect();
    // As the run's own rate adds its scenarios' up: none when any scenario has none.
    let run = (each.len() == scenarios.len()).then(|| each.values().sum());
    (run, each)
}

/// Warn of what makes the merged run less than the plan: missing segments, parts started far apart.
fn warn_of_gaps(parts: &[Part<'_>], segments: &[Segment], missing: &[Segment]) {
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(segment_name).collect();
        tracing::warn!(
            "segment{} {} {} missing: the merged run covers {} of {} segments of the plan",
            if missing.len() == 1 { "" } else { "s" },
            names.join(", "),
            if missing.len() == 1 { "is" } else { "are" },
            segments.len(),
            segments.len() + missing.len()
        );
    }
    let starts: Vec<SystemTime> = parts.iter().map(|p| p.results.started_at).collect();
    let interval = parts.first().map_or(Duration::ZERO, |p| p.results.interval);
    if let (Some(early), Some(late)) = (starts.iter().min(), starts.iter().max()) {
        let spread = late.duration_since(*early).unwrap_or_default();
        if spread > interval * 5 {
            tracing::warn!(
                "the parts started {:.1}s apart: did they share a --start-at? The merged run spans them all",
                spread.as_secs_f64()
            );
        }
    }
}

/// Each scenario, by name in the order the parts first name them, combined across the parts.
fn merge_scenarios(parts: &[Part<'_>]) -> Result<Vec<RunReport>, MergeError> {
    let mut merged: Vec<RunReport> = Vec::new();
    for part in parts {
        for s in &part.results.scenarios {
            match merged.iter_mut().find(|m| m.scenario == s.scenario) {
                Some(m) => m.try_absorb(s).map_err(|overflow| overflowed(part.label, overflow))?,
                None => merged.push(s.clone()),
            }
        }
    }
    Ok(merged)
}

fn overflowed(part: &str, overflow: Overflow) -> MergeError {
    MergeError::Overflow { part: part.to_owned(), overflow }
}

/// Every part's intervals on one timeline ([`Timeline`]: each lands on the row its absolute start
/// rounds to, counted from its scenario's earliest start among the parts). Buckets are merged one
/// at a time, so encoded intervals are decoded only while their row is built.
fn merge_rows(
    parts: &[Part<'_>],
    interval: Duration,
    windows: Windows,
) -> Result<(Vec<IntervalRow>, Vec<Box<str>>), MergeError> {
    // Where each part's rows of each scenario count from: the scenario's own start when it has a
    // report, else the run's start.
    let anchor = |part: &RunResults, scenario: &str| {
        part.scenarios.iter().find(|s| s.scenario == scenario).map_or(part.started_at, |s| s.started_at)
    };
    let mut order: Vec<&str> = Vec::new();
    let mut timeline = Timeline::new(interval);
    for part in parts {
        for record in &part.records {
            timeline.anchor(record.scenario, anchor(part.results, record.scenario));
            if !order.contains(&record.scenario) {
                order.push(record.scenario);
            }
        }
    }
    let mut buckets: BTreeMap<(u64, usize), Vec<(&str, &Placed<'_>)>> = BTreeMap::new();
    for part in parts {
        for record in &part.records {
            let row = timeline
                .row(record.scenario, anchor(part.results, record.scenario), record.start)
                .ok_or_else(|| overflowed(part.label, Overflow { what: "an interval's start time".into() }))?;
            let position = order.iter().position(|n| *n == record.scenario).unwrap_or(0);
            buckets.entry((row, position)).or_default().push((part.label, record));
        }
    }
    let names: Vec<Arc<str>> = order.iter().map(|n| Arc::from(*n)).collect();
    let mut rows = Vec::with_capacity(buckets.len());
    let mut lines = Vec::new();
    for ((index, position), members) in buckets {
        let mut window = Window::default();
        let mut gauges = Gauges::default();
        let mut length = Duration::ZERO;
        for (label, record) in members {
            let added = match record.window {
                WindowRef::Decoded(w) => window.try_merge(w),
                WindowRef::Encoded(encoded) => {
                    let decoded =
                        encoded.window().map_err(|why| MergeError::Damaged { part: label.to_owned(), why })?;
                    window.try_merge(&decoded)
                }
            };
            added.and_then(|()| gauges.try_add(&record.gauges)).map_err(|overflow| overflowed(label, overflow))?;
            length = length.max(record.end.saturating_sub(record.start));
        }
        let start = timeline.row_start(index);
        let mut row = IntervalRow::from_window(index, start, start.saturating_add(length), &window, gauges);
        row.scenario = names[position].clone();
        if windows == Windows::Keep {
            lines.push(
                interval_line(&row, &window)
                    .map_err(|why| MergeError::Damaged { part: "the merged run".into(), why })?,
            );
        }
        rows.push(row);
    }
    Ok((rows, lines))
}

/// A merged row's interval line, as a run writes its own (`ResultsWriter::interval`).
fn interval_line(row: &IntervalRow, window: &Window) -> Result<Box<str>, String> {
    let line = LineRef::Interval(IntervalRef {
        scenario: &row.scenario,
        index: row.index,
        start: row.start,
        end: row.end,
        window,
        gauges: super::format::gauges_of(row),
        generator: row.generator,
    });
    serde_json::to_string(&line).map(String::into_boxed_str).map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadhost_metrics::WorkerStats;
    use proptest::prelude::*;

    use super::*;
    use crate::results::testkit::*;
    use crate::results::{CutFiles, IntervalRecord, read_for_merge, write};

    #[test]
    fn merged_parts_equal_the_run_recorded_whole() {
        let parts_n = 3u64;
        let mut rng = Rng(42);
        let mut all = Window::default();
        let mut parts: Vec<RunResults> = (0..parts_n)
            .map(|i| {
                let mut r = synthetic(i, Some(seg(i as u32, parts_n as u32)), Duration::ZERO, 4, 0);
                r.report.totals = Window::default();
                r
            })
            .collect();
        for k in 0..6_000u64 {
            let micros = rng.micros();
            let part = &mut parts[(k % parts_n) as usize];
            let interval = ((k / parts_n) % 4) as usize;
            task(&mut part.intervals[interval].window, micros, k);
            task(&mut part.report.totals, micros, k);
            task(&mut all, micros, k);
        }
        let merged = merge(parts.iter().map(write_read).collect()).unwrap();
        // Read for a merge (windows decoded bucket by bucket), the files give the same run.
        let dir = tempfile::tempdir().unwrap();
        let files = parts
            .iter()
            .enumerate()
            .map(|(i, part)| {
                let path = dir.path().join(format!("segment-{i}.lhr"));
                write(&path, part).unwrap();
                let file = read_for_merge(&path, CutFiles::Refuse).unwrap();
                assert_eq!(file.intervals(), 4);
                (path.display().to_string(), file)
            })
            .collect();
        let lean = merge_files(files).unwrap();
        assert_eq!(lean.rows, merged.rows);
        assert_same_report(&lean.report, &merged.report);
        // Gauges are last-write-wins by sequence number, so the whole run's one is the part's
        // latest; every other figure must add up exactly.
        assert_same_window(&merged.report.totals, &all);
        assert_eq!(merged.report.totals.latency.count(), 6_000);
        assert_eq!(merged.report.started, 0);
        assert_eq!(merged.report.target_rate, Some(0.0));
        assert_eq!(
            merged.report.workers,
            WorkerStats { min: 24, peak: 36, final_: 30, grown: 12, retired: 6, replaced: 3, ceiling: 48 }
        );
        assert_eq!(merged.rows.len(), 4);
        let row_tasks: u64 = merged.rows.iter().map(|r| r.counts.scheduled).sum();
        assert_eq!(row_tasks, 6_000);
        assert_eq!(merged.rows[0].workers, 30);
        assert_eq!(merged.segments.len(), 3);
        assert!(merged.missing.is_empty());
        assert_eq!(merged.parts, 3);
        assert!(merged.config.get("segment").is_none() && merged.config.get("results").is_none());
        assert_eq!(merged.config["rate"], "4000/s");
    }

    #[test]
    fn times_span_the_parts_and_rows_land_on_the_nearest_interval() {
        let a = synthetic(1, Some(seg(0, 2)), Duration::ZERO, 3, 10);
        // Starts 400 ms later: its rows round onto the same seconds; 600 ms later, onto the next.
        let b = synthetic(2, Some(seg(1, 2)), Duration::from_millis(400), 3, 10);
        let merged = merge(vec![a.clone(), b]).unwrap();
        assert_eq!(merged.report.started_at, base_time());
        assert_eq!(merged.report.elapsed, Duration::from_millis(3_420));
        assert_eq!(merged.report.generation, Duration::from_millis(3_400));
        assert_eq!(merged.report.target_rate, Some(20.0));
        assert_eq!(merged.report.started, 60);
        let at: Vec<(u64, u64)> = merged.rows.iter().map(|r| (r.index, r.counts.scheduled)).collect();
        assert_eq!(at, [(0, 20), (1, 20), (2, 20)]);
        assert_eq!(merged.rows[1].start, Duration::from_secs(1));
        assert_eq!(merged.rows[1].end, Duration::from_secs(2));
        assert_eq!(merged.report.intervals, 3);

        let late = synthetic(2, Some(seg(1, 2)), Duration::from_millis(600), 3, 10);
        let merged = merge(vec![late, a]).unwrap();
        let at: Vec<(u64, u64)> = merged.rows.iter().map(|r| (r.index, r.counts.scheduled)).collect();
        assert_eq!(at, [(0, 10), (1, 20), (2, 20), (3, 10)]);
        assert_eq!(merged.report.started_at, base_time(), "the earliest start, whatever the order");
    }

    #[test]
    fn scenarios_merge_by_name_on_their_own_timelines() {
        let part = |seed: u64, index: u32, delay_ms: u64| {
            let mut r = synthetic(seed, Some(seg(index, 2)), Duration::from_millis(delay_ms), 2, 10);
            let mut login = r.report.clone();
            login.scenario = "login".into();
            let mut browse = r.report.clone();
            browse.scenario = "browse".into();
            browse.offset = Duration::from_secs(10);
            browse.started_at += Duration::from_secs(10);
            browse.target_rate = None;
            let browse_rows: Vec<IntervalRecord> =
                r.intervals.iter().map(|i| IntervalRecord { scenario: "browse".into(), ..i.clone() }).collect();
            for record in &mut r.intervals {
                record.scenario = "login".into();
            }
            r.intervals.extend(browse_rows);
            r.report.scenario = "all".into();
            r.report.target_rate = None;
            r.scenarios = vec![login, browse];
            r
        };
        let merged = merge(vec![part(1, 0, 0), part(2, 1, 100)]).unwrap();
        let names: Vec<&str> = merged.scenarios.iter().map(|s| s.scenario.as_str()).collect();
        assert_eq!(names, ["login", "browse"]);
        let browse = &merged.scenarios[1];
        assert_eq!(browse.offset, Duration::from_secs(10));
        assert_eq!(browse.started_at, base_time() + Duration::from_secs(10));
        assert_eq!(browse.started, 40);
        assert_eq!(browse.target_rate, None);
        assert_eq!(merged.scenarios[0].target_rate, Some(20.0));
        // Each scenario's rows count from its own start: two rows each, not rows at 10 s.
        let rows: Vec<(u64, &str, u64)> =
            merged.rows.iter().map(|r| (r.index, &*r.scenario, r.counts.scheduled)).collect();
        assert_eq!(rows, [(0, "login", 20), (0, "browse", 20), (1, "login", 20), (1, "browse", 20)]);
        assert_eq!((merged.report.intervals, browse.intervals), (2, 2));
    }

    #[test]
    fn the_first_reason_a_part_stopped_is_kept() {
        let mut a = synthetic(1, None, Duration::ZERO, 1, 1);
        let mut b = synthetic(2, None, Duration::ZERO, 1, 1);
        b.report.stopped = Some("SIGTERM".into());
        b.report.aborted = Some("b aborted".into());
        a.report.aborted = Some("a aborted".into());
        b.report.target_rate = None;
        let merged = merge(vec![a, b]).unwrap();
        assert_eq!(merged.report.aborted.as_deref(), Some("a aborted"));
        assert_eq!(merged.report.stopped.as_deref(), Some("SIGTERM"));
        assert_eq!(merged.report.target_rate, None);
        assert!(merged.segments.is_empty(), "unsegmented parts merge as they are");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Random latencies, HTTP durations and trend values survive the file: every bucket,
        /// count and percentile, and merging the read parts equals recording everything in one.
        #[test]
        fn random_runs_round_trip_and_merge_exactly(
            samples in proptest::collection::vec((1u64..10_000_000_000, 0u8..3), 1..600),
            trend in proptest::collection::vec(-1e6f64..1e9, 0..100),
        ) {
            let mut parts = [synthetic(1, None, Duration::ZERO, 2, 0), synthetic(2, None, Duration::ZERO, 2, 0)];
            // The parts' pacer figures (lag, underrun), then every task and trend value.
            let mut whole = parts[0].report.totals.clone();
            whole.merge(&parts[1].report.totals);
            for (k, &(micros, which)) in samples.iter().enumerate() {
                let part = &mut parts[usize::from(which % 2)];
                task(&mut part.intervals[k % 2].window, micros, k as u64);
                task(&mut part.report.totals, micros, k as u64);
                task(&mut whole, micros, k as u64);
            }
            for (k, &v) in trend.iter().enumerate() {
                parts[k % 2].report.totals.plugin.trend(key("t", &[]), v);
                whole.plugin.trend(key("t", &[]), v);
            }
            let read: Vec<RunResults> = parts.iter().map(write_read).collect();
            for (p, r) in parts.iter().zip(&read) {
                assert_same_results(p, r);
            }
            let merged = merge(read).unwrap();
            for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
                prop_assert_eq!(merged.report.totals.latency.quantile_micros(q), whole.latency.quantile_micros(q));
            }
            assert_same_window(&merged.report.totals, &whole);
        }
    }

    /// `loadhost merge --results`: the merged run as a results file, read back as any run's: one
    /// interval per merged row (its window whole), the merge's reports, the missing segment and
    /// the whole plan's rate; merged again, it is refused (its segments would count twice).
    #[test]
    fn a_merged_run_writes_a_results_file_that_reads_back_whole() {
        use crate::results::{ResultsWriter, RunStart, read, write_merged};
        use crate::summary::MergedFrom;
        let dir = tempfile::tempdir().unwrap();
        let parts: Vec<RunResults> =
            [0u32, 2].iter().map(|&i| synthetic(u64::from(i), Some(seg(i, 3)), Duration::ZERO, 4, 30)).collect();
        // Without start lines (parts given whole), the whole plan's rate is estimated from the
        // segments there are.
        assert_eq!(merge(parts.clone()).unwrap().target_rate_whole, Some(90.0));
        let files = parts
            .iter()
            .map(|part| {
                let index = part.segment.map_or(0, |s| s.index());
                let path = dir.path().join(format!("segment-{index}.lhr"));
                // The start line as a run writes it: the whole plan's rate beside the segment's.
                let mut start = RunStart::of(part);
                start.scenarios[0].target_rate_whole = Some(100.0);
                let mut writer = ResultsWriter::create(&path, &start).unwrap();
                writer.started(&part.report.scenario, part.started_at).unwrap();
                writer.finish(part).unwrap();
                (path.display().to_string(), read_for_merge(&path, CutFiles::Refuse).unwrap())
            })
            .collect();
        let merged = merge_files_with(files, Windows::Keep).unwrap();
        assert_eq!(merged.report.target_rate, Some(60.0), "what the two segments planned");
        assert_eq!(merged.target_rate_whole, Some(100.0), "the whole plan, as the start lines say");
        assert_eq!(merged.lines.len(), merged.rows.len());
        let from = MergedFrom {
            files: vec!["segment-0.lhr".into(), "segment-2.lhr".into()],
            missing: vec!["1/3".into()],
            missing_share: Some(0.4),
            parts: 2,
            segments: vec!["0/3".into(), "2/3".into()],
            ..MergedFrom::default()
        };
        let path = dir.path().join("merged.lhr");
        let mut bytes = Vec::new();
        write_merged(&mut bytes, &merged, &from).unwrap();
        std::fs::write(&path, bytes).unwrap();
        let back = read(&path).unwrap();
        assert_eq!((back.segment, back.merged.as_ref()), (None, Some(&from)));
        assert_same_report(&back.report, &merged.report);
        assert_eq!(back.intervals.len(), merged.rows.len());
        for (record, row) in back.intervals.iter().zip(&merged.rows) {
            assert_eq!((record.index, record.start, record.end), (row.index, row.start, row.end));
            assert_eq!(record.window.counts, row.counts);
        }
        let tasks: u64 = back.intervals.iter().map(|r| r.window.latency.count()).sum();
        assert_eq!(tasks, parts.iter().map(|p| p.report.totals.latency.count()).sum::<u64>(), "every task, once");
        let file = read_for_merge(&path, CutFiles::Refuse).unwrap();
        assert_eq!(file.start.as_ref().map(|s| s.scenarios[0].target_rate_whole), Some(Some(100.0)));
        let again = merge_files(vec![("merged.lhr".into(), file)]).unwrap_err();
        assert!(matches!(again, MergeError::AlreadyMerged { .. }), "{again}");
        assert!(again.to_string().starts_with("merged.lhr is already a merged run"), "{again}");
    }
}
