//! The per-interval CSV (`--csv`): a `#` comment with the
//! run's config as JSON, a header, one row per interval, and a `#` footer that is written even
//! when the run stopped early, so a reader can tell a complete file from a cut-off one.

use std::io::{self, Write};

use loadhost_metrics::catalogue::names;
use loadhost_metrics::{IntervalRow, Outcome};
use serde::Serialize;
use serde_json::Value;

use crate::round_ms;
use crate::summary::{Named, PluginFile, Summary, ThresholdSummary};

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
    names::HTTP_REQS,
    names::HTTP_REQ_FAILED,
    names::HTTP_DENIED,
    "http_req_p50_ms",
    "http_req_p99_ms",
    "scenario",
    "generator_cpu",
    "generator_run_queue",
    "generator_throttled",
    "generator_fds",
    "generator_memory",
    "generator_ports_exhausted",
    "generator_fds_exhausted",
    "generator_verdict",
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
        fields.extend([row.http_reqs.to_string(), row.http_req_failed.to_string(), row.http_denied.to_string()]);
        fields.extend([round_ms(row.http_duration.p50).to_string(), round_ms(row.http_duration.p99).to_string()]);
        fields.push(row.scenario.to_string());
        // Appended after `scenario`, so readers by index keep working; empty when not measured.
        let g = &row.generator;
        let share = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.4}"));
        fields.extend([g.cpu, g.run_queue, g.throttled].map(share));
        // The resources, after the first three (so their indices hold too); counts empty when
        // nothing was measured, as the shares are.
        fields.extend([g.fds, g.memory].map(share));
        let measured = g.is_measured();
        fields
            .extend([g.ports_exhausted, g.fds_exhausted].map(|n| if measured { n.to_string() } else { String::new() }));
        // The verdict last: the column added after the figures it judges.
        fields.push(row.generator_judgement().map_or(String::new(), |j| j.verdict.name().to_owned()));
        writeln!(self.out, "{}", fields.join(","))?;
        self.out.flush()
    }

    /// Write the footer, from the summary: totals, whether every task is accounted for, how the
    /// run ended, and the thresholds' verdicts.
    pub fn finish(mut self, summary: &Summary) -> io::Result<W> {
        writeln!(self.out, "# end {}", serde_json::to_string(&Footer::new(summary))?)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The footer's object, keys in byte order (as it has always been written).
#[derive(Serialize)]
struct Footer<'a> {
    aborted: &'a Option<String>,
    /// Neither aborted by the plugin nor stopped.
    complete: bool,
    dropped: u64,
    duration_s: f64,
    /// The `failed` outcome.
    failed: u64,
    identity_holds: bool,
    interrupted: u64,
    passed: u64,
    /// What ran: its path as named, sha256, and registry reference and digest when pulled.
    plugin: &'a PluginFile,
    scheduled: u64,
    stopped: &'a Option<String>,
    thresholds: &'a Named<ThresholdSummary>,
    thresholds_ok: bool,
    trapped: u64,
}

impl<'a> Footer<'a> {
    fn new(s: &'a Summary) -> Self {
        let t = &s.tasks;
        Footer {
            aborted: &s.aborted,
            complete: s.complete(),
            dropped: t.dropped,
            duration_s: s.duration_s,
            failed: t.failed,
            identity_holds: s.identity_holds,
            interrupted: t.interrupted,
            passed: t.passed,
            plugin: &s.plugin,
            scheduled: t.scheduled,
            stopped: &s.stopped,
            thresholds: &s.thresholds,
            thresholds_ok: s.thresholds_ok(),
            trapped: t.trapped,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadhost_metrics::{Gauges, Window};
    use serde_json::json;

    use super::*;

    #[test]
    fn every_row_has_a_field_per_header_column() {
        let mut writer = CsvWriter::new(Vec::new(), &json!({"rate": "10/s"})).unwrap();
        let row =
            IntervalRow::from_window(0, Duration::ZERO, Duration::from_secs(1), &Window::default(), Gauges::default());
        writer.row(&row).unwrap();
        let text = String::from_utf8(writer.out.clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], r#"# config {"rate":"10/s"}"#);
        assert_eq!(lines[1].split(',').count(), HEADER.len());
        assert_eq!(lines[2].split(',').count(), HEADER.len());
        let (first, resources) = HEADER[HEADER.len() - 9..HEADER.len() - 1].split_at(4);
        assert_eq!(first, ["scenario", "generator_cpu", "generator_run_queue", "generator_throttled"]);
        assert_eq!(
            resources,
            ["generator_fds", "generator_memory", "generator_ports_exhausted", "generator_fds_exhausted"]
        );
        assert_eq!(HEADER.last(), Some(&"generator_verdict"));
        assert!(lines[2].ends_with(",default,,,,,,,,"), "nothing measured: empty, not 0");
        let mut measured = row.clone();
        measured.generator.cpu = Some(0.25);
        measured.generator.throttled = Some(0.0);
        measured.generator.fds = Some(0.5);
        measured.generator.fds_exhausted = 3;
        writer.row(&measured).unwrap();
        let text = String::from_utf8(writer.out).unwrap();
        assert!(
            text.lines().last().is_some_and(|l| l.ends_with(",default,0.2500,,0.0000,0.5000,,0,3,saturated")),
            "{text}"
        );
    }

    #[test]
    fn the_footer_is_the_summarys_totals_and_thresholds() {
        let summary = crate::summary::tests::sample();
        let writer = CsvWriter::new(Vec::new(), &json!({})).unwrap();
        let text = String::from_utf8(writer.finish(&summary).unwrap()).unwrap();
        let footer = text.lines().last().and_then(|l| l.strip_prefix("# end ")).expect("a footer");
        let value: Value = serde_json::from_str(footer).unwrap();
        assert_eq!(footer, value.to_string(), "keys in byte order");
        assert_eq!(value["complete"], false);
        assert_eq!(value["stopped"], "SIGINT");
        assert_eq!((value["scheduled"].as_u64(), value["failed"].as_u64()), (Some(10), Some(3)));
        assert_eq!(value["thresholds"], serde_json::to_value(&summary.thresholds).unwrap());
        assert_eq!(value["thresholds_ok"], false);
    }
}
