//! `--out json=FILE`: one JSON object per line, written as the run goes, so a reader (`jq`, a
//! dashboard tailing the file) sees each interval as soon as it ends. Every line has a `type`:
//!
//! - `start`: `version`, `plugin` {`path`, `sha256`}, `config`.
//! - `interval`: one per interval and scenario: `scenario`, `index`, `start_s`, `end_s`, the
//!   counts (`scheduled`, `started`, one key per outcome, `retries`), `workers`, `idle`,
//!   `in_flight`, `lag_max_ms`, `underrun`, `latency_ms`/`service_ms`/`wait_ms` percentiles, and
//!   `http_reqs`, `http_req_failed`, `http_denied` when the plugin made requests.
//! - `metrics`: the plugin-metric samples of that interval, when there were any: `scenario`,
//!   `index`, `end_s` and `series`, a list of {`name`, `tags`, `kind`, `value`}, where `value`
//!   has the summary's shape for the kind (counters and checks count within the interval, so they
//!   add up over the lines to the summary's totals).
//! - `log`: a line the plugin printed (`--plugin-output`): `time` (RFC 3339), `scenario`,
//!   `worker` and `iteration` (null outside a task), `stream` (`stdout`/`stderr`), `line`, and
//!   `cut` when the line passed 64 KiB. Written with the interval lines, so up to an interval late.
//! - `summary`: last, the whole `--summary-json` object (thresholds included) with its `type`.

use std::io::{self, Write};

use loadhost_metrics::catalogue::{Timing, names};
use loadhost_metrics::{IntervalRow, Outcome, Percentiles, Window};
use serde_json::{Map, Value, json};

use crate::summary::{PluginMetric, Summary};
use crate::{RunInfo, VERSION, round_ms};

fn percentiles(p: &Percentiles) -> Value {
    json!({ "p50": round_ms(p.p50), "p90": round_ms(p.p90), "p99": round_ms(p.p99), "max": round_ms(p.max) })
}

/// A line the plugin printed, as its `log` line records it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LogLine {
    /// When it was printed (RFC 3339, milliseconds).
    pub time: String,
    /// The worker's scenario (`setup`/`teardown` for the lifecycle's own instance).
    pub scenario: String,
    /// The worker's id.
    pub worker: Option<u32>,
    /// The task's iteration.
    pub iteration: Option<u64>,
    /// `stdout` or `stderr`.
    pub stream: &'static str,
    /// The text, without its newline.
    pub line: String,
    /// Whether it was cut at 64 KiB.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

/// Writes the lines, flushing each, so a crash loses nothing already measured.
pub struct JsonLines<W: Write> {
    out: W,
}

impl<W: Write> JsonLines<W> {
    /// Write the `start` line.
    pub fn new(mut out: W, info: &RunInfo) -> io::Result<Self> {
        let start = json!({
            "type": "start",
            "version": VERSION,
            "plugin": { "path": info.plugin_path, "sha256": info.plugin_sha256 },
            "config": info.config,
            "tags": info.tags_json(),
        });
        writeln!(out, "{start}")?;
        out.flush()?;
        Ok(Self { out })
    }

    /// Write `log` lines (flushed with the next interval's line).
    pub fn logs(&mut self, lines: &[LogLine]) -> io::Result<()> {
        #[derive(serde::Serialize)]
        struct Tagged<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            #[serde(flatten)]
            line: &'a LogLine,
        }
        for line in lines {
            serde_json::to_writer(&mut self.out, &Tagged { kind: "log", line })?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Write an interval's line, and its `metrics` line when the plugin recorded anything.
    pub fn interval(&mut self, row: &IntervalRow, window: &Window) -> io::Result<()> {
        let c = &row.counts;
        let mut line = Map::new();
        line.insert("type".into(), json!("interval"));
        line.insert("scenario".into(), json!(&*row.scenario));
        line.insert("index".into(), json!(row.index));
        line.insert("start_s".into(), json!(row.start.as_secs_f64()));
        line.insert("end_s".into(), json!(row.end.as_secs_f64()));
        line.insert("scheduled".into(), json!(c.scheduled));
        line.insert("started".into(), json!(row.started));
        for outcome in Outcome::ALL {
            line.insert(outcome.name().into(), json!(c.get(outcome)));
        }
        line.insert("retries".into(), json!(c.retries));
        line.insert("workers".into(), json!(row.workers));
        line.insert("idle".into(), json!(row.idle));
        line.insert("in_flight".into(), json!(row.in_flight));
        line.insert("lag_max_ms".into(), json!(round_ms(row.lag_max.as_secs_f64() * 1000.0)));
        line.insert("underrun".into(), json!(row.underrun));
        for timing in [Timing::Latency, Timing::Service, Timing::Wait] {
            line.insert(timing.name().into(), percentiles(row.timing(timing)));
        }
        if row.http_reqs + row.http_denied > 0 {
            line.insert(names::HTTP_REQS.into(), json!(row.http_reqs));
            line.insert(names::HTTP_REQ_FAILED.into(), json!(row.http_req_failed));
            line.insert(names::HTTP_DENIED.into(), json!(row.http_denied));
        }
        if row.generator.is_measured() {
            let g = &row.generator;
            let shares = g.figures().map(|(name, v)| (name, json!(v.map(crate::summary::generator::round))));
            let counts = g.counts().map(|(name, n)| (name, json!(n)));
            let mut figures: Map<String, Value> =
                shares.into_iter().chain(counts).map(|(name, v)| (name.to_owned(), v)).collect();
            let judgement = row.generator_judgement();
            figures.insert("verdict".into(), json!(judgement.as_ref().map(|j| j.verdict)));
            figures.insert("cause".into(), json!(judgement.as_ref().and_then(|j| j.cause()).map(|(c, _)| c)));
            line.insert("generator".into(), Value::Object(figures));
        }
        writeln!(self.out, "{}", Value::Object(line))?;
        if !window.plugin.is_empty() {
            let series: Vec<Value> = window
                .plugin
                .series()
                .into_iter()
                .map(|s| {
                    let tags: Map<String, Value> = s.key.tags.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
                    json!({
                        "name": s.key.name,
                        "tags": tags,
                        "kind": s.value.kind(),
                        "value": serde_json::to_value(PluginMetric::from(&s.value)).unwrap_or(Value::Null),
                    })
                })
                .collect();
            let batch = json!({
                "type": "metrics", "scenario": &*row.scenario, "index": row.index,
                "end_s": row.end.as_secs_f64(), "series": series,
            });
            writeln!(self.out, "{batch}")?;
        }
        self.out.flush()
    }

    /// Write the `summary` line (the summary JSON's object with `"type": "summary"` among its
    /// keys) and hand back the writer.
    pub fn finish(mut self, summary: &Summary) -> io::Result<W> {
        let mut line = Map::new();
        line.insert("type".into(), json!("summary"));
        if let Value::Object(fields) = serde_json::to_value(summary)? {
            line.extend(fields);
        }
        writeln!(self.out, "{}", Value::Object(line))?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadhost_metrics::{Gauges, SeriesKey};

    use super::*;

    #[test]
    fn every_line_is_json_with_a_type_and_metrics_follow_their_interval() {
        let info = RunInfo {
            plugin_path: "p.wasm".into(),
            plugin_sha256: "ab".into(),
            plugin_ref: None,
            plugin_digest: None,
            scenario_plugins: Default::default(),
            config: json!({"rate": "10/s"}),
            model: String::new(),
            peak_rss: None,
            tags: Vec::new(),
        };
        let mut writer = JsonLines::new(Vec::new(), &info).unwrap();
        let mut window = Window::default();
        window.record_task(Outcome::Passed, None);
        window.plugin.counter(SeriesKey::new("logins".into(), vec![("site".into(), "a".into())]), 3);
        let row = IntervalRow::from_window(0, Duration::ZERO, Duration::from_secs(1), &window, Gauges::default());
        writer.interval(&row, &window).unwrap();
        writer.interval(&row, &Window::default()).unwrap();
        let summary = crate::summary::tests::sample();
        let text = String::from_utf8(writer.finish(&summary).unwrap()).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["start", "interval", "metrics", "interval", "summary"]);
        assert_eq!(lines[1]["passed"], 1);
        assert_eq!(lines[2]["series"][0]["name"], "logins");
        assert_eq!(lines[2]["series"][0]["tags"]["site"], "a");
        assert_eq!(lines[2]["series"][0]["value"]["count"], 3);
        assert_eq!(lines[4]["tasks"]["passed"], 4);
        let mut object = lines[4].clone();
        object.as_object_mut().unwrap().remove("type");
        assert_eq!(object, serde_json::to_value(&summary).unwrap(), "the summary line is the summary");
    }
}
