//! The live progress line on stderr: tasks started, the rate, tasks in flight, workers, and two
//! running totals: **errored** (the `failed`, `timed_out` and `trapped` outcomes: tasks that ran
//! and ended in an error) and **dropped**. On a terminal it is redrawn in place every interval; in
//! a log (CI's, a file), where redrawing would print thousands of lines, a compact line is
//! printed every [`LOG_EVERY`] of the run instead, so a long run is never silent until its end.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use loadhost_metrics::IntervalRow;

/// How often a log (stderr not a terminal) gets a progress line, in run time.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// A progress line updated once per interval.
pub struct Progress {
    bar: Option<ProgressBar>,
    /// The run's planned length, when known, for the log lines.
    planned: Option<Duration>,
    started: u64,
    errored: u64,
    dropped: u64,
    /// The log line last printed: at what run time, with how many tasks started by then.
    logged: (Duration, u64),
}

impl Progress {
    /// A progress line for a run planned to last `planned` (a spinner when unknown).
    pub fn new(planned: Option<Duration>) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = match planned {
                Some(d) => ProgressBar::with_draw_target(Some(d.as_secs().max(1)), ProgressDrawTarget::stderr()),
                None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
            };
            let template = "{spinner} [{elapsed_precise}] {bar:30} {msg}";
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Self { bar, planned, started: 0, errored: 0, dropped: 0, logged: (Duration::ZERO, 0) }
    }

    /// Show an interval's figures.
    pub fn update(&mut self, row: &IntervalRow) {
        self.started += row.started;
        self.errored += row.counts.failed + row.counts.trapped + row.counts.timed_out;
        self.dropped += row.counts.dropped;
        if let Some(bar) = &self.bar {
            let secs = (row.end - row.start).as_secs_f64().max(1e-9);
            bar.set_position(row.end.as_secs());
            bar.set_message(format!(
                "{} started · {:.0}/s · {} in flight · {} · {} errored · {} dropped",
                self.started,
                row.started as f64 / secs,
                row.in_flight,
                crate::plural(row.workers, "worker", "workers"),
                self.errored,
                self.dropped
            ));
        } else if row.end >= self.logged.0 + LOG_EVERY {
            eprintln!("{}", self.log_line(row));
            self.logged = (row.end, self.started);
        }
    }

    /// The compact line a log gets: run time (of the plan), totals, and the rate since the last.
    fn log_line(&self, row: &IntervalRow) -> String {
        let (then, started_then) = self.logged;
        let secs = (row.end.saturating_sub(then)).as_secs_f64().max(1e-9);
        let of = self.planned.map(|p| format!("/{}s", p.as_secs())).unwrap_or_default();
        format!(
            "progress {}s{of}: {} started · {:.0}/s · {} in flight · {} · {} errored · {} dropped",
            row.end.as_secs(),
            self.started,
            (self.started - started_then) as f64 / secs,
            row.in_flight,
            crate::plural(row.workers, "worker", "workers"),
            self.errored,
            self.dropped
        )
    }

    /// Remove the line before the summary is printed.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
