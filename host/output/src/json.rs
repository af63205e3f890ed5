//! The summary JSON (`--summary-json`): the keys of DESIGN.md §7, which tools rely on.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use loadhost_metrics::http::names;
use loadhost_metrics::{HttpStats, Percentiles, RunReport, SeriesValue, ThresholdResult};
use serde_json::{Value, json};

use crate::{RunInfo, VERSION, round_ms};

fn percentiles(p: &Percentiles) -> Value {
    json!({
        "min": round_ms(p.min), "mean": round_ms(p.mean), "p50": round_ms(p.p50), "p90": round_ms(p.p90),
        "p95": round_ms(p.p95), "p99": round_ms(p.p99), "p999": round_ms(p.p999), "max": round_ms(p.max),
    })
}

fn round_mb(bytes: u64) -> f64 {
    (bytes as f64 / f64::from(1 << 20) * 10.0).round() / 10.0
}

/// The summary as a JSON value.
pub fn summary(info: &RunInfo, report: &RunReport) -> Value {
    let c = report.counts();
    let t = &report.totals;
    let mut metrics = serde_json::Map::new();
    // Every name with its tag sets folded together, then each tagged series as `name{k:v}`.
    for series in t.plugin.by_name().into_iter().chain(t.plugin.series().into_iter().filter(|s| !s.key.tags.is_empty()))
    {
        if matches!(series.value, SeriesValue::Check { .. }) && !series.key.tags.is_empty() {
            continue;
        }
        metrics.insert(series.key.to_string(), serde_json::to_value(series.value.to_summary()).unwrap_or(Value::Null));
    }
    http_metrics(&t.http, report.elapsed.as_secs_f64(), &mut metrics);
    let mut checks = BTreeMap::new();
    for series in t.plugin.by_name() {
        if let SeriesValue::Check { passes, fails } = series.value {
            checks.insert(series.key.name, json!({ "passes": passes, "fails": fails }));
        }
    }
    json!({
        "version": VERSION,
        "plugin": { "path": info.plugin_path, "sha256": info.plugin_sha256 },
        "config": info.config,
        "tags": info.tags_json(),
        "started_at": humantime::format_rfc3339_millis(report.started_at).to_string(),
        "duration_s": report.elapsed.as_secs_f64(),
        "tasks": {
            "scheduled": c.scheduled, "passed": c.passed, "failed": c.failed, "aborted": c.aborted,
            "dropped": c.dropped, "timed_out": c.timed_out, "trapped": c.trapped,
            "interrupted": c.interrupted, "retries": c.retries, "started": report.started,
        },
        "attempts": t.attempts,
        "host": { "peak_rss_mb": info.peak_rss.map(round_mb) },
        "series": {
            "count": t.plugin.series().len(), "limit": loadhost_metrics::cardinality::MAX_SERIES,
            "folded_samples": t.plugin.folded(), "discarded_samples": t.plugin.discarded(),
            "invalid_samples": t.plugin.invalid(),
        },
        "rate": {
            "target_per_s": report.target_rate,
            "achieved_per_s": report.achieved_rate(),
            "generation_s": report.generation.as_secs_f64(),
        },
        "latency_ms": percentiles(&t.latency.percentiles()),
        "service_ms": percentiles(&t.service.percentiles()),
        "wait_ms": percentiles(&t.wait.percentiles()),
        "gate_wait_ms": percentiles(&t.gate_wait.percentiles()),
        "lag": {
            "max_ms": round_ms(t.lag_max.as_secs_f64() * 1000.0),
            "total_ms": round_ms(t.lag_total.as_secs_f64() * 1000.0),
        },
        "underrun": t.underrun,
        "workers": report.workers,
        "metrics": metrics,
        "checks": checks,
        "thresholds": {},
        "identity_holds": c.identity_holds(),
        "aborted": report.aborted,
        "teardown_error": report.teardown_error,
        "stopped": report.stopped,
    })
}

/// The built-in HTTP metrics, with k6's names and shapes (only when the plugin used HTTP).
fn http_metrics(http: &HttpStats, seconds: f64, metrics: &mut serde_json::Map<String, Value>) {
    if http.is_empty() {
        return;
    }
    let mut insert = |name: &str, value: Value| {
        metrics.insert(name.to_owned(), value);
    };
    let rate = if seconds > 0.0 { http.requests as f64 / seconds } else { 0.0 };
    insert(names::HTTP_REQS, json!({ "count": http.requests, "rate": rate }));
    for (status, count) in &http.by_status {
        insert(&format!("{}{{status:{status}}}", names::HTTP_REQS), json!({ "count": count }));
    }
    let mut duration = percentiles(&http.duration.percentiles());
    duration["count"] = json!(http.duration.count());
    insert(names::HTTP_REQ_DURATION, duration);
    let failed_rate = if http.requests == 0 { 0.0 } else { http.failed as f64 / http.requests as f64 };
    insert(
        names::HTTP_REQ_FAILED,
        json!({ "rate": failed_rate, "passes": http.failed, "fails": http.requests - http.failed }),
    );
    insert(names::HTTP_DENIED, json!({ "count": http.denied }));
    insert(names::HTTP_CONNECTIONS_OPENED, json!({ "count": http.connections_opened }));
    insert(names::DATA_SENT, json!({ "count": http.bytes_sent }));
    insert(names::DATA_RECEIVED, json!({ "count": http.bytes_received }));
    insert(names::HTTP_RESPONSE_BYTES, json!({ "count": http.body_bytes }));
    let by_status: serde_json::Map<String, Value> =
        http.by_status.iter().map(|(status, count)| (status.to_string(), json!(count))).collect();
    insert(names::HTTP_STATUS, Value::Object(by_status));
}

/// One section per scenario: its counts, rates, latency views and crew.
pub fn scenarios(reports: &[RunReport]) -> Value {
    let mut out = serde_json::Map::new();
    for r in reports {
        let c = r.counts();
        out.insert(
            r.scenario.clone(),
            json!({
                "start_after_s": r.offset.as_secs_f64(),
                "duration_s": r.elapsed.as_secs_f64(),
                "tasks": {
                    "scheduled": c.scheduled, "passed": c.passed, "failed": c.failed, "aborted": c.aborted,
                    "dropped": c.dropped, "timed_out": c.timed_out, "trapped": c.trapped,
                    "interrupted": c.interrupted, "retries": c.retries, "started": r.started,
                },
                "rate": { "target_per_s": r.target_rate, "achieved_per_s": r.achieved_rate() },
                "latency_ms": percentiles(&r.totals.latency.percentiles()),
                "service_ms": percentiles(&r.totals.service.percentiles()),
                "wait_ms": percentiles(&r.totals.wait.percentiles()),
                "workers": r.workers,
                "identity_holds": c.identity_holds(),
            }),
        );
    }
    Value::Object(out)
}

/// Thresholds keyed by expression: `{"value", "ok", "abort_on_fail", "aborted_run"}`; `value` is
/// null when the metric had no samples (which fails the threshold).
pub fn thresholds(results: &[ThresholdResult]) -> Value {
    let map: serde_json::Map<String, Value> = results
        .iter()
        .map(|t| {
            let value = t.value.map(|v| (v * 1e6).round() / 1e6);
            (
                t.expr.clone(),
                json!({ "value": value, "ok": t.passed, "abort_on_fail": t.abort_on_fail, "aborted_run": t.aborted_run }),
            )
        })
        .collect();
    Value::Object(map)
}

/// Write the summary to `path` (pretty-printed, newline-terminated).
pub fn write(path: &Path, value: &Value) -> std::io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    serde_json::to_writer_pretty(&mut file, value)?;
    file.write_all(b"\n")?;
    file.sync_all()
}
