//! Outputs read while or after the run goes: `--out json=FILE` parsed back against the summary,
//! `--metrics-addr` scraped by a real HTTP client mid-run, `--html` opened in headless Chromium.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Example, Fixture, Loadhost, assert_ok, fixture, plugin, root};

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

/// Parse OpenMetrics text: `name{labels} value` samples, checking the exposition's shape.
fn samples(text: &str) -> BTreeMap<String, f64> {
    assert_eq!(text.lines().last(), Some("# EOF"), "OpenMetrics ends with # EOF");
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("a sample line: {line}"));
        out.insert(series.to_owned(), value.parse().unwrap_or_else(|_| panic!("a number: {line}")));
    }
    out
}

#[test]
fn openmetrics_is_scraped_while_the_run_goes() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
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
    let scheduled = "loadhost_tasks_scheduled_total{scenario=\"default\"}";
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut seen = Vec::new();
    while seen.len() < 2 && Instant::now() < deadline {
        if let Some((content_type, body)) = scrape(port) {
            assert!(content_type.starts_with("application/openmetrics-text"), "{content_type}");
            let parsed = samples(&body);
            if let Some(&n) = parsed.get(scheduled)
                && n > 0.0
                && seen.last().is_none_or(|(last, _)| n > *last)
            {
                seen.push((n, parsed));
            }
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let run = running.finish();
    assert_ok(&run);
    assert_eq!(seen.len(), 2, "two scrapes a second or more apart while the run went");
    let (first, later) = (&seen[0].1, &seen[1].1);
    assert!(later[scheduled] > first[scheduled], "counters grow");
    assert!(later[scheduled] < 800.0, "scraped before the end: {}", later[scheduled]);
    assert!(later["loadhost_workers{scenario=\"default\"}"] >= 1.0);
    assert!(later.contains_key("loadhost_latency_ms{scenario=\"default\",quantile=\"0.99\"}"), "{later:?}");
    assert_eq!(later["loadhost_threshold_passing{threshold=\"latency_ms:p(99)<1000\"}"], 1.0);
    let summary = run.summary();
    assert!(summary["tasks"]["scheduled"].as_f64().unwrap() >= later[scheduled]);
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
