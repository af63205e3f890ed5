//! Outputs read while or after the run goes: `--out json=FILE` parsed back against the summary,
//! `--metrics-addr` scraped by a real HTTP client mid-run and by a real Prometheus, `--html` opened in
//! headless Chromium.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Example, Fixture, Loadhost, assert_ok, fixture, plugin, root};
use crate::receivers::Prometheus;
use crate::target_process::TargetProcess;

#[test]
fn json_lines_add_up_to_the_summary() {
    let run = Loadhost::run_plugin(&fixture(Fixture::Metrics), &["-r", "200", "-n", "500", "--out", "json=run.jsonl"]);
    assert_ok(&run);
    let s = run.summary();
    let lines: Vec<Value> =
        run.file("run.jsonl").lines().map(|l| serde_json::from_str(l).expect("every line is JSON")).collect();
    assert_eq!(lines[0]["type"], "start");
    assert_eq!(lines[0]["plugin"]["sha256"], s["plugin"]["sha256"]);
    assert_eq!(lines.last().unwrap()["type"], "summary");
    let intervals: Vec<&Value> = lines.iter().filter(|l| l["type"] == "interval").collect();
    assert!(intervals.len() >= 2, "500 tasks at 200/s span several intervals: {}", intervals.len());
    for key in ["scheduled", "passed", "failed", "dropped", "interrupted", "retries"] {
        let summed: u64 = intervals.iter().map(|l| l[key].as_u64().unwrap()).sum();
        assert_eq!(summed, s["tasks"][key].as_u64().unwrap(), "{key} over the interval lines");
    }
    // Counters and checks count within their interval, so the batches add up to the totals.
    let mut counters: BTreeMap<String, u64> = BTreeMap::new();
    let (mut passes, mut fails) = (0, 0);
    for batch in lines.iter().filter(|l| l["type"] == "metrics") {
        for series in batch["series"].as_array().unwrap() {
            match series["kind"].as_str().unwrap() {
                "counter" => {
                    let tags: Vec<String> = series["tags"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(k, v)| format!("{k}:{}", v.as_str().unwrap()))
                        .collect();
                    let key = format!("{}{{{}}}", series["name"].as_str().unwrap(), tags.join(","));
                    *counters.entry(key).or_default() += series["value"]["count"].as_u64().unwrap();
                }
                "check" => {
                    passes += series["value"]["passes"].as_u64().unwrap();
                    fails += series["value"]["fails"].as_u64().unwrap();
                }
                _ => {}
            }
        }
    }
    assert_eq!(counters["tasks{parity:even}"], s["metrics"]["tasks{parity:even}"]["count"].as_u64().unwrap());
    assert_eq!(counters["tasks{parity:odd}"], s["metrics"]["tasks{parity:odd}"]["count"].as_u64().unwrap());
    // Two checks: `even` (half pass) and `known` (all pass).
    assert_eq!((passes, fails), (750, 250));
    assert_eq!(s["checks"]["even"]["passes"], 250);
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `GET /metrics` with a plain HTTP/1.1 client: the content type and the body.
fn scrape(port: u16) -> Option<(String, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let content_type = head.lines().find_map(|l| l.strip_prefix("content-type: "))?.to_owned();
    // hyper answers a whole body with content-length, so there is no chunk framing to undo.
    Some((content_type, body.to_owned()))
}

/// One sample of OpenMetrics text: its name, its labels, its value.
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parse OpenMetrics text (label values without `,` or `"`, as these runs give them), checking the
/// exposition's shape.
fn samples(text: &str) -> Vec<Sample> {
    assert_eq!(text.lines().last(), Some("# EOF"), "OpenMetrics ends with # EOF");
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("a sample line: {line}"));
        let (name, labels) = series.split_once('{').unwrap_or((series, "}"));
        let labels = labels.strip_suffix('}').unwrap_or_else(|| panic!("labels end with }}: {line}"));
        let labels = labels
            .split(',')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or_else(|| panic!("a label: {line}"));
                (key.to_owned(), value.trim_matches('"').to_owned())
            })
            .collect();
        let value = if value == "+Inf" { f64::INFINITY } else { value.parse().unwrap_or_else(|_| panic!("{line}")) };
        out.push(Sample { name: name.to_owned(), labels, value });
    }
    out
}

/// The value of the one sample named `name` whose labels include `labels`.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut found = samples
        .iter()
        .filter(|s| s.name == name && labels.iter().all(|(k, v)| s.labels.get(*k).is_some_and(|x| x == v)));
    let first = found.next()?;
    assert!(found.next().is_none(), "one {name}{labels:?}");
    Some(first.value)
}

#[test]
fn openmetrics_is_scraped_while_the_run_goes_and_the_last_scrape_has_the_whole_run() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let started = Instant::now();
    let running = Loadhost::new()
        .arg_run(
            &plugin(Example::Sleep),
            &[
                "-e",
                "SLEEP_MS=5",
                "-r",
                "200",
                "-d",
                "4s",
                "--metrics-addr",
                &addr,
                "--threshold",
                "latency_ms:p(99)<1000",
            ],
        )
        .spawn();
    let default = [("scenario", "default")];
    let scheduled = |s: &[Sample]| value(s, "loadhost_tasks_scheduled_total", &default);
    // A scraper every 300 ms, as long as the endpoint answers: until the process has ended.
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut seen: Vec<Vec<Sample>> = Vec::new();
    let mut refused_after_answers = false;
    while Instant::now() < deadline {
        match scrape(port) {
            Some((content_type, body)) => {
                assert!(content_type.starts_with("application/openmetrics-text"), "{content_type}");
                let parsed = samples(&body);
                if scheduled(&parsed).is_some_and(|n| n > 0.0) {
                    seen.push(parsed);
                }
            }
            None if !seen.is_empty() => {
                refused_after_answers = true;
                break;
            }
            None => {}
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let run = running.finish();
    let took = started.elapsed();
    assert_ok(&run);
    assert!(refused_after_answers, "the endpoint closed with the process");
    let (first, last) = (&seen[0], &seen[seen.len() - 1]);
    assert!(seen.len() >= 3, "scrapes while the run went: {}", seen.len());
    assert!(scheduled(first) < Some(800.0), "scraped before the end: {:?}", scheduled(first));
    assert!(scheduled(last) > scheduled(first), "counters grow");
    assert!(value(last, "loadhost_workers", &default) >= Some(1.0));
    let passing = [("threshold", "latency_ms:p(99)<1000")];
    assert_eq!(value(last, "loadhost_threshold_passing", &passing), Some(1.0));
    // Every series carries the run's id, first.
    assert!(last.iter().all(|s| s.labels.contains_key("run_id")), "a run_id on every series");
    // The endpoint lingered for the scraper: its last scrape has the whole run, not the run less
    // its last interval, and the run ended at that scrape, not at the linger's 15 s.
    let summary = run.summary();
    assert_eq!(scheduled(last), summary["tasks"]["scheduled"].as_f64(), "the last scrape has every task");
    let passed = value(last, "loadhost_tasks_total", &[("scenario", "default"), ("outcome", "passed")]);
    assert_eq!(passed, summary["tasks"]["passed"].as_f64());
    // Latency is a classic histogram over the whole run: cumulative buckets up to `+Inf`, which
    // counts every task that ran (all pass; a busy machine may drop some, which have no latency),
    // as `_count` does; no quantile gauges of the last interval.
    let buckets: Vec<(f64, f64)> = last
        .iter()
        .filter(|s| s.name == "loadhost_latency_seconds_bucket")
        .map(|s| (s.labels["le"].parse().unwrap_or(f64::INFINITY), s.value))
        .collect();
    assert!(buckets.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "cumulative: {buckets:?}");
    assert_eq!(buckets.last().map(|b| b.0), Some(f64::INFINITY));
    assert_eq!(buckets.last().map(|b| b.1), passed, "+Inf is every task that ran");
    assert_eq!(value(last, "loadhost_latency_seconds_count", &default), passed);
    // A 5 ms sleep: no task is under 5 ms, and the sum is at least 5 ms a task.
    let under_5ms: f64 = buckets.iter().filter(|b| b.0 < 0.005).map(|b| b.1).fold(0.0, f64::max);
    assert_eq!(under_5ms, 0.0, "{buckets:?}");
    assert!(value(last, "loadhost_latency_seconds_sum", &default) >= passed.map(|n| n * 0.005));
    assert!(!last.iter().any(|s| s.name.starts_with("loadhost_latency_ms")), "the quantile gauges are gone");
    assert!(run.stderr.contains("a scrape read the final figures"), "{}", run.stderr);
    assert!(took < Duration::from_secs(4 + 12), "it did not wait out the linger: {took:?}");
}

#[test]
fn without_a_scraper_the_endpoint_lingers_as_long_as_asked_and_says_so() {
    let linger = |secs: &str| {
        let addr = format!("127.0.0.1:{}", free_port());
        let started = Instant::now();
        let run = Loadhost::run_plugin(
            &plugin(Example::Noop),
            &["-r", "50", "-d", "1s", "--metrics-addr", &addr, "--metrics-linger", secs],
        );
        assert_ok(&run);
        (run, started.elapsed())
    };
    let (run, took) = linger("2s");
    assert!(run.stderr.contains("until a scrape reads them, at most 2s"), "{}", run.stderr);
    assert!(run.stderr.contains("no scrape read the final figures"), "{}", run.stderr);
    assert!(took >= Duration::from_secs(3), "a 1 s run and a 2 s linger: {took:?}");
    let (run, _) = linger("0s");
    assert!(!run.stderr.contains("final figures"), "no linger asked for: {}", run.stderr);
}

#[test]
fn the_html_report_opens_in_headless_chromium_without_errors() {
    let run = Loadhost::run_plugin(
        &fixture(Fixture::Metrics),
        &["-r", "300", "-d", "3s", "--html", "report.html", "--metric", "size:trend", "--threshold", "size:p(99)<1"],
    );
    assert_eq!(run.code, 99, "the threshold fails, and the report still gets written: {}", run.stderr);
    let page = run.file("report.html");
    assert!(page.contains("size:p(99)&lt;1") || page.contains("size:p(99)<1"), "the threshold is in the report");
    // A failed threshold always has a limit: the target, or the host when a busy machine fell
    // behind first; the report names the one the summary names.
    let limit = run.summary()["verdict"]["limit"].as_str().map(str::to_owned);
    let limit = limit.expect("a failed threshold names a limit");
    assert!(page.contains(&format!("Limited by the {limit}")), "the verdict names what limited the run");
    let report = run.dir.path().join("report.html");
    let shot = run.dir.path().join("report.png");
    let check = std::process::Command::new(root().join("tests/browser/check_html.sh"))
        .arg(&report)
        .arg(&shot)
        .output()
        .expect("tests/browser/check_html.sh runs");
    assert!(
        check.status.success(),
        "the report renders in Chromium with no errors:\n{}\n{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "a real screenshot: {} bytes", png.len());
}

/// The status line of `GET /metrics` on `addr`, with `Authorization: Bearer TOKEN` when given.
fn scrape_status(addr: &str, token: Option<&str>) -> Option<String> {
    let mut stream = TcpStream::connect(addr).ok()?;
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    response.lines().next().map(str::to_owned)
}

#[test]
fn the_metrics_endpoint_binds_off_loopback_only_with_a_token_and_then_asks_for_it() {
    let port = free_port();
    // Every address (as in a pod): refused without a token, served with one.
    let all = format!("0.0.0.0:{port}");
    let refused = Loadhost::run_plugin(&plugin(Example::Noop), &["-n", "5", "--metrics-addr", &all]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    let running = Loadhost::new()
        .env("LOADHOST_METRICS_TOKEN", "s3cret-scrape")
        .arg_run(&plugin(Example::Sleep), &["-e", "SLEEP_MS=5", "-r", "50", "-d", "3s", "--metrics-addr", &all])
        .spawn();
    let addr = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut statuses = (None, None);
    while (statuses.0.is_none() || statuses.1.is_none()) && Instant::now() < deadline {
        statuses = (scrape_status(&addr, None), scrape_status(&addr, Some("s3cret-scrape")));
        std::thread::sleep(Duration::from_millis(200));
    }
    let run = running.finish();
    assert_ok(&run);
    assert_eq!(statuses.0.as_deref(), Some("HTTP/1.1 401 Unauthorized"), "no token, no metrics");
    assert_eq!(statuses.1.as_deref(), Some("HTTP/1.1 200 OK"));
    assert!(!run.file("summary.json").contains("s3cret-scrape"), "the token never reaches an output");
}

#[test]
fn prometheus_scrapes_native_histograms_whose_p99_is_the_summarys_and_keeps_the_final_figures() {
    if !Prometheus::available() {
        return;
    }
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    // Prometheus first: it scrapes every second from about 5 s after its start (the endpoint is
    // down until the run binds it), with native histograms on, so it asks for protobuf.
    let prometheus = Prometheus::start(Some(addr));
    let run = Loadhost::run_plugin(
        &plugin(Example::Sleep),
        &["-e", "SLEEP_MS=5", "-r", "200", "-d", "10s", "--metrics-addr", &addr.to_string()],
    );
    assert_ok(&run);
    assert!(run.stderr.contains("a scrape read the final figures"), "{}", run.stderr);
    let summary = run.summary();
    let job = r#"{job="loadhost"}"#;
    // The endpoint has gone, so the series are stale now: read the last scrape's samples as they
    // were when it was taken (`@`), which the linger made the final figures.
    let scheduled = prometheus.query(&format!("loadhost_tasks_scheduled_total{job}[2m]"));
    let points = scheduled["result"][0]["values"].as_array().cloned().unwrap_or_default();
    let last = points.last().unwrap_or_else(|| panic!("scrapes of the run: {scheduled}"));
    assert!(points.len() >= 3, "scraped while the run went: {points:?}");
    let at = last[0].as_f64().expect("a timestamp");
    assert_eq!(last[1].as_str().and_then(|v| v.parse().ok()), summary["tasks"]["scheduled"].as_f64());
    // Native histograms (no classic buckets were stored): every task that ran (they all pass), and
    // the summary's p99.
    let latency = format!("loadhost_latency_seconds{job} @ {at}");
    assert_eq!(prometheus.query_scalar(&format!("histogram_count({latency})")), summary["tasks"]["passed"].as_f64());
    assert_eq!(prometheus.query_scalar("count(loadhost_latency_seconds_bucket)"), None, "native, not classic");
    let p99 = prometheus.query_scalar(&format!("histogram_quantile(0.99, {latency})")).expect("a p99");
    let expected = summary["latency_ms"]["p99"].as_f64().expect("the summary's p99") / 1000.0;
    // A bucket's width at schema 5, the HDR histogram's 0.1%, and the summary's rounding to 1 µs.
    let error = 2f64.powf(1.0 / 32.0) - 1.0 + 0.001;
    eprintln!("p99: Prometheus' {p99} s, the summary's {expected} s, over {} scrapes", points.len());
    assert!((p99 - expected).abs() <= expected * error + 0.5e-6, "Prometheus' p99 {p99} s, the summary's {expected} s");
    // Over `rate()` too: the run's last 30 s hold its tasks after the first scrape.
    let rated = format!("histogram_quantile(0.99, rate(loadhost_latency_seconds{job}[30s] @ {at}))");
    let rated = prometheus.query_scalar(&rated).expect("a p99 over rate()");
    // Which tasks fall in that window depends on when Prometheus scraped, and a busy machine's
    // latency varies over a run: the window's p99 lies within the run's range, one bucket wide.
    let (min, max) = (
        summary["latency_ms"]["min"].as_f64().unwrap() / 1000.0,
        summary["latency_ms"]["max"].as_f64().unwrap() / 1000.0,
    );
    assert!(
        rated >= min / (1.0 + error) && rated <= max * (1.0 + error),
        "p99 over rate(): {rated} s, the run's {min}..{max} s"
    );
}

/// The descriptors process `pid` has open.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(Iterator::count).unwrap_or(0)
}

/// Issue 41, defect 7: 1,100 idle connections to `--metrics-addr` (no token needed on loopback)
/// during a run under a 1,024-descriptor limit. Before: each was accepted and kept for ever, so
/// the run's own connections found no descriptor (773 of 1,500 tasks failed in the issue) and
/// the accept loop spun on `EMFILE`.
#[test]
fn an_idle_connection_flood_on_the_metrics_endpoint_leaves_the_run_its_descriptors() {
    let target = TargetProcess::start(&[]);
    let port = free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let url = format!("TARGET_URL={}/delay?ms=20", target.url);
    let args = ["-e", &url, "--allow-host", &target.authority, "-r", "20", "-d", "10s", "--stage", "10s:200"];
    let metrics = addr.to_string();
    let running = Loadhost::new()
        .arg_run(&plugin(Example::HttpGet), &[&args[..], &["--metrics-addr", &metrics, "--overload", "queue"]].concat())
        .open_files(1024)
        .spawn();
    let deadline = Instant::now() + Duration::from_secs(60);
    while scrape(port).is_none() {
        assert!(Instant::now() < deadline, "the endpoint never answered");
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = open_fds(running.pid());
    // The flood, early in a ramp whose later tasks need new connections: 1,100 connections that
    // send nothing, held for a few seconds.
    let flood: Vec<TcpStream> =
        (0..1100).filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()).collect();
    let mut during = 0;
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(200));
        during = during.max(open_fds(running.pid()));
    }
    let held = flood.len();
    drop(flood);
    // The endpoint answers a real scrape again once the flood has gone.
    let deadline = Instant::now() + Duration::from_secs(30);
    let after = loop {
        if let Some((content_type, _)) = scrape(port) {
            break content_type;
        }
        assert!(Instant::now() < deadline, "no scrape answered after the flood");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(after.starts_with("application/openmetrics-text"), "{after}");
    // A scraper goes on until the process has gone (its final figures end the linger).
    let deadline = Instant::now() + Duration::from_secs(60);
    while scrape(port).is_some() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(300));
    }
    let run = running.finish();
    eprintln!("the flood: {held} connections; loadhost's descriptors {before} before, at most {during} during");
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(s["tasks"]["failed"], 0, "{}\n{}", s["tasks"], run.stderr);
    assert_eq!(s["tasks"]["passed"], s["tasks"]["scheduled"], "{}", s["tasks"]);
    // The endpoint held at most its 64 connections (and a few being closed), never the flood.
    assert!(during <= before + 64 + 16, "{during} descriptors during the flood, {before} before");
}
