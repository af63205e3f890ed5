//! The end-of-run summary on the terminal: what ran, how every task ended, the rate, the three
//! latency views, pacer health, the crew, and the plugin's checks and metrics.

use std::fmt::Write as _;

use loadhost_metrics::{Outcome, Percentiles, RunReport, SeriesSummary, SeriesValue, ThresholdResult};

use crate::{RunInfo, VERSION};

const LABEL_WIDTH: usize = 14;

fn label(out: &mut String, name: &str) {
    let dots = LABEL_WIDTH.saturating_sub(name.len());
    let _ = write!(out, "  {name}{}: ", ".".repeat(dots));
}

fn fmt_ms(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 1.0 {
        format!("{ms:.2}")
    } else {
        format!("{ms:.3}")
    }
}

fn fmt_percentiles(p: &Percentiles) -> String {
    format!(
        "min={} mean={} p50={} p90={} p95={} p99={} p99.9={} max={}",
        fmt_ms(p.min),
        fmt_ms(p.mean),
        fmt_ms(p.p50),
        fmt_ms(p.p90),
        fmt_ms(p.p95),
        fmt_ms(p.p99),
        fmt_ms(p.p999),
        fmt_ms(p.max)
    )
}

fn short_sha(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// The summary as text, ready to print.
pub fn render(info: &RunInfo, report: &RunReport) -> String {
    let c = report.counts();
    let t = &report.totals;
    let mut out = String::new();
    let _ = writeln!(out, "\n  loadhost {VERSION} · {} (sha256 {}…)", info.plugin_path, short_sha(&info.plugin_sha256));
    let _ = writeln!(out, "  {}\n", info.model);

    label(&mut out, "tasks");
    let _ = writeln!(out, "{} scheduled, {} passed", c.scheduled, c.passed);
    let others: Vec<String> = Outcome::ALL
        .iter()
        .filter(|&&o| o != Outcome::Passed)
        .map(|&o| format!("{} {}", c.get(o), o.name().replace('_', " ")))
        .collect();
    let _ = writeln!(out, "  {:w$}  {} · {} retries", "", others.join(" · "), c.retries, w = LABEL_WIDTH);

    if c.retries > 0 {
        let a = &t.attempts;
        label(&mut out, "attempts");
        let _ = writeln!(
            out,
            "{} ({} passed, {} retryable, {} failed, {} trapped)",
            a.total, a.passed, a.retryable, a.failed, a.trapped
        );
    }
    label(&mut out, "rate");
    match report.target_rate {
        Some(target) => {
            let _ = writeln!(out, "{:.1}/s achieved of {:.1}/s planned", report.achieved_rate(), target);
        }
        None => {
            let _ = writeln!(out, "{:.1}/s achieved (closed model)", report.achieved_rate());
        }
    }
    for (name, hist) in [("latency_ms", &t.latency), ("service_ms", &t.service), ("wait_ms", &t.wait)] {
        label(&mut out, name);
        let _ = writeln!(out, "{}", fmt_percentiles(&hist.percentiles()));
    }
    if t.gate_wait.count() > 0 {
        label(&mut out, "gate_wait_ms");
        let _ = writeln!(out, "{}", fmt_percentiles(&t.gate_wait.percentiles()));
    }
    label(&mut out, "pacer");
    let _ = writeln!(
        out,
        "lag max {}ms, total {}ms · underrun {}",
        fmt_ms(t.lag_max.as_secs_f64() * 1000.0),
        fmt_ms(t.lag_total.as_secs_f64() * 1000.0),
        t.underrun
    );
    label(&mut out, "workers");
    let w = &report.workers;
    let _ = writeln!(
        out,
        "{} at the end (min {}, peak {}) · {} replaced (after a trap or a timeout)",
        w.final_, w.min, w.peak, w.replaced
    );
    if let Some(rss) = info.peak_rss {
        label(&mut out, "host");
        let _ = writeln!(out, "peak RSS {:.1} MiB", rss as f64 / f64::from(1 << 20));
    }
    label(&mut out, "duration");
    let _ =
        writeln!(out, "{:.2}s ({:.2}s generating load)", report.elapsed.as_secs_f64(), report.generation.as_secs_f64());

    if !t.http.is_empty() {
        let http = &t.http;
        let secs = report.elapsed.as_secs_f64().max(1e-9);
        label(&mut out, "http_reqs");
        let failed_pct = if http.requests == 0 { 0.0 } else { http.failed as f64 * 100.0 / http.requests as f64 };
        let _ = writeln!(
            out,
            "{} ({:.1}/s) · {} failed ({failed_pct:.2}%) · {} denied",
            http.requests,
            http.requests as f64 / secs,
            http.failed,
            http.denied
        );
        label(&mut out, "http_req_ms");
        let _ = writeln!(out, "{}", fmt_percentiles(&http.duration.percentiles()));
        label(&mut out, "http_status");
        let statuses: Vec<String> = http.by_status.iter().map(|(s, n)| format!("{s}: {n}")).collect();
        let _ = writeln!(out, "{}", if statuses.is_empty() { "none".to_owned() } else { statuses.join(" · ") });
        label(&mut out, "http_network");
        let _ = writeln!(
            out,
            "{} connections opened · {} bytes sent · {} received ({} of response bodies)",
            http.connections_opened, http.bytes_sent, http.bytes_received, http.body_bytes
        );
    }

    let by_name = t.plugin.by_name();
    let checks: Vec<_> = by_name.iter().filter(|s| matches!(s.value, SeriesValue::Check { .. })).collect();
    if !checks.is_empty() {
        let _ = writeln!(out, "\n  checks");
        for series in checks {
            if let SeriesSummary::Rate { rate, passes, fails } = series.value.to_summary() {
                let mark = if fails == 0 { "✓" } else { "✗" };
                let _ = writeln!(
                    out,
                    "    {mark} {}: {:.2}% ({passes} passed, {fails} failed)",
                    series.key.name,
                    rate * 100.0
                );
            }
        }
    }
    let metrics: Vec<_> = by_name.iter().filter(|s| !matches!(s.value, SeriesValue::Check { .. })).collect();
    if !metrics.is_empty() {
        let _ = writeln!(out, "\n  plugin metrics");
        for series in metrics {
            let value = match series.value.to_summary() {
                SeriesSummary::Counter { count } => format!("count={count}"),
                SeriesSummary::Gauge { value } => format!("value={value}"),
                SeriesSummary::Trend { count, stats } => format!("count={count} {}", fmt_percentiles(&stats)),
                SeriesSummary::Rate { rate, .. } => format!("rate={rate:.4}"),
            };
            let _ = writeln!(out, "    {} {}", series.key.name, value);
        }
    }
    if t.plugin.kind_conflicts() > 0 {
        let _ = writeln!(
            out,
            "    ({} samples ignored: their name was already used by a metric of another kind)",
            t.plugin.kind_conflicts()
        );
    }
    if t.plugin.folded() > 0 || t.plugin.discarded() > 0 {
        let _ = writeln!(
            out,
            "    ({} samples folded into NAME{{overflow:true}} and {} discarded: more than {} series)",
            t.plugin.folded(),
            t.plugin.discarded(),
            loadhost_metrics::cardinality::MAX_SERIES
        );
    }

    let _ = writeln!(out);
    if let Some(reason) = &report.aborted {
        let _ = writeln!(out, "  ✗ the plugin aborted the run: {reason}");
    }
    if let Some(how) = &report.stopped {
        let _ = writeln!(out, "  ■ the run was stopped early: {how}");
    }
    if let Some(reason) = &report.teardown_error {
        let _ = writeln!(out, "  ✗ the plugin's teardown failed: {reason}");
    }
    if c.identity_holds() {
        let _ = writeln!(
            out,
            "  ✓ every scheduled task is accounted for ({} scheduled = {} ended)",
            c.scheduled,
            c.ended()
        );
    } else {
        let _ = writeln!(out, "  ✗ accounting identity broken: {} scheduled but {} ended", c.scheduled, c.ended());
    }
    out
}

/// One line per scenario, after the summary of the whole run.
pub fn render_scenarios(reports: &[RunReport]) -> String {
    let mut out = String::from("\n  scenarios\n");
    for r in reports {
        let c = r.counts();
        let rate = match r.target_rate {
            Some(target) => format!("{:.1}/s of {target:.1}/s", r.achieved_rate()),
            None => format!("{:.1}/s (closed)", r.achieved_rate()),
        };
        let p = r.totals.latency.percentiles();
        let _ = writeln!(
            out,
            "    {}: {} scheduled, {} passed, {} failed, {} dropped · {rate} · latency p50={} p99={} · peak {} workers",
            r.scenario,
            c.scheduled,
            c.passed,
            c.failed + c.trapped + c.timed_out,
            c.dropped,
            fmt_ms(p.p50),
            fmt_ms(p.p99),
            r.workers.peak
        );
    }
    out
}

/// The thresholds, one line each with ✓ or ✗, the measured value and the verdict line; empty
/// when there are none.
pub fn render_thresholds(results: &[ThresholdResult]) -> String {
    if results.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n  thresholds\n");
    for t in results {
        let mark = if t.passed { "✓" } else { "✗" };
        let value = t.value.map_or_else(|| "no samples".to_owned(), |v| format!("{}", (v * 1e4).round() / 1e4));
        let stopped = if t.aborted_run { " (stopped the run: abort_on_fail)" } else { "" };
        let _ = writeln!(out, "    {mark} {}  ({value}){stopped}", t.expr);
    }
    let failed = results.iter().filter(|t| !t.passed).count();
    let _ = if failed == 0 && results.len() == 1 {
        writeln!(out, "  the threshold passed")
    } else if failed == 0 {
        writeln!(out, "  all {} thresholds passed", results.len())
    } else {
        writeln!(out, "  {failed} of {} thresholds failed (exit 99)", results.len())
    };
    out
}

/// The verdict line: what limited the run (`emitter`, `crew`, `gate`, `target`) and why, or that
/// nothing did.
pub fn render_verdict(limit: Option<(&str, &str)>) -> String {
    match limit {
        Some((name, why)) => format!("\n  verdict: limited by the {name}: {why}\n"),
        None => "\n  verdict: the host kept up and every threshold held; nothing limited the run\n".to_owned(),
    }
}
