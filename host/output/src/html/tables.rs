//! The report's header and tables, from the typed [`Summary`]: what ran, the verdict and the
//! thresholds, tasks, rate, crew, latency views, HTTP, checks, plugin metrics and scenarios.

use std::fmt::Write as _;

use loadhost_metrics::Outcome;

use super::text::{capitalised, count, esc, num, yes_no};
use crate::summary::{HttpMetrics, Named, PercentileView, PluginMetric, ScenarioSummary, Summary};
use crate::terminal::rate_text;

/// The title and the run's particulars.
pub(super) fn header(out: &mut String, s: &Summary) {
    let _ = writeln!(out, "<h1>loadhost report</h1>\n<dl class=\"meta\">");
    let items = [
        ("plugin", format!("<code>{}</code>", esc(&s.plugin.path))),
        ("sha256", format!("<code>{}</code>", esc(&s.plugin.sha256))),
        ("started at", esc(&s.started_at)),
        ("duration", format!("{:.2} s ({:.2} s generating load)", s.duration_s, s.rate.generation_s)),
        ("load model", esc(&s.notes.model).replace('\n', "<br>")),
        ("loadhost", esc(&s.version)),
    ];
    for (name, value) in items {
        let _ = writeln!(out, "<dt>{name}</dt><dd>{value}</dd>");
    }
    if let (Some(reference), Some(digest)) = (&s.plugin.reference, &s.plugin.digest) {
        let _ =
            writeln!(out, "<dt>pulled as</dt><dd><code>{}</code> (<code>{}</code>)</dd>", esc(reference), esc(digest));
    }
    if !s.tags.is_empty() {
        let tags: Vec<String> = s.tags.iter().map(|(k, v)| format!("<code>{}={}</code>", esc(k), esc(v))).collect();
        let _ = writeln!(out, "<dt>tags</dt><dd>{}</dd>", tags.join(" "));
    }
    if let Some(rss) = s.host.peak_rss_mb {
        let _ = writeln!(out, "<dt>host peak RSS</dt><dd>{} MiB</dd>", num(rss));
    }
    out.push_str("</dl>\n");
}

/// The verdict banner, how the run ended, and the thresholds table.
pub(super) fn verdict(out: &mut String, s: &Summary) {
    out.push_str("<h2>Verdict</h2>\n");
    let total = s.thresholds.len();
    let failed = s.thresholds.iter().filter(|(_, t)| !t.ok).count();
    let limit = match (&s.verdict.limit, &s.verdict.why) {
        (Some(limit), why) => format!(" Limited by the {limit}: {}.", esc(why.as_deref().unwrap_or(""))),
        (None, Some(why)) => format!(" {}.", esc(why)),
        (None, None) => " The host kept up; nothing limited the run.".to_owned(),
    };
    let _ = if total == 0 {
        writeln!(out, "<div class=\"verdict none\">No thresholds were set.{limit}</div>")
    } else if failed == 0 {
        writeln!(out, "<div class=\"verdict ok\">✓ All {total} thresholds passed.{limit}</div>")
    } else {
        writeln!(out, "<div class=\"verdict bad\">✗ {failed} of {total} thresholds failed.{limit}</div>")
    };
    let mut notes = Vec::new();
    if let Some(partial) = s.partial() {
        notes.push(format!("⚠️ {}", esc(&capitalised(&partial))));
    }
    if let Some(message) = &s.aborted {
        notes.push(format!("The run was aborted: {}", esc(message)));
    }
    if let Some(how) = &s.stopped {
        notes.push(format!("The run was stopped early: {}", esc(how)));
    }
    if let Some(why) = &s.teardown_error {
        notes.push(format!("The plugin's teardown failed: {}", esc(why)));
    }
    if !s.identity_holds {
        notes.push("The accounting identity does not hold: some scheduled tasks have no outcome.".to_owned());
    }
    for note in notes {
        let _ = writeln!(out, "<p class=\"bad\">{note}</p>");
    }
    if total == 0 {
        return;
    }
    out.push_str(
        "<table class=\"t\" id=\"thresholds\">\n<tr><th></th><th>threshold</th><th>value</th><th>abort on fail</th>\
         <th>stopped the run</th></tr>\n",
    );
    for (expr, t) in s.thresholds.iter() {
        let (class, mark) = if t.ok { ("ok", "✓") } else { ("bad", "✗") };
        let value = t.value.map_or_else(|| "no samples".to_owned(), num);
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td class=\"mark\">{mark}</td><td class=\"text\"><code>{}</code></td>\
             <td>{value}</td><td>{}</td><td>{}</td></tr>",
            esc(expr),
            yes_no(t.abort_on_fail),
            yes_no(t.aborted_run)
        );
    }
    out.push_str("</table>\n");
}

/// A two-column table of already-escaped (label, value) pairs.
fn pairs(out: &mut String, heading: &str, rows: &[(String, String)]) {
    let _ = writeln!(out, "<div><h3>{heading}</h3>\n<table class=\"t\">");
    for (label, value) in rows {
        let _ = writeln!(out, "<tr><th>{label}</th><td>{value}</td></tr>");
    }
    out.push_str("</table></div>\n");
}

fn percentile_header(out: &mut String, first: &str, extra: &str) {
    let _ = write!(out, "<tr><th>{first}</th>");
    for (label, _) in PercentileView::default().labelled() {
        let _ = write!(out, "<th>{label}</th>");
    }
    let _ = writeln!(out, "{extra}</tr>");
}

/// A row's label and its percentile cells; the caller closes the row.
fn percentile_row(out: &mut String, label: &str, p: &PercentileView) {
    let _ = write!(out, "<tr><td class=\"text\"><code>{}</code></td>", esc(label));
    for (_, value) in p.labelled() {
        let _ = write!(out, "<td>{}</td>", num(value));
    }
}

/// Tasks by outcome, rate, crew and the latency views.
pub(super) fn summary(out: &mut String, s: &Summary) {
    out.push_str("<h2>Summary</h2>\n<div class=\"grid\">\n");
    tasks(out, s);
    let missing = s.merged.as_ref().and_then(|m| m.missing_rate_note()).map(|n| format!(" ({})", esc(&n)));
    let target = s
        .rate
        .target_per_s
        .map_or_else(|| "none (closed model)".to_owned(), |r| format!("{}/s{}", num(r), missing.unwrap_or_default()));
    let achieved = rate_text(s.tasks.started, s.rate.achieved_per_s)
        .unwrap_or_else(|| "no rate: too few tasks to measure one".to_owned());
    pairs(
        out,
        "Rate",
        &[
            ("planned".into(), target),
            ("achieved".into(), achieved),
            ("generating load".into(), format!("{} s", num(s.rate.generation_s))),
            ("pacer lag max".into(), format!("{} ms", num(s.lag.max_ms))),
            ("pacer lag total".into(), format!("{} ms", num(s.lag.total_ms))),
            ("underrun".into(), count(s.underrun)),
        ],
    );
    let w = &s.workers;
    pairs(
        out,
        "Workers",
        &[
            ("min", w.min),
            ("peak", w.peak),
            ("final", w.final_),
            ("grown", w.grown),
            ("retired", w.retired),
            ("replaced", w.replaced),
        ]
        .map(|(k, v)| (k.to_owned(), count(v))),
    );
    out.push_str("</div>\n");

    out.push_str("<h3>Latency views (ms)</h3>\n<table class=\"t\" id=\"latency\">\n");
    percentile_header(out, "view", "");
    // The gate wait exists only with --max-in-flight.
    for timing in s.timings() {
        percentile_row(out, timing.name(), s.timing_view(timing));
        out.push_str("</tr>\n");
    }
    out.push_str(
        "</table>\n<p class=\"note\">latency = scheduled time → end (what a user sees); service = call → end; \
         wait = scheduled time → call.</p>\n",
    );
}

fn tasks(out: &mut String, s: &Summary) {
    let t = &s.tasks;
    let share =
        |n: u64| if t.scheduled > 0 { format!("{:.2}%", n as f64 * 100.0 / t.scheduled as f64) } else { String::new() };
    let _ = writeln!(
        out,
        "<div><h3>Tasks</h3>\n<table class=\"t\">\n<tr><th>outcome</th><th>tasks</th><th>share</th></tr>"
    );
    let _ = writeln!(out, "<tr><th>scheduled</th><td>{}</td><td></td></tr>", count(t.scheduled));
    for outcome in Outcome::ALL {
        let n = t.count(outcome);
        let class = if outcome != Outcome::Passed && n > 0 { " class=\"bad\"" } else { "" };
        let _ = writeln!(
            out,
            "<tr{class}><td class=\"text\">{}</td><td>{}</td><td>{}</td></tr>",
            outcome.name().replace('_', " "),
            count(n),
            share(n)
        );
    }
    let _ = writeln!(
        out,
        "<tr><td class=\"text\">retries (extra attempts)</td><td>{}</td><td></td></tr>\n\
         <tr><td class=\"text\">started</td><td>{}</td><td></td></tr>\n</table>",
        count(t.retries),
        count(t.started)
    );
    let identity = if s.identity_holds {
        "<p class=\"ok note\">✓ every scheduled task has exactly one outcome</p>"
    } else {
        "<p class=\"bad\">✗ the outcomes do not add up to the scheduled tasks</p>"
    };
    let _ = writeln!(out, "{identity}</div>");
}

/// The built-in HTTP metrics, when the plugin made requests.
pub(super) fn http(out: &mut String, http: &HttpMetrics) {
    out.push_str("<h2>HTTP</h2>\n<div class=\"grid\">\n");
    pairs(
        out,
        "Requests",
        &[
            ("requests".into(), format!("{} ({}/s)", count(http.reqs.count), num(http.reqs.rate))),
            // k6's http_req_failed counts a failed request as a "pass" of the rate: its passes.
            (
                "failed (no response, or status ≥ 400)".into(),
                format!("{} ({:.2}%)", count(http.failed.passes), http.failed.rate * 100.0),
            ),
            ("denied".into(), count(http.denied)),
            ("connections opened".into(), count(http.connections_opened)),
            ("data sent (bytes)".into(), count(http.data_sent)),
            ("data received (bytes)".into(), count(http.data_received)),
            ("response bodies (bytes)".into(), count(http.response_bytes)),
        ],
    );
    let statuses: Vec<(String, String)> =
        http.by_status.iter().map(|(status, n)| (status.to_string(), count(*n))).collect();
    pairs(out, "By status", &statuses);
    out.push_str("</div>\n<table class=\"t\">\n");
    percentile_header(out, "ms", "<th>count</th>");
    percentile_row(out, loadhost_metrics::catalogue::names::HTTP_REQ_DURATION, &http.duration.stats);
    let _ = writeln!(out, "<td>{}</td></tr>\n</table>", count(http.duration.count));
    endpoints(out, http);
}

/// Endpoint rows the page shows (the busiest); the rest are in the summary JSON.
const ENDPOINTS_SHOWN: usize = 100;

/// Requests and `http_req_duration` per endpoint, busiest first, when there is more than one.
fn endpoints(out: &mut String, http: &HttpMetrics) {
    if http.endpoints.len() < 2 {
        return;
    }
    let mut rows: Vec<_> = http.endpoints.iter().collect();
    rows.sort_by(|a, b| b.1.reqs.count.cmp(&a.1.reqs.count).then_with(|| a.0.cmp(b.0)));
    out.push_str(
        "<h3>By endpoint</h3>\n<p class=\"note\">A request's name: the plugin's, or its method and path with ids \
         folded. Durations in ms.</p>\n<table class=\"t\" id=\"endpoint-table\">\n",
    );
    percentile_header(out, "endpoint", "<th>count</th><th>failed</th>");
    for (name, e) in rows.iter().take(ENDPOINTS_SHOWN) {
        percentile_row(out, name, &e.duration.stats);
        let _ = writeln!(out, "<td>{}</td><td>{}</td></tr>", count(e.reqs.count), count(e.failed.passes));
    }
    out.push_str("</table>\n");
    if rows.len() > ENDPOINTS_SHOWN {
        let more = rows.len() - ENDPOINTS_SHOWN;
        let _ =
            writeln!(out, "<p class=\"note\">… {more} more endpoints in the summary JSON (<code>metrics</code>).</p>");
    }
}

/// The errors table: every kind of error, most frequent first.
pub(super) fn errors(out: &mut String, s: &Summary) {
    if s.errors.is_empty() {
        return;
    }
    out.push_str(
        "<h2>Errors</h2>\n<p class=\"note\">Attempts that did not pass, grouped by outcome and message (numbers, \
         hex ids and UUIDs folded); the example is the earliest of each kind.</p>\n\
         <table class=\"t\" id=\"error-table\">\n<tr><th>count</th><th>outcome</th><th>example</th>\
         <th>iteration</th><th>first (s)</th><th>last (s)</th></tr>\n",
    );
    for e in &s.errors {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"text\"><code>{}</code></td><td>{}</td><td>{:.3}</td><td>{:.3}</td></tr>",
            count(e.count),
            e.outcome.as_str(),
            esc(&e.example),
            e.iteration,
            e.first_s,
            e.last_s
        );
    }
    out.push_str("</table>\n");
}

/// The tagged cases of a check the report lists (the rest are in the summary JSON).
const CASES_SHOWN: usize = 100;

/// One row of the checks table: a check (`extra` empty) or one of its cases (`extra` " case",
/// indented); `label` is escaped already.
fn check_row(out: &mut String, extra: &str, label: &str, passes: u64, fails: u64, rate: Option<f64>) {
    let (class, mark) = if fails == 0 { ("ok", "✓") } else { ("bad", "✗") };
    let rate = rate.map_or_else(|| "–".to_owned(), |r| format!("{:.2}%", r * 100.0));
    let _ = writeln!(
        out,
        "<tr class=\"{class}{extra}\"><td class=\"mark\">{mark}</td><td class=\"text\"><code>{label}</code></td>\
         <td>{}</td><td>{}</td><td>{rate}</td></tr>",
        count(passes),
        count(fails)
    );
}

/// The plugin's checks and its own metrics.
pub(super) fn plugin(out: &mut String, s: &Summary) {
    if !s.checks.is_empty() {
        out.push_str(
            "<h2>Checks</h2>\n<table class=\"t\" id=\"checks\">\n\
             <tr><th></th><th>check</th><th>passes</th><th>fails</th><th>pass rate</th></tr>\n",
        );
        for (name, c) in &s.checks {
            check_row(out, "", &esc(name), c.passes, c.fails, c.rate());
            // Each tagged case under its check, in tag order: which one failed.
            for case in c.cases.iter().take(CASES_SHOWN) {
                check_row(out, " case", &esc(&case.label()), case.passes, case.fails, case.rate());
            }
            if c.cases.len() > CASES_SHOWN {
                let more = c.cases.len() - CASES_SHOWN;
                let _ = writeln!(
                    out,
                    "<tr class=\"case\"><td></td><td class=\"text note\" colspan=\"4\">… {more} more in the summary \
                     JSON (<code>checks</code>)</td></tr>"
                );
            }
        }
        out.push_str("</table>\n");
    }
    // Checks have their table above; the rest split into trends and single values.
    let (mut trends, mut others) = (Vec::new(), Vec::new());
    for (key, metric) in &s.metrics.plugin {
        match metric {
            PluginMetric::Trend(t) => trends.push((key, t)),
            PluginMetric::Counter(c) => others.push((key, format!("count {}", count(c.count)))),
            PluginMetric::Gauge(g) => others.push((key, format!("value {}", num(g.value)))),
            PluginMetric::Check(_) => {}
        }
    }
    if trends.is_empty() && others.is_empty() {
        return;
    }
    out.push_str("<h2>Plugin metrics</h2>\n");
    if !others.is_empty() {
        out.push_str("<table class=\"t\" id=\"plugin-metrics\">\n<tr><th>metric</th><th>value</th></tr>\n");
        for (key, shown) in others {
            let _ = writeln!(out, "<tr><td class=\"text\"><code>{}</code></td><td>{shown}</td></tr>", esc(key));
        }
        out.push_str("</table>\n");
    }
    if !trends.is_empty() {
        out.push_str("<table class=\"t\" id=\"plugin-trends\">\n");
        percentile_header(out, "trend", "<th>count</th>");
        for (key, t) in trends {
            percentile_row(out, key, &t.stats);
            let _ = writeln!(out, "<td>{}</td></tr>", count(t.count));
        }
        out.push_str("</table>\n");
    }
}

/// One row per scenario. `errored` is failed + timed out + trapped; `other` aborted + interrupted.
pub(super) fn scenarios(out: &mut String, scenarios: &Named<ScenarioSummary>) {
    out.push_str(
        "<h2>Scenarios</h2>\n<table class=\"t\" id=\"scenarios\">\n<tr><th>scenario</th><th>starts after (s)</th>\
         <th>duration (s)</th><th>scheduled</th><th>passed</th><th>errored</th><th>dropped</th><th>other</th>\
         <th>planned /s</th><th>achieved /s</th><th>latency p50</th><th>p99</th><th>max (ms)</th>\
         <th>workers peak</th><th>identity</th></tr>\n",
    );
    for (name, sc) in scenarios.iter() {
        let t = &sc.tasks;
        let planned = sc.rate.target_per_s.map_or_else(|| "closed".into(), num);
        let achieved = if t.started >= 2 { num(sc.rate.achieved_per_s) } else { "–".to_owned() };
        let identity =
            if sc.identity_holds { "<span class=\"ok\">✓</span>" } else { "<span class=\"bad\">✗</span>" };
        let _ = writeln!(
            out,
            "<tr><td class=\"text\"><code>{}</code>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{planned}</td><td>{achieved}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"mark\">{identity}</td></tr>",
            esc(name),
            sc.plugin
                .as_ref()
                .map_or_else(String::new, |p| format!("<br><small><code>{}</code></small>", esc(&p.path))),
            num(sc.start_after_s),
            num(sc.duration_s),
            count(t.scheduled),
            count(t.passed),
            count(t.errored()),
            count(t.dropped),
            count(t.aborted + t.interrupted),
            num(sc.latency_ms.p50),
            num(sc.latency_ms.p99),
            num(sc.latency_ms.max),
            count(sc.workers.peak),
        );
    }
    out.push_str(
        "</table>\n<p class=\"note\">errored = failed + timed out + trapped (tasks that ran and ended in an error); \
         other = aborted + interrupted.</p>\n",
    );
}
