//! Writing a results file: as the run goes ([`ResultsWriter`]), or a measured run in one go
//! ([`write`]).

use std::fs::File;
use std::io::{self, BufWriter, Write as _};
use std::path::Path;
use std::time::SystemTime;

use loadhost_metrics::{IntervalRow, Window};

use super::format::{
    EndRef, FORMAT_VERSION, IntervalRecord, IntervalRef, LineRef, MAGIC, RunResults, RunStart, StartedLine, gauges_of,
};

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
            cores_allowed: results.cores_allowed,
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
