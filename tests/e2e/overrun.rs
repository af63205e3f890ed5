//! Rates the host cannot follow (issue 26): refused up front beyond the ceiling, ended on time as
//! an emitter verdict at it, and stopped within the grace by a signal; the control API refuses
//! what the flags refuse. Times are judged with a wide margin (a busy machine delays any step by
//! seconds): what must never happen is a run that goes on for its backlog, or for ever.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::common::{Example, Loadhost, assert_identity, plugin, task_count};

#[test]
fn rates_beyond_the_ceiling_or_below_the_floor_are_refused_before_any_load() {
    let noop = plugin(Example::Noop);
    let cases: [&[&str]; 5] = [
        &["-r", "1e8", "-d", "2s"],
        &["-r", "1e12", "-d", "2s"],
        &["-r", "10", "--stage", "1s:1e9"],
        &["-r", "1e-300", "-n", "3"],
        &["-c", "rate.toml"],
    ];
    for args in cases {
        let cmd = Loadhost::new();
        std::fs::write(cmd.path().join("rate.toml"), "rate = 1e308\nduration = \"2s\"\n").unwrap();
        let run = cmd.arg_run(&noop, args).run();
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        let named = run.stderr.contains("ceiling of 10000000 tasks/s") || run.stderr.contains("lowest rate");
        assert!(named, "{args:?}: the error names the limit: {}", run.stderr);
        assert!(!run.dir.path().join("summary.json").exists(), "{args:?}: nothing ran");
    }
}

#[test]
fn a_rate_at_the_ceiling_ends_on_time_and_names_a_limit() {
    // 20,000,000 tasks in 2 s: no host releases that many no-op tasks on two cores.
    let run = Loadhost::run_plugin(&plugin(Example::Noop), &["-r", "10000000", "-d", "2s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let s = run.summary();
    assert_identity(&s);
    assert_eq!(task_count(&s, "scheduled"), 20_000_000, "every slot of the plan is accounted for");
    assert!(task_count(&s, "dropped") > 0, "{}", s["tasks"]);
    // Before issue 26 the verdict said the host kept up. The pacer (emitter) falls behind first
    // here; on a machine where the crew did first, that is as true.
    let limit = s["verdict"]["limit"].as_str().unwrap_or_default();
    assert!(limit == "emitter" || limit == "crew", "{}", s["verdict"]);
    // The plan's 2 s and the pacer's 1 s catch-up window; before issue 26, 1,000,000/s for 2 s
    // ran 10 s (its whole backlog) and 1e8/s never ended.
    let took = s["duration_s"].as_f64().unwrap();
    assert!(took < 8.0, "the run ends near its planned end, not after its backlog: {took} s");
}

#[test]
fn sigterm_ends_a_run_at_the_ceiling_within_the_grace() {
    let args = ["-r", "10000000", "-d", "60s", "--grace", "2s", "--csv", "rows.csv"];
    let mut running = Loadhost::new().arg_run(&plugin(Example::Noop), &args).spawn();
    running.wait_for_file("rows.csv", |csv| csv.lines().filter(|l| !l.starts_with('#')).count() >= 2);
    let asked = Instant::now();
    running.signal(libc::SIGTERM);
    let run = running.finish();
    let took = asked.elapsed();
    assert_eq!(run.code, 130, "{}", run.stderr);
    assert!(
        took < Duration::from_secs(12),
        "a stop takes effect within the grace (2 s), not after the schedule: {took:?}"
    );
    let s = run.summary();
    assert_identity(&s);
    assert!(task_count(&s, "scheduled") > 1_000_000, "{}", s["tasks"]);
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One PATCH to the control API: its status and body; `None` while the API is not up yet.
fn patch(port: u16, body: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    let request = format!(
        "PATCH /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some((response.get(9..12)?.parse().ok()?, response.split_once("\r\n\r\n")?.1.to_owned()))
}

#[test]
fn the_control_api_refuses_the_rates_the_flags_refuse() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let args = ["-r", "100", "-d", "60s", "--control", &addr];
    let running = Loadhost::new().arg_run(&plugin(Example::Noop), &args).spawn();
    let deadline = Instant::now() + Duration::from_secs(30);
    while patch(port, "{}").is_none() {
        assert!(Instant::now() < deadline, "the control API never came up");
        std::thread::sleep(Duration::from_millis(50));
    }
    for (body, says) in [
        (r#"{"rate": 1e8}"#, "ceiling of 10000000 tasks/s"),
        (r#"{"rate": 1e308}"#, "ceiling of 10000000 tasks/s"),
        (r#"{"rate": 1e-300}"#, "lowest rate"),
        (r#"{"rate": -1}"#, "0 or more"),
        (r#"{"max_workers": 4294967295}"#, "above this run's ceiling"),
        (r#"{"max_in_flight": 0}"#, "at least 1"),
        (r#"{"rate": 1e999}"#, "expected a JSON object"),
    ] {
        let (code, text) = patch(port, body).unwrap();
        assert_eq!(code, 400, "{body}: {text}");
        assert!(text.contains(says), "{body}: {text}");
    }
    let (code, text) = patch(port, r#"{"rate": 10000000, "max_in_flight": 4294967295}"#).unwrap();
    assert_eq!(code, 200, "the ceiling itself is allowed: {text}");
    running.signal(libc::SIGTERM);
    let run = running.finish();
    assert_eq!(run.code, 130, "{}", run.stderr);
    assert_identity(&run.summary());
}
