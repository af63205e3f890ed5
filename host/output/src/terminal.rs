//! The end-of-run text on the terminal, from the [`Summary`]: what ran, how every task ended, the
//! rate, the three latency views, pacer health, the crew, the plugin's checks and metrics, then
//! the scenarios, the thresholds and the verdict.

use std::fmt::Write as _;

use loadhost_metrics::Outcome;
use loadhost_metrics::catalogue::names;

use crate::summary::{CheckCase, CheckCounts, EndpointMetrics, HttpMetrics, PercentileView, PluginMetric, Summary};
use crate::{VERSION, plural};

// The longest built-in label, `http_req_duration`, fits.
const LABEL_WIDTH: usize = 17;

fn label(out: &mut String, name: &str) {
    let dots = LABEL_WIDTH.saturating_sub(name.len());
    let _ = write!(out, "  {name}{}: ", ".".repeat(dots));
}

/// Milliseconds (or a trend's unit) with precision that shrinks as they grow.
fn fmt_ms(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 1.0 {
        format!("{ms:.2}")
    } else {
        format!("{ms:.3}")
    }
}

fn fmt_percentiles(p: &PercentileView) -> String {
    p.labelled().iter().map(|(name, v)| format!("{name}={}", fmt_ms(*v))).collect::<Vec<_>>().join(" ")
}

fn short_sha(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// The whole text, ready to print: the summary, then the scenarios (when there were any), the
/// thresholds (when there were any) and the verdict.
pub fn render(s: &Summary) -> String {
    let mut out = render_run(s);
    out.push_str(&render_scenarios(s));
    out.push_str(&render_thresholds(s));
    out.push_str(&render_verdict(s));
    out
}

/// A rate for people: none from a single task (a smoke run ends too soon for one to mean anything).
pub(crate) fn rate_text(started: u64, achieved: f64) -> Option<String> {
    (started >= 2).then(|| format!("{achieved:.1}/s"))
}

/// The summary of the whole run.
fn render_run(s: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n  loadhost {VERSION} · {} (sha256 {}…)", s.plugin.path, short_sha(&s.plugin.sha256));
    let _ = writeln!(out, "  {}", s.notes.model);
    if let Some(partial) = s.partial() {
        let _ = writeln!(out, "  ⚠ {partial}");
    }
    out.push('\n');
    tasks(&mut out, s);
    errors(&mut out, s);
    rate(&mut out, s);
    for timing in s.timings() {
        label(&mut out, timing.name());
        let _ = writeln!(out, "{}", fmt_percentiles(s.timing_view(timing)));
    }
    label(&mut out, "pacer");
    let _ = writeln!(
        out,
        "lag max {}ms, total {}ms · underrun {}",
        fmt_ms(s.lag.max_ms),
        fmt_ms(s.lag.total_ms),
        s.underrun
    );
    label(&mut out, "workers");
    let w = &s.workers;
    let _ = writeln!(
        out,
        "{} at the end (min {}, peak {}) · {} replaced (after a trap or a timeout)",
        w.final_, w.min, w.peak, w.replaced
    );
    if let Some(rss) = s.host.peak_rss_mb {
        label(&mut out, "host");
        let _ = writeln!(out, "peak RSS {rss:.1} MiB");
    }
    generator(&mut out, s);
    exports(&mut out, s);
    label(&mut out, "duration");
    let _ = writeln!(out, "{:.2}s ({:.2}s generating load)", s.duration_s, s.rate.generation_s);
    http(&mut out, s);
    plugin(&mut out, s);
    endings(&mut out, s);
    out
}

/// One line per push receiver: what it got, and why not all when it did not.
fn exports(out: &mut String, s: &Summary) {
    let Some(exports) = &s.exports else { return };
    for r in &exports.receivers {
        label(out, "pushed");
        let end = if r.final_delivered { "final figures delivered" } else { "final figures NOT delivered" };
        let _ = write!(out, "{} · {} pushes · {} dropped · {end}", r.out, r.sent, r.dropped);
        match &r.last_error {
            Some(err) if r.dropped > 0 || !r.final_delivered => {
                let _ = writeln!(out, " (last error: {})", crate::shorten(err, 120));
            }
            _ => out.push('\n'),
        }
    }
    if exports.folded_series > 0 {
        label(out, "pushed");
        let _ =
            writeln!(out, "{} label sets folded into `other` series (the cardinality budget)", exports.folded_series);
    }
}

/// A share as a percentage, finer when small.
fn fmt_share(share: f64) -> String {
    let pct = share * 100.0;
    if pct < 10.0 { format!("{pct:.1}%") } else { format!("{pct:.0}%") }
}

/// Above this share of their limit, the open file descriptors are worth a word.
const FDS_NOTABLE: f64 = 0.5;

/// The generator's health: its CPU against the cores it may use, how long its event loops waited
/// for a CPU, throttling and steal (each left out when the machine does not say); its resources
/// only when notable (descriptors above half their limit, memory past the plugins' budget,
/// connects that found no descriptor or port), so an ordinary run's line stays short.
fn generator(out: &mut String, s: &Summary) {
    let Some(g) = &s.generator else { return };
    let mut parts = Vec::new();
    if let (Some(p50), Some(max)) = (g.cpu_p50(), g.cpu.max) {
        let cores = g.cores_allowed;
        let cores = if cores.fract() == 0.0 { format!("{cores:.0}") } else { format!("{cores:.2}") };
        parts.push(format!("cpu p50 {} max {} of {cores} cores", fmt_share(p50), fmt_share(max)));
    }
    for (name, figure) in [("run-queue delay", g.run_queue_max), ("throttled", g.throttled), ("steal", g.steal)] {
        if let Some(max) = figure.max {
            parts.push(format!("{name} max {}", fmt_share(max)));
        }
    }
    if let Some(max) = g.overshoot_ms.max {
        parts.push(format!("timers late p99 max {max:.1} ms"));
    }
    if let Some(max) = g.loop_load.max {
        parts.push(format!("busiest loop max {}", fmt_share(max)));
    }
    if let Some(max) = g.fds.max.filter(|&m| m > FDS_NOTABLE) {
        parts.push(format!("fds max {} of limit", fmt_share(max)));
    }
    if let Some(peak) = g.memory_peak.max.filter(|&m| m > 1.0) {
        parts.push(format!("memory peak {} of budget", fmt_share(peak)));
    }
    for (count, what) in [(g.fds_exhausted, "fds"), (g.ports_exhausted, "ports")] {
        if count > 0 {
            parts.push(format!("{count} connects out of {what}"));
        }
    }
    if parts.is_empty() {
        return;
    }
    label(out, "generator");
    if let Some(verdict) = g.verdict {
        let _ = write!(out, "{verdict} · ");
    }
    let _ = writeln!(out, "{}", parts.join(" · "));
    // The sentence a person acts on, under the figures, when an interval was not healthy.
    if let Some(why) = &g.why {
        let _ = writeln!(out, "  {:w$}  {why}", "", w = LABEL_WIDTH);
    }
}

fn tasks(out: &mut String, s: &Summary) {
    let t = &s.tasks;
    label(out, "tasks");
    let _ = writeln!(out, "{} scheduled, {} passed", t.scheduled, t.passed);
    let others: Vec<String> = Outcome::ALL
        .iter()
        .filter(|&&o| o != Outcome::Passed)
        .map(|&o| format!("{} {}", t.count(o), o.name().replace('_', " ")))
        .collect();
    let _ = writeln!(
        out,
        "  {:w$}  {} · {}",
        "",
        others.join(" · "),
        plural(t.retries, "retry", "retries"),
        w = LABEL_WIDTH
    );
    if t.retries > 0 {
        let a = &s.attempts;
        label(out, "attempts");
        let _ = writeln!(
            out,
            "{} ({} passed, {} retryable, {} failed, {} trapped)",
            a.total, a.passed, a.retryable, a.failed, a.trapped
        );
    }
}

/// Error kinds the terminal lists; the rest are in the summary JSON and the HTML report.
const ERRORS_SHOWN: usize = 10;

/// The errors table, most frequent first: count, outcome, one example and when they happened.
fn errors(out: &mut String, s: &Summary) {
    if s.errors.is_empty() {
        return;
    }
    label(out, "errors");
    let attempts: u64 = s.errors.iter().map(|e| e.count).sum();
    let _ = writeln!(
        out,
        "{} · {} (grouped by message, numbers folded)",
        plural(s.errors.len() as u64, "kind", "kinds"),
        plural(attempts, "attempt", "attempts")
    );
    let width = s.errors.iter().take(ERRORS_SHOWN).map(|e| e.count.to_string().len()).max().unwrap_or(1);
    for e in s.errors.iter().take(ERRORS_SHOWN) {
        let _ = writeln!(
            out,
            "  {:pad$}  {:>width$}  {:9}  {}  (first {:.1}s, last {:.1}s)",
            "",
            e.count,
            e.outcome.as_str(),
            crate::shorten(&e.example, 120),
            e.first_s,
            e.last_s,
            pad = LABEL_WIDTH,
        );
    }
    if s.errors.len() > ERRORS_SHOWN {
        let more = plural((s.errors.len() - ERRORS_SHOWN) as u64, "more kind", "more kinds");
        let _ = writeln!(out, "  {:pad$}  … {more} in the summary JSON (`errors`)", "", pad = LABEL_WIDTH);
    }
}

fn rate(out: &mut String, s: &Summary) {
    label(out, "rate");
    let Some(achieved) = rate_text(s.tasks.started, s.rate.achieved_per_s) else {
        let _ = writeln!(out, "no rate: {} started, too few to measure one", plural(s.tasks.started, "task", "tasks"));
        return;
    };
    let missing = s.merged.as_ref().and_then(|m| m.missing_rate_note()).map(|n| format!(" ({n})")).unwrap_or_default();
    let _ = match s.rate.target_per_s {
        Some(target) => writeln!(out, "{achieved} achieved of {target:.1}/s planned{missing}"),
        None => writeln!(out, "{achieved} achieved (closed model)"),
    };
}

fn http(out: &mut String, s: &Summary) {
    let Some(http) = &s.metrics.http else { return };
    label(out, names::HTTP_REQS);
    let _ = writeln!(
        out,
        "{} ({:.1}/s) · {} failed ({:.2}%) · {} denied",
        http.reqs.count,
        http.reqs.rate,
        http.failed.passes,
        http.failed.rate * 100.0,
        http.denied
    );
    label(out, names::HTTP_REQ_DURATION);
    let _ = writeln!(out, "{}", fmt_percentiles(&http.duration.stats));
    phases(out, http);
    label(out, names::HTTP_STATUS);
    let statuses: Vec<String> = http.by_status.iter().map(|(s, n)| format!("{s}: {n}")).collect();
    let _ = writeln!(out, "{}", if statuses.is_empty() { "none".to_owned() } else { statuses.join(" · ") });
    label(out, "http_network");
    let _ = writeln!(
        out,
        "{} opened · {} bytes sent · {} received ({} of response bodies)",
        plural(http.connections_opened, "connection", "connections"),
        http.data_sent,
        http.data_received,
        http.response_bytes
    );
    endpoints(out, http);
}

/// One compact line of where the requests' time went: each phase's p50 (p95), in ms; the full
/// views are the summary JSON's `http_req_blocked` … `http_req_receiving`.
fn phases(out: &mut String, http: &HttpMetrics) {
    if http.phases.is_empty() {
        return;
    }
    label(out, "http_phases");
    let shown: Vec<String> = http
        .phases
        .iter()
        .map(|(phase, t)| match t.count {
            0 => format!("{} –", phase.stem()),
            _ => format!("{} {} ({})", phase.stem(), fmt_ms(t.stats.p50), fmt_ms(t.stats.p95)),
        })
        .collect();
    let _ = writeln!(out, "p50 (p95) ms: {}", shown.join(" · "));
}

/// Endpoint rows the terminal shows (the busiest); the rest are in the summary JSON.
const ENDPOINTS_SHOWN: usize = 20;
/// The widest endpoint name shown in full.
const ENDPOINT_NAME_WIDTH: usize = 48;

/// A table of the endpoints, busiest first, when there is more than one (with one, it would
/// repeat the `http_*` lines above).
fn endpoints(out: &mut String, http: &HttpMetrics) {
    if http.endpoints.len() < 2 {
        return;
    }
    let mut rows: Vec<(&String, &EndpointMetrics)> = http.endpoints.iter().collect();
    rows.sort_by(|a, b| b.1.reqs.count.cmp(&a.1.reqs.count).then_with(|| a.0.cmp(b.0)));
    let names: Vec<String> =
        rows.iter().take(ENDPOINTS_SHOWN).map(|(name, _)| crate::shorten(name, ENDPOINT_NAME_WIDTH)).collect();
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0).max("endpoint".len());
    let _ = writeln!(
        out,
        "\n  {:<width$}  {:>9}  {:>7}  {:>8}  {:>8}  {:>8}",
        "endpoint", "count", "failed", "p50", "p95", "p99"
    );
    for (name, (_, e)) in names.iter().zip(&rows) {
        let p = &e.duration.stats;
        let _ = writeln!(
            out,
            "  {name:<width$}  {:>9}  {:>7}  {:>8}  {:>8}  {:>8}",
            e.reqs.count,
            e.failed.passes,
            fmt_ms(p.p50),
            fmt_ms(p.p95),
            fmt_ms(p.p99)
        );
    }
    if rows.len() > ENDPOINTS_SHOWN {
        let more = (rows.len() - ENDPOINTS_SHOWN) as u64;
        let _ =
            writeln!(out, "  … {} in the summary JSON (`metrics`)", plural(more, "more endpoint", "more endpoints"));
    }
}

fn plugin(out: &mut String, s: &Summary) {
    if !s.checks.is_empty() {
        let _ = writeln!(out, "\n  checks");
        for (name, c) in &s.checks {
            let mark = if c.fails == 0 { "✓" } else { "✗" };
            let rate = c.rate().unwrap_or(0.0) * 100.0;
            let _ = writeln!(out, "    {mark} {name}: {rate:.2}% ({} passed, {} failed)", c.passes, c.fails);
            check_cases(out, c);
        }
    }
    let mut metrics = s.metrics.by_name().peekable();
    if metrics.peek().is_some() {
        let _ = writeln!(out, "\n  plugin metrics");
        for (name, metric) in metrics {
            let _ = writeln!(out, "    {name} {}", metric_value(metric));
            tagged_series(out, s, name);
        }
    }
    if s.notes.kind_conflicts > 0 {
        let _ = writeln!(
            out,
            "    ({} samples ignored: their name was already used by a metric of another kind)",
            s.notes.kind_conflicts
        );
    }
    if s.series.folded_samples > 0 || s.series.discarded_samples > 0 {
        let _ = writeln!(
            out,
            "    ({} samples folded into NAME{{overflow:true}} and {} discarded: more than {} series)",
            s.series.folded_samples, s.series.discarded_samples, s.series.limit
        );
    }
}

/// A check's tagged cases under it: the failing ones first (most failures first), so the case
/// that failed is on screen however many there are, then the rest in tag order, at most
/// [`TAGGED_SHOWN`]; the others are in the summary JSON.
fn check_cases(out: &mut String, check: &CheckCounts) {
    let mut cases: Vec<&CheckCase> = check.cases.iter().collect();
    cases.sort_by_key(|case| std::cmp::Reverse(case.fails));
    for case in cases.iter().take(TAGGED_SHOWN) {
        let mark = if case.fails == 0 { "✓" } else { "✗" };
        let rate = case.rate().unwrap_or(0.0) * 100.0;
        let label = crate::shorten(&case.label(), 120);
        let _ = writeln!(out, "        {mark} {label}: {rate:.2}% ({} passed, {} failed)", case.passes, case.fails);
    }
    if cases.len() > TAGGED_SHOWN {
        let more = (cases.len() - TAGGED_SHOWN) as u64;
        let _ = writeln!(out, "        … {} in the summary JSON (`checks`)", plural(more, "more case", "more cases"));
    }
}

fn metric_value(metric: &PluginMetric) -> String {
    match metric {
        PluginMetric::Counter(c) => format!("count={}", c.count),
        PluginMetric::Gauge(g) => format!("value={}", g.value),
        PluginMetric::Trend(t) => format!("count={} {}", t.count, fmt_percentiles(&t.stats)),
        PluginMetric::Check(r) => format!("rate={:.4}", r.rate),
    }
}

/// Tagged series the terminal lists per metric; the rest are in the summary JSON.
const TAGGED_SHOWN: usize = 5;

/// The metric's tagged series under it, keyed as the summary JSON keys them (`orders{tier:bulk}`):
/// the first few in key order, then how many more there are, so a metric tagged by something
/// with many values cannot flood the terminal.
fn tagged_series(out: &mut String, s: &Summary, name: &str) {
    let prefix = format!("{name}{{");
    // Keys sort by bytes, so a name's tagged series are together, right after it.
    let mut tagged = s.metrics.plugin.range(prefix.clone()..).take_while(|(key, _)| key.starts_with(&prefix));
    for (key, metric) in tagged.by_ref().take(TAGGED_SHOWN) {
        let _ = writeln!(out, "      {} {}", crate::shorten(key, 120), metric_value(metric));
    }
    let more = tagged.count();
    if more > 0 {
        let _ = writeln!(
            out,
            "      … {} in the summary JSON (`metrics`)",
            plural(more as u64, "more tagged series", "more tagged series")
        );
    }
}

fn endings(out: &mut String, s: &Summary) {
    let _ = writeln!(out);
    if let Some(reason) = &s.aborted {
        let _ = writeln!(out, "  ✗ the plugin aborted the run: {reason}");
    }
    if let Some(how) = &s.stopped {
        let _ = writeln!(out, "  ■ the run was stopped early: {how}");
    }
    if let Some(reason) = &s.teardown_error {
        let _ = writeln!(out, "  ✗ the plugin's teardown failed: {reason}");
    }
    let t = &s.tasks;
    let _ = if s.identity_holds {
        writeln!(out, "  ✓ every scheduled task is accounted for ({} scheduled = {} ended)", t.scheduled, t.ended())
    } else {
        writeln!(out, "  ✗ accounting identity broken: {} scheduled but {} ended", t.scheduled, t.ended())
    };
}

/// One line per scenario; empty without scenarios. `errored` is failed + timed out + trapped.
fn render_scenarios(s: &Summary) -> String {
    let Some(scenarios) = &s.scenarios else { return String::new() };
    let mut out = String::from("\n  scenarios\n");
    for (name, sc) in scenarios.iter() {
        let achieved = rate_text(sc.tasks.started, sc.rate.achieved_per_s).unwrap_or_else(|| "no rate".to_owned());
        let rate = match sc.rate.target_per_s {
            Some(target) => format!("{achieved} of {target:.1}/s"),
            None => format!("{achieved} (closed)"),
        };
        let t = &sc.tasks;
        let plugin = sc.plugin.as_ref().map_or_else(String::new, |p| format!(" ({})", p.path));
        let _ = writeln!(
            out,
            "    {name}{plugin}: {} scheduled, {} passed, {} errored, {} dropped · {rate} · latency p50={} p99={} · peak {}",
            t.scheduled,
            t.passed,
            t.errored(),
            t.dropped,
            fmt_ms(sc.latency_ms.p50),
            fmt_ms(sc.latency_ms.p99),
            plural(sc.workers.peak, "worker", "workers")
        );
    }
    out
}

/// The thresholds, one line each with ✓ or ✗ and the measured value, then how many failed;
/// empty when there are none.
fn render_thresholds(s: &Summary) -> String {
    if s.thresholds.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n  thresholds\n");
    for (expr, t) in s.thresholds.iter() {
        let mark = if t.ok { "✓" } else { "✗" };
        let value = t.value.map_or_else(|| "no samples".to_owned(), |v| format!("{}", (v * 1e4).round() / 1e4));
        let stopped = if t.aborted_run { " (stopped the run: abort_on_fail)" } else { "" };
        let _ = writeln!(out, "    {mark} {expr}  ({value}){stopped}");
        // A failed generator threshold says why and what to do, under its line.
        if let Some(why) = crate::summary::generator::threshold_why(s, expr).filter(|_| !t.ok) {
            let _ = writeln!(out, "      {why}");
        }
    }
    let total = s.thresholds.len();
    let failed = s.thresholds.iter().filter(|(_, t)| !t.ok).count();
    let _ = if failed == 0 && total == 1 {
        writeln!(out, "  the threshold passed")
    } else if failed == 0 {
        writeln!(out, "  all {total} thresholds passed")
    } else {
        writeln!(out, "  {failed} of {total} thresholds failed (exit 99)")
    };
    out
}

/// The verdict line: what limited the run and why, or that nothing did.
fn render_verdict(s: &Summary) -> String {
    format!("\n  verdict: {}\n", s.verdict_sentence())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tests::sample;

    #[test]
    fn a_partial_merge_is_said_under_the_model_line_and_beside_the_rate() {
        let mut s = sample();
        s.notes.model = "merged from 2 results files (segments 0/3, 1/3; missing 2/3)".into();
        s.merged = Some(crate::summary::tests::partial());
        s.rate.target_per_s = Some(6.0);
        let text = render(&s);
        assert!(
            text.contains(
                "(segments 0/3, 1/3; missing 2/3)\n  ⚠ partial: 1 of 3 segments missing (segment 2/3): 33% of the plan did not run\n\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("2.7/s achieved of 6.0/s planned (33% of the plan was in the missing segment 2/3)"),
            "{text}"
        );
        assert!(!render(&sample()).contains("partial"), "a run is no partial merge");
    }

    #[test]
    fn the_text_has_every_section_in_order() {
        let text = render(&sample());
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle} missing in\n{text}"));
        let order = [
            "loadhost ",
            "tasks............: 10 scheduled, 4 passed",
            "3 failed · 0 aborted · 2 dropped · 0 timed out · 1 trapped · 0 interrupted · 0 retries",
            "errors...........: 2 kinds · 4 attempts",
            "3  failed     order 0 refused  (first 0.0s, last 1.0s)",
            "1  trapped    panicked at src/lib.rs:3:9: boom  (first 2.0s, last 2.0s)",
            "rate.............: 2.7/s achieved of 4.0/s planned",
            "gate_wait_ms",
            "http_reqs........: 1 (0.3/s) · 1 failed (100.00%) · 0 denied",
            "http_network.....: 0 connections opened",
            "checks",
            "plugin metrics",
            "■ the run was stopped early: SIGINT",
            "✓ every scheduled task is accounted for (10 scheduled = 10 ended)",
            "scenarios",
            "browse: 10 scheduled, 4 passed, 4 errored, 2 dropped · 2.7/s of 4.0/s",
            "peak 3 workers",
            "thresholds",
            "✗ size:p(99)<1  (3.5)",
            "✓ latency_ms:p(99)<500  (5.0031)",
            "✗ login_ms:max<1  (no samples)",
            "2 of 3 thresholds failed (exit 99)",
            "verdict: limited by the target: size:p(99)<1 broke",
            "; login_ms:max<1 failed: no samples",
            "; 40.0% of tasks ended in an error (most frequent, 3 failed: order 0 refused)",
        ];
        for pair in order.windows(2) {
            assert!(at(pair[0]) < at(pair[1]), "{} before {}\n{text}", pair[0], pair[1]);
        }
    }

    #[test]
    fn the_generator_line_shows_what_was_measured_and_leaves_out_the_rest() {
        use loadhost_metrics::{GeneratorHealth, GeneratorReport};
        let mut s = sample();
        assert!(!render(&s).contains("generator"), "nothing measured, no line");
        let h = |cpu: f64, waited: f64| GeneratorHealth {
            cpu: Some(cpu),
            run_queue: Some(waited / 2.0),
            run_queue_max: Some(waited),
            steal: Some(0.0),
            ..GeneratorHealth::default()
        };
        let intervals = crate::summary::generator::seconds(vec![h(0.1, 0.0), h(0.5, 0.35), h(0.3, 0.05)], None);
        s.generator = Some(crate::summary::Generator::new(&GeneratorReport { cores_allowed: 2.0, intervals }));
        let text = render(&s);
        assert!(
            text.contains(
                "  generator........: cpu p50 30% max 50% of 2 cores · run-queue delay max 35% · steal max 0.0%\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_generators_resources_show_only_when_notable() {
        use loadhost_metrics::{GeneratorHealth, GeneratorReport};
        let mut s = sample();
        let h = |fds: f64, memory_peak: f64, fds_exhausted: u64| GeneratorHealth {
            cpu: Some(0.2),
            fds: Some(fds),
            memory: Some(memory_peak / 2.0),
            memory_peak: Some(memory_peak),
            fds_exhausted,
            ..GeneratorHealth::default()
        };
        let mut run = |intervals| {
            s.generator = Some(crate::summary::Generator::new(&GeneratorReport { cores_allowed: 1.0, intervals }));
            render(&s)
        };
        let text = run(crate::summary::generator::seconds(vec![h(0.01, 0.4, 0)], None));
        assert!(text.contains("  generator........: cpu p50 20% max 20% of 1 cores\n"), "ordinary: {text}");
        let text = run(crate::summary::generator::seconds(vec![h(0.3, 0.9, 0), h(0.98, 1.5, 37)], None));
        assert!(
            text.contains("cpu p50 20% max 20% of 1 cores · fds max 98% of limit · memory peak 150% of budget · 37 connects out of fds\n"),
            "{text}"
        );
    }

    #[test]
    fn the_verdict_never_says_held_above_a_failed_threshold() {
        let mut s = sample();
        // Without a limit, a failed threshold or frequent errors still speak for themselves.
        s.verdict = crate::summary::Verdict::new(None, &[], &s.tasks, &s.errors);
        let text = render(&s);
        assert!(!text.contains("every threshold held"), "{text}");
        assert!(text.contains("verdict: 40.0% of tasks ended in an error (most frequent, 3 failed"), "{text}");
        // A clean run says so.
        let mut clean = sample();
        clean.tasks.failed = 0;
        clean.tasks.trapped = 0;
        clean.verdict = crate::summary::Verdict::new(None, &[], &clean.tasks, &clean.errors);
        assert!(render(&clean).contains("every threshold held; nothing limited the run"));
        // Without thresholds it claims none held: it says none was set.
        clean.thresholds = Default::default();
        let text = render(&clean);
        assert!(!text.contains("every threshold held"), "{text}");
        assert!(text.contains("no threshold was set (--threshold), so nothing was judged"), "{text}");
    }

    #[test]
    fn endpoints_get_a_table_busiest_first_only_when_there_are_two() {
        let mut s = sample();
        let endpoint = |count: u64, p50: f64| {
            let mut e = EndpointMetrics::default();
            e.reqs.count = count;
            e.failed.passes = count / 10;
            e.duration.stats.p50 = p50;
            e.duration.stats.p95 = p50 * 2.0;
            e.duration.stats.p99 = p50 * 3.0;
            e
        };
        let http = s.metrics.http.as_mut().unwrap();
        http.endpoints.insert("GET /".into(), endpoint(100, 0.2));
        assert!(!render(&s).contains("endpoint "), "one endpoint: no table");
        let http = s.metrics.http.as_mut().unwrap();
        http.endpoints.insert("GET /delay".into(), endpoint(300, 20.5));
        let text = render(&s);
        let header =
            text.lines().position(|l| l.trim_start().starts_with("endpoint")).unwrap_or_else(|| panic!("{text}"));
        let lines: Vec<&str> = text.lines().skip(header).take(3).collect();
        fn cells(l: &str) -> Vec<&str> {
            l.split("  ").filter(|c| !c.is_empty()).map(str::trim).collect()
        }
        assert_eq!(cells(lines[0]), ["endpoint", "count", "failed", "p50", "p95", "p99"]);
        assert_eq!(cells(lines[1]), ["GET /delay", "300", "30", "20.50", "41.00", "61.50"]);
        assert_eq!(cells(lines[2]), ["GET /", "100", "10", "0.200", "0.400", "0.600"]);
    }

    #[test]
    fn one_of_a_thing_is_singular() {
        let mut s = sample();
        if let Some(http) = s.metrics.http.as_mut() {
            http.connections_opened = 1;
        }
        s.tasks.retries = 1;
        if let Some(scenarios) = s.scenarios.as_mut() {
            scenarios.0[0].1.workers.peak = 1;
        }
        let text = render(&s);
        assert!(text.contains("1 connection opened ·"), "{text}");
        assert!(text.contains(" · 1 retry\n"), "{text}");
        assert!(text.contains("peak 1 worker\n"), "{text}");
    }

    #[test]
    fn a_single_task_has_no_rate() {
        let mut s = sample();
        s.tasks.started = 1;
        s.rate.achieved_per_s = 5450.4;
        let text = render(&s);
        assert!(text.contains("rate.............: no rate: 1 task started, too few to measure one"), "{text}");
        assert!(!text.contains("5450"), "{text}");
    }

    #[test]
    fn a_checks_tagged_cases_are_listed_under_it_failing_first_and_bounded() {
        let mut s = sample();
        let case = |tier: &str, passes, fails| CheckCase {
            fails,
            passes,
            tags: [("group".to_owned(), "::checkout".to_owned()), ("tier".to_owned(), tier.to_owned())].into(),
        };
        let mut cases: Vec<CheckCase> = (0..6).map(|i| case(&format!("t{i}"), 10, 0)).collect();
        cases.push(case("silver", 5, 5));
        s.checks.insert("status is 200".into(), CheckCounts { cases, fails: 5, passes: 65 });
        let text = render(&s);
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle} missing in\n{text}"));
        assert!(at("✗ status is 200: 92.86% (65 passed, 5 failed)") < at("✗ {group:::checkout,tier:silver}: 50.00%"));
        assert!(
            at("✗ {group:::checkout,tier:silver}") < at("✓ {group:::checkout,tier:t0}: 100.00% (10 passed, 0 failed)")
        );
        assert!(text.contains("✓ {group:::checkout,tier:t3}"), "{text}");
        assert!(!text.contains("tier:t4}"), "five shown: {text}");
        assert!(text.contains("… 2 more cases in the summary JSON (`checks`)"), "{text}");
        assert!(text.contains("✓ ok: 100.00% (1 passed, 0 failed)\n"), "an untagged check has no cases: {text}");
    }

    #[test]
    fn tagged_series_are_listed_under_their_metric_as_the_json_keys_them_and_bounded() {
        let mut s = sample();
        let count = |n| PluginMetric::Counter(crate::summary::CountSummary { count: n });
        s.metrics.plugin.insert("orders".into(), count(28));
        s.metrics.plugin.insert("orders_total".into(), count(1));
        for (i, tier) in ["bulk", "retail", "t2", "t3", "t4", "t5", "t6"].iter().enumerate() {
            s.metrics.plugin.insert(format!("orders{{tier:{tier}}}"), count(i as u64 + 1));
        }
        let text = render(&s);
        let lines: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("    orders ")).take(8).collect();
        assert_eq!(
            lines,
            [
                "    orders count=28",
                "      orders{tier:bulk} count=1",
                "      orders{tier:retail} count=2",
                "      orders{tier:t2} count=3",
                "      orders{tier:t3} count=4",
                "      orders{tier:t4} count=5",
                "      … 2 more tagged series in the summary JSON (`metrics`)",
                "    orders_total count=1",
            ],
            "{text}"
        );
        assert!(text.contains("    size count=1 ") && text.contains("      size{route:/a} count=1 "), "{text}");
    }

    #[test]
    fn no_percentile_is_printed_above_the_max() {
        let text = render(&sample());
        // The plugin trend size{route:/a} is 3.5 once; by name it is the "size" line.
        let line = text.lines().find(|l| l.trim_start().starts_with("size ")).expect("the size trend");
        assert!(line.ends_with("p99=3.50 p99.9=3.50 max=3.50"), "{line}");
    }
}
