//! What a plugin prints: each instance's stdout and stderr (WASI streams) split into lines, each
//! line handed to the run's [`LineSink`] with where it came from, and the last stderr line of the
//! task under way kept, so a trap can say what the plugin said just before it (a Rust panic's
//! message and location, printed by the SDK's panic hook).
//!
//! Memory is bounded per instance: a line is held only until its newline, and a line longer than
//! [`MAX_LINE`] is cut there (the rest of it, up to its newline, is dropped).

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::plugin_text::PluginText;

/// The longest line kept, in bytes; past it the line is cut and marked.
pub const MAX_LINE: usize = 64 << 10;

/// The longest stderr line kept for a trap's report, in bytes.
const MAX_TAIL: usize = 1024;

/// Which stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// stdout.
    Stdout,
    /// stderr.
    Stderr,
    /// The host's account of a request the plugin made (`--http-debug`): several lines in one.
    Http,
}

impl Stream {
    /// `stdout`, `stderr` or `http`.
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
            Stream::Http => "http",
        }
    }
}

/// One of an instance's two output pipes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pipe {
    /// stdout.
    Stdout,
    /// stderr.
    Stderr,
}

impl From<Pipe> for Stream {
    fn from(pipe: Pipe) -> Self {
        match pipe {
            Pipe::Stdout => Stream::Stdout,
            Pipe::Stderr => Stream::Stderr,
        }
    }
}

/// How much of each request `--http-debug` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpDebug {
    /// Method, URL, status and headers.
    Headers,
    /// Those and the bodies (cut at 1 KiB).
    Full,
}

/// One line the plugin printed, and where it came from.
#[derive(Debug, Clone, Copy)]
pub struct PluginLine<'a> {
    /// stdout or stderr.
    pub stream: Stream,
    /// The worker's scenario.
    pub scenario: &'a str,
    /// The worker's id; `None` in `setup` and `teardown`.
    pub worker: Option<u32>,
    /// The task's iteration; `None` outside a task (`init`, `setup`, `teardown`).
    pub iteration: Option<u64>,
    /// The line, without its newline (invalid UTF-8 replaced).
    pub text: &'a str,
    /// Whether the line was longer than [`MAX_LINE`] and was cut.
    pub cut: bool,
}

/// Where a run's plugin lines go (the command line's `--plugin-output`).
pub trait LineSink: Send + Sync + 'static {
    /// Take one line. Called on the worker's thread while the plugin writes: keep it cheap.
    fn line(&self, line: PluginLine<'_>);
}

/// No iteration: the instance is not running a task.
const NO_TASK: u64 = u64::MAX;

/// One instance's capture of its two streams.
pub(crate) struct Capture {
    sink: Option<Arc<dyn LineSink>>,
    /// Whether the instance's requests are shown (`--http-debug`); only with a sink.
    http_debug: Option<HttpDebug>,
    scenario: Arc<str>,
    worker: Option<u32>,
    /// The task under way, set before each call ([`NO_TASK`] between them).
    iteration: AtomicU64,
    state: Mutex<Partial>,
    /// The run's secrets, redacted from every line before it is handed on or kept.
    text: Arc<PluginText>,
}

#[derive(Default)]
struct Partial {
    stdout: Pending,
    stderr: Pending,
    /// The last complete stderr line and the iteration it was printed in.
    tail: Option<(u64, String)>,
}

/// A line not finished yet.
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    /// The line passed [`MAX_LINE`]: it was handed on cut, and the rest is skipped to its newline.
    skipping: bool,
}

impl Capture {
    /// A capture for a worker of `scenario` (`worker` `None` for setup and teardown) sending lines
    /// to `sink` (`None`: lines are only kept for trap reports).
    pub(crate) fn new(
        sink: Option<Arc<dyn LineSink>>,
        http_debug: Option<HttpDebug>,
        scenario: Arc<str>,
        worker: Option<u32>,
        text: Arc<PluginText>,
    ) -> Arc<Self> {
        let http_debug = http_debug.filter(|_| sink.is_some());
        Arc::new(Self {
            sink,
            http_debug,
            scenario,
            worker,
            iteration: AtomicU64::new(NO_TASK),
            state: Mutex::default(),
            text,
        })
    }

    /// How much of each request to show, when `--http-debug` is on.
    pub(crate) fn http_debug(&self) -> Option<HttpDebug> {
        self.http_debug
    }

    /// Hand on the host's account of a request (`--http-debug`).
    pub(crate) fn http_note(&self, text: &str) {
        if let Some(sink) = &self.sink {
            let (scenario, worker, iteration) = (&*self.scenario, self.worker, self.current());
            let text = &self.text.redact(text);
            sink.line(PluginLine { stream: Stream::Http, scenario, worker, iteration, text, cut: false });
        }
    }

    /// The WASI stream for `stream`.
    pub(crate) fn stream(self: &Arc<Self>, stream: Pipe) -> CaptureStream {
        CaptureStream { capture: self.clone(), stream }
    }

    /// A task with this iteration is about to run (`None`: no task is running).
    pub(crate) fn set_task(&self, iteration: Option<u64>) {
        self.iteration.store(iteration.unwrap_or(NO_TASK), Ordering::Relaxed);
    }

    fn current(&self) -> Option<u64> {
        Some(self.iteration.load(Ordering::Relaxed)).filter(|&i| i != NO_TASK)
    }

    fn lock(&self) -> MutexGuard<'_, Partial> {
        // A panic in a sink cannot leave a partial line in a state that matters.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The last stderr line printed during the task under way, finished or not (what a Rust
    /// panic hook printed before the trap), if there was one.
    pub(crate) fn last_stderr_line(&self) -> Option<String> {
        let iteration = self.current().unwrap_or(NO_TASK);
        let mut state = self.lock();
        if !state.stderr.bytes.is_empty() {
            // An unfinished line: hand it on now, since the instance is about to be dropped.
            self.emit(&mut state, Pipe::Stderr, iteration, false);
        }
        state.tail.as_ref().filter(|(i, _)| *i == iteration).map(|(_, line)| line.clone())
    }

    /// Hand on whatever is left of an unfinished line (the instance is going away).
    pub(crate) fn flush(&self) {
        let iteration = self.current().unwrap_or(NO_TASK);
        let mut state = self.lock();
        for stream in [Pipe::Stdout, Pipe::Stderr] {
            if !pending(&mut state, stream).bytes.is_empty() {
                self.emit(&mut state, stream, iteration, false);
            }
        }
    }

    fn write(&self, stream: Pipe, mut bytes: &[u8]) {
        let iteration = self.current().unwrap_or(NO_TASK);
        let mut state = self.lock();
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let (chunk, rest) = match newline {
                Some(at) => (&bytes[..at], &bytes[at + 1..]),
                None => (bytes, &[][..]),
            };
            let line = pending(&mut state, stream);
            if !line.skipping {
                let room = MAX_LINE - line.bytes.len();
                line.bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if chunk.len() > room {
                    line.skipping = true;
                    self.emit(&mut state, stream, iteration, true);
                }
            }
            if newline.is_some() {
                let line = pending(&mut state, stream);
                if line.skipping {
                    line.skipping = false;
                } else {
                    self.emit(&mut state, stream, iteration, false);
                }
            }
            bytes = rest;
        }
    }

    /// Hand the pending line of `stream` on, and empty it.
    fn emit(&self, state: &mut Partial, stream: Pipe, iteration: u64, cut: bool) {
        let bytes = std::mem::take(&mut pending(state, stream).bytes);
        let text = String::from_utf8_lossy(&bytes);
        let text = self.text.redact(text.strip_suffix('\r').unwrap_or(&text));
        let text = &*text;
        if stream == Pipe::Stderr {
            let mut kept = text.to_owned();
            if kept.len() > MAX_TAIL {
                let mut end = MAX_TAIL;
                while !kept.is_char_boundary(end) {
                    end -= 1;
                }
                kept.truncate(end);
            }
            state.tail = Some((iteration, kept));
        }
        if let Some(sink) = &self.sink {
            let iteration = Some(iteration).filter(|&i| i != NO_TASK);
            sink.line(PluginLine {
                stream: stream.into(),
                scenario: &self.scenario,
                worker: self.worker,
                iteration,
                text,
                cut,
            });
        }
        // Keep the allocation for the next line, unless a long one made it large.
        let line = pending(state, stream);
        if bytes.capacity() <= 4096 {
            line.bytes = bytes;
            line.bytes.clear();
        }
    }
}

fn pending(state: &mut Partial, stream: Pipe) -> &mut Pending {
    match stream {
        Pipe::Stdout => &mut state.stdout,
        Pipe::Stderr => &mut state.stderr,
    }
}

/// One of an instance's two output streams, as WASI sees it.
#[derive(Clone)]
pub(crate) struct CaptureStream {
    capture: Arc<Capture>,
    stream: Pipe,
}

impl IsTerminal for CaptureStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CaptureStream {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

/// How much a guest may write in one call: lines are handed on as they complete, so any amount
/// is taken at once.
const WRITE_BUDGET: usize = 1 << 20;

#[wasmtime_wasi::async_trait]
impl OutputStream for CaptureStream {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.capture.write(self.stream, &bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_BUDGET)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CaptureStream {
    async fn ready(&mut self) {}
}

impl AsyncWrite for CaptureStream {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.capture.write(self.stream, buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line as the sink got it: stream, iteration, text, cut.
    type Got = (Stream, Option<u64>, String, bool);

    #[derive(Default)]
    struct Lines(Mutex<Vec<Got>>);

    impl LineSink for Lines {
        fn line(&self, line: PluginLine<'_>) {
            self.0.lock().unwrap().push((line.stream, line.iteration, line.text.to_owned(), line.cut));
        }
    }

    fn capture() -> (Arc<Lines>, Arc<Capture>) {
        let lines = Arc::new(Lines::default());
        let capture = Capture::new(Some(lines.clone()), None, Arc::from("default"), Some(3), Arc::default());
        (lines, capture)
    }

    #[test]
    fn writes_become_lines_whatever_their_split() {
        let (lines, c) = capture();
        c.set_task(Some(7));
        c.write(Pipe::Stdout, b"hel");
        c.write(Pipe::Stdout, b"lo\nwor");
        c.write(Pipe::Stdout, b"ld\r\n\n");
        let got = lines.0.lock().unwrap().clone();
        let texts: Vec<&str> = got.iter().map(|l| l.2.as_str()).collect();
        assert_eq!(texts, ["hello", "world", ""]);
        assert!(got.iter().all(|l| l.1 == Some(7) && l.0 == Stream::Stdout && !l.3));
    }

    #[test]
    fn a_line_past_the_limit_is_cut_and_the_rest_skipped() {
        let (lines, c) = capture();
        c.write(Pipe::Stdout, &vec![b'x'; MAX_LINE + 10]);
        c.write(Pipe::Stdout, &vec![b'y'; MAX_LINE]);
        c.write(Pipe::Stdout, b"\nnext\n");
        let got = lines.0.lock().unwrap().clone();
        assert_eq!(got.len(), 2, "the long line once, cut, then the next");
        assert_eq!((got[0].2.len(), got[0].3), (MAX_LINE, true));
        assert!(got[0].2.bytes().all(|b| b == b'x'));
        assert_eq!(got[1].2, "next");
        assert_eq!(got[0].1, None, "outside a task");
    }

    #[test]
    fn the_last_stderr_line_belongs_to_the_task_under_way() {
        let (_, c) = capture();
        c.set_task(Some(1));
        c.write(Pipe::Stderr, b"from task 1\n");
        c.set_task(Some(2));
        assert_eq!(c.last_stderr_line(), None, "task 2 printed nothing yet");
        c.write(Pipe::Stderr, b"note\npanicked at src/lib.rs:12:9: index out of bounds");
        assert_eq!(c.last_stderr_line().as_deref(), Some("panicked at src/lib.rs:12:9: index out of bounds"));
        c.write(Pipe::Stdout, b"stdout is not stderr\n");
        assert_eq!(c.last_stderr_line().as_deref(), Some("panicked at src/lib.rs:12:9: index out of bounds"));
    }

    #[test]
    fn without_a_sink_only_the_tail_is_kept() {
        let c = Capture::new(None, None, Arc::from("default"), Some(0), Arc::default());
        c.set_task(Some(5));
        c.write(Pipe::Stderr, "é".repeat(MAX_TAIL).as_bytes());
        c.write(Pipe::Stderr, b"\n");
        let tail = c.last_stderr_line().unwrap();
        assert!(tail.len() <= MAX_TAIL && tail.chars().all(|ch| ch == 'é'));
    }
}
