//! The results file (`loadhost run --results FILE`): everything a run measured, exactly
//! (counters, full HDR histograms, plugin metrics), as JSON lines after a header line
//! (docs/merge.md has the details):
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

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead as _, BufReader, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use loadhost_engine::Segment;
use loadhost_metrics::{Gauges, IntervalRow, RunReport, Window};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::summary::PluginFile;

/// The first word of every results file.
pub const MAGIC: &str = "loadhost-results";

/// The format version this loadhost writes and reads.
pub const FORMAT_VERSION: u32 = 1;

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
            Ok(LineOwned::End(_)) => Err("not an interval line".into()),
            Err(err) => Err(err.to_string()),
        }
    }
}

/// Read (and check: every line is decoded once) a results file for [`super::merge_files`].
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
    let version = read_header(path, &mut reader)?;
    let mut line = Vec::new();
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
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).map_err(io_error)?;
        let why = if end.version != version {
            Some(format!("the end line says version {} but the header {version}", end.version))
        } else if end.intervals != count {
            Some(format!("the end line counts {} intervals but the file has {count}", end.intervals))
        } else if end.interval.is_zero() {
            Some("the row interval is zero".into())
        } else if !rest.iter().all(u8::is_ascii_whitespace) {
            Some("more follows the end line".into())
        } else {
            None
        };
        return match why {
            Some(why) => Err(corrupt(number, why)),
            None => Ok(end.into_results()),
        };
    }
}

/// Read and check the header line; the format version it names.
fn read_header(path: &Path, reader: &mut impl io::BufRead) -> Result<u32, ResultsError> {
    let truncated = |why: &str| ResultsError::Truncated { path: path.to_owned(), why: why.to_owned() };
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
    if version != FORMAT_VERSION {
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
        assert!(matches!(err, ResultsError::Corrupt { line: 3, .. }), "{err}");
        assert!(err.to_string().contains("segment 2 of 2 does not exist"), "{err}");
        assert_eq!(segment_name(&seg(1, 2)), "1/2");
    }
}
