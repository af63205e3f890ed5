//! WebSocket and gRPC from plugins (`loadhost:plugin/websocket`, `loadhost:plugin/grpc`) against
//! the built-in target's `/ws/echo` and gRPC echo service: the example plugins in every language
//! that has one, the host's built-in metrics checked against the target's own counts, denials,
//! injected statuses with retries, thresholds, and a plugin that hoards connections.

use serde_json::Value;

use crate::common::{Example, Fixture, Loadhost, Run, assert_identity, assert_ok, fixture, plugin, task_count};
use crate::target_process::TargetProcess;

/// `metrics.NAME.count` (a counter's or a trend's), 0 when it never got a sample.
fn count(run: &Run, name: &str) -> u64 {
    run.summary()["metrics"][name]["count"].as_u64().unwrap_or(0)
}

fn stat(stats: &Value, name: &str) -> u64 {
    stats[name].as_u64().unwrap_or_else(|| panic!("{name} in the target's /stats: {stats}"))
}

fn run(wasm: &std::path::Path, allow: &str, env: &[&str], args: &[&str]) -> Run {
    let mut all = vec!["--allow-host", allow];
    for pair in env {
        all.extend(["-e", pair]);
    }
    all.extend(args);
    Loadhost::run_plugin(wasm, &all)
}

/// Every error message of the run, joined.
fn errors(run: &Run) -> String {
    let list = run.summary()["errors"].as_array().cloned().unwrap_or_default();
    list.iter().map(|e| format!("{} | {}", e["message"], e["example"])).collect::<Vec<_>>().join("\n")
}

#[test]
fn ws_echo_in_every_language_keeps_a_connection_per_worker_and_echoes_exactly() {
    for example in [Example::WsEcho, Example::WsEchoPython, Example::WsEchoJs, Example::WsEchoC] {
        let name = example.name();
        let target = TargetProcess::start(&[]);
        let url = format!("TARGET_URL=ws://{}/ws/echo", target.authority);
        let thresholds = ["--threshold", "ws_session_duration:p(95)<60000", "--threshold", "ws_msgs_sent:count==1000"];
        let args = [&["-n", "100", "-w", "4"][..], &thresholds].concat();
        let run = run(&plugin(example), &target.authority, &[&url, "MESSAGES=10"], &args);
        assert_ok(&run);
        let s = run.summary();
        assert_eq!(task_count(&s, "passed"), 100, "{name}: {}", run.stderr);
        assert_eq!(count(&run, "ws_msgs_sent"), 1000, "{name}");
        assert_eq!(count(&run, "ws_msgs_received"), 1000, "{name}");
        assert_eq!(count(&run, "ws_sessions"), 4, "{name}: one connection per worker, kept across its tasks");
        assert_eq!(count(&run, "ws_session_duration"), 4, "{name}: each session ends once, with its instance");
        let thresholds = s["thresholds"].as_object().unwrap();
        assert!(thresholds.len() == 2 && thresholds.values().all(|t| t["ok"] == true), "{name}: {thresholds:?}");
        let stats = target.stats();
        assert_eq!(stat(&stats, "ws_sessions"), 4, "{name}: {stats}");
        assert_eq!(stat(&stats, "ws_msgs_received"), 1000, "{name}: the target's count agrees");
        assert_eq!(stat(&stats, "ws_msgs_sent"), 1000, "{name}: {stats}");
        assert_identity(&s);
    }
}

#[test]
fn a_websocket_to_a_host_not_allowed_is_denied_before_any_connection() {
    let target = TargetProcess::start(&[]);
    let port = target.authority.rsplit_once(':').unwrap().1;
    // The same server by another name: only 127.0.0.1:PORT is allowed.
    let url = format!("TARGET_URL=ws://localhost:{port}/ws/echo");
    let run = run(&plugin(Example::WsEcho), &target.authority, &[&url], &["-n", "5", "-w", "1"]);
    assert_eq!(run.code, 98, "no task passed: {}", run.stderr);
    let s = run.summary();
    assert_eq!(task_count(&s, "failed"), 5, "{}", s["tasks"]);
    assert_eq!(count(&run, "ws_denied"), 5);
    assert_eq!(count(&run, "ws_sessions"), 0);
    assert!(errors(&run).contains("--allow-host localhost"), "{}", errors(&run));
    let stats = target.stats();
    assert_eq!(stat(&stats, "connections"), 1, "only this /stats request reached the target: {stats}");
}

#[test]
fn grpc_unary_calls_are_counted_by_status_exactly_and_a_threshold_judges_their_duration() {
    for example in [Example::GrpcEcho, Example::GrpcEchoPython, Example::GrpcEchoJs] {
        let name = example.name();
        let target = TargetProcess::start(&[]);
        let grpc_target = format!("TARGET_URL={}", target.url);
        let thresholds =
            ["--threshold", "grpc_req_duration:p(95)<5000", "--threshold", "grpc_reqs{status:0}:count==200"];
        let args = [&["-n", "200", "-w", "4"][..], &thresholds].concat();
        let run = run(&plugin(example), &target.authority, &[&grpc_target], &args);
        assert_ok(&run);
        let s = run.summary();
        assert_eq!(task_count(&s, "passed"), 200, "{name}: {}", run.stderr);
        assert_eq!(count(&run, "grpc_reqs{status:0}"), 200, "{name}");
        assert_eq!(count(&run, "grpc_req_duration"), 200, "{name}");
        let judged = &s["thresholds"]["grpc_req_duration:p(95)<5000"];
        assert_eq!(judged["ok"], true, "{name}: {judged}");
        assert!(judged["value"].as_f64().unwrap() > 0.0, "{name}: judged on measured calls: {judged}");
        let stats = target.stats();
        assert_eq!(stats["grpc_status"]["0"], 200, "{name}: the target's count agrees: {stats}");
        assert_identity(&s);
    }
}

#[test]
fn a_bidi_stream_of_a_hundred_messages_per_task_echoes_exactly() {
    let target = TargetProcess::start(&[]);
    let grpc_target = format!("TARGET_URL={}", target.url);
    let run = run(
        &plugin(Example::GrpcEcho),
        &target.authority,
        &[&grpc_target, "MODE=stream", "MESSAGES=100"],
        &["-n", "10", "-w", "2"],
    );
    assert_ok(&run);
    assert_eq!(task_count(&run.summary(), "passed"), 10, "{}", run.stderr);
    assert_eq!(count(&run, "grpc_streams"), 10);
    assert_eq!(count(&run, "grpc_streams_msgs_sent"), 1000);
    assert_eq!(count(&run, "grpc_streams_msgs_received"), 1000);
    assert_eq!(count(&run, "grpc_reqs{status:0}"), 10, "a stream counts once, with its final status");
    let stats = target.stats();
    assert_eq!(stat(&stats, "grpc_msgs_received"), 1000, "{stats}");
    assert_eq!(stat(&stats, "grpc_msgs_sent"), 1000, "{stats}");
}

#[test]
fn an_injected_status_14_is_counted_and_retried() {
    let target = TargetProcess::start(&[]);
    let grpc_target = format!("TARGET_URL={}", target.url);
    let run = run(
        &plugin(Example::GrpcEcho),
        &target.authority,
        &[&grpc_target, "GRPC_STATUS=14"],
        &["-n", "5", "-w", "1", "--retries", "2", "--retry-backoff", "1ms"],
    );
    assert_eq!(run.code, 98, "no task passed: {}", run.stderr);
    let s = run.summary();
    assert_eq!(task_count(&s, "failed"), 5, "{}", s["tasks"]);
    assert_eq!(task_count(&s, "retries"), 10, "status 14 is retryable: two retries each");
    assert_eq!(count(&run, "grpc_reqs{status:14}"), 15);
    assert_eq!(count(&run, "grpc_reqs{status:0}"), 0);
    assert!(errors(&run).contains("gRPC status 14: injected by the target"), "{}", errors(&run));
    assert_eq!(target.stats()["grpc_status"]["14"], 15);
}

#[test]
fn a_plugin_hoarding_connections_stays_within_the_bound_and_fails() {
    for mode in ["ws", "grpc"] {
        let target = TargetProcess::start(&[]);
        let url = if mode == "ws" { format!("ws://{}/ws/echo", target.authority) } else { target.url.clone() };
        let run = hoard(mode, &target, &url, &[], &["-n", "6", "-w", "2"]);
        assert_eq!(run.code, 98, "{mode}: {}", run.stderr);
        let s = run.summary();
        assert_eq!(task_count(&s, "failed"), 6, "{mode}: {}", s["tasks"]);
        let why = errors(&run);
        assert!(why.contains("kept 64 open, then: too many"), "{mode}: {why}");
        let opened = if mode == "ws" { count(&run, "ws_sessions") } else { count(&run, "grpc_streams") };
        // 64 per instance that ran a task: one or both of the two (opening is quick enough that
        // one worker may run them all).
        assert!(opened == 64 || opened == 128, "{mode}: {opened} opened, expected 64 per instance");
        let rss = s["host"]["peak_rss_mb"].as_f64().unwrap();
        assert!(rss < 200.0, "{mode}: the host's peak RSS was {rss} MiB");
        if mode == "ws" {
            assert_eq!(
                stat(&target.stats(), "ws_sessions"),
                opened,
                "no connection beyond the bound reached the target"
            );
        }
    }
}

/// `ws-hoard` in `mode` against `url` (a `ws://` one, or the target's own for gRPC), with `env` and
/// `args` added.
fn hoard(mode: &str, target: &TargetProcess, url: &str, env: &[&str], args: &[&str]) -> Run {
    let mut all = vec![format!("MODE={mode}"), format!("TARGET_URL={url}")];
    all.extend(env.iter().map(|e| (*e).to_owned()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    run(&fixture(Fixture::WsHoard), &target.authority, &all, args)
}

fn peak_rss(run: &Run) -> f64 {
    run.summary()["host"]["peak_rss_mb"].as_f64().expect("host.peak_rss_mb in the summary")
}

/// The task failed with the byte budget's error, and the host stayed near its bound: the budget
/// (64 MiB here) beside the plugin's own memory and the host's.
#[track_caller]
fn assert_stopped_by_the_budget(run: &Run, what: &str) {
    assert_eq!(run.code, 98, "{what}: {}", run.stderr);
    let why = errors(run);
    assert!(why.contains("byte budget") && why.contains("of 64.0 MiB (--max-memory)"), "{what}: {why}");
    let rss = peak_rss(run);
    assert!(rss < 250.0, "{what}: the host's peak RSS was {rss} MiB");
}

#[test]
fn a_ping_unanswered_while_messages_flood_in_stays_within_the_byte_budget() {
    let target = TargetProcess::start(&[]);
    let url = format!("ws://{}/ws/flood", target.authority);
    // Without a bound, the messages kept for `receive` while the pong never comes grow by about
    // 250 MiB a second until the task's timeout.
    let run = hoard("ping", &target, &url, &[], &["-n", "1", "--max-memory", "64MiB", "--task-timeout", "5s"]);
    assert_stopped_by_the_budget(&run, "ping");
    assert_eq!(task_count(&run.summary(), "failed"), 1, "{}", run.summary()["tasks"]);
    assert!(errors(&run).contains("ping: WebSocket: receive: byte budget"), "{}", errors(&run));
}

#[test]
fn a_ping_without_a_timeout_gives_up_after_the_default() {
    let target = TargetProcess::start(&[]);
    // A peer that says nothing and never answers a ping.
    let url = format!("ws://{}/ws/flood?count=0", target.authority);
    let run = hoard("ping", &target, &url, &[], &["-n", "1", "--task-timeout", "60s"]);
    assert_eq!(run.code, 98, "{}", run.stderr);
    let s = run.summary();
    assert_eq!(task_count(&s, "failed"), 1, "failed by the ping's own timeout, not the task's: {}", s["tasks"]);
    assert!(errors(&run).contains("ping: no WebSocket message within the timeout"), "{}", errors(&run));
    let took = s["duration_s"].as_f64().unwrap();
    assert!((10.0..30.0).contains(&took), "the default ping timeout is 10 s; the run took {took} s");
}

#[test]
fn messages_half_read_on_many_connections_stay_within_the_byte_budget() {
    let target = TargetProcess::start(&[]);
    // Each connection gets 24 MiB of a 32 MiB frame: 16 of them would hold 384 MiB.
    let url = format!("ws://{}/ws/partial?size={}&sent={}", target.authority, 32 << 20, 24 << 20);
    let env = ["CONNECTIONS=16", "RECEIVE_MS=200"];
    let run = hoard("partial", &target, &url, &env, &["-n", "1", "--max-memory", "64MiB"]);
    assert_stopped_by_the_budget(&run, "partial");
    // Two whole frames fill the 64 MiB budget: the third is refused at its header (which may come
    // with the handshake's answer).
    let why = errors(&run);
    assert!(why.contains("\"after 2") && why.contains("byte budget: the host holds 64.0 MiB"), "{why}");
}

#[test]
fn grpc_echoes_never_read_stay_within_the_byte_budget() {
    let target = TargetProcess::start(&[]);
    // 8 streams of 8 messages of 4 MiB: 256 MiB each way if nothing held them back.
    let run = hoard("grpc-send", &target, &target.url, &[], &["-n", "1", "--max-memory", "64MiB"]);
    assert_stopped_by_the_budget(&run, "grpc-send");
    assert!(errors(&run).contains("gRPC status 8"), "RESOURCE_EXHAUSTED: {}", errors(&run));
    assert!(count(&run, "grpc_reqs{status:8}") >= 1, "{}", run.summary()["metrics"]);
}

#[test]
fn a_grpc_message_cut_short_is_a_truncated_message_not_zero_messages() {
    let target = TargetProcess::start(&[]);
    let grpc_target = format!("TARGET_URL={}", target.url);
    let run =
        run(&plugin(Example::GrpcEcho), &target.authority, &[&grpc_target, "GRPC_TRUNCATE=1"], &["-n", "3", "-w", "1"]);
    assert_eq!(run.code, 98, "{}", run.stderr);
    let why = errors(&run);
    assert!(why.contains("gRPC status 13: a truncated message: its prefix announced"), "{why}");
    assert!(!why.contains("0 messages"), "{why}");
    assert_eq!(count(&run, "grpc_reqs{status:13}"), 3);
}

#[test]
fn closing_many_connections_whose_peer_never_answers_waits_for_none_of_them() {
    let target = TargetProcess::start(&[]);
    // A peer that takes the close frame and never answers it: each close used to wait 1 s for it.
    let url = format!("ws://{}/ws/flood?count=0", target.authority);
    let env = ["CONNECTIONS=64", "RECEIVE_MS=1", "CLOSE=1"];
    let run = hoard("partial", &target, &url, &env, &["-n", "1", "--task-timeout", "20s"]);
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(task_count(&s, "passed"), 1, "{}", s["tasks"]);
    assert_eq!(count(&run, "ws_session_duration"), 64, "each session ended at its close");
    let took = s["duration_s"].as_f64().unwrap();
    assert!(took < 8.0, "64 closes took {took} s: the peer's answer is awaited on the side, for all at once");
}
