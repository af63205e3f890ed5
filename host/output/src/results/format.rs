//! The results file (`loadhost run --results FILE`): everything a run measured, exactly
//! (counters, full HDR histograms, plugin metrics), as JSON lines after a header line
//! (docs/merge.md has the details):
//!
//! ```text
//! loadhost-results 2
//! {"start":{"version":2,"loadhost_version":…,"plugin_path":…,"plugin_sha256":…,"config":{…},
//!           "segment":{"index":0,"count":4},"interval":…,"scenarios":[{"scenario":"default",…}]}}
//! {"started":{"scenario":"default","at":…}}
//! {"interval":{"scenario":"default","index":0,"start":…,"end":…,"window":{…},"gauges":{…}}}
//! …one line per interval…
//! {"end":{"version":2,"loadhost_version":…,"plugin_path":…,"plugin_sha256":…,"config":{…},
//!         "segment":{"index":0,"count":4},"interval":…,"started_at":…,"report":{…},
//!         "scenarios":[…],"intervals":60}}
//! ```
//!
//! The run writes it as it goes ([`ResultsWriter`]): the `start` line before the load, a
//! `started` line when each scenario's load starts, and each interval's line as it ends, each
//! flushed to the file at once; the `end` line comes last. So a long run holds no windows in
//! memory, and a run that is killed (out of memory, a CI timeout) leaves a file whose completed
//! intervals can still be merged ([`CutFiles::Accept`]: the part's report is rebuilt from them).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead as _, BufReader, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use loadhost_engine::Segment;
use loadhost_metrics::count::Tally;
use loadhost_metrics::{Gauges, IntervalRow, Overflow, RunReport, Window, WorkerStats};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::summary::PluginFile;

/// The first word of every results file.
pub const MAGIC: &str = "loadhost-results";

/// The format version this loadhost writes.
pub const FORMAT_VERSION: u32 = 2;

/// The oldest format version this loadhost reads. Version 1 had no `start` and `started` lines,
/// so a version 1 file merges only when whole.
pub const OLDEST_VERSION: u32 = 1;

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
    /// Whether every count of the interval fits (see `loadhost_metrics::count`): a file is input,
    /// and a damaged or crafted one must be refused, not wrapped round when it is added up. A merge
    /// needs no such check first (it adds every interval checked); a reader that uses an
    /// interval alone does.
    pub fn check(&self) -> Result<(), Overflow> {
        self.window.check()?;
        Gauges::default().try_add(&self.gauges)
    }

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

/// `I/N`, as `--segment` takes it and outputs show it.
pub fn segment_name(segment: &Segment) -> String {
    format!("{}/{}", segment.index(), segment.count())
}

/// A segment in a results file: `{"index": I, "count": N}`, or null for a whole plan. Read back, it
/// must name a segment that exists.
mod segment_field {
    use loadhost_engine::Segment;
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Shape {
        index: u32,
        count: u32,
    }

    pub(super) fn serialize<S: Serializer>(segment: &Option<Segment>, serializer: S) -> Result<S::Ok, S::Error> {
        segment.map(|s| Shape { index: s.index(), count: s.count() }).serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Segment>, D::Error> {
        Option::<Shape>::deserialize(deserializer)?
            .map(|s| Segment::new(s.index, s.count).map_err(D::Error::custom))
            .transpose()
    }
}

/// The `start` line: what a results file says before the load starts. It is what a merge needs
/// of a part besides its measurements, so a file cut off before its `end` line (which says all of
/// it again) can still be merged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStart {
    /// The format version: [`FORMAT_VERSION`].
    pub version: u32,
    /// The loadhost that writes it.
    pub loadhost_version: String,
    /// The plugin file as the user named it.
    pub plugin_path: String,
    /// Hex sha256 of the plugin file.
    pub plugin_sha256: String,
    /// The registry reference the plugin was pulled as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_ref: Option<String>,
    /// The manifest digest `plugin_ref` resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_digest: Option<String>,
    /// The scenarios that run a plugin of their own, with it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scenario_plugins: BTreeMap<String, PluginFile>,
    /// The options in effect (flag names as keys), as in the summary JSON.
    pub config: Value,
    /// This process's segment, when the plan is split.
    #[serde(with = "segment_field")]
    pub segment: Option<Segment>,
    /// The run this part belongs to (see [`RunResults::run_id`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// When the load is planned to start (see [`RunResults::planned_start`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_start: Option<SystemTime>,
    /// The row interval (1 s).
    pub interval: Duration,
    /// The scenarios planned, in order ("default" alone without `[[scenario]]` blocks).
    pub scenarios: Vec<PlannedScenario>,
}

/// A scenario as planned: what its report takes from the plan rather than from its intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedScenario {
    /// Its name ("default" without `[[scenario]]` blocks).
    pub scenario: String,
    /// How long after the run's start it starts.
    pub offset: Duration,
    /// The planned average rate (tasks/s); `None` in the closed model.
    pub target_rate: Option<f64>,
}

impl RunStart {
    /// The results of the run this line starts, once measured (its intervals are added apart).
    pub fn into_results(self, report: RunReport, scenarios: Vec<RunReport>) -> RunResults {
        RunResults {
            version: self.version,
            loadhost_version: self.loadhost_version,
            plugin_path: self.plugin_path,
            plugin_sha256: self.plugin_sha256,
            plugin_ref: self.plugin_ref,
            plugin_digest: self.plugin_digest,
            scenario_plugins: self.scenario_plugins,
            config: self.config,
            segment: self.segment,
            run_id: self.run_id,
            planned_start: self.planned_start,
            interval: self.interval,
            started_at: report.started_at,
            report,
            scenarios,
            intervals: Vec::new(),
        }
    }

    /// The `start` line of a run already measured (for [`write`]): its plan as its reports say it.
    pub fn of(results: &RunResults) -> Self {
        let reports =
            if results.scenarios.is_empty() { std::slice::from_ref(&results.report) } else { &results.scenarios[..] };
        RunStart {
            version: results.version,
            loadhost_version: results.loadhost_version.clone(),
            plugin_path: results.plugin_path.clone(),
            plugin_sha256: results.plugin_sha256.clone(),
            plugin_ref: results.plugin_ref.clone(),
            plugin_digest: results.plugin_digest.clone(),
            scenario_plugins: results.scenario_plugins.clone(),
            config: results.config.clone(),
            segment: results.segment,
            run_id: results.run_id.clone(),
            planned_start: results.planned_start,
            interval: results.interval,
            scenarios: reports
                .iter()
                .map(|r| PlannedScenario { scenario: r.scenario.clone(), offset: r.offset, target_rate: r.target_rate })
                .collect(),
        }
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
    /// The registry reference the plugin was pulled as, and its manifest digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_ref: Option<String>,
    /// The manifest digest `plugin_ref` resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_digest: Option<String>,
    /// The scenarios that ran a plugin of their own, with it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scenario_plugins: BTreeMap<String, PluginFile>,
    /// The options in effect (flag names as keys), as in the summary JSON.
    pub config: Value,
    /// This process's segment, when the plan was split.
    #[serde(with = "segment_field")]
    pub segment: Option<Segment>,
    /// The run this part belongs to (`--run-id`, or the planned start `--start-at`), so `merge`
    /// refuses parts of different runs; `None` when the run had neither.
    pub run_id: Option<String>,
    /// When the load was planned to start (`--start-at`, or the barrier's common start), for
    /// every segment of the run alike; `None` for a run that did not plan one.
    pub planned_start: Option<SystemTime>,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    plugin_ref: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    plugin_digest: Option<&'a str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    scenario_plugins: &'a BTreeMap<String, PluginFile>,
    config: &'a Value,
    #[serde(with = "segment_field")]
    segment: Option<Segment>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    planned_start: Option<SystemTime>,
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
    #[serde(default)]
    plugin_ref: Option<String>,
    #[serde(default)]
    plugin_digest: Option<String>,
    #[serde(default)]
    scenario_plugins: BTreeMap<String, PluginFile>,
    config: Value,
    #[serde(with = "segment_field")]
    segment: Option<Segment>,
    #[serde(default)]
    run_id: Option<String>,
    #[serde(default)]
    planned_start: Option<SystemTime>,
    interval: Duration,
    started_at: SystemTime,
    report: RunReport,
    #[serde(default)]
    scenarios: Vec<RunReport>,
    intervals: u64,
}

/// A `started` line: when a scenario's load started (its rows count from there).
#[derive(Serialize, Deserialize)]
struct StartedLine {
    scenario: String,
    at: SystemTime,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum LineRef<'a> {
    Start(&'a RunStart),
    Started(StartedLine),
    Interval(IntervalRef<'a>),
    End(EndRef<'a>),
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum LineOwned {
    Start(Box<RunStart>),
    Started(StartedLine),
    Interval(Box<IntervalRecord>),
    End(Box<EndOwned>),
}

/// Writes a results file as the run goes: the header and the `start` line now, a `started` line
/// as each scenario starts and a line per interval as each ends (nothing is kept in memory; each
/// line reaches the file at once, so a process killed mid-run leaves every completed interval),
/// the `end` line at [`ResultsWriter::finish`].
pub struct ResultsWriter {
    out: BufWriter<File>,
    intervals: u64,
}

impl ResultsWriter {
    /// Create (or truncate) `path` and write the header and `start` lines.
    pub fn create(path: &Path, start: &RunStart) -> io::Result<Self> {
        Self::from_file(File::create(path)?, start)
    }

    /// Write the header and `start` lines into `file`, already created.
    pub fn from_file(file: File, start: &RunStart) -> io::Result<Self> {
        let mut out = BufWriter::new(file);
        writeln!(out, "{MAGIC} {}", start.version)?;
        let mut writer = Self { out, intervals: 0 };
        writer.line(&LineRef::Start(start))?;
        writer.out.flush()?;
        Ok(writer)
    }

    /// Write that `scenario`'s load started at `at` (flushed).
    pub fn started(&mut self, scenario: &str, at: SystemTime) -> io::Result<()> {
        self.line(&LineRef::Started(StartedLine { scenario: scenario.to_owned(), at }))?;
        self.out.flush()
    }

    /// Write the line of the interval an observer was just given (flushed).
    pub fn interval(&mut self, row: &IntervalRow, window: &Window) -> io::Result<()> {
        self.line(&LineRef::Interval(IntervalRef {
            scenario: &row.scenario,
            index: row.index,
            start: row.start,
            end: row.end,
            window,
            gauges: gauges_of(row),
        }))?;
        self.out.flush()
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
            plugin_ref: results.plugin_ref.as_deref(),
            plugin_digest: results.plugin_digest.as_deref(),
            scenario_plugins: &results.scenario_plugins,
            config: &results.config,
            segment: results.segment,
            run_id: results.run_id.as_deref(),
            planned_start: results.planned_start,
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
    let mut writer = ResultsWriter::create(path, &RunStart::of(results))?;
    let started =
        if results.scenarios.is_empty() { std::slice::from_ref(&results.report) } else { &results.scenarios[..] };
    for report in started {
        writer.line(&LineRef::Started(StartedLine { scenario: report.scenario.clone(), at: report.started_at }))?;
    }
    writer.finish(results)
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
    #[error("{}: results format version {version} is not supported (this loadhost {} reads versions {OLDEST_VERSION} to {FORMAT_VERSION})", path.display(), crate::VERSION)]
    Version {
        /// The file.
        path: PathBuf,
        /// The version it has.
        version: u32,
    },
    /// The file ends early (the writer was stopped, or a copy was cut short).
    #[error("{}: the results file is truncated ({why}): was the run killed, or the copy cut short?{}", path.display(), partial_hint(*.completed))]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Where it ends.
        why: String,
        /// When the file can be merged as it is (it has its `start` line and a scenario had
        /// started): how many intervals it completed.
        completed: Option<u64>,
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

/// How to merge a results file that lost its end.
fn partial_hint(completed: Option<u64>) -> String {
    match completed {
        Some(n) => {
            format!(" `loadhost merge --partial` merges the {} it completed", crate::plural(n, "interval", "intervals"))
        }
        None => String::new(),
    }
}

/// What to do with a results file that has no `end` line (its process was killed, or it is
/// still running).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutFiles {
    /// Refuse it as truncated.
    Refuse,
    /// Read the intervals it completed, and rebuild its reports from them (`loadhost merge
    /// --partial`). A last line cut off mid-write is left out.
    Accept,
}

/// Read a whole results file (one cut off is refused).
pub fn read(path: &Path) -> Result<RunResults, ResultsError> {
    let file = loadhost_input::open(path).map_err(|error| ResultsError::Read { path: path.to_owned(), error })?;
    let mut intervals = Vec::new();
    let (mut results, _) =
        read_lines(path, BufReader::new(file), CutFiles::Refuse, |record, _| intervals.push(*record))?;
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
    /// Whether the file had no `end` line (read with [`CutFiles::Accept`]): its reports were
    /// rebuilt from the intervals it completed, and say it was cut off (`stopped`).
    pub cut: bool,
    pub(super) intervals: Vec<EncodedInterval>,
}

impl ResultsFile {
    /// How many intervals the file has.
    pub fn intervals(&self) -> usize {
        self.intervals.len()
    }
}

/// One interval line: what placing it needs, and its text.
pub(super) struct EncodedInterval {
    pub(super) scenario: String,
    pub(super) start: Duration,
    pub(super) end: Duration,
    pub(super) gauges: Gauges,
    line: Box<str>,
}

impl EncodedInterval {
    /// Decode the line's window (a few hundred kilobytes of buckets, for as long as it is needed).
    pub(super) fn window(&self) -> Result<Window, String> {
        match serde_json::from_str::<LineOwned>(&self.line) {
            Ok(LineOwned::Interval(decoded)) => Ok(decoded.window),
            Ok(_) => Err("not an interval line".into()),
            Err(err) => Err(err.to_string()),
        }
    }
}

/// Read (and check: every line is decoded once) a results file for [`super::merge_files`]; one
/// without its `end` line as `cut` says.
pub fn read_for_merge(path: &Path, cut: CutFiles) -> Result<ResultsFile, ResultsError> {
    let file = loadhost_input::open(path).map_err(|error| ResultsError::Read { path: path.to_owned(), error })?;
    let mut intervals = Vec::new();
    let (results, was_cut) = read_lines(path, BufReader::new(file), cut, |record, line| {
        intervals.push(EncodedInterval {
            scenario: record.scenario,
            start: record.start,
            end: record.end,
            gauges: record.gauges,
            // serde_json has checked it is UTF-8.
            line: String::from_utf8_lossy(line).into(),
        });
    })?;
    Ok(ResultsFile { results, cut: was_cut, intervals })
}

/// Read the header and every line; hand each interval to `on_interval` with its line's bytes. The
/// results, and whether they were rebuilt from a file cut off before its `end` line.
fn read_lines(
    path: &Path,
    mut reader: impl io::BufRead,
    cut: CutFiles,
    mut on_interval: impl FnMut(Box<IntervalRecord>, &[u8]),
) -> Result<(RunResults, bool), ResultsError> {
    let io_error = |error| ResultsError::Read { path: path.to_owned(), error };
    let corrupt = |line: usize, why: String| ResultsError::Corrupt { path: path.to_owned(), line, why };
    let version = read_header(path, &mut reader)?;
    // Kept only while a cut file may have to be rebuilt from its intervals.
    let mut sofar = SoFar::new(cut == CutFiles::Accept);
    let mut line = Vec::new();
    let mut number = 1;
    loop {
        number += 1;
        // Line by line, none longer than 256 MiB: a file of one endless line is refused, not held.
        if loadhost_input::read_line(&mut reader, &mut line, loadhost_input::RESULTS_LINE).map_err(io_error)? == 0 {
            let why = format!("after {} intervals, with no end line", sofar.count);
            return sofar.cut_off(path, why);
        }
        if line.last() != Some(&b'\n') {
            // Written up to the kill: the interval it was is not complete.
            return sofar.cut_off(path, format!("line {number} is cut off"));
        }
        let parsed: LineOwned = serde_json::from_slice(&line).map_err(|err| corrupt(number, err.to_string()))?;
        let end = match parsed {
            LineOwned::Start(start) => {
                let why = if number != 2 {
                    Some("a start line after other lines (it comes right after the header)".to_owned())
                } else if start.version != version {
                    Some(format!("the start line says version {} but the header {version}", start.version))
                } else {
                    None
                };
                if let Some(why) = why {
                    return Err(corrupt(number, why));
                }
                sofar.start = Some(*start);
                continue;
            }
            LineOwned::Started(started) => {
                sofar.started(started).map_err(|why| corrupt(number, why))?;
                continue;
            }
            LineOwned::Interval(record) => {
                sofar.interval(&record).map_err(|why| corrupt(number, why))?;
                on_interval(record, &line);
                continue;
            }
            LineOwned::End(end) => end,
        };
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).map_err(io_error)?;
        let overflow = std::iter::once(&end.report).chain(&end.scenarios).find_map(|r| r.check().err());
        let why = if let Some(overflow) = overflow {
            Some(overflow.to_string())
        } else if end.version != version {
            Some(format!("the end line says version {} but the header {version}", end.version))
        } else if end.intervals != sofar.count {
            Some(format!("the end line counts {} intervals but the file has {}", end.intervals, sofar.count))
        } else if end.interval.is_zero() {
            Some("the row interval is zero".into())
        } else if !rest.iter().all(u8::is_ascii_whitespace) {
            Some("more follows the end line".into())
        } else {
            None
        };
        return match why {
            Some(why) => Err(corrupt(number, why)),
            None => Ok((end.into_results(), false)),
        };
    }
}

/// What the lines read so far say, for rebuilding the reports of a file that was cut off.
struct SoFar {
    /// Whether a cut file is to be rebuilt (else only the count is kept).
    rebuild: bool,
    start: Option<RunStart>,
    /// Each scenario that started, in order: when, and its intervals so far.
    scenarios: Vec<(String, SystemTime, Rebuilt)>,
    count: u64,
}

/// One scenario's intervals added up.
#[derive(Default)]
struct Rebuilt {
    totals: Window,
    started: u64,
    end: Duration,
    intervals: u64,
    /// The fewest and most workers at an interval's end, and the last.
    workers: Option<(u64, u64, u64)>,
}

impl SoFar {
    fn new(rebuild: bool) -> Self {
        Self { rebuild, start: None, scenarios: Vec::new(), count: 0 }
    }

    fn started(&mut self, line: StartedLine) -> Result<(), String> {
        if self.scenarios.iter().any(|(name, _, _)| *name == line.scenario) {
            return Err(format!("scenario '{}' started twice", line.scenario));
        }
        self.scenarios.push((line.scenario, line.at, Rebuilt::default()));
        Ok(())
    }

    fn interval(&mut self, record: &IntervalRecord) -> Result<(), String> {
        self.count += 1;
        // A version 1 file has no start line: it is never rebuilt.
        if !self.rebuild || self.start.is_none() {
            return Ok(());
        }
        let Some((_, _, sums)) = self.scenarios.iter_mut().find(|(name, _, _)| *name == record.scenario) else {
            return Err(format!("an interval of scenario '{}', which has no started line", record.scenario));
        };
        sums.totals.try_merge(&record.window).map_err(|overflow| overflow.to_string())?;
        let mut t = Tally::default();
        t.add(&mut sums.started, record.gauges.started, "tasks started");
        t.result().map_err(|overflow| overflow.to_string())?;
        sums.end = sums.end.max(record.end);
        sums.intervals += 1;
        let w = record.gauges.workers;
        sums.workers = Some(sums.workers.map_or((w, w, w), |(min, peak, _)| (min.min(w), peak.max(w), w)));
        Ok(())
    }

    /// The file ends before its `end` line: its reports rebuilt from what it completed, when it
    /// may be and can be; else it is truncated.
    fn cut_off(self, path: &Path, why: String) -> Result<(RunResults, bool), ResultsError> {
        let completed = (self.start.is_some() && !self.scenarios.is_empty()).then_some(self.count);
        let (Some(start), true, Some(_)) = (self.start, self.rebuild, completed) else {
            return Err(ResultsError::Truncated { path: path.to_owned(), why, completed });
        };
        let stopped = format!(
            "{} was cut off after {} (no end line: was the process killed?)",
            path.display(),
            crate::plural(self.count, "interval", "intervals")
        );
        let reports: Vec<RunReport> = self
            .scenarios
            .into_iter()
            .map(|(name, started_at, sums)| {
                let planned = start.scenarios.iter().find(|p| p.scenario == name);
                let (min, peak, final_) = sums.workers.unwrap_or_default();
                RunReport {
                    offset: planned.map_or(Duration::ZERO, |p| p.offset),
                    target_rate: planned.and_then(|p| p.target_rate),
                    scenario: name,
                    started_at,
                    elapsed: sums.end,
                    generation: sums.end,
                    started: sums.started,
                    totals: sums.totals,
                    // Growth and retirement are counted at the end; a cut file has the gauges.
                    workers: WorkerStats { min, peak, final_, ..WorkerStats::default() },
                    intervals: sums.intervals,
                    aborted: None,
                    stopped: Some(stopped.clone()),
                    teardown_error: None,
                }
            })
            .collect();
        // `completed` says a scenario had started, so there is a first report.
        let Some(first) = reports.first().cloned() else {
            return Err(ResultsError::Truncated { path: path.to_owned(), why, completed: None });
        };
        // As a whole file has them: the run's report, and each scenario's when it planned several.
        let (report, scenarios) = if start.scenarios.len() > 1 || reports.len() > 1 {
            let mut all = first;
            for other in &reports[1..] {
                all.try_absorb(other).map_err(|overflow| ResultsError::Corrupt {
                    path: path.to_owned(),
                    line: 2,
                    why: overflow.to_string(),
                })?;
            }
            (all, reports)
        } else {
            (first, Vec::new())
        };
        if let Err(overflow) = report.check() {
            return Err(ResultsError::Corrupt { path: path.to_owned(), line: 2, why: overflow.to_string() });
        }
        let results = start.into_results(report, scenarios);
        if results.interval.is_zero() {
            return Err(ResultsError::Corrupt {
                path: path.to_owned(),
                line: 2,
                why: "the row interval is zero".into(),
            });
        }
        Ok((results, true))
    }
}

/// Read and check the header line; the format version it names.
fn read_header(path: &Path, reader: &mut impl io::BufRead) -> Result<u32, ResultsError> {
    let truncated = |why: &str| ResultsError::Truncated { path: path.to_owned(), why: why.to_owned(), completed: None };
    let mut line = Vec::new();
    // At most a few bytes, so a large file of something else is not read whole.
    io::Read::take(reader, 64)
        .read_until(b'\n', &mut line)
        .map_err(|error| ResultsError::Read { path: path.to_owned(), error })?;
    let header = String::from_utf8_lossy(&line);
    if header.is_empty() {
        return Err(truncated("the file is empty"));
    }
    let Some(version) = header.strip_prefix(MAGIC).and_then(|rest| rest.strip_prefix(' ')) else {
        return Err(ResultsError::NotResults { path: path.to_owned() });
    };
    if !header.ends_with('\n') {
        return Err(if header.len() >= 64 {
            ResultsError::NotResults { path: path.to_owned() }
        } else {
            truncated("it ends inside the header line")
        });
    }
    let version: u32 = version.trim().parse().map_err(|_| ResultsError::Corrupt {
        path: path.to_owned(),
        line: 1,
        why: format!("the header is '{}'", header.trim()),
    })?;
    if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(ResultsError::Version { path: path.to_owned(), version });
    }
    Ok(version)
}

impl EndOwned {
    /// The results the end line describes (their intervals are read separately).
    fn into_results(self) -> RunResults {
        RunResults {
            version: self.version,
            loadhost_version: self.loadhost_version,
            plugin_path: self.plugin_path,
            plugin_sha256: self.plugin_sha256,
            plugin_ref: self.plugin_ref,
            plugin_digest: self.plugin_digest,
            scenario_plugins: self.scenario_plugins,
            config: self.config,
            segment: self.segment,
            run_id: self.run_id,
            planned_start: self.planned_start,
            interval: self.interval,
            started_at: self.started_at,
            report: self.report,
            scenarios: self.scenarios,
            intervals: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use loadhost_metrics::IntervalRow;

    use super::*;
    use crate::results::testkit::*;

    #[test]
    fn a_run_round_trips_exactly() {
        let mut results = synthetic(1, Some(seg(1, 4)), Duration::ZERO, 5, 200);
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
        let mut writer = ResultsWriter::create(&streamed, &RunStart::of(&results)).unwrap();
        writer.started("default", results.started_at).unwrap();
        for record in &results.intervals {
            let row = IntervalRow::from_window(record.index, record.start, record.end, &record.window, record.gauges);
            writer.interval(&row, &record.window).unwrap();
        }
        writer.finish(&RunResults { intervals: Vec::new(), ..results.clone() }).unwrap();
        assert_eq!(std::fs::read(&whole).unwrap(), std::fs::read(&streamed).unwrap());
        let text = std::fs::read_to_string(&whole).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "loadhost-results 2");
        assert!(lines[1].starts_with("{\"start\":{\"version\":2,"), "{}", lines[1]);
        assert!(lines[2].starts_with("{\"started\":{\"scenario\":\"default\",\"at\":"), "{}", lines[2]);
        assert!(lines[3].starts_with("{\"interval\":{\"scenario\":\"default\",\"index\":0,"), "{}", &lines[3][..80]);
        assert!(lines.last().unwrap().starts_with("{\"end\":{\"version\":2,"));
    }

    #[test]
    fn each_line_reaches_the_file_as_it_is_written() {
        let results = synthetic(4, Some(seg(1, 2)), Duration::ZERO, 3, 20);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.lhr");
        let lines = || std::fs::read_to_string(&path).unwrap().lines().count();
        let mut writer = ResultsWriter::create(&path, &RunStart::of(&results)).unwrap();
        assert_eq!(lines(), 2, "the header and the start line, before any load");
        writer.started("default", results.started_at).unwrap();
        for (i, record) in results.intervals.iter().enumerate() {
            let row = IntervalRow::from_window(record.index, record.start, record.end, &record.window, record.gauges);
            writer.interval(&row, &record.window).unwrap();
            assert_eq!(lines(), 4 + i, "interval {i} is in the file as soon as it is written");
        }
        // The writer is never finished: the process was killed.
        drop(writer);
        let refused = read_for_merge(&path, CutFiles::Refuse).err().unwrap().to_string();
        assert!(
            refused.contains("truncated (after 3 intervals, with no end line)")
                && refused.contains("`loadhost merge --partial` merges the 3 intervals it completed"),
            "{refused}"
        );
        let cut = read_for_merge(&path, CutFiles::Accept).unwrap();
        assert!(cut.cut);
        assert_eq!(cut.intervals(), 3);
        let (whole, part) = (&results.report, &cut.results.report);
        assert_eq!(part.counts(), whole.counts(), "the intervals add up to what the run measured");
        assert_eq!(part.started, results.intervals.iter().map(|r| r.gauges.started).sum::<u64>());
        assert_eq!(part.started_at, results.started_at);
        assert_eq!(part.elapsed, results.intervals.last().unwrap().end);
        assert_eq!(part.target_rate, whole.target_rate, "from the start line");
        assert!(part.stopped.as_deref().is_some_and(|s| s.contains("cut off after 3 intervals")), "{:?}", part.stopped);
        let r = &cut.results;
        assert_eq!(
            (r.plugin_sha256.as_str(), r.segment, r.run_id.as_deref()),
            ("ab".repeat(32).as_str(), Some(seg(1, 2)), Some("run-7"))
        );
        assert_eq!(r.config, results.config);
        assert!(r.scenarios.is_empty());

        // A last line cut mid-write is left out; a file cut before any scenario started is not mergeable.
        let text = std::fs::read(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 100]).unwrap();
        let cut = read_for_merge(&path, CutFiles::Accept).unwrap();
        assert_eq!(cut.intervals(), 2);
        let header_and_start = text.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(1).unwrap().0 + 1;
        std::fs::write(&path, &text[..header_and_start]).unwrap();
        let err = read_for_merge(&path, CutFiles::Accept).err().unwrap().to_string();
        assert!(err.contains("truncated (after 0 intervals") && !err.contains("--partial"), "{err}");
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
        let (err, text) = message(b"loadhost-results 3\n{}\n");
        assert!(
            matches!(err, ResultsError::Version { version: 3, .. })
                && text.contains("version 3 is not supported")
                && text.contains("reads versions 1 to 2"),
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
        lines.remove(3);
        let (err, text) = message((lines.join("\n") + "\n").as_bytes());
        assert!(
            matches!(err, ResultsError::Corrupt { .. }) && text.contains("counts 2 intervals but the file has 1"),
            "{text}"
        );
    }

    #[test]
    fn a_version_1_file_reads_when_whole() {
        // Version 1: no start and started lines, the same interval and end lines.
        let results = synthetic(5, Some(seg(0, 2)), Duration::ZERO, 2, 10);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.lhr");
        write(&path, &results).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let v1: Vec<String> = text
            .lines()
            .filter(|l| !l.starts_with("{\"start"))
            .map(|l| {
                l.replace("loadhost-results 2", "loadhost-results 1")
                    .replace("{\"end\":{\"version\":2,", "{\"end\":{\"version\":1,")
            })
            .collect();
        std::fs::write(&path, v1.join("\n") + "\n").unwrap();
        let back = read(&path).unwrap();
        assert_eq!(back.version, 1);
        assert_eq!(back.report.counts(), results.report.counts());
        // Cut off, it has no start line to rebuild from: truncated, even for a partial merge.
        std::fs::write(&path, v1[..v1.len() - 1].join("\n") + "\n").unwrap();
        let err = read_for_merge(&path, CutFiles::Accept).err().unwrap().to_string();
        assert!(err.contains("truncated") && !err.contains("--partial"), "{err}");
    }

    /// Every task recorded once into `all`, and into the part that `k mod parts` names.
    #[test]
    fn a_sixty_second_run_is_a_compact_file() {
        // 60 one-second intervals of 1,000 tasks, each with HTTP, a tagged trend, a check, a
        // counter and a gauge.
        let results = synthetic(7, Some(seg(0, 4)), Duration::ZERO, 60, 1_000);
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
                let part = synthetic(7 + u64::from(i), Some(seg(i, 4)), delay, 60, 1_000);
                write(&keep.join(format!("segment-{i}.lhr")), &part).unwrap();
            }
            eprintln!("a 60-interval results file is {size} bytes; 4 segments written to {}", keep.display());
        }
        assert!(size < 1 << 20, "{size} bytes");
        assert_same_results(&results, &read(&path).unwrap());
    }

    #[test]
    fn a_segment_that_does_not_exist_is_corrupt() {
        let results = synthetic(1, Some(seg(1, 2)), Duration::ZERO, 1, 1);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.lhr");
        write(&path, &results).unwrap();
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace(r#""segment":{"index":1,"count":2}"#, r#""segment":{"index":2,"count":2}"#);
        std::fs::write(&path, text).unwrap();
        let err = read(&path).unwrap_err();
        assert!(matches!(err, ResultsError::Corrupt { line: 2, .. }), "the start line: {err}");
        assert!(err.to_string().contains("segment 2 of 2 does not exist"), "{err}");
        assert_eq!(segment_name(&seg(1, 2)), "1/2");
    }
}
