//! A results file cut off before its `end` line (its process was killed): what its lines say so
//! far, and its reports rebuilt from the intervals it completed (`loadhost merge --partial`).

use std::path::Path;
use std::time::{Duration, SystemTime};

use loadhost_metrics::count::Tally;
use loadhost_metrics::{RunReport, Window, WorkerStats};

use super::error::ResultsError;
use super::format::{IntervalRecord, RunResults, RunStart, StartedLine};

/// What the lines read so far say, for rebuilding the reports of a file that was cut off.
pub(super) struct SoFar {
    /// Whether a cut file is to be rebuilt (else only the count is kept).
    rebuild: bool,
    pub(super) start: Option<RunStart>,
    /// Each scenario that started, in order: when, and its intervals so far.
    scenarios: Vec<(String, SystemTime, Rebuilt)>,
    pub(super) count: u64,
}

/// One scenario's intervals added up.
#[derive(Default)]
pub(super) struct Rebuilt {
    totals: Window,
    started: u64,
    end: Duration,
    intervals: u64,
    /// The fewest and most workers at an interval's end, and the last.
    workers: Option<(u64, u64, u64)>,
}

impl SoFar {
    pub(super) fn new(rebuild: bool) -> Self {
        Self { rebuild, start: None, scenarios: Vec::new(), count: 0 }
    }

    pub(super) fn started(&mut self, line: StartedLine) -> Result<(), String> {
        if self.scenarios.iter().any(|(name, _, _)| *name == line.scenario) {
            return Err(format!("scenario '{}' started twice", line.scenario));
        }
        self.scenarios.push((line.scenario, line.at, Rebuilt::default()));
        Ok(())
    }

    pub(super) fn interval(&mut self, record: &IntervalRecord) -> Result<(), String> {
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
    pub(super) fn cut_off(self, path: &Path, why: String) -> Result<(RunResults, bool), ResultsError> {
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
                    generator: None,
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadhost_metrics::IntervalRow;

    use crate::results::testkit::*;
    use crate::results::{CutFiles, ResultsWriter, RunStart, read_for_merge};

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
}
