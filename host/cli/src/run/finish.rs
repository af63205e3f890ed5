//! The end of a run: everything measured written, the summary printed, the exit code.

use std::process::ExitCode;

use loadhost_config::RunSettings;
use loadhost_metrics::{RunReport, ThresholdResult};
use loadhost_output::html;
use loadhost_output::jsonl::JsonLines;
use loadhost_output::summary::Summary;
use loadhost_output::{RunInfo, json, terminal};

use super::files::{EndFiles, results_start};
use super::handle_summary::{Handled, Summarizer};
use super::load::Ended;
use super::memory;
use super::observe::Sinks;
use crate::exit::{ABORTED, Failure, NO_TASK_PASSED, STOPPED, THRESHOLDS_FAILED};
use crate::outputs::{Failed, write_ci_reports, write_whole};

/// Write everything measured, print the summary, and tell how the run ended. Each output is
/// written whatever became of the others (a failure is noted in `failed`, by flag and path), and
/// the summary is printed whatever became of them all.
pub(super) fn finish(
    settings: &RunSettings,
    info: RunInfo,
    mut sinks: Sinks,
    files: EndFiles,
    ended: Ended,
    summarizer: Option<&Summarizer<'_>>,
    failed: &mut Failed,
) -> Result<ExitCode, Failure> {
    let Ended { report, scenarios, broken } = ended;
    let info = RunInfo { peak_rss: memory::peak_bytes().map(|p| p.max(sinks.rss_seen)), ..info };
    let thresholds = sinks.judge.finish(&report, &scenarios);
    // The final snapshot first (the scrape's final figures, the final push): a receiver's
    // dashboard has the run's end while the files are written.
    let exports = sinks.exports.take().and_then(|e| e.finish(&thresholds));
    // Everything measured is written before anything else can fail.
    let summary = Summary { exports, ..Summary::new(&info, &report, &scenarios, &thresholds) };
    if let Some(csv) = sinks.csv.take() {
        csv.finish(|w| w.finish(&summary).map(drop), failed);
    }
    if let Some(jsonl) = sinks.jsonl.take() {
        let logs = sinks.logs.as_ref().map(|l| l.drain()).unwrap_or_default();
        let finish = |mut w: JsonLines<_>| {
            w.logs(&logs)?;
            w.finish(&summary).map(drop)
        };
        jsonl.finish(finish, failed);
    }
    if let Some(results) = sinks.results.take() {
        let whole = results_start(settings, &info).into_results(report.clone(), scenarios.clone());
        results.finish(|w| w.finish(&whole), failed);
    }
    if let Some((path, file)) = files.html {
        let page = html::render(&summary, &sinks.rows.take().unwrap_or_default());
        failed.note("html", &path, write_whole(&path, file, |out| out.write_all(page.as_bytes())).err(), false);
    }
    if let Some((path, file)) = files.summary_json {
        let written = json::to_bytes(&summary).and_then(|text| write_whole(&path, file, |out| out.write_all(&text)));
        failed.note("summary-json", &path, written.err(), false);
    }
    let check_rate = settings.options.check_rate.map_or(1.0, |p| p.0);
    write_ci_reports(&summary, files.junit, files.markdown, check_rate, failed);
    // A k6 script's handleSummary replaces the printed summary, as in k6 (after every output).
    let handled = match (summarizer, json::to_bytes(&summary)) {
        (Some(summarizer), Ok(text)) => summarizer.handle(&text, failed),
        _ => Handled::No,
    };
    match handled {
        Handled::No => print!("{}", terminal::render(&summary)),
        Handled::Yes { stdout } => {
            use std::io::Write;
            let _ = std::io::stdout().write_all(&stdout.unwrap_or_default());
        }
    }
    if let Some(reason) = broken {
        // Every output above holds what was measured; the error is the host's, after them.
        return Err(Failure::runtime(anyhow::anyhow!("the run did not end cleanly after the load started: {reason}")));
    }
    let stopped_by_threshold = sinks.judge.aborted_by().is_some();
    Ok(exit_code(&report, &thresholds, stopped_by_threshold, settings.options.allow_failures))
}

/// The documented exit code of a finished run: a threshold that stopped the run → 99; a stop by
/// the user → 130; a plugin abort or failed teardown → 4; a failed threshold → 99.
fn exit_code(
    report: &RunReport,
    thresholds: &[ThresholdResult],
    stopped_by_threshold: bool,
    allow_failures: bool,
) -> ExitCode {
    if stopped_by_threshold {
        return ExitCode::from(THRESHOLDS_FAILED);
    }
    if report.stopped.is_some() {
        return ExitCode::from(STOPPED);
    }
    if report.aborted.is_some() || report.teardown_error.is_some() {
        return ExitCode::from(ABORTED);
    }
    if thresholds.iter().any(|t| !t.passed) {
        return ExitCode::from(THRESHOLDS_FAILED);
    }
    let counts = report.counts();
    if counts.scheduled > 0 && counts.passed == 0 && !allow_failures {
        tracing::error!(
            "no task passed ({} scheduled): exit {NO_TASK_PASSED} (--allow-failures accepts such a run)",
            counts.scheduled
        );
        return ExitCode::from(NO_TASK_PASSED);
    }
    ExitCode::SUCCESS
}
