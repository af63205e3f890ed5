//! The push outputs (docs/outputs.md, "Pushed metrics") against real receivers on loopback:
//! Debian's Prometheus 2.42 taking remote write with native histograms, Debian's InfluxDB 1.6,
//! and an OTLP/HTTP receiver that decodes with the official protobuf definitions. What each
//! receiver holds after a run is read back with its own query language and compared with the
//! run's summary; a receiver that is down, or slow, changes nothing about the run.

use std::time::Duration;

use serde_json::Value;

use crate::common::{Example, Loadhost, Run, assert_identity, plugin};
use crate::receivers::{Influx, OtlpReceiver, Prometheus, SlowReceiver, closed_port};
use crate::rogue::{Answer, Rogue};
use crate::target_process::TargetProcess;

/// A native histogram's quantile is within one bucket (2^(1/32): 2.2%) of the HDR value the
/// summary reports; the summary rounds milliseconds to three decimals.
const NATIVE_ERROR: f64 = 0.022;

/// `loadhost run http-get` against `target` at `rate` for `duration`, with `extra` arguments (and
/// the summary JSON every run writes).
fn run(target: &TargetProcess, rate: &str, duration: &str, extra: &[&str]) -> Run {
    let url = format!("TARGET_URL={}/", target.url);
    let mut args = vec!["-e", &url, "--allow-host", &target.authority, "-r", rate, "-d", duration];
    args.extend(extra);
    Loadhost::run_plugin(&plugin(Example::HttpGet), &args)
}

/// Whether `got` (seconds) is within the native histograms' error of the summary's `ms`.
fn within_error(got: f64, ms: f64) -> bool {
    let want = ms / 1000.0;
    (got - want).abs() <= want * NATIVE_ERROR + 0.0005 / 1000.0
}

fn count(summary: &Value, metric: &str) -> u64 {
    summary["metrics"][metric]["count"].as_u64().unwrap_or_else(|| panic!("{metric} in {}", summary["metrics"]))
}

fn receiver(summary: &Value) -> &Value {
    &summary["exports"]["receivers"][0]
}

#[test]
fn remote_write_totals_and_the_native_histogram_s_p99_match_the_summary() {
    if !Prometheus::available() {
        return;
    }
    let prometheus = Prometheus::start(None);
    let target = TargetProcess::start(&[]);
    let out = format!("prometheus-rw={}", prometheus.write_url());
    let run = run(&target, "200", "10s", &["--out", &out, "--run-id", "rw-1", "--tag", "team=checkout"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let summary = run.summary();
    assert_identity(&summary);
    assert_eq!(receiver(&summary)["final_delivered"], true, "{}", summary["exports"]);
    assert_eq!(receiver(&summary)["dropped"], 0);
    assert!(run.stderr.contains("the final push was delivered"), "{}", run.stderr);
    assert_eq!(summary["exports"]["run_id"], "rw-1");

    let reqs = prometheus.wait_for_scalar(r#"sum(loadhost_http_reqs_total{run_id="rw-1"})"#, Duration::from_secs(10));
    assert_eq!(reqs as u64, count(&summary, "http_reqs"), "every request, exactly");
    let passed =
        prometheus.query_scalar(r#"sum(loadhost_tasks_total{run_id="rw-1",outcome="passed",team="checkout"})"#);
    assert_eq!(passed, Some(summary["tasks"]["passed"].as_f64().unwrap()), "the --tag is a label");
    let p99 = prometheus
        .query_scalar(r#"histogram_quantile(0.99, sum(loadhost_latency_seconds{run_id="rw-1"}))"#)
        .expect("a native histogram");
    let want = summary["latency_ms"]["p99"].as_f64().unwrap();
    assert!(within_error(p99, want), "p99 {p99} s from the native histogram, {want} ms in the summary");
    let count_of = prometheus.query_scalar(r#"histogram_count(sum(loadhost_latency_seconds{run_id="rw-1"}))"#);
    assert_eq!(count_of, Some(summary["tasks"]["passed"].as_f64().unwrap()), "a latency per ended task");
    dashboard_queries_answer(&prometheus, "rw-1");
}

/// Every query of the Grafana dashboard (deploy/grafana/loadhost.json), its variables filled in
/// for run `run_id`, runs on this Prometheus and answers with data, but those a run of `http-get`
/// without thresholds has no data for.
fn dashboard_queries_answer(prometheus: &Prometheus, run_id: &str) {
    let path = crate::common::root().join("deploy/grafana/loadhost.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut exprs = Vec::new();
    collect_exprs(&dashboard, &mut exprs);
    assert!(exprs.len() >= 40, "the dashboard's queries: {}", exprs.len());
    let mut empty = Vec::new();
    for expr in &exprs {
        let promql = expr
            .replace("$run_id", run_id)
            .replace("$scenario", ".*")
            .replace("$segment", ".*")
            .replace("$__rate_interval", "1m")
            .replace("$__range", "5m");
        let data = prometheus.query(&promql);
        if data["result"].as_array().is_none_or(Vec::is_empty) {
            empty.push(promql);
        }
    }
    // Without thresholds, or with nothing to count (no connect failed for want of a descriptor),
    // a query has nothing to answer.
    let expected_empty = |q: &str| q.contains("threshold_passing") || q.contains("_exhausted");
    let unexpected: Vec<&String> = empty.iter().filter(|q| !expected_empty(q)).collect();
    assert!(unexpected.is_empty(), "dashboard queries without data: {unexpected:#?}");
}

fn collect_exprs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(expr)) = map.get("expr") {
                out.push(expr.clone());
            }
            map.values().for_each(|v| collect_exprs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_exprs(v, out)),
        _ => {}
    }
}

#[test]
fn two_segments_pushing_to_one_prometheus_add_up_to_the_merged_run() {
    if !Prometheus::available() {
        return;
    }
    let prometheus = Prometheus::start(None);
    let target = TargetProcess::start(&[]);
    let out = format!("prometheus-rw={}", prometheus.write_url());
    let url = format!("TARGET_URL={}/delay?ms=2", target.url);
    let segments: Vec<_> = (0..2)
        .map(|i| {
            let segment = format!("{i}/2");
            let results = format!("segment-{i}.lhr");
            let args = [
                "-e",
                &url,
                "--allow-host",
                &target.authority,
                "-r",
                "300",
                "-d",
                "6s",
                "--segment",
                &segment,
                "--run-id",
                "seg-1",
                "--out",
                &out,
                "--results",
                &results,
            ];
            Loadhost::new().arg_run(&plugin(Example::HttpGet), &args).spawn()
        })
        .collect();
    let runs: Vec<Run> = segments.into_iter().map(|s| s.finish_within(Duration::from_secs(60))).collect();
    let dir = tempfile::tempdir().unwrap();
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(run.code, 0, "segment {i}: {}", run.stderr);
        let file = format!("segment-{i}.lhr");
        std::fs::copy(run.dir.path().join(&file), dir.path().join(&file)).unwrap();
    }
    let merged = std::process::Command::new(env!("CARGO_BIN_EXE_loadhost"))
        .args(["merge", "segment-0.lhr", "segment-1.lhr", "--summary-json", "merged.json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(merged.status.success(), "merge: {}", String::from_utf8_lossy(&merged.stderr));
    let merged: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("merged.json")).unwrap()).unwrap();

    let segments = prometheus.query(r#"count by (segment) (loadhost_http_reqs_total{run_id="seg-1"})"#);
    assert_eq!(segments["result"].as_array().map(Vec::len), Some(2), "one series per segment: {segments}");
    let reqs = prometheus.wait_for_scalar(r#"sum(loadhost_http_reqs_total{run_id="seg-1"})"#, Duration::from_secs(10));
    assert_eq!(reqs as u64, count(&merged, "http_reqs"), "the segments' requests add up to the merged run's");
    let p99 = prometheus
        .query_scalar(r#"histogram_quantile(0.99, sum(loadhost_latency_seconds{run_id="seg-1"}))"#)
        .expect("the segments' native histograms, summed");
    let want = merged["latency_ms"]["p99"].as_f64().unwrap();
    assert!(within_error(p99, want), "p99 {p99} s over both segments, {want} ms in the merged summary");
}

#[test]
fn influxdb_gets_a_point_per_interval_that_sums_to_the_summary() {
    if !Influx::available() {
        return;
    }
    let influx = Influx::start();
    influx.create_db("loadhost");
    let target = TargetProcess::start(&[]);
    let out = format!("influxdb={}", influx.write_url("loadhost"));
    let run = run(&target, "200", "4s", &["--out", &out, "--run-id", "influx-1"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let summary = run.summary();
    assert_eq!(receiver(&summary)["final_delivered"], true, "{}", summary["exports"]);
    let total = influx.query("loadhost", r#"SELECT sum("count") FROM "loadhost_http_reqs" WHERE run_id = 'influx-1'"#);
    let value = &total["results"][0]["series"][0]["values"][0][1];
    assert_eq!(value.as_u64(), Some(count(&summary, "http_reqs")), "{total}");
    let points = influx
        .query("loadhost", r#"SELECT "count", "p99", "max" FROM "loadhost_latency_seconds" WHERE run_id = 'influx-1'"#);
    let rows = points["results"][0]["series"][0]["values"].as_array().cloned().unwrap_or_default();
    assert!(rows.len() >= 4, "a point per interval: {points}");
    let counted: u64 = rows.iter().filter_map(|r| r[1].as_u64()).sum();
    assert_eq!(counted, summary["tasks"]["passed"].as_u64().unwrap(), "each interval's latencies, once");
}

#[test]
fn otlp_exponential_histograms_carry_the_summary_s_count_and_sum_and_the_run_id() {
    if !OtlpReceiver::available() {
        return;
    }
    let receiver_ = OtlpReceiver::start(Duration::ZERO);
    let target = TargetProcess::start(&[]);
    let out = format!("otlp={}", receiver_.url());
    let run = run(&target, "200", "3s", &["--out", &out, "--run-id", "otlp-1"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let summary = run.summary();
    assert_eq!(receiver(&summary)["final_delivered"], true, "{}", summary["exports"]);
    let requests = receiver_.requests();
    let last = requests.last().expect("the receiver got pushes");
    let resource = &last["resourceMetrics"][0];
    let attributes = resource["resource"]["attributes"].as_array().unwrap();
    let attribute = |key: &str| {
        attributes.iter().find(|a| a["key"] == key).map(|a| a["value"]["stringValue"].clone()).unwrap_or_default()
    };
    assert_eq!(attribute("service.name"), "loadhost");
    assert_eq!(attribute("run_id"), "otlp-1");
    let metrics = resource["scopeMetrics"][0]["metrics"].as_array().unwrap();
    let latency = metrics.iter().find(|m| m["name"] == "loadhost_latency_seconds").expect("the latency metric");
    let point = &latency["exponentialHistogram"]["dataPoints"][0];
    assert_eq!(latency["exponentialHistogram"]["aggregationTemporality"], "AGGREGATION_TEMPORALITY_CUMULATIVE");
    assert_eq!(point["scale"], 5);
    let ended = summary["tasks"]["passed"].as_u64().unwrap();
    assert_eq!(point["count"].as_str().and_then(|c| c.parse().ok()), Some(ended), "{point}");
    let buckets: u64 = point["positive"]["bucketCounts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c.as_str().and_then(|c| c.parse::<u64>().ok()))
        .sum();
    assert_eq!(buckets, ended, "every value in a bucket");
    let sum = point["sum"].as_f64().unwrap();
    let want = summary["latency_ms"]["mean"].as_f64().unwrap() * ended as f64 / 1000.0;
    // The summary's mean is rounded to 0.001 ms, which alone moves mean × count by up to
    // 0.0005 ms per task (0.3% of a 0.166 ms mean, as seen on CI).
    let rounding = 0.0005 * ended as f64 / 1000.0;
    assert!((sum - want).abs() <= want * 0.002 + rounding, "sum {sum} s, the summary's mean × count {want} s");
    let reqs = metrics.iter().find(|m| m["name"] == "loadhost_http_reqs").expect("http_reqs");
    assert_eq!(reqs["sum"]["isMonotonic"], true);
    let total: u64 = reqs["sum"]["dataPoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["asInt"].as_str().and_then(|n| n.parse::<u64>().ok()))
        .sum();
    assert_eq!(total, count(&summary, "http_reqs"));
}

#[test]
fn a_receiver_down_for_the_whole_run_changes_nothing_but_says_what_it_missed() {
    let target = TargetProcess::start(&[]);
    let out = format!("prometheus-rw=http://pusher:hunter2@{}/api/v1/write", closed_port());
    let token = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(token.path(), "s3cr3t-token\n").unwrap();
    let token = token.path().to_str().unwrap();
    let run = run(&target, "100", "3s", &["--out", &out, "--out-token-file", token]);
    assert_eq!(run.code, 0, "the exit code is the run's: {}", run.stderr);
    let text = run.file("summary.json");
    for secret in ["hunter2", "s3cr3t-token"] {
        assert!(
            !text.contains(secret) && !run.stderr.contains(secret) && !run.stdout.contains(secret),
            "{secret} shown"
        );
    }
    let summary = run.summary();
    assert_eq!(summary["config"]["out-token"], "[redacted]");
    assert_identity(&summary);
    assert_eq!(summary["tasks"]["scheduled"], 300, "the plan, exactly");
    // What a receiver could change is whether a task fails: none does. How many ran is the
    // machine's to say (a busy one dropped 9 of 300 once, the receiver not involved), so the
    // rest are accounted for as dropped or interrupted, never lost.
    let tasks = &summary["tasks"];
    let count = |outcome: &str| tasks[outcome].as_u64().unwrap_or(0);
    for outcome in ["failed", "timed_out", "trapped", "aborted"] {
        assert_eq!(count(outcome), 0, "{outcome}: {tasks}");
    }
    assert_eq!(count("passed") + count("dropped") + count("interrupted"), 300, "{tasks}");
    assert!(count("passed") >= 150, "most of the plan ran: {tasks}");
    let r = receiver(&summary);
    assert_eq!((r["sent"].as_u64(), r["final_delivered"].as_bool()), (Some(0), Some(false)), "{r}");
    assert!(r["dropped"].as_u64().unwrap() >= 1, "{r}");
    assert!(r["last_error"].as_str().unwrap().contains("onnection refused"), "{r}");
    assert!(run.stdout.contains("final figures NOT delivered"), "{}", run.stdout);
    assert!(run.stderr.contains("the final push failed"), "{}", run.stderr);
}

#[test]
fn a_slow_receiver_does_not_slow_the_run() {
    if !SlowReceiver::available() {
        return;
    }
    let slow = SlowReceiver::start(Duration::from_secs(2));
    let target = TargetProcess::start(&[]);
    let out = format!("prometheus-rw={}/api/v1/write", slow.url());
    let pushing = run(&target, "1000", "5s", &["--out", &out]);
    let alone = run(&target, "1000", "5s", &[]);
    for r in [&pushing, &alone] {
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let (pushing, alone) = (pushing.summary(), alone.summary());
    assert!(slow.hits() >= 2, "the receiver was reached");
    let rate = |s: &Value| s["rate"]["achieved_per_s"].as_f64().unwrap();
    // The run alone is the control: on a busy machine neither may reach the plan.
    assert!(
        rate(&pushing) >= rate(&alone).min(1000.0) * 0.98,
        "{}/s pushing, {}/s alone",
        rate(&pushing),
        rate(&alone)
    );
    let wait = |s: &Value| s["wait_ms"]["p99"].as_f64().unwrap();
    // The receiver answers after 2 s: a run that waited for it would have waits of seconds. Two
    // runs beside the rest of the suite differ by a few milliseconds of scheduling (seen: 2.6 ms
    // against 0.15), so the bound is the receiver's delay, far off; bench/export.sh measures the
    // cost on a quiet machine.
    eprintln!("wait p99 {} ms pushing to a slow receiver, {} ms alone", wait(&pushing), wait(&alone));
    assert!(
        wait(&pushing) <= wait(&alone) + 100.0,
        "wait p99 {} ms pushing, {} ms alone",
        wait(&pushing),
        wait(&alone)
    );
    let r = receiver(&pushing);
    let n = |key: &str| r[key].as_u64().unwrap();
    assert!(
        n("sent") < 5 && n("superseded") + n("dropped") >= 1,
        "a receiver slower than the intervals gets fewer: {r}"
    );
    assert_eq!(r["final_delivered"], true, "the final push waits out the slow answer: {r}");
}

/// Issue 41, defect 3: a receiver answering 307 to another host. Before: the push followed it,
/// the other host got the body with the InfluxDB password in a `Referer`
/// (`…/write?db=loadhost&u=pusher&p=hunter2`), and the terminal said "final figures delivered".
#[test]
fn a_receiver_s_redirect_is_not_followed_and_the_host_it_names_gets_nothing() {
    let elsewhere = Rogue::start(Answer::NoContent);
    let redirecting = Rogue::start(Answer::Redirect(format!("{}/write?db=loadhost", elsewhere.url())));
    let target = TargetProcess::start(&[]);
    let out = format!("influxdb={}/write?db=loadhost&u=pusher&p=hunter2", redirecting.url());
    let run = run(&target, "50", "2s", &["--out", &out]);
    assert_eq!(run.code, 0, "the exit code is the run's: {}", run.stderr);
    assert_eq!(elsewhere.connections(), 0, "the redirect was followed; the other host got: {:#?}", elsewhere.heads());
    assert!(redirecting.connections() >= 1, "the receiver was reached");
    assert!(redirecting.heads().iter().all(|h| !h.to_ascii_lowercase().contains("\nreferer:")), "a Referer was sent");
    let summary = run.summary();
    assert_identity(&summary);
    let r = receiver(&summary);
    assert_eq!((r["sent"].as_u64(), r["final_delivered"].as_bool()), (Some(0), Some(false)), "{r}");
    let err = r["last_error"].as_str().unwrap_or_default();
    assert!(err.starts_with("answered 307 (a redirect, not followed: Location http://127.0.0.1:"), "{r}");
    assert!(run.stdout.contains("final figures NOT delivered"), "{}", run.stdout);
    for text in [&run.stdout, &run.stderr, &run.file("summary.json")] {
        assert!(!text.contains("hunter2"), "the password shown: {text}");
    }
}

/// Issue 41, defect 4: a receiver answering 500 with a body that never ends. Before: each body
/// was read whole into memory (the peer offers 512 MiB a connection here; 4.1 GiB and the OOM
/// killer in the issue), so the run lost its summary and its results file its end line.
#[test]
fn a_receiver_s_endless_error_body_is_read_a_few_kib_deep_and_the_run_ends_whole() {
    let endless = Rogue::start(Answer::Endless500);
    let target = TargetProcess::start(&[]);
    let out = format!("prometheus-rw={}/api/v1/write", endless.url());
    let run = run(&target, "50", "2s", &["--out", &out, "--results", "run.lhr"]);
    assert_eq!(run.code, 0, "the exit code is the run's: {}", run.stderr);
    let summary = run.summary();
    assert_identity(&summary);
    // What the peer got out on each connection before loadhost dropped it: the socket buffers
    // (a few MiB on loopback), never the whole offer.
    let sent = endless.sent();
    let most = sent.iter().max().copied().unwrap_or(0);
    let rss = summary["host"]["peak_rss_mb"].as_f64().expect("host.peak_rss_mb");
    eprintln!(
        "the endless body: {} connections, at most {} KiB taken from one; peak RSS {rss} MiB",
        sent.len(),
        most >> 10
    );
    assert!(!sent.is_empty(), "the receiver was reached");
    assert!(most < 32 << 20, "{most} bytes taken from one connection: {sent:?}");
    assert!(rss < 256.0, "peak RSS {rss} MiB");
    let results = run.file("run.lhr");
    assert!(results.lines().last().is_some_and(|l| l.starts_with(r#"{"end":"#)), "the results file's end line");
    let r = receiver(&summary);
    assert_eq!((r["sent"].as_u64(), r["final_delivered"].as_bool()), (Some(0), Some(false)), "{r}");
    let err = r["last_error"].as_str().unwrap_or_default();
    assert!(err.starts_with("HTTP 500 Internal Server Error: xxxx") && err.len() < 300, "one short line: {err}");
    assert!(run.stdout.contains("final figures NOT delivered"), "{}", run.stdout);
}
