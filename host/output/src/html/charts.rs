//! The charts' data: one JSON object the page script hands to uPlot, prepared here from the kept
//! interval rows ([`ChartRows`]) and the summary (each scenario's start and plan).
//!
//! With several scenarios each is charted as its own series (labelled `NAME · metric`, told apart
//! by dash pattern), placed on the run's timeline: x is the scenario's start offset plus
//! `row.end`, in seconds. Summing per interval would mix intervals that do not line up (each
//! scenario's ticker starts with the scenario) and cannot combine latency percentiles.

use std::collections::{BTreeMap, BTreeSet};

use loadhost_metrics::{IntervalRow, Outcome, Percentiles};
use serde_json::{Value, json};

use super::rows::ChartRows;
use crate::round_ms;
use crate::summary::Summary;

/// The charts, in page order: (element id, title, unit). `data-charts` equals their number when
/// all drew.
pub(super) const CHARTS: [(&str, &str, &str); 5] = [
    ("chart-rate", "Rate: tasks started per second vs planned", "tasks/s"),
    ("chart-latency", "Latency (scheduled time → end)", "ms"),
    ("chart-crew", "Workers and tasks in flight (at an interval's end)", "count"),
    ("chart-outcomes", "Tasks ended per second, by outcome", "tasks/s"),
    (super::phases::ID, "HTTP: where a request's time went (each phase's p50 and p95, stacked)", "ms"),
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

fn tracks<'a>(summary: &Summary, rows: &'a ChartRows) -> Vec<Track<'a>> {
    let scenario = |name: &str| summary.scenarios.as_ref().and_then(|s| s.get(name));
    let mut tracks: Vec<Track<'a>> = Vec::new();
    for row in rows.rows() {
        let index = match tracks.iter().position(|t| t.name == &*row.scenario) {
            Some(index) => index,
            None => {
                let (offset, target) = match scenario(&row.scenario) {
                    Some(s) => (s.start_after_s, s.rate.target_per_s),
                    None => (0.0, summary.rate.target_per_s),
                };
                tracks.push(Track { name: &row.scenario, offset, target, rows: BTreeMap::new() });
                tracks.len() - 1
            }
        };
        let track = &mut tracks[index];
        track.rows.insert(millis(track.offset + row.end.as_secs_f64()), row);
    }
    // Stable, so rows of an unknown scenario keep their order after the known ones.
    let position = |name: &str| summary.scenarios.as_ref().and_then(|s| s.position(name)).unwrap_or(usize::MAX);
    tracks.sort_by_key(|t| position(t.name));
    tracks
}

fn round3(v: f64) -> Value {
    json!((v * 1000.0).round() / 1000.0)
}

/// One line on a chart: `values` has a value (or null) per x.
fn series(label: String, color: &str, dash: &[u32], values: Vec<Value>) -> Value {
    json!({ "label": label, "color": color, "dash": dash, "values": values })
}

/// `n` over the row's span, per second; `None` for a row of no length.
fn per_second(n: u64, r: &IntervalRow) -> Option<Value> {
    let secs = r.end.saturating_sub(r.start).as_secs_f64();
    (secs > 0.0).then(|| round3(n as f64 / secs))
}

/// Everything the page script needs: the shared x axis and, per chart, its series.
pub(super) fn chart_data(summary: &Summary, rows: &ChartRows) -> Value {
    let tracks = tracks(summary, rows);
    let xs: BTreeSet<u64> = tracks.iter().flat_map(|t| t.rows.keys().copied()).collect();
    let x: Vec<Value> = xs.iter().map(|&ms| json!(ms as f64 / 1000.0)).collect();
    let several = tracks.len() > 1;
    let mut charts: Vec<Vec<Value>> = CHARTS.iter().map(|_| Vec::new()).collect();
    for (i, track) in tracks.iter().enumerate() {
        let dash = DASHES[i % DASHES.len()];
        let label = |metric: &str| if several { format!("{} · {metric}", track.name) } else { metric.to_owned() };
        let column = |f: &dyn Fn(&IntervalRow) -> Option<Value>| -> Vec<Value> {
            xs.iter().map(|ms| track.rows.get(ms).and_then(|r| f(r)).unwrap_or(Value::Null)).collect()
        };
        let line = |label: String, color: &str, values: Vec<Value>| series(label, color, dash, values);

        // Drawn last, so the achieved rate stays visible where it equals the plan.
        let started = line(label("started/s"), "#1f77b4", column(&|r| per_second(r.started, r)));
        let rate = &mut charts[0];
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
        // A row where nothing ended has no latency: a gap, not a zero.
        let ms = |pick: fn(&Percentiles) -> f64| {
            column(&move |r: &IntervalRow| {
                (r.latency.max > 0.0 || ran(r) > 0).then(|| json!(round_ms(pick(&r.latency))))
            })
        };
        let latency = &mut charts[1];
        latency.push(line(label("p50"), "#2ca02c", ms(|p| p.p50)));
        latency.push(line(label("p90"), "#1f77b4", ms(|p| p.p90)));
        latency.push(line(label("p99"), "#ff7f0e", ms(|p| p.p99)));
        latency.push(line(label("max"), "#d62728", ms(|p| p.max)));

        let crew = &mut charts[2];
        crew.push(line(label("workers"), "#1f77b4", column(&|r| Some(json!(r.workers)))));
        crew.push(line(label("in flight"), "#ff7f0e", column(&|r| Some(json!(r.in_flight)))));

        let outcomes = &mut charts[3];
        for outcome in Outcome::ALL {
            // Outcomes that never happened would only stack flat lines on zero; the tables list them.
            if outcome != Outcome::Passed && track.rows.values().all(|r| r.counts.get(outcome) == 0) {
                continue;
            }
            let values = column(&|r| per_second(r.counts.get(outcome), r));
            outcomes.push(line(label(&outcome.name().replace('_', " ")), outcome_color(outcome), values));
        }
    }
    let mut charts: Vec<Value> = charts
        .into_iter()
        .zip(CHARTS)
        .map(|(series, (id, _, unit))| json!({ "id": id, "unit": unit, "series": series }))
        .collect();
    // Not over time: the phases chart has data of its own (html/phases.rs).
    if let Some(chart) = charts.iter_mut().find(|c| c["id"] == super::phases::ID) {
        *chart = super::phases::chart(summary);
    }
    json!({
        "version": summary.version,
        "plugin": { "path": summary.plugin.path, "sha256": summary.plugin.sha256 },
        "scenarios": tracks.iter().map(|t| t.name).collect::<Vec<_>>(),
        "rows": rows.len(),
        "intervals_per_row": rows.span(),
        "scheduled": summary.tasks.scheduled,
        "target_per_s": summary.rate.target_per_s,
        "x": x,
        "charts": charts,
    })
}
