//! Where a request's time went (docs/http.md, "Phases"): real runs of the `http-get` example
//! against the built-in target, read back from the summary JSON. Waiting holds the server's delay,
//! connecting and TLS are recorded once per connection opened, and blocked grows when a per-host
//! cap or the gate makes requests wait.

use serde_json::Value;

use crate::common::{Example, Loadhost, Run, assert_ok, plugin};
use crate::target_process::TargetProcess;

/// `metrics.NAME.FIELD` of the run's summary.
fn figure(run: &Run, name: &str, field: &str) -> f64 {
    let s = run.summary();
    s["metrics"][name][field].as_f64().unwrap_or_else(|| panic!("metrics.{name}.{field} in {}", s["metrics"]))
}

/// `count` of a metric.
fn count(run: &Run, name: &str) -> u64 {
    figure(run, name, "count") as u64
}

/// The http-get example against `path` of `target`, with `extra` arguments.
fn run(target: &TargetProcess, path: &str, extra: &[&str]) -> Run {
    let url = format!("TARGET_URL={}{path}", target.url);
    let args = [&["-e", &url, "--allow-host", &target.authority][..], extra].concat();
    let run = Loadhost::run_plugin(&plugin(Example::HttpGet), &args);
    assert_ok(&run);
    run
}

/// What every run with responses shows: each phase for every request (connecting and TLS once
/// per connection opened), and duration = sending + waiting + receiving (here on the means,
/// which the histograms keep to their resolution).
fn assert_phases_add_up(run: &Run) {
    let requests = count(run, "http_reqs");
    for phase in ["http_req_blocked", "http_req_sending", "http_req_waiting", "http_req_receiving"] {
        assert_eq!(count(run, phase), requests, "{phase}: one per request");
    }
    let sum: f64 =
        ["http_req_sending", "http_req_waiting", "http_req_receiving"].iter().map(|p| figure(run, p, "mean")).sum();
    let duration = figure(run, "http_req_duration", "mean");
    assert!(
        (sum - duration).abs() <= 0.01 + duration * 0.002,
        "sending + waiting + receiving {sum} ≠ duration {duration}"
    );
}

#[test]
fn waiting_holds_the_servers_delay_and_connecting_counts_the_connections_opened() {
    let target = TargetProcess::start(&[]);
    let run = run(&target, "/delay?ms=50", &["-n", "40", "-w", "4"]);
    assert_eq!(count(&run, "http_reqs"), 40);
    assert!(figure(&run, "http_req_waiting", "p50") >= 50.0, "time to first byte holds the 50 ms delay");
    assert!(figure(&run, "http_req_duration", "p50") >= 50.0);
    let opened = count(&run, "http_connections_opened");
    assert!((1..=4).contains(&opened), "{opened} connections for 4 workers");
    assert_eq!(count(&run, "http_req_connecting"), opened, "connecting is recorded on the requests that opened one");
    assert!(figure(&run, "http_req_connecting", "min") > 0.0, "every new connection took some time to connect");
    assert_eq!(count(&run, "http_req_tls_handshaking"), 0, "no TLS over http");
    assert_phases_add_up(&run);
}

#[test]
fn tls_handshaking_is_recorded_exactly_on_new_connections() {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let target = TargetProcess::start(&["--tls-self-signed", cert.to_str().unwrap()]);
    let run = run(&target, "/", &["-n", "30", "-w", "3", "--ca-cert", cert.to_str().unwrap()]);
    let opened = count(&run, "http_connections_opened");
    assert!((1..=3).contains(&opened), "{opened}");
    assert_eq!(count(&run, "http_req_tls_handshaking"), opened);
    assert_eq!(count(&run, "http_req_connecting"), opened);
    assert!(figure(&run, "http_req_tls_handshaking", "min") > 0.0, "a handshake takes time");
    assert_phases_add_up(&run);
}

#[test]
fn blocked_grows_when_a_per_host_cap_or_the_gate_makes_requests_wait() {
    let target = TargetProcess::start(&[]);
    let base = ["-n", "24", "-w", "4"];
    let free = run(&target, "/delay?ms=20", &base);
    let capped = run(&target, "/delay?ms=20", &[&base[..], &["--max-connections-per-host", "1"]].concat());
    let gated = run(&target, "/delay?ms=20", &[&base[..], &["--max-in-flight", "1"]].concat());
    let blocked = |run: &Run| figure(run, "http_req_blocked", "p50");
    // Four workers, one request at a time: most wait for at least one other 20 ms request.
    for (what, run) in [("per-host cap", &capped), ("gate", &gated)] {
        assert!(blocked(run) >= 20.0, "{what}: blocked p50 {} ms", blocked(run));
        assert!(blocked(run) > blocked(&free), "{what}: {} ms against {} ms without", blocked(run), blocked(&free));
        assert_phases_add_up(run);
    }
    assert_eq!(count(&capped, "http_connections_opened"), 1, "the cap's one connection, handed on");
    // A threshold reads the phases, by endpoint too.
    let name = "GET /delay";
    let t = format!("http_req_waiting{{name:{name}}}:p(50)>=20");
    let judged = run(&target, "/delay?ms=20", &[&base[..], &["--threshold", &t]].concat());
    let thresholds: Value = judged.summary()["thresholds"].clone();
    assert_eq!(thresholds[&t]["ok"], Value::Bool(true), "{thresholds}");
    assert!(thresholds[&t]["value"].as_f64().is_some_and(|v| v >= 20.0), "{thresholds}");
}
