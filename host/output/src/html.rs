//! The HTML report: one self-contained page for a finished run. uPlot (vendored under
//! `assets/uplot/`), the page's script and its styles are inlined, so the file opens anywhere
//! without a network. The tables are rendered here from [`crate::json::summary`], so they show
//! what `--summary-json` says; the charts are drawn in the browser from one JSON object in
//! `<script type="application/json" id="data">`, whose series are prepared here.
//!
//! When the page has drawn its charts it sets `data-charts` on `<body>` to their number; every
//! error on the page is counted in `data-errors` and shown in `<pre id="errors">`.
//! `tests/browser/check_html.sh` loads a report in headless Chromium and checks both.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use loadhost_metrics::http::names;
use loadhost_metrics::{IntervalRow, Outcome, Percentiles, RunReport, ThresholdResult};
use serde_json::{Value, json};

use crate::{RunInfo, VERSION, round_ms};

const UPLOT_JS: &str = include_str!("../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../assets/uplot/uPlot.min.css");
const ERRORS_JS: &str = include_str!("../assets/errors.js");
const REPORT_JS: &str = include_str!("../assets/report.js");
const REPORT_CSS: &str = include_str!("../assets/report.css");

/// The charts, in page order: (element id, title). `data-charts` equals their number when all drew.
const CHARTS: [(&str, &str); 4] = [
    ("chart-rate", "Rate: tasks started per second vs planned"),
    ("chart-latency", "Latency per interval (scheduled time → end)"),
    ("chart-crew", "Workers and tasks in flight (at each interval's end)"),
    ("chart-outcomes", "Tasks ended per interval, by outcome"),
];

/// Dash patterns that tell scenarios apart on a shared chart (colours tell the metrics apart).
const DASHES: [&[u32]; 4] = [&[], &[8, 4], &[2, 3], &[12, 4, 2, 4]];

const GREY: &str = "#7f7f7f";

fn outcome_color(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Passed => "#2ca02c",
        Outcome::Failed => "#d62728",
        Outcome::Aborted => "#8c564b",
        Outcome::Dropped => "#ff7f0e",
        Outcome::TimedOut => "#9467bd",
        Outcome::Trapped => "#e377c2",
        Outcome::Interrupted => GREY,
    }
}

/// One self-contained HTML page for a finished run.
///
/// `rows` are every interval row of the run. With several scenarios each scenario is charted as
/// its own series (labelled `NAME · metric`, told apart by dash pattern), placed on the run's
/// timeline: x is the scenario's start offset plus `row.end`, in seconds. Summing per interval
/// would mix intervals that do not line up (each scenario's ticker starts with the scenario) and
/// cannot combine latency percentiles.
pub fn render(
    info: &RunInfo,
    report: &RunReport,
    scenarios: &[RunReport],
    rows: &[IntervalRow],
    thresholds: &[ThresholdResult],
) -> String {
    let summary = crate::json::summary(info, report);
    let mut out = String::with_capacity(UPLOT_JS.len() + 64 * 1024);
    let title = format!("loadhost report · {}", info.plugin_path);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"loadhost {VERSION}\">\n<title>{}</title>\n\
         <style>{UPLOT_CSS}</style>\n<style>{REPORT_CSS}</style>\n</head>\n<body>\n\
         <pre id=\"errors\" hidden></pre>\n<script>{ERRORS_JS}</script>\n",
        esc(&title)
    );
    header(&mut out, info, &summary);
    verdict(&mut out, report, &summary, thresholds);
    tables(&mut out, &summary);
    if !scenarios.is_empty() {
        scenario_table(&mut out, &crate::json::scenarios(scenarios));
    }
    out.push_str("<h2>Over time</h2>\n");
    if rows.is_empty() {
        out.push_str("<p class=\"note\">No interval was recorded, so the charts are empty.</p>\n");
    }
    for (id, chart_title) in CHARTS {
        let _ = writeln!(out, "<h3>{}</h3>\n<div class=\"chart\" id=\"{id}\"></div>", esc(chart_title));
    }
    let empty = serde_json::Map::new();
    let metrics = summary.get("metrics").and_then(Value::as_object).unwrap_or(&empty);
    http_tables(&mut out, metrics);
    plugin_tables(&mut out, &summary, metrics);
    let _ = writeln!(
        out,
        "<details><summary>Options in effect</summary><pre>{}</pre></details>",
        esc(&serde_json::to_string_pretty(&info.config).unwrap_or_default())
    );
    let data = chart_data(info, report, scenarios, rows);
    let _ = write!(
        out,
        "<script>{UPLOT_JS}</script>\n<script type=\"application/json\" id=\"data\">{}</script>\n\
         <script>{REPORT_JS}</script>\n</body>\n</html>\n",
        script_json(&data)
    );
    out
}

/// JSON that cannot end its `<script>` element early: `</` would close it and `<!--` would
/// change how the rest of the element is parsed. Both only occur inside JSON strings, where
/// `\/` and `\u0021` are valid escapes, so the text still parses as the same JSON.
fn script_json(value: &Value) -> String {
    value.to_string().replace("</", "<\\/").replace("<!--", "<\\u0021--")
}

/// Escape text for HTML content and quoted attribute values.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A number for people: integers as such, others with precision that shrinks as they grow.
fn num(v: f64) -> String {
    if !v.is_finite() {
        "–".to_owned()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The number at `path` in `value`, formatted, or a dash when absent.
fn field(value: &Value, path: &[&str]) -> String {
    lookup(value, path).and_then(Value::as_f64).map_or_else(|| "–".to_owned(), num)
}

fn lookup<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

fn text(value: &Value, path: &[&str]) -> Option<String> {
    lookup(value, path).and_then(Value::as_str).map(str::to_owned)
}

fn header(out: &mut String, info: &RunInfo, summary: &Value) {
    let _ = writeln!(out, "<h1>loadhost report</h1>\n<dl class=\"meta\">");
    let duration = lookup(summary, &["duration_s"]).and_then(Value::as_f64).unwrap_or(0.0);
    let generation = lookup(summary, &["rate", "generation_s"]).and_then(Value::as_f64).unwrap_or(0.0);
    let items = [
        ("plugin", format!("<code>{}</code>", esc(&info.plugin_path))),
        ("sha256", format!("<code>{}</code>", esc(&info.plugin_sha256))),
        ("started at", esc(&text(summary, &["started_at"]).unwrap_or_default())),
        ("duration", format!("{duration:.2} s ({generation:.2} s generating load)")),
        ("load model", esc(&info.model).replace('\n', "<br>")),
        ("loadhost", esc(VERSION)),
    ];
    for (name, value) in items {
        let _ = writeln!(out, "<dt>{name}</dt><dd>{value}</dd>");
    }
    if !info.tags.is_empty() {
        let tags: Vec<String> = info.tags.iter().map(|(k, v)| format!("<code>{}={}</code>", esc(k), esc(v))).collect();
        let _ = writeln!(out, "<dt>tags</dt><dd>{}</dd>", tags.join(" "));
    }
    if let Some(rss) = lookup(summary, &["host", "peak_rss_mb"]).and_then(Value::as_f64) {
        let _ = writeln!(out, "<dt>host peak RSS</dt><dd>{} MiB</dd>", num(rss));
    }
    out.push_str("</dl>\n");
}

fn verdict(out: &mut String, report: &RunReport, summary: &Value, thresholds: &[ThresholdResult]) {
    out.push_str("<h2>Verdict</h2>\n");
    let failed = thresholds.iter().filter(|t| !t.passed).count();
    let limit = match loadhost_metrics::limit::verdict(report, thresholds) {
        Some((limit, why)) => format!(" Limited by the {}: {}.", limit.name(), esc(&why)),
        None => " The host kept up; nothing limited the run.".to_owned(),
    };
    if thresholds.is_empty() {
        let _ = writeln!(out, "<div class=\"verdict none\">No thresholds were set.{limit}</div>");
    } else if failed == 0 {
        let _ = writeln!(out, "<div class=\"verdict ok\">✓ All {} thresholds passed.{limit}</div>", thresholds.len());
    } else {
        let total = thresholds.len();
        let _ = writeln!(out, "<div class=\"verdict bad\">✗ {failed} of {total} thresholds failed.{limit}</div>");
    }
    let mut notes = Vec::new();
    if let Some(message) = &report.aborted {
        notes.push(format!("The run was aborted: {}", esc(message)));
    }
    if let Some(how) = &report.stopped {
        notes.push(format!("The run was stopped early: {}", esc(how)));
    }
    if let Some(why) = &report.teardown_error {
        notes.push(format!("The plugin's teardown failed: {}", esc(why)));
    }
    if summary.get("identity_holds") == Some(&Value::Bool(false)) {
        notes.push("The accounting identity does not hold: some scheduled tasks have no outcome.".to_owned());
    }
    for note in notes {
        let _ = writeln!(out, "<p class=\"bad\">{note}</p>");
    }
    if thresholds.is_empty() {
        return;
    }
    out.push_str(
        "<table class=\"t\" id=\"thresholds\">\n<tr><th></th><th>threshold</th><th>value</th><th>abort on fail</th>\
         <th>stopped the run</th></tr>\n",
    );
    for t in thresholds {
        let (class, mark) = if t.passed { ("ok", "✓") } else { ("bad", "✗") };
        let value = t.value.map_or_else(|| "no samples".to_owned(), num);
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td class=\"mark\">{mark}</td><td class=\"text\"><code>{}</code></td>\
             <td>{value}</td><td>{}</td><td>{}</td></tr>",
            esc(&t.expr),
            yes_no(t.abort_on_fail),
            yes_no(t.aborted_run)
        );
    }
    out.push_str("</table>\n");
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// A two-column table of already-escaped (label, value) pairs.
fn pairs(out: &mut String, heading: &str, rows: &[(String, String)]) {
    let _ = writeln!(out, "<div><h3>{heading}</h3>\n<table class=\"t\">");
    for (label, value) in rows {
        let _ = writeln!(out, "<tr><th>{label}</th><td>{value}</td></tr>");
    }
    out.push_str("</table></div>\n");
}

const PERCENTILE_KEYS: [(&str, &str); 8] = [
    ("min", "min"),
    ("mean", "mean"),
    ("p50", "p50"),
    ("p90", "p90"),
    ("p95", "p95"),
    ("p99", "p99"),
    ("p999", "p99.9"),
    ("max", "max"),
];

fn percentile_header(out: &mut String, first: &str, extra: &str) {
    let _ = write!(out, "<tr><th>{first}</th>");
    for (_, label) in PERCENTILE_KEYS {
        let _ = write!(out, "<th>{label}</th>");
    }
    let _ = writeln!(out, "{extra}</tr>");
}

fn percentile_row(out: &mut String, label: &str, p: &Value) {
    let _ = write!(out, "<tr><td class=\"text\"><code>{}</code></td>", esc(label));
    for (key, _) in PERCENTILE_KEYS {
        let _ = write!(out, "<td>{}</td>", field(p, &[key]));
    }
}

fn tables(out: &mut String, s: &Value) {
    out.push_str("<h2>Summary</h2>\n<div class=\"grid\">\n");
    let scheduled = lookup(s, &["tasks", "scheduled"]).and_then(Value::as_f64).unwrap_or(0.0);
    let share = |n: f64| if scheduled > 0.0 { format!("{:.2}%", n * 100.0 / scheduled) } else { String::new() };
    let _ = writeln!(
        out,
        "<div><h3>Tasks</h3>\n<table class=\"t\">\n<tr><th>outcome</th><th>tasks</th><th>share</th></tr>"
    );
    let _ = writeln!(out, "<tr><th>scheduled</th><td>{}</td><td></td></tr>", field(s, &["tasks", "scheduled"]));
    for outcome in Outcome::ALL {
        let n = lookup(s, &["tasks", outcome.name()]).and_then(Value::as_f64).unwrap_or(0.0);
        let class = if outcome != Outcome::Passed && n > 0.0 { " class=\"bad\"" } else { "" };
        let _ = writeln!(
            out,
            "<tr{class}><td class=\"text\">{}</td><td>{}</td><td>{}</td></tr>",
            outcome.name().replace('_', " "),
            num(n),
            share(n)
        );
    }
    let _ = writeln!(
        out,
        "<tr><td class=\"text\">retries (extra attempts)</td><td>{}</td><td></td></tr>\n\
         <tr><td class=\"text\">started</td><td>{}</td><td></td></tr>\n</table>",
        field(s, &["tasks", "retries"]),
        field(s, &["tasks", "started"])
    );
    let identity = if s.get("identity_holds") == Some(&Value::Bool(true)) {
        "<p class=\"ok note\">✓ every scheduled task has exactly one outcome</p>"
    } else {
        "<p class=\"bad\">✗ the outcomes do not add up to the scheduled tasks</p>"
    };
    let _ = writeln!(out, "{identity}</div>");

    let target = lookup(s, &["rate", "target_per_s"])
        .and_then(Value::as_f64)
        .map_or_else(|| "none (closed model)".to_owned(), |r| format!("{}/s", num(r)));
    pairs(
        out,
        "Rate",
        &[
            ("planned".into(), target),
            ("achieved".into(), format!("{}/s", field(s, &["rate", "achieved_per_s"]))),
            ("generating load".into(), format!("{} s", field(s, &["rate", "generation_s"]))),
            ("pacer lag max".into(), format!("{} ms", field(s, &["lag", "max_ms"]))),
            ("pacer lag total".into(), format!("{} ms", field(s, &["lag", "total_ms"]))),
            ("underrun".into(), field(s, &["underrun"])),
        ],
    );
    pairs(
        out,
        "Workers",
        &["min", "peak", "final", "grown", "retired", "replaced"].map(|k| (k.to_owned(), field(s, &["workers", k]))),
    );
    out.push_str("</div>\n");

    out.push_str("<h3>Latency views (ms)</h3>\n<table class=\"t\" id=\"latency\">\n");
    percentile_header(out, "view", "");
    for key in ["latency_ms", "service_ms", "wait_ms", "gate_wait_ms"] {
        let Some(p) = s.get(key) else { continue };
        // The gate wait exists only with --max-in-flight; all zeros means there was no gate.
        if key == "gate_wait_ms" && lookup(p, &["max"]).and_then(Value::as_f64).unwrap_or(0.0) == 0.0 {
            continue;
        }
        percentile_row(out, key, p);
        out.push_str("</tr>\n");
    }
    out.push_str(
        "</table>\n<p class=\"note\">latency = scheduled time → end (what a user sees); service = call → end; \
         wait = scheduled time → call.</p>\n",
    );
}

/// The built-in HTTP metrics, when the plugin made requests.
fn http_tables(out: &mut String, metrics: &serde_json::Map<String, Value>) {
    let Some(reqs) = metrics.get(names::HTTP_REQS) else { return };
    out.push_str("<h2>HTTP</h2>\n<div class=\"grid\">\n");
    let get = |name: &str, key: &str| metrics.get(name).map_or_else(|| "–".to_owned(), |v| field(v, &[key]));
    let failed_pct = metrics
        .get(names::HTTP_REQ_FAILED)
        .and_then(|v| v.get("rate"))
        .and_then(Value::as_f64)
        .map_or_else(|| "–".to_owned(), |r| format!("{:.2}%", r * 100.0));
    pairs(
        out,
        "Requests",
        &[
            ("requests".into(), format!("{} ({}/s)", field(reqs, &["count"]), field(reqs, &["rate"]))),
            ("failed".into(), format!("{} ({failed_pct})", get(names::HTTP_REQ_FAILED, "passes"))),
            ("denied".into(), get(names::HTTP_DENIED, "count")),
            ("connections opened".into(), get(names::HTTP_CONNECTIONS_OPENED, "count")),
            ("data sent (bytes)".into(), get(names::DATA_SENT, "count")),
            ("data received (bytes)".into(), get(names::DATA_RECEIVED, "count")),
            ("response bodies (bytes)".into(), get(names::HTTP_RESPONSE_BYTES, "count")),
        ],
    );
    if let Some(statuses) = metrics.get(names::HTTP_STATUS).and_then(Value::as_object) {
        let rows: Vec<(String, String)> =
            statuses.iter().map(|(status, n)| (esc(status), n.as_f64().map_or_else(String::new, num))).collect();
        pairs(out, "By status", &rows);
    }
    out.push_str("</div>\n");
    if let Some(duration) = metrics.get(names::HTTP_REQ_DURATION) {
        out.push_str("<table class=\"t\">\n");
        percentile_header(out, "ms", "<th>count</th>");
        percentile_row(out, names::HTTP_REQ_DURATION, duration);
        let _ = writeln!(out, "<td>{}</td></tr>\n</table>", field(duration, &["count"]));
    }
}

/// Whether a summary metric key is one of the host's HTTP metrics (maybe tagged).
fn is_http(key: &str) -> bool {
    let name = key.split('{').next().unwrap_or(key);
    [
        names::HTTP_REQS,
        names::HTTP_REQ_DURATION,
        names::HTTP_REQ_FAILED,
        names::HTTP_DENIED,
        names::HTTP_CONNECTIONS_OPENED,
        names::HTTP_STATUS,
        names::DATA_SENT,
        names::DATA_RECEIVED,
        names::HTTP_RESPONSE_BYTES,
    ]
    .contains(&name)
}

/// The plugin's checks and its own metrics, each in the shape its kind has in the summary JSON.
fn plugin_tables(out: &mut String, s: &Value, metrics: &serde_json::Map<String, Value>) {
    let checks = s.get("checks").and_then(Value::as_object);
    if let Some(checks) = checks.filter(|c| !c.is_empty()) {
        out.push_str(
            "<h2>Checks</h2>\n<table class=\"t\" id=\"checks\">\n\
             <tr><th></th><th>check</th><th>passes</th><th>fails</th><th>pass rate</th></tr>\n",
        );
        for (name, c) in checks {
            let passes = lookup(c, &["passes"]).and_then(Value::as_f64).unwrap_or(0.0);
            let fails = lookup(c, &["fails"]).and_then(Value::as_f64).unwrap_or(0.0);
            let (class, mark) = if fails == 0.0 { ("ok", "✓") } else { ("bad", "✗") };
            let rate =
                if passes + fails > 0.0 { format!("{:.2}%", passes * 100.0 / (passes + fails)) } else { "–".into() };
            let _ = writeln!(
                out,
                "<tr class=\"{class}\"><td class=\"mark\">{mark}</td><td class=\"text\"><code>{}</code></td>\
                 <td>{}</td><td>{}</td><td>{rate}</td></tr>",
                esc(name),
                num(passes),
                num(fails)
            );
        }
        out.push_str("</table>\n");
    }
    let own: Vec<(&String, &Value)> = metrics
        .iter()
        .filter(|(key, _)| !is_http(key) && !checks.is_some_and(|c| c.contains_key(key.as_str())))
        .collect();
    if own.is_empty() {
        return;
    }
    let (trends, others): (Vec<_>, Vec<_>) = own.into_iter().partition(|(_, v)| v.get("p50").is_some());
    out.push_str("<h2>Plugin metrics</h2>\n");
    if !others.is_empty() {
        out.push_str("<table class=\"t\" id=\"plugin-metrics\">\n<tr><th>metric</th><th>value</th></tr>\n");
        for (key, v) in others {
            let shown = match v.as_object() {
                Some(fields) => fields
                    .iter()
                    .map(|(k, x)| format!("{k} {}", x.as_f64().map_or_else(|| esc(&x.to_string()), num)))
                    .collect::<Vec<_>>()
                    .join(" · "),
                None => esc(&v.to_string()),
            };
            let _ = writeln!(out, "<tr><td class=\"text\"><code>{}</code></td><td>{shown}</td></tr>", esc(key));
        }
        out.push_str("</table>\n");
    }
    if !trends.is_empty() {
        out.push_str("<table class=\"t\" id=\"plugin-trends\">\n");
        percentile_header(out, "trend", "<th>count</th>");
        for (key, v) in trends {
            percentile_row(out, key, v);
            let _ = writeln!(out, "<td>{}</td></tr>", field(v, &["count"]));
        }
        out.push_str("</table>\n");
    }
}

fn scenario_table(out: &mut String, scenarios: &Value) {
    let Some(scenarios) = scenarios.as_object() else { return };
    out.push_str(
        "<h2>Scenarios</h2>\n<table class=\"t\" id=\"scenarios\">\n<tr><th>scenario</th><th>starts after (s)</th>\
         <th>duration (s)</th><th>scheduled</th><th>passed</th><th>failed</th><th>dropped</th><th>other</th>\
         <th>planned /s</th><th>achieved /s</th><th>latency p50</th><th>p99</th><th>max (ms)</th>\
         <th>workers peak</th><th>identity</th></tr>\n",
    );
    for (name, sc) in scenarios {
        let n = |key: &str| lookup(sc, &["tasks", key]).and_then(Value::as_f64).unwrap_or(0.0);
        let other: f64 = ["aborted", "timed_out", "trapped", "interrupted"].iter().map(|k| n(k)).sum();
        let planned =
            lookup(sc, &["rate", "target_per_s"]).and_then(Value::as_f64).map_or_else(|| "closed".into(), num);
        let identity = if sc.get("identity_holds") == Some(&Value::Bool(true)) {
            "<span class=\"ok\">✓</span>"
        } else {
            "<span class=\"bad\">✗</span>"
        };
        let _ = writeln!(
            out,
            "<tr><td class=\"text\"><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{planned}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"mark\">{identity}</td></tr>",
            esc(name),
            field(sc, &["start_after_s"]),
            field(sc, &["duration_s"]),
            num(n("scheduled")),
            num(n("passed")),
            num(n("failed")),
            num(n("dropped")),
            num(other),
            field(sc, &["rate", "achieved_per_s"]),
            field(sc, &["latency_ms", "p50"]),
            field(sc, &["latency_ms", "p99"]),
            field(sc, &["latency_ms", "max"]),
            field(sc, &["workers", "peak"]),
        );
    }
    out.push_str("</table>\n");
}

/// One scenario's rows, placed on the run's timeline.
struct Track<'a> {
    name: &'a str,
    /// Seconds from the run's start to the scenario's.
    offset: f64,
    /// The planned average rate; `None` in the closed model.
    target: Option<f64>,
    /// Rows by their end on the run's timeline, in milliseconds.
    rows: BTreeMap<u64, &'a IntervalRow>,
}

fn millis(seconds: f64) -> u64 {
    (seconds * 1000.0).round().max(0.0) as u64
}

fn tracks<'a>(report: &RunReport, scenarios: &'a [RunReport], rows: &'a [IntervalRow]) -> Vec<Track<'a>> {
    let mut tracks: Vec<Track<'a>> = Vec::new();
    for row in rows {
        let index = match tracks.iter().position(|t| t.name == &*row.scenario) {
            Some(index) => index,
            None => {
                let source = scenarios.iter().find(|s| s.scenario == *row.scenario);
                let (offset, target) = match source {
                    Some(s) => (s.offset.as_secs_f64(), s.target_rate),
                    None => (0.0, report.target_rate),
                };
                tracks.push(Track { name: &row.scenario, offset, target, rows: BTreeMap::new() });
                tracks.len() - 1
            }
        };
        let track = &mut tracks[index];
        track.rows.insert(millis(track.offset + row.end.as_secs_f64()), row);
    }
    // Stable, so rows of an unknown scenario keep their order after the known ones.
    tracks.sort_by_key(|t| scenarios.iter().position(|s| s.scenario == t.name).unwrap_or(usize::MAX));
    tracks
}

fn round3(v: f64) -> Value {
    json!((v * 1000.0).round() / 1000.0)
}

/// One line on a chart: `values` has a value (or null) per x.
fn series(label: String, color: &str, dash: &[u32], values: Vec<Value>) -> Value {
    json!({ "label": label, "color": color, "dash": dash, "values": values })
}

/// Everything the page script needs: the shared x axis and, per chart, its series.
fn chart_data(info: &RunInfo, report: &RunReport, scenarios: &[RunReport], rows: &[IntervalRow]) -> Value {
    let tracks = tracks(report, scenarios, rows);
    let xs: BTreeSet<u64> = tracks.iter().flat_map(|t| t.rows.keys().copied()).collect();
    let x: Vec<Value> = xs.iter().map(|&ms| json!(ms as f64 / 1000.0)).collect();
    let several = tracks.len() > 1;
    let mut charts: Vec<(&str, Vec<Value>)> = CHARTS.iter().map(|(id, _)| (*id, Vec::new())).collect();
    for (i, track) in tracks.iter().enumerate() {
        let dash = DASHES[i % DASHES.len()];
        let label = |metric: &str| if several { format!("{} · {metric}", track.name) } else { metric.to_owned() };
        let column = |f: &dyn Fn(&IntervalRow) -> Option<Value>| -> Vec<Value> {
            xs.iter().map(|ms| track.rows.get(ms).and_then(|r| f(r)).unwrap_or(Value::Null)).collect()
        };
        let per_second = |n: u64, r: &IntervalRow| {
            let secs = r.end.saturating_sub(r.start).as_secs_f64();
            (secs > 0.0).then(|| round3(n as f64 / secs))
        };
        let line = |label: String, color: &str, values: Vec<Value>| series(label, color, dash, values);

        // Drawn last, so the achieved rate stays visible where it equals the plan.
        let started = line(label("started/s"), "#1f77b4", column(&|r| per_second(r.started, r)));
        let rate = &mut charts[0].1;
        if let Some(target) = track.target {
            // In the open model the pacer's schedule is the plan interval by interval (ramps show).
            let mut scheduled = line(label("scheduled/s"), "#ff7f0e", column(&|r| per_second(r.counts.scheduled, r)));
            scheduled["width"] = json!(3);
            rate.push(scheduled);
            let mut flat = line(label("planned average/s"), GREY, column(&|_| Some(round3(target))));
            if !several {
                flat["dash"] = json!([6, 4]);
            }
            rate.push(flat);
        }
        rate.push(started);

        let ran = |r: &IntervalRow| {
            let c = &r.counts;
            c.passed + c.failed + c.aborted + c.timed_out + c.trapped + c.retries
        };
        // An interval where nothing ended has no latency: a gap, not a zero.
        let ms = |pick: fn(&Percentiles) -> f64| {
            column(&move |r: &IntervalRow| {
                (r.latency.max > 0.0 || ran(r) > 0).then(|| json!(round_ms(pick(&r.latency))))
            })
        };
        let latency = &mut charts[1].1;
        latency.push(line(label("p50"), "#2ca02c", ms(|p| p.p50)));
        latency.push(line(label("p90"), "#1f77b4", ms(|p| p.p90)));
        latency.push(line(label("p99"), "#ff7f0e", ms(|p| p.p99)));
        latency.push(line(label("max"), "#d62728", ms(|p| p.max)));

        let crew = &mut charts[2].1;
        crew.push(line(label("workers"), "#1f77b4", column(&|r| Some(json!(r.workers)))));
        crew.push(line(label("in flight"), "#ff7f0e", column(&|r| Some(json!(r.in_flight)))));

        let outcomes = &mut charts[3].1;
        for outcome in Outcome::ALL {
            // Outcomes that never happened would only stack flat lines on zero; the tables list them.
            if outcome != Outcome::Passed && track.rows.values().all(|r| r.counts.get(outcome) == 0) {
                continue;
            }
            let values = column(&|r| Some(json!(r.counts.get(outcome))));
            outcomes.push(line(label(&outcome.name().replace('_', " ")), outcome_color(outcome), values));
        }
    }
    let units = ["tasks/s", "ms", "count", "tasks"];
    let charts: Vec<Value> = charts
        .into_iter()
        .zip(units)
        .map(|((id, series), unit)| json!({ "id": id, "unit": unit, "series": series }))
        .collect();
    json!({
        "version": VERSION,
        "plugin": { "path": info.plugin_path, "sha256": info.plugin_sha256 },
        "scenarios": tracks.iter().map(|t| t.name).collect::<Vec<_>>(),
        "rows": rows.len(),
        "scheduled": report.counts().scheduled,
        "target_per_s": report.target_rate,
        "x": x,
        "charts": charts,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};

    use loadhost_metrics::{Gauges, TaskTiming, Window, WorkerStats};

    use super::*;

    fn timing(wait_ms: u64, service_ms: u64) -> Option<TaskTiming> {
        Some(TaskTiming {
            wait: Duration::from_millis(wait_ms),
            service: Duration::from_millis(service_ms),
            gate: None,
        })
    }

    /// A 3-second open-model run at 4/s: one failure and one drop, in three one-second rows.
    fn run(plugin_path: &str) -> (RunInfo, RunReport, Vec<IntervalRow>) {
        let mut totals = Window::default();
        let mut rows = Vec::new();
        for i in 0..3u64 {
            let mut w = Window::default();
            w.counts.scheduled = 4;
            w.record_task(Outcome::Passed, timing(1, 10 + i));
            w.record_task(Outcome::Passed, timing(2, 20 + i));
            w.record_task(if i == 1 { Outcome::Failed } else { Outcome::Passed }, timing(1, 30));
            w.record_task(if i == 2 { Outcome::Dropped } else { Outcome::Passed }, None);
            let gauges = Gauges { started: if i == 2 { 3 } else { 4 }, workers: 2 + i, idle: 1, in_flight: 1 };
            let (start, end) = (Duration::from_secs(i), Duration::from_secs(i + 1));
            rows.push(IntervalRow::from_window(i, start, end, &w, gauges));
            totals.merge(&w);
        }
        let report = RunReport {
            scenario: "default".into(),
            offset: Duration::ZERO,
            started_at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            elapsed: Duration::from_secs(3),
            generation: Duration::from_secs(3),
            started: 11,
            target_rate: Some(4.0),
            totals,
            workers: WorkerStats { min: 2, peak: 4, final_: 4, ..WorkerStats::default() },
            intervals: 3,
            aborted: None,
            stopped: None,
            teardown_error: None,
        };
        let info = RunInfo {
            plugin_path: plugin_path.into(),
            plugin_sha256: "ab".repeat(32),
            config: json!({ "rate": "4/s", "duration": "3s" }),
            model: "open: 4/s for 3s".into(),
            peak_rss: Some(50 << 20),
            tags: vec![("team".into(), "checkout".into())],
        };
        (info, report, rows)
    }

    fn thresholds() -> Vec<ThresholdResult> {
        vec![
            ThresholdResult {
                expr: "latency_ms:p(99)<500".into(),
                value: Some(33.0),
                passed: true,
                abort_on_fail: false,
                aborted_run: false,
            },
            ThresholdResult {
                expr: "tasks_failed:rate<0.01".into(),
                value: Some(0.0833),
                passed: false,
                abort_on_fail: true,
                aborted_run: false,
            },
            ThresholdResult {
                expr: "my_trend:p(95)<1".into(),
                value: None,
                passed: false,
                abort_on_fail: false,
                aborted_run: false,
            },
        ]
    }

    /// The text of the data block, unescaped.
    fn data_block(html: &str) -> Value {
        let open = "<script type=\"application/json\" id=\"data\">";
        let start = html.find(open).expect("data block") + open.len();
        let len = html[start..].find("</script>").expect("data block closes");
        let text = &html[start..start + len];
        assert!(!text.contains("</"), "the data must not contain a closing tag");
        serde_json::from_str(&text.replace("<\\/", "</")).expect("data block is JSON")
    }

    /// Attribute values of `attr=` anywhere in the page (quoted or not).
    fn attribute_values<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
        let lower = html.to_ascii_lowercase();
        let needle = format!("{attr}=");
        lower
            .match_indices(&needle)
            .map(|(at, _)| {
                let rest = &html[at + needle.len()..];
                let rest = rest.trim_start_matches(['"', '\'']);
                let end =
                    rest.find(|c: char| c == '"' || c == '\'' || c == '>' || c.is_whitespace()).unwrap_or(rest.len());
                &rest[..end]
            })
            .collect()
    }

    #[test]
    fn the_page_links_nothing_outside_itself() {
        let (info, report, rows) = run("target/plugins/noop.wasm");
        let html = render(&info, &report, &[], &rows, &thresholds());
        for attr in ["src", "href"] {
            for value in attribute_values(&html, attr) {
                let value = value.to_ascii_lowercase();
                assert!(
                    !value.starts_with("http:") && !value.starts_with("https:") && !value.starts_with("//"),
                    "{attr}={value} points outside the page"
                );
            }
        }
        // uPlot's banner comment names its home page; nothing else in the page may carry a URL.
        let ours = html.replace(UPLOT_JS, "");
        assert!(!ours.contains("http://") && !ours.contains("https://"), "a URL outside uPlot's banner");
        assert!(!html.contains("<link") && !html.contains("@import"), "nothing may be loaded");
    }

    #[test]
    fn the_runs_tags_are_in_its_header() {
        let (info, report, rows) = run("noop.wasm");
        let html = render(&info, &report, &[], &rows, &[]);
        assert!(html.contains("<dt>tags</dt><dd><code>team=checkout</code></dd>"), "the --tag labels are shown");
    }

    #[test]
    fn the_data_block_parses_back_with_the_rows_and_totals() {
        let (info, report, rows) = run("noop.wasm");
        let html = render(&info, &report, &[], &rows, &[]);
        let data = data_block(&html);
        assert_eq!(data["rows"], json!(3));
        assert_eq!(data["scheduled"], json!(12));
        assert_eq!(data["x"], json!([1.0, 2.0, 3.0]));
        let charts = data["charts"].as_array().expect("charts");
        assert_eq!(charts.len(), CHARTS.len());
        for chart in charts {
            let id = chart["id"].as_str().expect("id");
            assert!(html.contains(&format!("<div class=\"chart\" id=\"{id}\">")), "no element for {id}");
            for series in chart["series"].as_array().expect("series") {
                assert_eq!(series["values"].as_array().map(Vec::len), Some(3), "{id}: {}", series["label"]);
            }
        }
        let rate = &charts[0]["series"];
        assert_eq!(rate[2]["label"], "started/s");
        assert_eq!(rate[2]["values"], json!([4.0, 4.0, 3.0]));
        assert_eq!(rate[1]["values"], json!([4.0, 4.0, 4.0]));
        let outcomes: Vec<&str> =
            charts[3]["series"].as_array().expect("series").iter().filter_map(|s| s["label"].as_str()).collect();
        assert_eq!(outcomes, ["passed", "failed", "dropped"]);
    }

    #[test]
    fn thresholds_show_a_mark_each_and_no_samples() {
        let (info, report, rows) = run("noop.wasm");
        let html = render(&info, &report, &[], &rows, &thresholds());
        let table = &html[html.find("<table class=\"t\" id=\"thresholds\">").expect("threshold table")..];
        let table = &table[..table.find("</table>").expect("table ends")];
        let failed = table.lines().find(|l| l.contains("tasks_failed:rate&lt;0.01")).expect("failed threshold row");
        assert!(failed.contains("✗") && failed.contains("class=\"bad\""), "{failed}");
        let passed = table.lines().find(|l| l.contains("latency_ms:p(99)&lt;500")).expect("passed threshold row");
        assert!(passed.contains("✓") && !passed.contains("✗"), "{passed}");
        let none = table.lines().find(|l| l.contains("my_trend")).expect("row without samples");
        assert!(none.contains("no samples") && none.contains("✗"), "{none}");
        assert!(html.contains("✗ 2 of 3 thresholds failed."));
    }

    #[test]
    fn a_closing_tag_in_the_plugin_path_stays_inside_its_element() {
        let path = "evil</script><script>alert(1)</script><!--.wasm";
        let (info, report, rows) = run(path);
        let html = render(&info, &report, &[], &rows, &[]);
        assert_eq!(data_block(&html)["plugin"]["path"], json!(path));
        // As many closing tags as with a harmless path: nothing from the path ended an element early.
        let (info, report, rows) = run("noop.wasm");
        let plain = render(&info, &report, &[], &rows, &[]);
        assert_eq!(html.matches("</script>").count(), plain.matches("</script>").count());
        assert!(!html.contains("alert(1)</script>"));
        assert!(html.contains("<code>evil&lt;/script&gt;&lt;script&gt;alert(1)"));
    }

    #[test]
    fn the_inlined_assets_cannot_end_their_elements() {
        for (name, text) in [("uPlot.iife.min.js", UPLOT_JS), ("errors.js", ERRORS_JS), ("report.js", REPORT_JS)] {
            assert!(!text.to_ascii_lowercase().contains("</script") && !text.contains("<!--"), "{name}");
        }
        for (name, text) in [("uPlot.min.css", UPLOT_CSS), ("report.css", REPORT_CSS)] {
            assert!(!text.to_ascii_lowercase().contains("</style"), "{name}");
        }
    }

    #[test]
    fn the_browser_check_expects_every_chart() {
        let script = include_str!("../../../tests/browser/check_html.sh");
        assert!(script.contains(&format!("\nexpected_charts={}\n", CHARTS.len())), "tests/browser/check_html.sh");
    }

    #[test]
    fn scenarios_are_series_of_their_own_on_the_run_timeline() {
        let (info, mut first, mut rows) = run("noop.wasm");
        first.scenario = "browse".into();
        let mut second = first.clone();
        second.scenario = "buy".into();
        second.offset = Duration::from_millis(1500);
        second.target_rate = None;
        for row in &mut rows {
            row.scenario = Arc::from("browse");
        }
        let mut more = rows.clone();
        for row in &mut more {
            row.scenario = Arc::from("buy");
        }
        rows.extend(more);
        let scenarios = [first, second];
        let all = RunReport::combine(&scenarios).expect("combined");
        let html = render(&info, &all, &scenarios, &rows, &[]);
        assert!(html.contains("<table class=\"t\" id=\"scenarios\">") && html.contains("<code>buy</code>"));
        let data = data_block(&html);
        assert_eq!(data["scenarios"], json!(["browse", "buy"]));
        assert_eq!(data["x"], json!([1.0, 2.0, 2.5, 3.0, 3.5, 4.5]));
        let labels: Vec<&str> = data["charts"][0]["series"]
            .as_array()
            .expect("series")
            .iter()
            .filter_map(|s| s["label"].as_str())
            .collect();
        // The closed scenario has no plan to draw.
        assert_eq!(
            labels,
            ["browse · scheduled/s", "browse · planned average/s", "browse · started/s", "buy · started/s"]
        );
        assert_eq!(data["charts"][0]["series"][3]["values"], json!([null, null, 4.0, null, 4.0, 3.0]));
    }

    #[test]
    fn a_run_without_rows_still_renders_every_chart() {
        let (info, report, _) = run("noop.wasm");
        let html = render(&info, &report, &[], &[], &[]);
        let data = data_block(&html);
        assert_eq!(data["rows"], json!(0));
        assert_eq!(data["charts"].as_array().map(Vec::len), Some(CHARTS.len()));
        assert!(html.contains("No thresholds were set."));
    }
}
