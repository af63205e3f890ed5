//! `--plugin-output`: where the lines a plugin prints go. `log` (the default) sends them through
//! the log, each prefixed with its worker and iteration, the first [`LOG_LINES`] of the run and
//! then a count of the rest once a second, so a plugin printing in a tight loop cannot flood the
//! terminal or slow the host; `file=PATH` writes every line, timestamped; `none` drops them. With
//! `--out json=FILE` every line also becomes a `log` line there (up to [`JSON_BACKLOG`] bytes
//! waiting for the outputs' thread; past that, lines are counted and dropped).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use loadhost_output::jsonl::LogLine;
use loadhost_runtime::{LineSink, PluginLine, Stream};

/// Lines the log shows before it only counts them.
pub const LOG_LINES: u64 = 100;

/// Bytes of lines that may wait for the JSON lines writer.
pub const JSON_BACKLOG: usize = 8 << 20;

/// Where a line came from, as each line's prefix says it: `[worker 3, iteration 41]`, with the
/// scenario first when the run has several.
fn origin(line: &PluginLine<'_>, scenarios: bool) -> String {
    let mut parts = Vec::with_capacity(3);
    if scenarios || line.worker.is_none() {
        parts.push(line.scenario.to_owned());
    }
    if let Some(worker) = line.worker {
        parts.push(format!("worker {worker}"));
    }
    if let Some(iteration) = line.iteration {
        parts.push(format!("iteration {iteration}"));
    }
    format!("[{}]", parts.join(", "))
}

/// The log's share: a budget of lines, then counts of what it held back.
struct LogBudget {
    shown: AtomicU64,
    held_back: AtomicU64,
    held_back_total: AtomicU64,
    /// Milliseconds since `start` of the last count said.
    said_at_ms: AtomicU64,
    start: Instant,
}

impl LogBudget {
    fn new() -> Self {
        Self {
            shown: AtomicU64::new(0),
            held_back: AtomicU64::new(0),
            held_back_total: AtomicU64::new(0),
            said_at_ms: AtomicU64::new(0),
            start: Instant::now(),
        }
    }

    fn line(&self, line: &PluginLine<'_>, scenarios: bool) {
        if self.shown.fetch_add(1, Ordering::Relaxed) < LOG_LINES {
            let cut = if line.cut { " [cut at 64 KiB]" } else { "" };
            let origin = origin(line, scenarios);
            match line.stream {
                Stream::Stdout | Stream::Http => {
                    tracing::info!(target: "loadhost::plugin", "{origin} {}{cut}", line.text);
                }
                Stream::Stderr => tracing::warn!(target: "loadhost::plugin", "{origin} {}{cut}", line.text),
            }
            if self.shown.load(Ordering::Relaxed) == LOG_LINES {
                tracing::warn!(
                    "the plugin printed {LOG_LINES} lines: later ones are counted once a second, not shown \
                     (--plugin-output file=PATH keeps every line)"
                );
            }
            return;
        }
        self.held_back.fetch_add(1, Ordering::Relaxed);
        self.held_back_total.fetch_add(1, Ordering::Relaxed);
        let now = self.start.elapsed().as_millis() as u64;
        let said = self.said_at_ms.load(Ordering::Relaxed);
        if now >= said + 1000
            && self.said_at_ms.compare_exchange(said, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            self.say(now.saturating_sub(said));
        }
    }

    /// Say how many lines were held back since the last time.
    fn say(&self, over_ms: u64) {
        let n = self.held_back.swap(0, Ordering::Relaxed);
        if n > 0 {
            tracing::info!(target: "loadhost::plugin", "{n} more plugin lines in the last {:.1}s, not shown", over_ms as f64 / 1000.0);
        }
    }
}

/// The file's share: every line, behind a lock (a plugin that prints a lot waits for the disk).
struct LineFile {
    path: PathBuf,
    out: Mutex<BufWriter<File>>,
    error: Mutex<Option<std::io::Error>>,
}

/// Lines waiting for the JSON lines writer (on the outputs' thread).
#[derive(Default)]
pub struct JsonBacklog {
    lines: Mutex<VecDeque<LogLine>>,
    bytes: AtomicUsize,
    dropped: AtomicU64,
}

impl JsonBacklog {
    fn push(&self, line: LogLine) {
        let size = line.line.len() + 128;
        if self.bytes.fetch_add(size, Ordering::Relaxed) + size > JSON_BACKLOG {
            self.bytes.fetch_sub(size, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).push_back(line);
    }

    /// Take every line waiting, oldest first.
    pub fn drain(&self) -> Vec<LogLine> {
        let lines: Vec<LogLine> = self.lines.lock().unwrap_or_else(|p| p.into_inner()).drain(..).collect();
        let size: usize = lines.iter().map(|l| l.line.len() + 128).sum();
        self.bytes.fetch_sub(size, Ordering::Relaxed);
        lines
    }

    /// Lines dropped because the writer was too far behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// The run's sink for plugin lines.
pub struct PluginOutput {
    log: Option<LogBudget>,
    file: Option<LineFile>,
    json: Option<Arc<JsonBacklog>>,
    /// Whether the run has several scenarios (each line then names its own).
    scenarios: bool,
}

impl PluginOutput {
    /// A sink for `--plugin-output` (`file` created already), feeding `json` when `--out json=`.
    pub fn new(spec_log: bool, file: Option<(PathBuf, File)>, json: Option<Arc<JsonBacklog>>, scenarios: bool) -> Self {
        let file = file.map(|(path, f)| LineFile { path, out: Mutex::new(BufWriter::new(f)), error: Mutex::new(None) });
        Self { log: spec_log.then(LogBudget::new), file, json, scenarios }
    }

    /// Whether any line goes anywhere.
    pub fn is_used(&self) -> bool {
        self.log.is_some() || self.file.is_some() || self.json.is_some()
    }

    /// The run is over: say what the log held back, and flush the file (its first error, if any).
    pub fn finish(&self) -> Option<(PathBuf, std::io::Error)> {
        if let Some(log) = &self.log {
            let total = log.held_back_total.load(Ordering::Relaxed);
            log.say(log.start.elapsed().as_millis() as u64 - log.said_at_ms.load(Ordering::Relaxed));
            if total > 0 {
                tracing::info!(target: "loadhost::plugin", "{total} plugin lines in all were not shown (the first {LOG_LINES} were)");
            }
        }
        if let Some(json) = &self.json
            && json.dropped() > 0
        {
            tracing::warn!("{} plugin lines were left out of --out json (the writer fell behind)", json.dropped());
        }
        let file = self.file.as_ref()?;
        let flushed = file.out.lock().unwrap_or_else(|p| p.into_inner()).flush();
        let error = file.error.lock().unwrap_or_else(|p| p.into_inner()).take().or(flushed.err());
        error.map(|err| (file.path.clone(), err))
    }
}

impl LineSink for PluginOutput {
    fn line(&self, line: PluginLine<'_>) {
        if let Some(log) = &self.log {
            log.line(&line, self.scenarios);
        }
        let needs_time = self.file.is_some() || self.json.is_some();
        let time = needs_time.then(|| humantime::format_rfc3339_millis(SystemTime::now()).to_string());
        if let Some(file) = &self.file {
            let mut out = file.out.lock().unwrap_or_else(|p| p.into_inner());
            let cut = if line.cut { " [cut at 64 KiB]" } else { "" };
            let written = writeln!(
                out,
                "{} {} {} {}{cut}",
                time.as_deref().unwrap_or_default(),
                origin(&line, true),
                line.stream.name(),
                line.text
            );
            if let Err(err) = written {
                file.error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(err);
            }
        }
        if let Some(json) = &self.json {
            json.push(LogLine {
                time: time.unwrap_or_default(),
                scenario: line.scenario.to_owned(),
                worker: line.worker,
                iteration: line.iteration,
                stream: line.stream.name(),
                line: line.text.to_owned(),
                cut: line.cut,
            });
        }
    }
}
