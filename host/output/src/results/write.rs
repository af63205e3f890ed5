//! Writing a results file: as the run goes ([`ResultsWriter`]), a measured run in one go
//! ([`write`]), or a merged run ([`write_merged`]).

use std::fs::File;
use std::io::{self, BufWriter, Write as _};
use std::path::Path;
use std::time::SystemTime;

use loadhost_metrics::{IntervalRow, Window};

use super::format::{
    EndRef, FORMAT_VERSION, IntervalRecord, IntervalRef, LineRef, MAGIC, PlannedScenario, RunResults, RunStart,
    StartedLine, gauges_of,
};
use super::merge::Merged;
use crate::summary::MergedFrom;

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
            generator: row.generator,
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
            generator: record.generator,
        }))
    }

    fn line(&mut self, line: &LineRef<'_>) -> io::Result<()> {
        write_line(&mut self.out, line)?;
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
        self.line(&LineRef::End(end_line(results, self.intervals)))?;
        let file = self.out.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()
    }
}

/// One line: compact JSON and a newline.
fn write_line(out: &mut dyn io::Write, line: &LineRef<'_>) -> io::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")
}

/// The `end` line of `results`, after `intervals` interval lines.
fn end_line(results: &RunResults, intervals: u64) -> EndRef<'_> {
    EndRef {
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
        cores_allowed: results.cores_allowed,
        report: &results.report,
        scenarios: &results.scenarios,
        intervals,
        merged: results.merged.as_ref(),
    }
}

/// Write a merged run as a results file (`loadhost merge --results`) into `out`: the file one
/// process running the plan would have written (no segment; the merged rows as its intervals, each
/// with its whole window, so `loadhost compare` tests it as any run), with `from` (the parts, the
/// missing segments) in its `start` and `end` lines. `merged` must have kept its windows
/// ([`super::Windows::Keep`]). Its start line records the whole plan's rate, and each report's
/// own rate is what the merged parts planned, as in any segment's file.
pub fn write_merged(out: &mut dyn io::Write, merged: &Merged, from: &MergedFrom) -> io::Result<()> {
    if merged.lines.len() != merged.rows.len() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "the merge did not keep its rows' windows"));
    }
    let reports =
        if merged.scenarios.is_empty() { std::slice::from_ref(&merged.report) } else { &merged.scenarios[..] };
    let whole = |r: &loadhost_metrics::RunReport| {
        if merged.scenarios.is_empty() {
            merged.target_rate_whole
        } else {
            merged.scenario_target_rates_whole.get(&r.scenario).copied()
        }
    };
    let start = RunStart {
        version: FORMAT_VERSION,
        loadhost_version: crate::VERSION.to_owned(),
        plugin_path: merged.plugin_path.clone(),
        plugin_sha256: merged.plugin_sha256.clone(),
        plugin_ref: merged.plugin_ref.clone(),
        plugin_digest: merged.plugin_digest.clone(),
        scenario_plugins: merged.scenario_plugins.clone(),
        config: merged.config.clone(),
        segment: None,
        run_id: merged.run_id.clone(),
        planned_start: merged.planned_start,
        interval: merged.interval,
        scenarios: reports
            .iter()
            .map(|r| PlannedScenario {
                scenario: r.scenario.clone(),
                offset: r.offset,
                target_rate: r.target_rate,
                target_rate_whole: whole(r),
            })
            .collect(),
        merged: Some(from.clone()),
    };
    writeln!(out, "{MAGIC} {FORMAT_VERSION}")?;
    write_line(out, &LineRef::Start(&start))?;
    for r in reports {
        write_line(out, &LineRef::Started(StartedLine { scenario: r.scenario.clone(), at: r.started_at }))?;
    }
    for line in &merged.lines {
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
    }
    let results = start.into_results(merged.report.clone(), merged.scenarios.clone());
    write_line(out, &LineRef::End(end_line(&results, merged.lines.len() as u64)))
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use loadhost_metrics::IntervalRow;

    use super::*;
    use crate::results::read;
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
            let mut row =
                IntervalRow::from_window(record.index, record.start, record.end, &record.window, record.gauges);
            row.generator = record.generator;
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
}
