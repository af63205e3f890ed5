//! What a run does at the end of each interval, off the run loop: the progress line, the CSV row,
//! the JSON lines, the results file's interval line, the thresholds judged so far (stopping the
//! run when an `abort_on_fail` one fails), the run's series (pushed and scraped), the rows kept
//! for the HTML report, and a resident-memory sample.
//!
//! The run loop only hands each interval's row (and its window, when an output needs one) to a
//! bounded queue; a thread of its own ([`RunObserver`]) does the rest, so file writes, window
//! merges and threshold judging never delay the pacer, the crew's growth or signal handling. The
//! queue holds [`QUEUE`] intervals (a minute at the default interval): a disk that stalls for
//! less never delays the run loop. One that stays further behind makes the run loop wait for it
//! (with a warning, once) rather than lose rows or hold windows without bound.

use std::fs::File;
use std::io::BufWriter;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::SystemTime;

use loadhost_engine::{Interrupt, Observer};
use loadhost_export::Scrape;
use loadhost_metrics::{IntervalRow, Window};
use loadhost_output::csv::CsvWriter;
use loadhost_output::html::ChartRows;
use loadhost_output::jsonl::JsonLines;
use loadhost_output::progress::Progress;
use loadhost_output::results::ResultsWriter;

use super::exports::Exports;
use super::plugin_output::JsonBacklog;
use crate::judge::LiveJudge;
use crate::outputs::FileOutput;

/// How many intervals may wait for the outputs before the run loop waits for them.
pub const QUEUE: usize = 60;

/// Everything told about each interval. The observer's thread owns it while the run goes and
/// hands it back at [`RunObserver::finish`].
pub struct Sinks {
    /// The progress line.
    pub progress: Progress,
    /// `--csv`.
    pub csv: Option<FileOutput<CsvWriter<BufWriter<File>>>>,
    /// `--out json=FILE`.
    pub jsonl: Option<FileOutput<JsonLines<BufWriter<File>>>>,
    /// Plugin lines waiting for `--out json=FILE`.
    pub logs: Option<Arc<JsonBacklog>>,
    /// `--results FILE`: each interval's whole window, for `loadhost merge`.
    pub results: Option<FileOutput<ResultsWriter>>,
    /// `--metrics-addr`: what it serves (published by `exports`), kept for the linger.
    pub scrape: Option<Arc<Scrape>>,
    /// The run's series, for `--out prometheus-rw=…`, `otlp=…`, `influxdb=…` and `--metrics-addr`.
    pub exports: Option<Exports>,
    /// The thresholds.
    pub judge: LiveJudge,
    /// Stops the run when an `abort_on_fail` threshold fails.
    pub interrupt: Arc<Interrupt>,
    /// The rows kept for `--html` (bounded: see `loadhost_output::html::rows`).
    pub rows: Option<ChartRows>,
    /// The most resident memory seen at an interval's end, in bytes (Linux updates VmHWM lazily).
    pub rss_seen: u64,
}

impl Sinks {
    /// Whether any output needs each interval's whole window (plugin metrics, histograms), which
    /// is then copied for the queue; the others need only the row.
    fn want_windows(&self) -> bool {
        self.jsonl.is_some() || self.results.is_some() || self.exports.is_some() || !self.judge.is_empty()
    }

    /// Tell every output about one interval.
    fn interval(&mut self, row: &IntervalRow, window: &Window) {
        self.rss_seen = self.rss_seen.max(super::memory::status_bytes("VmRSS").unwrap_or(0));
        self.progress.update(row);
        if let Some(csv) = self.csv.as_mut() {
            csv.write(|w| w.row(row));
        }
        if let Some(jsonl) = self.jsonl.as_mut() {
            // The plugin's lines waiting, then the interval's line, which flushes them all.
            let logs = self.logs.as_ref().map(|l| l.drain()).unwrap_or_default();
            jsonl.write(|w| {
                w.logs(&logs)?;
                w.interval(row, window)
            });
        }
        if let Some(results) = self.results.as_mut() {
            results.write(|w| w.interval(row, window));
        }
        if !self.judge.is_empty() {
            let standing = self.judge.fold(row, window);
            if let Some(exports) = self.exports.as_mut() {
                for (expr, passing) in &standing.passing {
                    exports.threshold(expr, *passing);
                }
            }
            if let Some(expr) = standing.abort {
                tracing::warn!("threshold '{expr}' failed and has abort_on_fail: stopping the run");
                self.interrupt.request_because(format!("threshold '{expr}' failed (abort_on_fail)"));
            }
        }
        // After the thresholds: the interval's snapshot has their standing with it in.
        if let Some(exports) = self.exports.as_mut() {
            exports.interval(row, window);
        }
        if let Some(rows) = self.rows.as_mut() {
            rows.push(row);
        }
    }

    /// A scenario's load started: the results file says when (its rows count from there).
    fn started(&mut self, scenario: &str, at: SystemTime) {
        if let Some(results) = self.results.as_mut() {
            results.write(|w| w.started(scenario, at));
        }
        if let Some(exports) = self.exports.as_mut() {
            exports.started(scenario, at);
        }
    }

    /// Serve the queue until the run loop lets go of it, then clear the progress line.
    fn serve(mut self, news: Receiver<News>) -> Self {
        let empty = Window::default();
        for news in news {
            match news {
                News::Started { scenario, at } => self.started(&scenario, at),
                News::Interval { row, window } => self.interval(&row, window.as_deref().unwrap_or(&empty)),
            }
        }
        self.progress.finish();
        self
    }
}

/// What the run loop tells the outputs, in order.
enum News {
    /// A scenario's load started.
    Started { scenario: String, at: SystemTime },
    /// An interval ended.
    Interval {
        row: Box<IntervalRow>,
        /// The interval's window, when an output needs it.
        window: Option<Box<Window>>,
    },
}

/// The run's observer: the run loop's end of the queue, and the thread that serves it.
pub struct RunObserver {
    queue: SyncSender<News>,
    windows: bool,
    warned: bool,
    thread: JoinHandle<Sinks>,
}

impl RunObserver {
    /// Start the thread that tells `sinks` about each interval.
    pub fn start(sinks: Sinks) -> std::io::Result<Self> {
        let (queue, intervals) = sync_channel(QUEUE);
        let windows = sinks.want_windows();
        let thread =
            std::thread::Builder::new().name("loadhost-outputs".into()).spawn(move || sinks.serve(intervals))?;
        Ok(Self { queue, windows, warned: false, thread })
    }

    /// Once the run is over: wait until every queued interval is written and hand the outputs
    /// back (the progress line cleared).
    pub fn finish(self) -> anyhow::Result<Sinks> {
        drop(self.queue);
        self.thread.join().map_err(|_| anyhow::anyhow!("the outputs' thread panicked: the run's files are incomplete"))
    }

    fn send(&mut self, news: News) {
        match self.queue.try_send(news) {
            Ok(()) => {}
            Err(TrySendError::Full(news)) => {
                if !self.warned {
                    self.warned = true;
                    tracing::warn!(
                        "the outputs are {QUEUE} intervals behind (a slow disk?): the run waits for them rather than lose rows"
                    );
                }
                // Only fails when the thread is gone, which `finish` reports.
                let _ = self.queue.send(news);
            }
            // The thread is gone (it panicked); `finish` reports it.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

impl Observer for RunObserver {
    fn on_start(&mut self, scenario: &str, started_at: SystemTime) {
        self.send(News::Started { scenario: scenario.to_owned(), at: started_at });
    }

    fn on_interval(&mut self, row: &IntervalRow) {
        self.send(News::Interval { row: Box::new(row.clone()), window: None });
    }

    fn on_window(&mut self, row: &IntervalRow, window: &Window) {
        let window = self.windows.then(|| Box::new(window.clone()));
        self.send(News::Interval { row: Box::new(row.clone()), window });
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use loadhost_config::criteria::ThresholdSpec;
    use loadhost_metrics::{Gauges, Outcome};

    use super::*;

    fn sinks(thresholds: &[&str], html: bool) -> Sinks {
        let specs = thresholds.iter().map(|t| t.parse::<ThresholdSpec>().expect("a threshold")).collect();
        Sinks {
            progress: Progress::new(None),
            csv: None,
            jsonl: None,
            logs: None,
            results: None,
            scrape: None,
            exports: None,
            judge: LiveJudge::new(specs),
            interrupt: Arc::new(Interrupt::new()),
            rows: html.then(ChartRows::new),
            rss_seen: 0,
        }
    }

    fn interval(i: u64, failed: bool) -> (IntervalRow, Window) {
        let mut w = Window::default();
        w.counts.scheduled = 1;
        w.record_task(if failed { Outcome::Failed } else { Outcome::Passed }, None);
        let row =
            IntervalRow::from_window(i, Duration::from_secs(i), Duration::from_secs(i + 1), &w, Gauges::default());
        (row, w)
    }

    #[test]
    fn every_interval_reaches_the_outputs_and_they_come_back_at_the_end() {
        let mut observer = RunObserver::start(sinks(&[], true)).expect("the thread starts");
        assert!(!observer.windows, "only rows are queued when no output needs a window");
        for i in 0..(QUEUE as u64 * 3) {
            let (row, window) = interval(i, false);
            observer.on_window(&row, &window);
        }
        let sinks = observer.finish().expect("the thread ends");
        assert_eq!(sinks.rows.map(|r| r.len()), Some(QUEUE * 3));
    }

    /// A FIFO whose buffer is already full: the first write to it blocks until it is drained.
    struct StalledDisk {
        path: PathBuf,
        reader: File,
        _dir: tempfile::TempDir,
    }

    impl StalledDisk {
        fn new() -> Self {
            use std::os::unix::fs::OpenOptionsExt as _;
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("rows.csv");
            let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: mkfifo(3) with a NUL-terminated path and a mode; no memory is shared.
            assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo");
            let reader = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&path).unwrap();
            Self { path, reader, _dir: dir }
        }

        /// Fill the pipe (with newline-free bytes) until a write would block.
        fn fill(&self) {
            use std::io::Write as _;
            use std::os::unix::fs::OpenOptionsExt as _;
            let mut filler =
                std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&self.path).unwrap();
            while filler.write(&[b'x'; 4096]).is_ok() {}
        }

        /// Read what was written until `lines` newlines have come (at most 60 s).
        fn drain(mut self, lines: usize) -> std::thread::JoinHandle<usize> {
            use std::io::Read as _;
            std::thread::spawn(move || {
                let (mut seen, mut buf) = (0, [0u8; 4096]);
                let deadline = std::time::Instant::now() + Duration::from_secs(60);
                while seen < lines && std::time::Instant::now() < deadline {
                    match self.reader.read(&mut buf) {
                        Ok(n) => seen += buf[..n].iter().filter(|&&b| b == b'\n').count(),
                        Err(_) => std::thread::sleep(Duration::from_millis(1)),
                    }
                }
                seen
            })
        }
    }

    #[test]
    fn a_stalled_disk_does_not_hold_up_the_run_loop_for_a_queue_of_intervals() {
        let disk = StalledDisk::new();
        let file = std::fs::OpenOptions::new().write(true).open(&disk.path).unwrap();
        let handle = file.try_clone().unwrap();
        let writer = CsvWriter::new(BufWriter::new(file), &serde_json::json!({})).unwrap();
        disk.fill();
        let mut sinks = sinks(&[], false);
        sinks.csv = Some(FileOutput::new(writer, "csv", disk.path.clone(), handle));
        let mut observer = RunObserver::start(sinks).expect("the thread starts");
        // The thread takes the first interval and blocks writing it; the queue takes QUEUE more.
        let (done, finished) = std::sync::mpsc::channel();
        let run_loop = std::thread::spawn(move || {
            for i in 0..=QUEUE as u64 {
                let (row, window) = interval(i, false);
                observer.on_window(&row, &window);
            }
            let _ = done.send(());
            observer
        });
        finished
            .recv_timeout(Duration::from_secs(30))
            .expect("the run loop handed over every interval while the disk was stalled");
        let drained = disk.drain(2 + QUEUE + 1);
        let sinks = run_loop.join().unwrap().finish().expect("the thread ends");
        assert_eq!(drained.join().unwrap(), 2 + QUEUE + 1, "the config line, the header and every row");
        assert!(sinks.csv.is_some_and(|csv| csv.file.error.is_none()));
    }

    #[test]
    fn a_failing_abort_on_fail_threshold_stops_the_run_from_the_thread() {
        let mut observer =
            RunObserver::start(sinks(&["tasks_not_passed:rate<0.5;abort_on_fail"], false)).expect("the thread starts");
        assert!(observer.windows, "thresholds judge windows");
        let (row, window) = interval(0, true);
        observer.on_window(&row, &window);
        let sinks = observer.finish().expect("the thread ends");
        assert_eq!(sinks.judge.aborted_by(), Some("tasks_not_passed:rate<0.5"));
        assert_eq!(sinks.interrupt.requests(), 1, "the run was asked to stop");
    }
}
