//! Results files (`loadhost run --results FILE`) and their merge (`loadhost merge`): everything a
//! run measured, exactly (counters, full HDR histograms, plugin metrics), so that the processes of
//! a distributed run (`--segment I/N`) add up to the run one machine would have reported.
//!
//! A file is JSON lines after a header line (docs/merge.md has the details):
//!
//! ```text
//! loadhost-results 1
//! {"interval":{"scenario":"default","index":0,"start":…,"end":…,"window":{…},"gauges":{…}}}
//! …one line per interval…
//! {"end":{"version":1,"loadhost_version":…,"plugin_path":…,"plugin_sha256":…,"config":{…},
//!         "segment":{"index":0,"count":4},"interval":…,"started_at":…,"report":{…},
//!         "scenarios":[…],"intervals":60}}
//! ```
//!
//! Interval lines can be written as the run goes ([`ResultsWriter`]), so a long run holds no
//! windows in memory; the `end` line comes last, so a file without it was cut off.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead as _, BufReader, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use loadhost_metrics::{Gauges, IntervalRow, RunReport, Window};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The first word of every results file.
pub const MAGIC: &str = "loadhost-results";

/// The format version this loadhost writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Config keys that may differ between the parts of one run: where each process writes, which
/// segment it is, when it starts, and its live endpoints. Every other key must be equal.
pub const PER_PROCESS_KEYS: &[&str] = &[
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

/// One interval as recorded, for rebuilding rows after a merge.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IntervalRecord {
    /// The scenario ("default" when there is one).
    pub scenario: String,
    /// 0 for the scenario's first interval.
    pub index: u64,
    /// Offset of the interval's start from the scenario's start (see [`RunResults::started_at`]).
    pub start: Duration,
    /// Offset of the interval's end.
    pub end: Duration,
    /// Everything the interval recorded.
    pub window: Window,
    /// The gauges sampled at its end.
    pub gauges: Gauges,
}

impl IntervalRecord {
    /// The record of the interval an observer was just given (clones the window).
    pub fn new(row: &IntervalRow, window: &Window) -> Self {
        Self {
            scenario: row.scenario.to_string(),
            index: row.index,
            start: row.start,
            end: row.end,
            window: window.clone(),
            gauges: gauges_of(row),
        }
    }
}

fn gauges_of(row: &IntervalRow) -> Gauges {
    Gauges { started: row.started, workers: row.workers, idle: row.idle, in_flight: row.in_flight }
}

/// An interval line's shape, borrowed (so a writer need not clone the window).
#[derive(Serialize)]
struct IntervalRef<'a> {
    scenario: &'a str,
    index: u64,
    start: Duration,
    end: Duration,
    window: &'a Window,
    gauges: Gauges,
}

/// This process's share of a distributed plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Segment {
    /// 0-based.
    pub index: u32,
    /// How many segments the plan was split into.
    pub count: u32,
}

impl fmt::Display for Segment {
    /// `I/N`, as `--segment` takes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Everything needed to rebuild a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResults {
    /// The format version: [`FORMAT_VERSION`].
    pub version: u32,
    /// The loadhost that wrote it.
    pub loadhost_version: String,
    /// The plugin file as the user named it.
    pub plugin_path: String,
    /// Hex sha256 of the plugin file.
    pub plugin_sha256: String,
    /// The options in effect (flag names as keys), as in the summary JSON.
    pub config: Value,
    /// This process's segment, when the plan was split.
    pub segment: Option<Segment>,
    /// The row interval (1 s).
    pub interval: Duration,
    /// When the load started (the whole run's report's `started_at`). Rows of a single run are
    /// offsets from it; with scenarios, each scenario's rows are offsets from that scenario's own
    /// `started_at` in [`RunResults::scenarios`].
    pub started_at: SystemTime,
    /// The whole run (all scenarios combined).
    pub report: RunReport,
    /// Each scenario's report; empty for a single scenario.
    pub scenarios: Vec<RunReport>,
    /// Every interval, in the order they ended.
    pub intervals: Vec<IntervalRecord>,
}

/// The `end` line: everything but the intervals, and how many there were.
#[derive(Serialize)]
struct EndRef<'a> {
    version: u32,
    loadhost_version: &'a str,
    plugin_path: &'a str,
    plugin_sha256: &'a str,
    config: &'a Value,
    segment: Option<Segment>,
    interval: Duration,
    started_at: SystemTime,
    report: &'a RunReport,
    scenarios: &'a [RunReport],
    intervals: u64,
}

#[derive(Deserialize)]
struct EndOwned {
    version: u32,
    loadhost_version: String,
    plugin_path: String,
    plugin_sha256: String,
    config: Value,
    segment: Option<Segment>,
    interval: Duration,
    started_at: SystemTime,
    report: RunReport,
    #[serde(default)]
    scenarios: Vec<RunReport>,
    intervals: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum LineRef<'a> {
    Interval(IntervalRef<'a>),
    End(EndRef<'a>),
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum LineOwned {
    Interval(Box<IntervalRecord>),
    End(Box<EndOwned>),
}

/// Writes a results file as the run goes: the header now, a line per interval as each ends
/// (nothing is kept in memory), the `end` line at [`ResultsWriter::finish`].
pub struct ResultsWriter {
    out: BufWriter<File>,
    intervals: u64,
}

impl ResultsWriter {
    /// Create (or truncate) `path` and write the header line.
    pub fn create(path: &Path) -> io::Result<Self> {
        Self::from_file(File::create(path)?)
    }

    /// Write the header line into `file`, already created.
    pub fn from_file(file: File) -> io::Result<Self> {
        let mut out = BufWriter::new(file);
        writeln!(out, "{MAGIC} {FORMAT_VERSION}")?;
        Ok(Self { out, intervals: 0 })
    }

    /// Write the line of the interval an observer was just given.
    pub fn interval(&mut self, row: &IntervalRow, window: &Window) -> io::Result<()> {
        self.line(&LineRef::Interval(IntervalRef {
            scenario: &row.scenario,
            index: row.index,
            start: row.start,
            end: row.end,
            window,
            gauges: gauges_of(row),
        }))
    }

    /// Write one recorded interval.
    pub fn record(&mut self, record: &IntervalRecord) -> io::Result<()> {
        self.line(&LineRef::Interval(IntervalRef {
            scenario: &record.scenario,
            index: record.index,
            start: record.start,
            end: record.end,
            window: &record.window,
            gauges: record.gauges,
        }))
    }

    fn line(&mut self, line: &LineRef<'_>) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, line)?;
        self.out.write_all(b"\n")?;
        if matches!(line, LineRef::Interval(_)) {
            self.intervals += 1;
        }
        Ok(())
    }

    /// Write `results.intervals` (usually empty when intervals were written as they ended), then
    /// the `end` line with everything else; flush and sync. `results.version` must be
    /// [`FORMAT_VERSION`].
    pub fn finish(mut self, results: &RunResults) -> io::Result<()> {
        if results.version != FORMAT_VERSION {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "results format version {} cannot be written (this loadhost writes {FORMAT_VERSION})",
                    results.version
                ),
            ));
        }
        for record in &results.intervals {
            self.record(record)?;
        }
        let end = EndRef {
            version: results.version,
            loadhost_version: &results.loadhost_version,
            plugin_path: &results.plugin_path,
            plugin_sha256: &results.plugin_sha256,
            config: &results.config,
            segment: results.segment,
            interval: results.interval,
            started_at: results.started_at,
            report: &results.report,
            scenarios: &results.scenarios,
            intervals: self.intervals,
        };
        self.line(&LineRef::End(end))?;
        let file = self.out.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()
    }
}

/// Write `results` to `path` in one go.
pub fn write(path: &Path, results: &RunResults) -> io::Result<()> {
    ResultsWriter::create(path)?.finish(results)
}

/// Why a file could not be read as results.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultsError {
    /// The file cannot be opened or read.
    #[error("{}: cannot read the file: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// It does not start with the results header.
    #[error("{}: not a loadhost results file (it does not start with '{MAGIC}'; `loadhost run --results FILE` writes one)", path.display())]
    NotResults {
        /// The file.
        path: PathBuf,
    },
    /// Another format version.
    #[error("{}: results format version {version} is not supported (this loadhost {} reads version {FORMAT_VERSION})", path.display(), crate::VERSION)]
    Version {
        /// The file.
        path: PathBuf,
        /// The version it has.
        version: u32,
    },
    /// The file ends early (the writer was stopped, or a copy was cut short).
    #[error("{}: the results file is truncated ({why}): was the run killed, or the copy cut short?", path.display())]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Where it ends.
        why: String,
    },
    /// A line is not what it should be.
    #[error("{}: the results file is corrupt: line {line}: {why}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        why: String,
    },
}

/// Read a results file.
pub fn read(path: &Path) -> Result<RunResults, ResultsError> {
    let file = File::open(path).map_err(|error| ResultsError::Read { path: path.to_owned(), error })?;
    let mut intervals = Vec::new();
    let mut results = read_lines(path, BufReader::new(file), |record, _| intervals.push(*record))?;
    results.intervals = intervals;
    Ok(results)
}

/// A results file read for a merge: its intervals stay encoded (their line's text, a few
/// kilobytes each) until the merged row they belong to is built. A decoded window holds its HDR
/// histograms' full bucket arrays (hundreds of kilobytes), so this is what lets `loadhost merge`
/// combine long runs of many segments in little memory.
pub struct ResultsFile {
    /// Everything but the intervals (`intervals` is empty).
    pub results: RunResults,
    intervals: Vec<EncodedInterval>,
}

impl ResultsFile {
    /// How many intervals the file has.
    pub fn intervals(&self) -> usize {
        self.intervals.len()
    }
}

/// One interval line: what placing it needs, and its text.
struct EncodedInterval {
    scenario: String,
    start: Duration,
    end: Duration,
    gauges: Gauges,
    line: Box<str>,
}

/// Read (and check: every line is decoded once) a results file for [`merge_files`].
pub fn read_for_merge(path: &Path) -> Result<ResultsFile, ResultsError> {
    let file = File::open(path).map_err(|error| ResultsError::Read { path: path.to_owned(), error })?;
    let mut intervals = Vec::new();
    let results = read_lines(path, BufReader::new(file), |record, line| {
        intervals.push(EncodedInterval {
            scenario: record.scenario,
            start: record.start,
            end: record.end,
            gauges: record.gauges,
            // serde_json has checked it is UTF-8.
            line: String::from_utf8_lossy(line).into(),
        });
    })?;
    Ok(ResultsFile { results, intervals })
}

/// Read the header and every line; hand each interval to `on_interval` with its line's bytes.
fn read_lines(
    path: &Path,
    mut reader: impl io::BufRead,
    mut on_interval: impl FnMut(Box<IntervalRecord>, &[u8]),
) -> Result<RunResults, ResultsError> {
    let io_error = |error| ResultsError::Read { path: path.to_owned(), error };
    let truncated = |why: String| ResultsError::Truncated { path: path.to_owned(), why };
    let corrupt = |line: usize, why: String| ResultsError::Corrupt { path: path.to_owned(), line, why };
    let mut line = Vec::new();
    // The header: at most a few bytes, so a large file of something else is not read whole.
    io::Read::take(&mut reader, 64).read_until(b'\n', &mut line).map_err(io_error)?;
    let header = String::from_utf8_lossy(&line);
    if header.is_empty() {
        return Err(truncated("the file is empty".into()));
    }
    let Some(version) = header.strip_prefix(MAGIC).and_then(|rest| rest.strip_prefix(' ')) else {
        return Err(ResultsError::NotResults { path: path.to_owned() });
    };
    if !header.ends_with('\n') {
        return Err(if header.len() >= 64 {
            ResultsError::NotResults { path: path.to_owned() }
        } else {
            truncated("it ends inside the header line".into())
        });
    }
    let version: u32 = version.trim().parse().map_err(|_| corrupt(1, format!("the header is '{}'", header.trim())))?;
    if version != FORMAT_VERSION {
        return Err(ResultsError::Version { path: path.to_owned(), version });
    }
    let mut count = 0u64;
    let mut number = 1;
    loop {
        number += 1;
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(io_error)? == 0 {
            return Err(truncated(format!("after {count} intervals, with no end line")));
        }
        if line.last() != Some(&b'\n') {
            return Err(truncated(format!("line {number} is cut off")));
        }
        let parsed: LineOwned = serde_json::from_slice(&line).map_err(|err| corrupt(number, err.to_string()))?;
        let end = match parsed {
            LineOwned::Interval(record) => {
                count += 1;
                on_interval(record, &line);
                continue;
            }
            LineOwned::End(end) => end,
        };
        let bad = |why: String| Err(corrupt(number, why));
        if end.version != version {
            return bad(format!("the end line says version {} but the header {version}", end.version));
        }
        if end.intervals != count {
            return bad(format!("the end line counts {} intervals but the file has {count}", end.intervals));
        }
        if end.interval.is_zero() {
            return bad("the row interval is zero".into());
        }
        if let Some(s) = end.segment
            && s.index >= s.count
        {
            return bad(format!("segment {s} does not exist"));
        }
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).map_err(io_error)?;
        if !rest.iter().all(u8::is_ascii_whitespace) {
            return bad("more follows the end line".into());
        }
        let EndOwned {
            version,
            loadhost_version,
            plugin_path,
            plugin_sha256,
            config,
            segment,
            interval,
            started_at,
            report,
            scenarios,
            intervals: _,
        } = *end;
        return Ok(RunResults {
            version,
            loadhost_version,
            plugin_path,
            plugin_sha256,
            config,
            segment,
            interval,
            started_at,
            report,
            scenarios,
            intervals: Vec::new(),
        });
    }
}

/// Why parts cannot be merged. Parts are named by their labels (file names in `loadhost merge`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// Nothing to merge.
    #[error("nothing to merge: no results files were given")]
    NoParts,
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
    #[error("{segmented} is segment {segment} but {whole} ran the whole plan (no --segment): they cannot be merged")]
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
        "{other} is segment {other_segment} but {first} is segment {first_segment}: the plan was split into different counts"
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
    /// The same segment twice.
    #[error("{first} and {other} are both segment {segment}: each segment must be merged once")]
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
    /// The plan's options: the first part's config without [`PER_PROCESS_KEYS`].
    pub config: Value,
    /// How many parts were merged.
    pub parts: usize,
    /// The parts' segments, sorted; empty when the parts ran the whole plan.
    pub segments: Vec<Segment>,
    /// Segments of the split that no part was (the merged run is then only part of the plan).
    pub missing: Vec<Segment>,
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
            records: results
                .intervals
                .iter()
                .map(|r| Placed {
                    scenario: &r.scenario,
                    start: r.start,
                    end: r.end,
                    gauges: r.gauges,
                    window: WindowRef::Decoded(&r.window),
                })
                .collect(),
        })
        .collect();
    merge_parts(views)
}

/// [`merge_labelled`] of files read with [`read_for_merge`]: each merged row decodes only its
/// own intervals, so memory holds the files' text and one row's windows at a time.
pub fn merge_files(files: Vec<(String, ResultsFile)>) -> Result<Merged, MergeError> {
    let views = files
        .iter()
        .map(|(label, file)| Part {
            label,
            results: &file.results,
            records: file
                .intervals
                .iter()
                .map(|r| Placed {
                    scenario: &r.scenario,
                    start: r.start,
                    end: r.end,
                    gauges: r.gauges,
                    window: WindowRef::Encoded(&r.line),
                })
                .collect(),
        })
        .collect();
    merge_parts(views)
}

/// One part as the merge sees it: its results (intervals aside) and its intervals, decoded or not.
struct Part<'a> {
    label: &'a str,
    results: &'a RunResults,
    records: Vec<Placed<'a>>,
}

/// An interval: what placing it needs, and its window.
struct Placed<'a> {
    scenario: &'a str,
    start: Duration,
    end: Duration,
    gauges: Gauges,
    window: WindowRef<'a>,
}

enum WindowRef<'a> {
    Decoded(&'a Window),
    /// An interval line, decoded when its bucket is merged.
    Encoded(&'a str),
}

fn merge_parts(parts: Vec<Part<'_>>) -> Result<Merged, MergeError> {
    let Some(first_part) = parts.first() else {
        return Err(MergeError::NoParts);
    };
    let (first_label, first) = (first_part.label, first_part.results);
    let first_config = plan_config(&first.config);
    for part in &parts[1..] {
        let (label, p) = (part.label, part.results);
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
    let (segments, missing) = check_segments(&parts)?;
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(Segment::to_string).collect();
        tracing::warn!(
            "segment{} {} missing: the merged run covers {} of {} segments of the plan",
            if missing.len() == 1 { " is" } else { "s are" },
            names.join(", "),
            segments.len(),
            segments.len() + missing.len()
        );
    }
    let starts: Vec<SystemTime> = parts.iter().map(|p| p.results.started_at).collect();
    if let (Some(early), Some(late)) = (starts.iter().min(), starts.iter().max()) {
        let spread = late.duration_since(*early).unwrap_or_default();
        if spread > first.interval * 5 {
            tracing::warn!(
                "the parts started {:.1}s apart: did they share a --start-at? The merged run spans them all",
                spread.as_secs_f64()
            );
        }
    }

    let whole: Vec<&RunReport> = parts.iter().map(|p| &p.results.report).collect();
    let mut report = merge_reports(&whole);
    let mut names: Vec<&str> = Vec::new();
    for part in &parts {
        for s in &part.results.scenarios {
            if !names.contains(&s.scenario.as_str()) {
                names.push(&s.scenario);
            }
        }
    }
    let mut scenarios: Vec<RunReport> = names
        .iter()
        .map(|name| {
            let each: Vec<&RunReport> =
                parts.iter().filter_map(|p| p.results.scenarios.iter().find(|s| s.scenario == *name)).collect();
            merge_reports(&each)
        })
        .collect();
    let rows = merge_rows(&parts, first.interval)?;
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
    Ok(Merged {
        report,
        scenarios,
        rows,
        plugin_path: first.plugin_path.clone(),
        plugin_sha256: first.plugin_sha256.clone(),
        config: Value::Object(first_config),
        parts: parts.len(),
        segments,
        missing,
    })
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
fn check_segments(parts: &[Part<'_>]) -> Result<(Vec<Segment>, Vec<Segment>), MergeError> {
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
        if segment.count != first_segment.count {
            return Err(MergeError::SegmentCount {
                first: first.to_owned(),
                other: label.to_owned(),
                first_segment,
                other_segment: segment,
            });
        }
        if let Some(earlier) = seen.insert(segment.index, label) {
            return Err(MergeError::SegmentTwice { first: earlier.to_owned(), other: label.to_owned(), segment });
        }
    }
    let count = first_segment.count;
    let present = seen.keys().map(|&index| Segment { index, count }).collect();
    let missing = (0..count).filter(|i| !seen.contains_key(i)).map(|index| Segment { index, count }).collect();
    Ok((present, missing))
}

/// Reports of the same run (or scenario) from several parts as one: counts and histograms add,
/// times span them all.
fn merge_reports(reports: &[&RunReport]) -> RunReport {
    let Some(first) = reports.first() else {
        return empty_report();
    };
    let start = reports.iter().map(|r| r.started_at).min().unwrap_or(first.started_at);
    let since_start = |at: SystemTime| at.duration_since(start).unwrap_or_default();
    let mut all = RunReport {
        scenario: first.scenario.clone(),
        offset: reports.iter().map(|r| r.offset).min().unwrap_or_default(),
        started_at: start,
        elapsed: reports.iter().map(|r| since_start(r.started_at + r.elapsed)).max().unwrap_or_default(),
        generation: reports.iter().map(|r| since_start(r.started_at + r.generation)).max().unwrap_or_default(),
        started: 0,
        target_rate: Some(0.0),
        totals: Window::default(),
        workers: Default::default(),
        intervals: reports.iter().map(|r| r.intervals).max().unwrap_or(0),
        aborted: None,
        stopped: None,
        teardown_error: None,
    };
    for r in reports {
        all.started += r.started;
        all.target_rate = all.target_rate.zip(r.target_rate).map(|(a, b)| a + b);
        all.totals.merge(&r.totals);
        all.workers.add(&r.workers);
        all.aborted = all.aborted.take().or_else(|| r.aborted.clone());
        all.stopped = all.stopped.take().or_else(|| r.stopped.clone());
        all.teardown_error = all.teardown_error.take().or_else(|| r.teardown_error.clone());
    }
    all
}

fn empty_report() -> RunReport {
    RunReport {
        scenario: "default".into(),
        offset: Duration::ZERO,
        started_at: SystemTime::UNIX_EPOCH,
        elapsed: Duration::ZERO,
        generation: Duration::ZERO,
        started: 0,
        target_rate: None,
        totals: Window::default(),
        workers: Default::default(),
        intervals: 0,
        aborted: None,
        stopped: None,
        teardown_error: None,
    }
}

/// Every part's intervals on one timeline: a record goes to the bucket its absolute start rounds
/// to, counted from the earliest start of its scenario across the parts. Buckets are merged one
/// at a time, so encoded intervals are decoded only while their row is built.
fn merge_rows(parts: &[Part<'_>], interval: Duration) -> Result<Vec<IntervalRow>, MergeError> {
    // Where each part's rows of each scenario count from: the scenario's own start when it has a
    // report, else the run's start.
    let anchor = |part: &RunResults, scenario: &str| {
        part.scenarios.iter().find(|s| s.scenario == scenario).map_or(part.started_at, |s| s.started_at)
    };
    let mut order: Vec<&str> = Vec::new();
    let mut earliest: HashMap<&str, SystemTime> = HashMap::new();
    for part in parts {
        for record in &part.records {
            let at = anchor(part.results, record.scenario);
            let slot = earliest.entry(record.scenario).or_insert(at);
            *slot = (*slot).min(at);
            if !order.contains(&record.scenario) {
                order.push(record.scenario);
            }
        }
    }
    let step = interval.as_nanos().max(1);
    let mut buckets: BTreeMap<(u64, usize), Vec<(&str, &Placed<'_>)>> = BTreeMap::new();
    for part in parts {
        for record in &part.records {
            let name = record.scenario;
            let from = earliest.get(name).copied().unwrap_or(part.results.started_at);
            let offset = (anchor(part.results, name) + record.start).duration_since(from).unwrap_or_default();
            let index = u64::try_from((offset.as_nanos() + step / 2) / step).unwrap_or(u64::MAX);
            let position = order.iter().position(|n| *n == name).unwrap_or(0);
            buckets.entry((index, position)).or_default().push((part.label, record));
        }
    }
    let names: Vec<Arc<str>> = order.iter().map(|n| Arc::from(*n)).collect();
    let mut rows = Vec::with_capacity(buckets.len());
    for ((index, position), members) in buckets {
        let mut window = Window::default();
        let mut gauges = Gauges::default();
        let mut length = Duration::ZERO;
        for (label, record) in members {
            match record.window {
                WindowRef::Decoded(w) => window.merge(w),
                WindowRef::Encoded(line) => match serde_json::from_str::<LineOwned>(line) {
                    Ok(LineOwned::Interval(decoded)) => window.merge(&decoded.window),
                    Ok(LineOwned::End(_)) => {
                        return Err(MergeError::Damaged { part: label.to_owned(), why: "not an interval line".into() });
                    }
                    Err(err) => return Err(MergeError::Damaged { part: label.to_owned(), why: err.to_string() }),
                },
            }
            gauges.started += record.gauges.started;
            gauges.workers += record.gauges.workers;
            gauges.idle += record.gauges.idle;
            gauges.in_flight += record.gauges.in_flight;
            length = length.max(record.end.saturating_sub(record.start));
        }
        let start = interval.saturating_mul(u32::try_from(index).unwrap_or(u32::MAX));
        let mut row = IntervalRow::from_window(index, start, start + length, &window, gauges);
        row.scenario = names[position].clone();
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use loadhost_metrics::http::HttpSample;
    use loadhost_metrics::{
        AttemptEnd, AttemptRecord, Outcome, SeriesKey, SeriesSummary, SeriesValue, TaskTiming, WorkerStats,
    };
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// A small deterministic generator (xorshift), so tests need no randomness crate.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        /// Latency-like microseconds: mostly 1-20 ms with a long tail.
        fn micros(&mut self) -> u64 {
            let base = 1_000 + self.next() % 19_000;
            if self.next().is_multiple_of(100) { base * (1 + self.next() % 50) } else { base }
        }
    }

    fn key(name: &str, tags: &[(&str, &str)]) -> SeriesKey {
        SeriesKey::new(name.into(), tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    /// Record one task of latency `micros` into `w`, touching every kind of measurement.
    fn task(w: &mut Window, micros: u64, n: u64) {
        let failed = n.is_multiple_of(50);
        w.counts.scheduled += 1;
        w.record_attempt(AttemptRecord {
            end: if failed { AttemptEnd::Failed } else { AttemptEnd::Passed },
            retry: false,
            timing: TaskTiming {
                wait: Duration::from_micros(micros / 20),
                service: Duration::from_micros(micros),
                gate: n.is_multiple_of(4).then(|| Duration::from_micros(micros / 50)),
            },
            terminal: Some(if failed { Outcome::Failed } else { Outcome::Passed }),
        });
        w.http.record(HttpSample {
            status: Some(if failed { 503 } else { 200 }),
            duration: Duration::from_micros(micros * 9 / 10),
            body_bytes: 100 + n % 7,
        });
        w.http.bytes_sent += 120;
        w.http.bytes_received += 300;
        w.plugin.trend(
            key("login_ms", &[("route", if n.is_multiple_of(3) { "/a" } else { "/b" })]),
            micros as f64 / 1000.0,
        );
        w.plugin.check(key("status is 200", &[]), !failed);
        w.plugin.counter(key("greetings", &[]), 1);
        w.plugin.gauge(key("queue_depth", &[]), (n % 17) as f64 + 0.25, n);
    }

    fn base_time() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    /// A synthetic single-scenario run: `intervals` one-second intervals of `per_interval` tasks,
    /// started `delay` after the base time.
    fn synthetic(
        seed: u64,
        segment: Option<Segment>,
        delay: Duration,
        intervals: u64,
        per_interval: u64,
    ) -> RunResults {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let started_at = base_time() + delay;
        let mut totals = Window::default();
        let mut records = Vec::new();
        for index in 0..intervals {
            let mut w = Window::default();
            for n in 0..per_interval {
                task(&mut w, rng.micros(), index * per_interval + n);
            }
            w.lag_max = Duration::from_micros(rng.next() % 900);
            w.lag_total = w.lag_max * 3;
            w.underrun = rng.next() % 2;
            totals.merge(&w);
            let gauges = Gauges { started: per_interval, workers: 10, idle: 4, in_flight: 6 };
            let start = Duration::from_secs(index);
            records.push(IntervalRecord {
                scenario: "default".into(),
                index,
                start,
                end: start + Duration::from_secs(1),
                window: w,
                gauges,
            });
        }
        let report = RunReport {
            scenario: "default".into(),
            offset: Duration::ZERO,
            started_at,
            elapsed: Duration::from_secs(intervals) + Duration::from_millis(20),
            generation: Duration::from_secs(intervals),
            started: intervals * per_interval,
            target_rate: Some(per_interval as f64),
            totals,
            workers: WorkerStats { min: 8, peak: 12, final_: 10, grown: 4, retired: 2, replaced: 1 },
            intervals,
            aborted: None,
            stopped: None,
            teardown_error: None,
        };
        let mut config =
            json!({"rate": "4000/s", "duration": format!("{intervals}s"), "allow-host": ["127.0.0.1:8080"]});
        if let Some(s) = segment {
            config["segment"] = json!(s.to_string());
            config["results"] = json!(format!("segment-{}.lhr", s.index));
        }
        RunResults {
            version: FORMAT_VERSION,
            loadhost_version: crate::VERSION.into(),
            plugin_path: "plugins/http-get.wasm".into(),
            plugin_sha256: "ab".repeat(32),
            config,
            segment,
            interval: Duration::from_secs(1),
            started_at,
            report,
            scenarios: Vec::new(),
            intervals: records,
        }
    }

    fn values(h: &loadhost_metrics::LatencyHistogram) -> Vec<(u64, u64)> {
        h.hdr().iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
    }

    /// The same measurements: counts, every histogram bucket, plugin series and HTTP figures.
    fn assert_same_window(a: &Window, b: &Window) {
        assert_eq!(a.counts, b.counts);
        assert_eq!(a.attempts, b.attempts);
        for (x, y) in
            [(&a.latency, &b.latency), (&a.service, &b.service), (&a.wait, &b.wait), (&a.gate_wait, &b.gate_wait)]
        {
            assert_eq!(values(x), values(y));
            assert_eq!(x.percentiles(), y.percentiles());
        }
        assert_eq!(
            (a.lag_max, a.lag_total, a.underrun, a.dropped_at_gate),
            (b.lag_max, b.lag_total, b.underrun, b.dropped_at_gate)
        );
        assert_eq!(
            (a.plugin.kind_conflicts(), a.plugin.folded(), a.plugin.discarded(), a.plugin.invalid()),
            (b.plugin.kind_conflicts(), b.plugin.folded(), b.plugin.discarded(), b.plugin.invalid())
        );
        let (sa, sb) = (a.plugin.series(), b.plugin.series());
        assert_eq!(sa.len(), sb.len());
        for (x, y) in sa.iter().zip(&sb) {
            assert_eq!(x.key, y.key);
            match (x.value.to_summary(), y.value.to_summary()) {
                // A trend's mean is its sum over its count, and floating-point sums added in another
                // order (part by part) may differ in the last bits; everything else is exact.
                (SeriesSummary::Trend { count: c, stats: mut s }, SeriesSummary::Trend { count: d, stats: t })
                    if c == d && (s.mean - t.mean).abs() <= 1e-9 * t.mean.abs().max(1.0) =>
                {
                    s.mean = t.mean;
                    assert_eq!(s, t, "{}", x.key);
                }
                (sx, sy) => assert_eq!(sx, sy, "{}", x.key),
            }
            if let (SeriesValue::Gauge { seq: s, .. }, SeriesValue::Gauge { seq: t, .. }) = (&x.value, &y.value) {
                assert_eq!(s, t);
            }
        }
        let (h, k) = (&a.http, &b.http);
        assert_eq!(
            (
                h.requests,
                h.failed,
                h.denied,
                &h.by_status,
                h.connections_opened,
                h.bytes_sent,
                h.bytes_received,
                h.body_bytes
            ),
            (
                k.requests,
                k.failed,
                k.denied,
                &k.by_status,
                k.connections_opened,
                k.bytes_sent,
                k.bytes_received,
                k.body_bytes
            )
        );
        assert_eq!(values(&h.duration), values(&k.duration));
    }

    fn assert_same_report(a: &RunReport, b: &RunReport) {
        assert_eq!(
            (&a.scenario, a.offset, a.started_at, a.elapsed, a.generation, a.started, a.target_rate),
            (&b.scenario, b.offset, b.started_at, b.elapsed, b.generation, b.started, b.target_rate)
        );
        assert_eq!(
            (a.workers, a.intervals, &a.aborted, &a.stopped, &a.teardown_error),
            (b.workers, b.intervals, &b.aborted, &b.stopped, &b.teardown_error)
        );
        assert_same_window(&a.totals, &b.totals);
    }

    fn assert_same_results(a: &RunResults, b: &RunResults) {
        assert_eq!(
            (
                a.version,
                &a.loadhost_version,
                &a.plugin_path,
                &a.plugin_sha256,
                &a.config,
                a.segment,
                a.interval,
                a.started_at
            ),
            (
                b.version,
                &b.loadhost_version,
                &b.plugin_path,
                &b.plugin_sha256,
                &b.config,
                b.segment,
                b.interval,
                b.started_at
            )
        );
        assert_same_report(&a.report, &b.report);
        assert_eq!(a.scenarios.len(), b.scenarios.len());
        for (x, y) in a.scenarios.iter().zip(&b.scenarios) {
            assert_same_report(x, y);
        }
        assert_eq!(a.intervals.len(), b.intervals.len());
        for (x, y) in a.intervals.iter().zip(&b.intervals) {
            assert_eq!(
                (&x.scenario, x.index, x.start, x.end, x.gauges),
                (&y.scenario, y.index, y.start, y.end, y.gauges)
            );
            assert_same_window(&x.window, &y.window);
        }
    }

    fn write_read(results: &RunResults) -> RunResults {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("part.lhr");
        write(&path, results).unwrap();
        read(&path).unwrap()
    }

    #[test]
    fn a_run_round_trips_exactly() {
        let mut results = synthetic(1, Some(Segment { index: 1, count: 4 }), Duration::ZERO, 5, 200);
        results.report.aborted = Some("plugin said stop".into());
        results.report.teardown_error = Some("teardown: no".into());
        results.report.totals.plugin.gauge(key("odd", &[]), f64::INFINITY, 1);
        let back = write_read(&results);
        assert_same_results(&results, &back);
        assert_eq!(back.report.totals.latency.count(), 1000);
    }

    #[test]
    fn streaming_and_one_go_write_the_same_file() {
        let results = synthetic(2, None, Duration::ZERO, 3, 50);
        let dir = tempfile::tempdir().unwrap();
        let (whole, streamed) = (dir.path().join("whole.lhr"), dir.path().join("streamed.lhr"));
        write(&whole, &results).unwrap();
        let mut writer = ResultsWriter::create(&streamed).unwrap();
        for record in &results.intervals {
            let row = IntervalRow::from_window(record.index, record.start, record.end, &record.window, record.gauges);
            writer.interval(&row, &record.window).unwrap();
        }
        writer.finish(&RunResults { intervals: Vec::new(), ..results.clone() }).unwrap();
        assert_eq!(std::fs::read(&whole).unwrap(), std::fs::read(&streamed).unwrap());
        let text = std::fs::read_to_string(&whole).unwrap();
        assert!(
            text.starts_with("loadhost-results 1\n{\"interval\":{\"scenario\":\"default\",\"index\":0,"),
            "{}",
            &text[..80]
        );
        assert!(text.lines().last().unwrap().starts_with("{\"end\":{\"version\":1,"));
    }

    #[test]
    fn errors_name_the_file_and_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.lhr");
        let message = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            let err = read(&path).unwrap_err();
            let text = err.to_string();
            assert!(text.starts_with(&path.display().to_string()), "{text}");
            (err, text)
        };
        let missing = read(&dir.path().join("nope.lhr")).unwrap_err();
        assert!(matches!(missing, ResultsError::Read { .. }) && missing.to_string().contains("nope.lhr"), "{missing}");
        let (err, text) = message(b"interval,start_s\n0,0.000\n");
        assert!(
            matches!(err, ResultsError::NotResults { .. }) && text.contains("not a loadhost results file"),
            "{text}"
        );
        let (err, text) = message(b"loadhost-results 2\n{}\n");
        assert!(
            matches!(err, ResultsError::Version { version: 2, .. }) && text.contains("version 2 is not supported"),
            "{text}"
        );
        let (err, _) = message(b"");
        assert!(matches!(err, ResultsError::Truncated { .. }));
        let (err, text) = message(b"loadhost-results 1\n{\"interval\": 5}\n");
        assert!(matches!(err, ResultsError::Corrupt { line: 2, .. }), "{text}");
        let (err, _) = message(b"loadhost-results one\n");
        assert!(matches!(err, ResultsError::Corrupt { line: 1, .. }));

        // Cut anywhere, a real file is truncated (never mistaken for a whole one, never a panic).
        let results = synthetic(3, None, Duration::ZERO, 2, 20);
        write(&path, &results).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        for cut in (1..bytes.len()).step_by(97).chain([bytes.len() - 1, bytes.len() - 2]) {
            let (err, text) = message(&bytes[..cut]);
            assert!(
                matches!(err, ResultsError::Truncated { .. } | ResultsError::NotResults { .. }),
                "cut at {cut}: {text}"
            );
        }
        // A line count that does not match the end line is corrupt.
        let text = String::from_utf8(bytes).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.remove(1);
        let (err, text) = message((lines.join("\n") + "\n").as_bytes());
        assert!(
            matches!(err, ResultsError::Corrupt { .. }) && text.contains("counts 2 intervals but the file has 1"),
            "{text}"
        );
    }

    /// Every task recorded once into `all`, and into the part that `k mod parts` names.
    #[test]
    fn merged_parts_equal_the_run_recorded_whole() {
        let parts_n = 3u64;
        let mut rng = Rng(42);
        let mut all = Window::default();
        let mut parts: Vec<RunResults> = (0..parts_n)
            .map(|i| {
                let mut r =
                    synthetic(i, Some(Segment { index: i as u32, count: parts_n as u32 }), Duration::ZERO, 4, 0);
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
                let file = read_for_merge(&path).unwrap();
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
            WorkerStats { min: 24, peak: 36, final_: 30, grown: 12, retired: 6, replaced: 3 }
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
        let a = synthetic(1, Some(Segment { index: 0, count: 2 }), Duration::ZERO, 3, 10);
        // Starts 400 ms later: its rows round onto the same seconds; 600 ms later, onto the next.
        let b = synthetic(2, Some(Segment { index: 1, count: 2 }), Duration::from_millis(400), 3, 10);
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

        let late = synthetic(2, Some(Segment { index: 1, count: 2 }), Duration::from_millis(600), 3, 10);
        let merged = merge(vec![late, a]).unwrap();
        let at: Vec<(u64, u64)> = merged.rows.iter().map(|r| (r.index, r.counts.scheduled)).collect();
        assert_eq!(at, [(0, 10), (1, 20), (2, 20), (3, 10)]);
        assert_eq!(merged.report.started_at, base_time(), "the earliest start, whatever the order");
    }

    #[test]
    fn scenarios_merge_by_name_on_their_own_timelines() {
        let part = |seed: u64, index: u32, delay_ms: u64| {
            let mut r = synthetic(seed, Some(Segment { index, count: 2 }), Duration::from_millis(delay_ms), 2, 10);
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

    #[test]
    fn parts_that_are_not_one_run_are_refused_naming_both() {
        let seg = |index, count| Some(Segment { index, count });
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
        assert_eq!(merged.segments, [Segment { index: 0, count: 3 }, Segment { index: 2, count: 3 }]);
        assert_eq!(merged.missing, [Segment { index: 1, count: 3 }]);
    }

    #[test]
    fn a_sixty_second_run_is_a_compact_file() {
        // 60 one-second intervals of 1,000 tasks, each with HTTP, a tagged trend, a check, a
        // counter and a gauge.
        let results = synthetic(7, Some(Segment { index: 0, count: 4 }), Duration::ZERO, 60, 1_000);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("segment-0.lhr");
        write(&path, &results).unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        if let Some(keep) = std::env::var_os("LOADHOST_KEEP_RESULTS") {
            // By hand: LOADHOST_KEEP_RESULTS=/tmp/lhr cargo test -p loadhost-output sixty
            let keep = PathBuf::from(keep);
            std::fs::create_dir_all(&keep).unwrap();
            for i in 0..4u32 {
                let delay = Duration::from_millis(u64::from(i) * 3);
                let part = synthetic(7 + u64::from(i), Some(Segment { index: i, count: 4 }), delay, 60, 1_000);
                write(&keep.join(format!("segment-{i}.lhr")), &part).unwrap();
            }
            eprintln!("a 60-interval results file is {size} bytes; 4 segments written to {}", keep.display());
        }
        assert!(size < 1 << 20, "{size} bytes");
        assert_same_results(&results, &read(&path).unwrap());
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
}
