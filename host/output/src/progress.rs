//! The live progress line on stderr, shown only when stderr is a terminal (never in CI logs):
//! tasks started, the last interval's rate, tasks in flight, workers, and two running totals:
//! **errored** (the `failed`, `timed_out` and `trapped` outcomes: tasks that ran and ended in an
//! error) and **dropped**.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use loadhost_metrics::IntervalRow;

/// A progress line updated once per interval.
pub struct Progress {
    bar: Option<ProgressBar>,
    started: u64,
    errored: u64,
    dropped: u64,
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
        Self { bar, started: 0, errored: 0, dropped: 0 }
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
        }
    }

    /// Remove the line before the summary is printed.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
