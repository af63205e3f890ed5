//! What a run does at the end of each interval: the progress line, the CSV row, the JSON lines,
//! the results file's interval line, the OpenMetrics numbers, the thresholds judged so far (stopping the run when an
//! `abort_on_fail` one fails), the rows kept for the HTML report, and a resident-memory sample.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::Arc;

use loadhost_engine::{Interrupt, Observer};
use loadhost_metrics::{IntervalRow, Window};
use loadhost_output::csv::CsvWriter;
use loadhost_output::jsonl::JsonLines;
use loadhost_output::openmetrics::Exporter;
use loadhost_output::progress::Progress;
use loadhost_output::results::ResultsWriter;

use crate::judge::LiveJudge;

/// A file output and the first error writing it met (reported once the run is over, so a full
/// disk never stops the measuring).
pub struct FileOutput<W> {
    /// The writer.
    pub writer: W,
    /// Where it writes, for messages.
    pub path: PathBuf,
    /// The first write error.
    pub error: Option<std::io::Error>,
}

impl<W> FileOutput<W> {
    /// Keep the first error of a write.
    pub(crate) fn keep(&mut self, result: std::io::Result<()>) {
        if let Err(err) = result {
            self.error.get_or_insert(err);
        }
    }
}

/// The run's observer.
pub struct RunObserver {
    /// The progress line.
    pub progress: Progress,
    /// `--csv`.
    pub csv: Option<FileOutput<CsvWriter<BufWriter<File>>>>,
    /// `--out json=FILE`.
    pub jsonl: Option<FileOutput<JsonLines<BufWriter<File>>>>,
    /// `--results FILE`: each interval's whole window, for `loadhost merge`.
    pub results: Option<FileOutput<ResultsWriter>>,
    /// `--metrics-addr`.
    pub exporter: Option<Arc<Exporter>>,
    /// The thresholds.
    pub judge: LiveJudge,
    /// Stops the run when an `abort_on_fail` threshold fails.
    pub interrupt: Arc<Interrupt>,
    /// Every row, kept for `--html`.
    pub rows: Option<Vec<IntervalRow>>,
    /// The most resident memory seen at an interval's end, in bytes (Linux updates VmHWM lazily).
    pub rss_seen: u64,
}

impl Observer for RunObserver {
    fn on_interval(&mut self, row: &IntervalRow) {
        self.on_window(row, &Window::default());
    }

    fn on_window(&mut self, row: &IntervalRow, window: &Window) {
        self.rss_seen = self.rss_seen.max(crate::run::proc_status_bytes("VmRSS").unwrap_or(0));
        self.progress.update(row);
        if let Some(csv) = self.csv.as_mut() {
            let written = csv.writer.row(row);
            csv.keep(written);
        }
        if let Some(jsonl) = self.jsonl.as_mut() {
            let written = jsonl.writer.interval(row, window);
            jsonl.keep(written);
        }
        if let Some(results) = self.results.as_mut() {
            let written = results.writer.interval(row, window);
            results.keep(written);
        }
        if let Some(exporter) = &self.exporter {
            exporter.update(row, window);
        }
        if !self.judge.is_empty() {
            let standing = self.judge.fold(row, window);
            if let Some(exporter) = &self.exporter {
                for (expr, passing) in &standing.passing {
                    exporter.threshold(expr, *passing);
                }
            }
            if let Some(expr) = standing.abort {
                tracing::warn!("threshold '{expr}' failed and has abort_on_fail: stopping the run");
                self.interrupt.request_because(format!("threshold '{expr}' failed (abort_on_fail)"));
            }
        }
        if let Some(rows) = self.rows.as_mut() {
            rows.push(row.clone());
        }
    }
}
