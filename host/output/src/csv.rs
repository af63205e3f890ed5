//! The per-interval CSV (`--csv`), in the shape of seed 000's output: a `#` comment with the
//! run's config as JSON, a header, one row per interval, and a `#` footer that is written even
//! when the run stopped early, so a reader can tell a complete file from a cut-off one.

use std::io::{self, Write};

use loadhost_metrics::{IntervalRow, Outcome, RunReport, ThresholdResult};
use serde_json::{Value, json};

use crate::round_ms;

/// The header row.
pub const HEADER: &[&str] = &[
    "interval",
    "start_s",
    "end_s",
    "scheduled",
    "started",
    "passed",
    "failed",
    "aborted",
    "dropped",
    "timed_out",
    "trapped",
    "interrupted",
    "retries",
    "lag_max_ms",
    "underrun",
    "workers",
    "idle",
    "in_flight",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "latency_max_ms",
    "service_p50_ms",
    "service_p99_ms",
    "wait_p50_ms",
    "wait_p99_ms",
    "wait_max_ms",
    "gate_wait_p99_ms",
    "http_reqs",
    "http_failed",
    "http_denied",
    "http_req_p50_ms",
    "http_req_p99_ms",
    "scenario",
];

/// Writes rows as intervals end.
pub struct CsvWriter<W: Write> {
    out: W,
}

impl<W: Write> CsvWriter<W> {
    /// Write the config comment and the header.
    pub fn new(mut out: W, config: &Value) -> io::Result<Self> {
        writeln!(out, "# config {config}")?;
        writeln!(out, "{}", HEADER.join(","))?;
        out.flush()?;
        Ok(Self { out })
    }

    /// Write one interval's row (flushed, so a crash loses nothing already measured).
    pub fn row(&mut self, row: &IntervalRow) -> io::Result<()> {
        let c = &row.counts;
        let mut fields: Vec<String> = vec![
            row.index.to_string(),
            format!("{:.3}", row.start.as_secs_f64()),
            format!("{:.3}", row.end.as_secs_f64()),
            c.scheduled.to_string(),
            row.started.to_string(),
        ];
        fields.extend(Outcome::ALL.iter().map(|&o| c.get(o).to_string()));
        fields.extend([
            c.retries.to_string(),
            round_ms(row.lag_max.as_secs_f64() * 1000.0).to_string(),
            row.underrun.to_string(),
            row.workers.to_string(),
            row.idle.to_string(),
            row.in_flight.to_string(),
        ]);
        for ms in [
            row.latency.p50,
            row.latency.p90,
            row.latency.p99,
            row.latency.max,
            row.service.p50,
            row.service.p99,
            row.wait.p50,
            row.wait.p99,
            row.wait.max,
            row.gate_wait.p99,
        ] {
            fields.push(round_ms(ms).to_string());
        }
        fields.extend([row.http_reqs.to_string(), row.http_failed.to_string(), row.http_denied.to_string()]);
        fields.extend([round_ms(row.http_duration.p50).to_string(), round_ms(row.http_duration.p99).to_string()]);
        fields.push(row.scenario.to_string());
        writeln!(self.out, "{}", fields.join(","))?;
        self.out.flush()
    }

    /// Write the footer: totals, whether every task is accounted for, how the run ended, and the
    /// thresholds' verdicts.
    pub fn finish(mut self, report: &RunReport, thresholds: &[ThresholdResult]) -> io::Result<W> {
        let c = report.counts();
        let footer = json!({
            "complete": report.aborted.is_none() && report.stopped.is_none(),
            "stopped": report.stopped,
            "scheduled": c.scheduled,
            "passed": c.passed,
            "failed": c.failed,
            "dropped": c.dropped,
            "trapped": c.trapped,
            "interrupted": c.interrupted,
            "identity_holds": c.identity_holds(),
            "duration_s": report.elapsed.as_secs_f64(),
            "aborted": report.aborted,
            "thresholds": crate::json::thresholds(thresholds),
            "thresholds_ok": thresholds.iter().all(|t| t.passed),
        });
        writeln!(self.out, "# end {footer}")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadhost_metrics::{Gauges, Window};

    use super::*;

    #[test]
    fn every_row_has_a_field_per_header_column() {
        let mut writer = CsvWriter::new(Vec::new(), &json!({"rate": "10/s"})).unwrap();
        let row =
            IntervalRow::from_window(0, Duration::ZERO, Duration::from_secs(1), &Window::default(), Gauges::default());
        writer.row(&row).unwrap();
        let text = String::from_utf8(writer.out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], r#"# config {"rate":"10/s"}"#);
        assert_eq!(lines[1].split(',').count(), HEADER.len());
        assert_eq!(lines[2].split(',').count(), HEADER.len());
    }
}
