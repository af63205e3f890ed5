//! Reading a results file: whole ([`read`]), or for a merge with its intervals kept encoded
//! ([`read_for_merge`]), a file cut off before its end as [`CutFiles`] says.

use std::io::{self, BufRead as _, BufReader};
use std::path::Path;
use std::time::Duration;

use loadhost_metrics::serial::{LINE_BUCKETS, with_bucket_budget};
use loadhost_metrics::{Gauges, MeasuredInterval, Window};

use super::cut::SoFar;
use super::error::ResultsError;
use super::format::{FORMAT_VERSION, IntervalRecord, LineOwned, MAGIC, OLDEST_VERSION, RunResults, RunStart};

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
    let (mut results, _, _) =
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
    /// The `start` line: the plan as the run saw it before any load (the whole plan's rate among
    /// it); `None` in a version 1 file, which has none.
    pub start: Option<RunStart>,
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
    /// The generator's figures and verdict, judged while the line was decoded.
    pub(super) generator: Option<MeasuredInterval>,
    line: Box<str>,
}

impl EncodedInterval {
    /// Decode the line's window (a few hundred kilobytes of buckets, for as long as it is needed).
    pub(super) fn window(&self) -> Result<Window, String> {
        match with_bucket_budget(LINE_BUCKETS, || serde_json::from_str::<LineOwned>(&self.line)) {
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
    let (results, was_cut, start) = read_lines(path, BufReader::new(file), cut, |record, line| {
        let generator = record.measured();
        intervals.push(EncodedInterval {
            generator,
            scenario: record.scenario,
            start: record.start,
            end: record.end,
            gauges: record.gauges,
            // serde_json has checked it is UTF-8.
            line: String::from_utf8_lossy(line).into(),
        });
    })?;
    Ok(ResultsFile { results, cut: was_cut, start, intervals })
}

/// Read the header and every line; hand each interval to `on_interval` with its line's bytes. The
/// results, whether they were rebuilt from a file cut off before its `end` line, and the `start`
/// line (none in version 1).
fn read_lines(
    path: &Path,
    mut reader: impl io::BufRead,
    cut: CutFiles,
    mut on_interval: impl FnMut(Box<IntervalRecord>, &[u8]),
) -> Result<(RunResults, bool, Option<RunStart>), ResultsError> {
    let io_error = |error| ResultsError::Read { path: path.to_owned(), error };
    let corrupt = |line: usize, why: String| ResultsError::Corrupt { path: path.to_owned(), line, why };
    let version = read_header(path, &mut reader)?;
    // Kept only while a cut file may have to be rebuilt from its intervals.
    let mut sofar = SoFar::new(cut == CutFiles::Accept);
    let mut line = Vec::new();
    let mut number = 1;
    let mut furthest = Furthest::default();
    loop {
        number += 1;
        // Line by line, none longer than 256 MiB: a file of one endless line is refused, not held.
        if loadhost_input::read_line(&mut reader, &mut line, loadhost_input::RESULTS_LINE).map_err(io_error)? == 0 {
            let why = format!("after {} intervals, with no end line", sofar.count);
            let start = sofar.start.clone();
            return sofar.cut_off(path, why).map(|(results, cut)| (results, cut, start));
        }
        if line.last() != Some(&b'\n') {
            // Written up to the kill: the interval it was is not complete.
            let start = sofar.start.clone();
            return sofar
                .cut_off(path, format!("line {number} is cut off"))
                .map(|(results, cut)| (results, cut, start));
        }
        // A line's histograms cost what their buckets do, bounded whatever the line's size.
        let parsed: LineOwned = with_bucket_budget(LINE_BUCKETS, || serde_json::from_slice(&line))
            .map_err(|err| corrupt(number, within_line(&err)))?;
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
                furthest.see(number, &record).map_err(|why| corrupt(number, why))?;
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
        } else if let Some((line, why)) = furthest.past(&end.report, &end.scenarios, end.interval) {
            return Err(corrupt(line, why));
        } else if !rest.iter().all(u8::is_ascii_whitespace) {
            Some("more follows the end line".into())
        } else {
            None
        };
        return match why {
            Some(why) => Err(corrupt(number, why)),
            None => Ok((end.into_results(), false, sofar.start)),
        };
    }
}

/// The interval lines that reach furthest, by end time and by index, with their line numbers:
/// an interval past the run's own length (index 4,000,000,000 in a 3 s run) is no interval of
/// it, and a merge or compare would place it there without a word.
#[derive(Default)]
struct Furthest {
    /// The latest end, and its line.
    end: Option<(usize, Duration)>,
    /// The highest index, and its line.
    index: Option<(usize, u64)>,
}

impl Furthest {
    fn see(&mut self, line: usize, record: &IntervalRecord) -> Result<(), String> {
        if record.end < record.start {
            return Err(format!("the interval ends ({:?}) before it starts ({:?})", record.end, record.start));
        }
        if self.end.is_none_or(|(_, end)| record.end > end) {
            self.end = Some((line, record.end));
        }
        if self.index.is_none_or(|(_, index)| record.index > index) {
            self.index = Some((line, record.index));
        }
        Ok(())
    }

    /// The line of an interval past the run's length (its report's and its scenarios', each
    /// with a row's slack), and why; `None` when every interval is within it.
    fn past(
        &self,
        report: &loadhost_metrics::RunReport,
        scenarios: &[loadhost_metrics::RunReport],
        interval: Duration,
    ) -> Option<(usize, String)> {
        let length = scenarios.iter().map(|s| s.elapsed).chain([report.elapsed]).max().unwrap_or_default();
        // A row is cut when the run ends, so none ends past it; the last may be reported a tick late.
        let limit = length.saturating_add(interval.saturating_mul(2));
        if let Some((line, end)) = self.end.filter(|(_, end)| *end > limit) {
            return Some((line, format!("an interval ends at {end:?}, past the run's length ({length:?})")));
        }
        let rows = (limit.as_secs_f64() / interval.as_secs_f64()).ceil() as u64;
        self.index.filter(|(_, index)| *index > rows).map(|(line, index)| {
            (
                line,
                format!(
                    "interval index {index} is past the {rows} rows of {interval:?} the run's length ({length:?}) has"
                ),
            )
        })
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

/// serde_json's words for a line it could not read, its position as a column: the file's line is
/// already named, and serde_json's "at line 1" would read as the file's first.
fn within_line(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let position = format!(" at line {} column {}", err.line(), err.column());
    match text.strip_suffix(&position) {
        Some(words) if err.line() == 1 => format!("{words} (column {})", err.column()),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::results::testkit::*;
    use crate::results::{segment_name, write};

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
    fn an_interval_past_the_runs_length_is_refused_naming_its_line() {
        // Issue 41, defect 9: index 4,000,000,000 in a 3 s run was merged and compared silently.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.lhr");
        let results = synthetic(7, None, Duration::ZERO, 3, 10);
        write(&path, &results).unwrap();
        assert!(read(&path).is_ok(), "the file as written reads");
        let text = std::fs::read_to_string(&path).unwrap();
        let edit = |from: &str, to: &str| {
            let lines: Vec<String> = text.lines().map(str::to_owned).collect();
            let at =
                lines.iter().position(|l| l.starts_with("{\"interval\"") && l.contains(from)).expect("an interval");
            let mut lines = lines;
            lines[at] = lines[at].replacen(from, to, 1);
            std::fs::write(&path, lines.join("\n") + "\n").unwrap();
            at + 1
        };
        let line = edit("\"index\":2,", "\"index\":4000000000,");
        let err = read(&path).unwrap_err();
        assert!(matches!(err, ResultsError::Corrupt { line: l, .. } if l == line), "{err}");
        assert!(err.to_string().contains("interval index 4000000000 is past the"), "{err}");
        assert!(read_for_merge(&path, CutFiles::Refuse).is_err(), "a merge refuses it too");
        let line = edit("\"end\":{\"secs\":3,", "\"end\":{\"secs\":4000000000,");
        let err = read(&path).unwrap_err();
        assert!(matches!(err, ResultsError::Corrupt { line: l, .. } if l == line), "{err}");
        assert!(err.to_string().contains("past the run's length"), "{err}");
    }

    #[test]
    fn a_histogram_of_another_precision_is_refused_naming_its_line() {
        // Issue 41, defect 9: a 103 KiB file of such histograms cost `merge` 24 s and 436 MiB.
        // HDR V2-deflate of 1 and 2^63-2 at 5 significant digits over 1..2^63-1 (Python's hdrh):
        // 60 characters that decode to 6.2 M buckets.
        const FIVE_DIGITS: &str = "HISTFAAAACR4nJNpmSzMwMDAzgABrFCasf4/BNh/gAow/fz/npUJAOhwDOw=";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.lhr");
        write(&path, &synthetic(7, None, Duration::ZERO, 3, 10)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let at = lines.iter().position(|l| l.starts_with("{\"interval\"")).expect("an interval");
        let latency = "\"latency\":\"";
        let from = lines[at].find(latency).expect("a latency histogram") + latency.len();
        let to = from + lines[at][from..].find('"').expect("its end");
        lines[at].replace_range(from..to, FIVE_DIGITS);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        for err in [read(&path).err(), read_for_merge(&path, CutFiles::Refuse).err()] {
            let err = err.expect("refused");
            assert!(matches!(err, ResultsError::Corrupt { line, .. } if line == at + 1), "{err}");
            let text = err.to_string();
            assert!(text.contains("not a loadhost histogram: 5 significant digits"), "{text}");
            assert!(text.contains("(column ") && !text.contains("at line 1"), "{text}");
        }
    }

    #[test]
    fn a_line_whose_histograms_hold_more_than_the_budget_is_refused_naming_it() {
        // Issue 41, defect 9: a 3 MB file of lines holding 7,000 of loadhost's own widest
        // histograms each cost `merge` 27 s and 5.2 GB. 700 trends from 0.001 to 1e300 hold about
        // 39 M buckets: past the 32 Mi a line may hold.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.lhr");
        let mut results = synthetic(7, None, Duration::ZERO, 3, 10);
        let window = &mut results.intervals[1].window;
        for i in 0..700 {
            window.plugin.trend(key(&format!("t{i}"), &[]), 0.001);
            window.plugin.trend(key(&format!("t{i}"), &[]), 1e300);
        }
        write(&path, &results).unwrap();
        let line =
            2 + std::fs::read_to_string(&path).unwrap().lines().skip(1).position(|l| l.contains("\"t699\"")).unwrap();
        for err in [read(&path).err(), read_for_merge(&path, CutFiles::Refuse).err()] {
            let err = err.expect("refused");
            assert!(matches!(err, ResultsError::Corrupt { line: l, .. } if l == line), "{err}");
            assert!(err.to_string().contains("more than 33554432 buckets"), "{err}");
        }
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
