//! The HTML report: one self-contained page for a finished run, built from the typed
//! [`Summary`] and the kept interval rows ([`ChartRows`]). uPlot (vendored under
//! `assets/uplot/`), the page's script and its styles are inlined, so the file opens anywhere
//! without a network.
//!
//! - `tables`: the header, the verdict and every table, from the summary (so they show what
//!   `--summary-json` says);
//! - `charts`: the charts' series, drawn in the browser from one JSON object in
//!   `<script type="application/json" id="data">`;
//! - `phases`: the HTTP phases chart (stacked p50 and p95 of each phase), the one chart not over
//!   time;
//! - [`rows`]: the interval rows kept for the charts, downsampled past [`rows::MAX_ROWS`] per
//!   scenario so a long run's report stays bounded;
//! - `text`: escaping and numbers;
//! - `generator`: the generator's verdict: its sentence by the run's verdict, and bands over the
//!   intervals it was degraded or saturated on every latency chart (`shading` in the data block).
//!
//! When the page has drawn its charts it sets `data-charts` on `<body>` to their number; every
//! error on the page is counted in `data-errors` and shown in `<pre id="errors">`.
//! `tests/browser/check_html.sh` loads a report in headless Chromium and checks both.

mod charts;
mod generator;
mod phases;
pub mod rows;
mod tables;
mod text;

use std::fmt::Write as _;

pub use rows::ChartRows;

use self::charts::CHARTS;
use self::text::{esc, script_json};
use crate::summary::Summary;

const UPLOT_JS: &str = include_str!("../../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../assets/uplot/uPlot.min.css");
const ERRORS_JS: &str = include_str!("../../assets/errors.js");
const REPORT_JS: &str = include_str!("../../assets/report.js");
const REPORT_CSS: &str = include_str!("../../assets/report.css");

/// One self-contained HTML page for a finished run: `summary` for the tables, `rows` (every
/// interval row of the run, kept as [`ChartRows`]) for the charts.
pub fn render(summary: &Summary, rows: &ChartRows) -> String {
    let mut out = String::with_capacity(UPLOT_JS.len() + 64 * 1024);
    let title = format!("loadhost report · {}", summary.plugin.path);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"loadhost {}\">\n<title>{}</title>\n\
         <style>{UPLOT_CSS}</style>\n<style>{REPORT_CSS}</style>\n</head>\n<body>\n\
         <pre id=\"errors\" hidden></pre>\n<script>{ERRORS_JS}</script>\n",
        esc(&summary.version),
        esc(&title)
    );
    tables::header(&mut out, summary);
    tables::verdict(&mut out, summary);
    generator::verdict_note(&mut out, summary);
    tables::summary(&mut out, summary);
    tables::errors(&mut out, summary);
    if let Some(scenarios) = &summary.scenarios {
        tables::scenarios(&mut out, scenarios);
    }
    out.push_str("<h2>Over time</h2>\n");
    if rows.is_empty() {
        out.push_str("<p class=\"note\">No interval was recorded, so the charts are empty.</p>\n");
    } else if rows.span() > 1 {
        let _ = writeln!(
            out,
            "<p class=\"note\">A long run: each point covers {} intervals (at most {} points per scenario are \
             kept). Counts are per second over the point's span; latency and the crew show its worst interval.</p>",
            rows.span(),
            rows::MAX_ROWS
        );
    }
    for (id, chart_title, _) in CHARTS {
        let _ = writeln!(out, "<h3>{}</h3>\n<div class=\"chart\" id=\"{id}\"></div>", esc(chart_title));
    }
    generator::legend(&mut out, summary);
    if let Some(http) = &summary.metrics.http {
        tables::http(&mut out, http);
    }
    tables::plugin(&mut out, summary);
    let _ = writeln!(
        out,
        "<details><summary>Options in effect</summary><pre>{}</pre></details>",
        esc(&serde_json::to_string_pretty(&summary.config).unwrap_or_default())
    );
    let mut data = charts::chart_data(summary, rows);
    data["shading"] = generator::shading(summary, &CHARTS);
    let _ = write!(
        out,
        "<script>{UPLOT_JS}</script>\n<script type=\"application/json\" id=\"data\">{}</script>\n\
         <script>{REPORT_JS}</script>\n</body>\n</html>\n",
        script_json(&data)
    );
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};

    use loadhost_metrics::{Gauges, IntervalRow, Outcome, RunReport, TaskTiming, ThresholdResult, Window, WorkerStats};
    use serde_json::{Value, json};

    use super::*;
    use crate::RunInfo;

    /// The page of a run: `report` the whole run, `scenarios` each scenario's, `rows` every row.
    fn page(
        info: &RunInfo,
        report: &RunReport,
        scenarios: &[RunReport],
        rows: &[IntervalRow],
        thresholds: &[ThresholdResult],
    ) -> String {
        render(&Summary::new(info, report, scenarios, thresholds), &rows.iter().collect())
    }

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
            generator: None,
        };
        let info = RunInfo {
            plugin_path: plugin_path.into(),
            plugin_sha256: "ab".repeat(32),
            plugin_ref: None,
            plugin_digest: None,
            scenario_plugins: Default::default(),
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
                expr: "tasks_not_passed:rate<0.01".into(),
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
        let html = page(&info, &report, &[], &rows, &thresholds());
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
        let html = page(&info, &report, &[], &rows, &[]);
        assert!(html.contains("<dt>tags</dt><dd><code>team=checkout</code></dd>"), "the --tag labels are shown");
    }

    #[test]
    fn the_data_block_parses_back_with_the_rows_and_totals() {
        let (info, report, rows) = run("noop.wasm");
        let html = page(&info, &report, &[], &rows, &[]);
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
        let html = page(&info, &report, &[], &rows, &thresholds());
        let table = &html[html.find("<table class=\"t\" id=\"thresholds\">").expect("threshold table")..];
        let table = &table[..table.find("</table>").expect("table ends")];
        let failed = table.lines().find(|l| l.contains("tasks_not_passed:rate&lt;0.01")).expect("failed threshold row");
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
        let html = page(&info, &report, &[], &rows, &[]);
        assert_eq!(data_block(&html)["plugin"]["path"], json!(path));
        // As many closing tags as with a harmless path: nothing from the path ended an element early.
        let (info, report, rows) = run("noop.wasm");
        let plain = page(&info, &report, &[], &rows, &[]);
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
        let script = include_str!("../../../../tests/browser/check_html.sh");
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
        let html = page(&info, &all, &scenarios, &rows, &[]);
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
        let html = page(&info, &report, &[], &[], &[]);
        let data = data_block(&html);
        assert_eq!(data["rows"], json!(0));
        assert_eq!(data["charts"].as_array().map(Vec::len), Some(CHARTS.len()));
        assert!(html.contains("No thresholds were set."));
    }

    #[test]
    fn a_summary_read_back_from_its_json_renders_the_same_page() {
        let (info, report, rows) = run("noop.wasm");
        let mut summary = Summary::new(&info, &report, &[], &thresholds());
        // The JSON keeps thresholds by expression, sorted.
        summary.thresholds.0.sort_by(|a, b| a.0.cmp(&b.0));
        let mut back: Summary = serde_json::from_str(&serde_json::to_string(&summary).unwrap()).unwrap();
        // The load model line is for people and not in the JSON.
        back.notes.model = summary.notes.model.clone();
        let kept: ChartRows = rows.iter().collect();
        assert_eq!(render(&back, &kept), render(&summary, &kept));
    }

    #[test]
    fn a_long_run_is_charted_in_bounded_rows() {
        let (info, report, rows) = run("noop.wasm");
        let template = &rows[0];
        let long: Vec<IntervalRow> = (0..3 * rows::MAX_ROWS as u64)
            .map(|i| IntervalRow {
                index: i,
                start: Duration::from_secs(i),
                end: Duration::from_secs(i + 1),
                ..template.clone()
            })
            .collect();
        let html = page(&info, &report, &[], &long, &[]);
        let data = data_block(&html);
        let kept = data["rows"].as_u64().unwrap();
        assert!(kept <= rows::MAX_ROWS as u64 && kept >= rows::MAX_ROWS as u64 / 2, "{kept}");
        assert_eq!(data["intervals_per_row"], json!(4));
        assert!(html.contains("each point covers 4 intervals"), "the page says so");
        // Per second over each point's span: the 4 tasks a second of every interval.
        assert_eq!(data["charts"][0]["series"][2]["values"][0], json!(4.0));
        assert_eq!(data["charts"][3]["series"][0]["values"][0], json!(4.0), "4 passed a second in row 0");
    }

    #[test]
    fn endpoints_get_a_table_busiest_first_with_their_names_escaped() {
        use loadhost_metrics::http::{Endpoint, HttpSample};
        let (info, mut report, rows) = run("noop.wasm");
        for (n, name, ms) in [(3, "GET /", 1), (5, "GET /delay", 20), (1, "<b>x</b>", 7)] {
            for _ in 0..n {
                report.totals.http.record(HttpSample::new(
                    Some(200),
                    Duration::from_millis(ms),
                    1,
                    Some(Endpoint::new("GET", name)),
                ));
            }
        }
        let html = page(&info, &report, std::slice::from_ref(&report), &rows, &[]);
        let table = &html[html.find("id=\"endpoint-table\"").expect("an endpoint table")..];
        let table = &table[..table.find("</table>").unwrap()];
        let names: Vec<&str> =
            table.lines().filter_map(|l| l.split("<code>").nth(1)?.split("</code>").next()).collect();
        assert_eq!(names, ["GET /delay", "GET /", "&lt;b&gt;x&lt;/b&gt;"]);
        assert!(table.contains("<td>5</td><td>0</td></tr>"), "{table}");
    }

    #[test]
    fn a_checks_tagged_cases_are_rows_under_it_with_their_marks() {
        use loadhost_metrics::SeriesKey;
        let (info, mut report, rows) = run("noop.wasm");
        let key = |tier: &str| SeriesKey::new("status is 200".into(), vec![("tier".into(), tier.into())]);
        for (tier, ok) in [("gold", true), ("gold", true), ("<silver>", false), ("<silver>", true)] {
            report.totals.plugin.check(key(tier), ok);
        }
        report.totals.plugin.check(SeriesKey::new("plain".into(), vec![]), true);
        let html = page(&info, &report, &[], &rows, &[]);
        let table = &html[html.find("id=\"checks\"").expect("a checks table")..];
        let table = &table[..table.find("</table>").unwrap()];
        let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("<tr class")).collect();
        assert_eq!(rows.len(), 4, "plain, the check and its two cases: {table}");
        assert!(rows[0].contains("class=\"ok\"") && rows[0].contains("<code>plain</code>"), "{}", rows[0]);
        assert!(rows[1].contains("class=\"bad\"") && rows[1].contains("<code>status is 200</code>"), "{}", rows[1]);
        assert!(rows[1].contains("<td>3</td><td>1</td><td>75.00%</td>"), "{}", rows[1]);
        assert!(rows[2].contains("class=\"bad case\"") && rows[2].contains("<code>{tier:&lt;silver&gt;}</code>"));
        assert!(rows[2].contains("<td>1</td><td>1</td><td>50.00%</td>"), "{}", rows[2]);
        assert!(rows[3].contains("class=\"ok case\"") && rows[3].contains("<code>{tier:gold}</code>"), "{}", rows[3]);
    }

    #[test]
    fn the_scenario_table_counts_errored_tasks_apart_from_drops() {
        let (info, mut first, rows) = run("noop.wasm");
        first.scenario = "browse".into();
        let scenarios = [first];
        let all = RunReport::combine(&scenarios).expect("combined");
        let html = page(&info, &all, &scenarios, &rows, &[]);
        let table = &html[html.find("<table class=\"t\" id=\"scenarios\">").expect("scenario table")..];
        assert!(table.contains("<th>errored</th>") && table.contains("errored = failed + timed out + trapped"));
        let row = table.lines().find(|l| l.contains("<code>browse</code>")).expect("browse row");
        // 12 scheduled, 10 passed, 1 failed (errored), 1 dropped, 0 other.
        assert!(row.contains("<td>12</td><td>10</td><td>1</td><td>1</td><td>0</td>"), "{row}");
    }

    #[test]
    fn a_saturated_generator_is_said_at_the_top_and_banded_on_the_latency_chart() {
        use loadhost_metrics::GeneratorVerdict::{Healthy, Saturated};
        let why = "the generator was saturated from 1 s to 2 s (1 of 2 intervals): x";
        let saturated = crate::summary::generator::judged(&[Some(Healthy), Some(Saturated)], Some(why));
        let html = render(&saturated, &ChartRows::default());
        let data = data_block(&html);
        assert_eq!(data["shading"]["bands"].as_array().map(Vec::len), Some(1), "{}", data["shading"]);
        assert_eq!(data["shading"]["bands"][0]["from"], json!(1.0));
        assert_eq!(data["shading"]["charts"], json!(["chart-latency"]));
        let top = html.find("id=\"generator-verdict\"").expect("the sentence by the verdict");
        assert!(
            top < html.find("<h2>Over time</h2>").unwrap() && html.contains("⚠️ The generator was saturated from 1 s")
        );
        assert!(html.contains("id=\"generator-shading\""), "the legend note");
        let healthy = crate::summary::generator::judged(&[Some(Healthy), Some(Healthy)], None);
        let html = render(&healthy, &ChartRows::default());
        assert_eq!(data_block(&html)["shading"]["bands"], json!([]));
        assert!(!html.contains("id=\"generator-verdict\"") && !html.contains("id=\"generator-shading\""));
    }
}
