//! The sandbox's edges: secrets never reach an output, a plugin cannot reach the host's own
//! listeners or look up names it was not given, and what a plugin controls cannot grow the host's
//! memory without bound. Real plugins against the real built-in target on loopback.

use crate::common::{
    Example, Fixture, Loadhost, assert_identity, assert_none_passed, assert_ok, fixture, plugin, task_count,
};
use crate::target_process::TargetProcess;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn metric_count(summary: &serde_json::Value, name: &str) -> u64 {
    summary["metrics"][name]["count"].as_u64().unwrap_or(0)
}

#[test]
fn secrets_reach_the_plugin_but_no_output_and_not_its_setup() {
    let cmd = Loadhost::new();
    std::fs::write(cmd.path().join("secrets.env"), "# from the CI's secret store\nSECRET_FILE=filesecret456\n")
        .unwrap();
    let run = cmd
        .env("SECRET_PARENT", "parentsecret789")
        .arg_run(
            &fixture(Fixture::Lifecycle),
            &[
                "-n",
                "20",
                "-w",
                "2",
                "-e",
                "SECRET_FLAG=supersecret123",
                "-e",
                "SECRET_PARENT",
                "--env-file",
                "secrets.env",
                "--control",
                "127.0.0.1:0",
                "--control-token",
                "tokensecret000",
                "--tag",
                "team=checkout",
                "--csv",
                "rows.csv",
                "--html",
                "report.html",
                "--out",
                "json=lines.jsonl",
                "--results",
                "run.lhr",
            ],
        )
        .run();
    // The fixture's setup fails (exit 4) if its options hold a secret's value.
    assert_ok(&run);
    assert_eq!(task_count(&run.summary(), "passed"), 20, "{}", run.stderr);
    for file in ["summary.json", "rows.csv", "report.html", "lines.jsonl", "run.lhr"] {
        let text = run.file(file);
        for secret in ["supersecret123", "parentsecret789", "filesecret456", "tokensecret000"] {
            assert!(!text.contains(secret), "{file} holds the secret {secret}");
        }
        assert!(text.contains("SECRET_FLAG=[redacted]"), "{file} names the redacted variable");
        assert!(text.contains("team"), "{file} carries the run's tag");
    }
    let summary = run.summary();
    assert_eq!(summary["tags"]["team"], "checkout");
    assert_eq!(summary["config"]["control-token"], "[redacted]");
    assert!(!run.stdout.contains("secret"), "{}", run.stdout);
    assert!(!run.stderr.contains("supersecret123"), "{}", run.stderr);
}

#[test]
fn a_plugin_granted_the_whole_loopback_cannot_reach_the_hosts_own_listeners() {
    let (control, metrics) = (free_port(), free_port());
    let stop = format!("TARGET_URL=http://127.0.0.1:{control}/v1/stop");
    let run = Loadhost::run_plugin(
        &plugin(Example::HttpPostJson),
        &[
            "-e",
            &stop,
            "--allow-host",
            "127.0.0.1:*",
            "-r",
            "20",
            "-d",
            "1s",
            "--control",
            &format!("127.0.0.1:{control}"),
        ],
    );
    assert_none_passed(&run);
    let summary = run.summary();
    assert!(summary["stopped"].is_null(), "the plugin stopped its own run: {}", run.stderr);
    assert!(metric_count(&summary, "http_denied") >= 20, "{summary}");
    assert_eq!(metric_count(&summary, "http_reqs"), 0, "nothing was sent");
    assert!(run.stderr.contains("loadhost's own --control listener"), "{}", run.stderr);

    // By name: `localhost` leads there as well (its ::1 address, where nothing listens, may be
    // tried and refused by the kernel instead; either way the run is not the plugin's to stop).
    let by_name = format!("TARGET_URL=http://localhost:{control}/v1/stop");
    let run = Loadhost::run_plugin(
        &plugin(Example::HttpPostJson),
        &[
            "-e",
            &by_name,
            "--allow-host",
            "localhost:*",
            "-r",
            "20",
            "-d",
            "1s",
            "--control",
            &format!("127.0.0.1:{control}"),
        ],
    );
    assert_none_passed(&run);
    assert!(run.summary()["stopped"].is_null(), "the plugin stopped its own run by name: {}", run.stderr);
    assert!(run.summary()["metrics"]["http_reqs{status:200}"].is_null(), "{}", run.summary()["metrics"]);

    // The metrics endpoint.
    let scrape = format!("TARGET_URL=http://127.0.0.1:{metrics}/metrics");
    let run = Loadhost::run_plugin(
        &plugin(Example::HttpGet),
        // No scraper here: the endpoint does not linger for one after the run.
        &[
            "-e",
            &scrape,
            "--allow-host",
            "127.0.0.1:*",
            "-n",
            "10",
            "--metrics-addr",
            &format!("127.0.0.1:{metrics}"),
            "--metrics-linger",
            "0s",
        ],
    );
    assert_none_passed(&run);
    assert_eq!(metric_count(&run.summary(), "http_denied"), 10, "{}", run.stderr);
    assert!(run.stderr.contains("--metrics-addr listener"), "{}", run.stderr);

    // And a raw socket to the control port.
    let addr = format!("TARGET_ADDR=127.0.0.1:{control}");
    let run = Loadhost::run_plugin(
        &fixture(Fixture::TcpConnect),
        &["-e", &addr, "--allow-host", "127.0.0.1:*", "-n", "3", "--control", &format!("127.0.0.1:{control}")],
    );
    assert_none_passed(&run);
    assert_eq!(task_count(&run.summary(), "failed"), 3, "sockets are refused too: {}", run.stderr);
}

#[test]
fn a_refused_own_listener_is_said_to_be_never_granted_not_to_need_an_allow_host() {
    let control = free_port();
    let own = format!("127.0.0.1:{control}");
    let http = format!("TARGET_URL=http://{own}/v1/status");
    let run = Loadhost::run_plugin(&plugin(Example::HttpGet), &["-e", &http, "-n", "2", "--control", &own]);
    assert_none_passed(&run);
    assert_eq!(metric_count(&run.summary(), "http_denied"), 2);
    assert!(run.stderr.contains("loadhost's own --control listener"), "{}", run.stderr);
    assert!(run.stderr.contains("loadhost's own ports are never granted to a plugin"), "{}", run.stderr);
    assert!(!run.stderr.contains("pass --allow-host"), "no flag can allow it: {}", run.stderr);

    // WebSocket (and gRPC) say the same in the error the plugin gets.
    let ws = format!("TARGET_URL=ws://localhost:{control}/ws/echo");
    let run = Loadhost::run_plugin(&plugin(Example::WsEcho), &["-e", &ws, "-n", "2", "--control", &own]);
    assert_none_passed(&run);
    let errors = run.summary()["errors"].to_string();
    assert!(errors.contains("loadhost's own ports are never granted to a plugin"), "{errors}");
    assert!(!errors.contains("pass --allow-host"), "{errors}");
}

#[test]
fn a_bare_host_allows_only_the_default_ports() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/", target.url);
    let bare = Loadhost::run_plugin(&plugin(Example::HttpGet), &["-e", &url, "--allow-host", "127.0.0.1", "-n", "3"]);
    assert_none_passed(&bare);
    assert_eq!(metric_count(&bare.summary(), "http_denied"), 3);
    assert!(bare.stderr.contains("HOST:* every port"), "the denial says how to allow it: {}", bare.stderr);
    let star = Loadhost::run_plugin(&plugin(Example::HttpGet), &["-e", &url, "--allow-host", "127.0.0.1:*", "-n", "3"]);
    assert_eq!(task_count(&star.summary(), "passed"), 3, "{}", star.stderr);
}

#[test]
fn only_names_on_the_allow_list_may_be_looked_up() {
    let target = TargetProcess::start(&[]);
    let port = target.authority.rsplit_once(':').map(|(_, p)| p.to_owned()).unwrap();
    let by_name = format!("TARGET_ADDR=localhost:{port}");
    // `localhost` resolves on any machine: only the allow-list can make its lookup fail.
    let ip_rule = Loadhost::run_plugin(
        &fixture(Fixture::TcpConnect),
        &["-e", &by_name, "--allow-host", "127.0.0.1:*", "-n", "2"],
    );
    assert_none_passed(&ip_rule);
    assert_eq!(
        task_count(&ip_rule.summary(), "failed"),
        2,
        "a name no rule gives cannot be looked up: {}",
        ip_rule.stderr
    );
    let name_rule = Loadhost::run_plugin(
        &fixture(Fixture::TcpConnect),
        &["-e", &by_name, "--allow-host", &format!("localhost:{port}"), "-n", "2"],
    );
    assert_eq!(task_count(&name_rule.summary(), "passed"), 2, "an allowed name resolves: {}", name_rule.stderr);
}

#[test]
fn huge_bodies_fail_at_the_cap_and_keep_the_host_small() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/bytes?n={}", target.url, 600 << 20);
    let run = Loadhost::run_plugin(
        &plugin(Example::HttpGet),
        &["-e", &url, "--allow-host", &target.authority, "-n", "4", "-w", "4", "--max-memory", "128MiB"],
    );
    assert_none_passed(&run);
    let summary = run.summary();
    assert_eq!(task_count(&summary, "failed"), 4, "{}", run.stderr);
    assert!(run.stderr.contains("--max-response-body 64.0MiB"), "the error names the flag: {}", run.stderr);
    assert_eq!(
        run.stderr.matches("a task failed").count(),
        1,
        "logged once per run, not per event loop: {}",
        run.stderr
    );
    let rss = summary["host"]["peak_rss_mb"].as_f64().unwrap();
    assert!(rss < 512.0, "four 600 MB bodies took the host to {rss} MB");
}

#[test]
fn absurd_plugin_metrics_are_invalid_samples_and_counters_saturate() {
    let run = Loadhost::run_plugin(&fixture(Fixture::Hostile), &["-e", "MODE=absurd", "-n", "2000", "-w", "4"]);
    assert_ok(&run);
    let summary = run.summary();
    assert_identity(&summary);
    assert_eq!(summary["series"]["invalid_samples"].as_u64(), Some(6000), "{}", summary["series"]);
    // At 2^53, where every count loadhost keeps saturates (docs/merge.md): exact in any JSON reader.
    assert_eq!(summary["metrics"]["huge{k:7}"]["count"].as_u64(), Some(1 << 53), "saturated, not wrapped");
    let rss = summary["host"]["peak_rss_mb"].as_f64().unwrap();
    assert!(rss < 256.0, "the host grew to {rss} MB");
}

/// A cache folder and a plugin run against it.
fn cached_run(cache: &std::path::Path) -> crate::common::Run {
    Loadhost::new().env("LOADHOST_CACHE_DIR", cache).arg_run(&plugin(Example::Noop), &["-n", "3"]).run()
}

#[test]
fn a_tampered_cache_artifact_is_recompiled_and_a_shared_cache_folder_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let cache = tempfile::tempdir().unwrap();
    assert_ok(&cached_run(cache.path()));
    let compiled = cache.path().join("compiled");
    assert_eq!(std::fs::metadata(&compiled).unwrap().permissions().mode() & 0o777, 0o700);
    let artifact = std::fs::read_dir(&compiled)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .expect("an artifact was written");
    let mut bytes = std::fs::read(&artifact).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&artifact, &bytes).unwrap();

    let tampered = cached_run(cache.path());
    assert_ok(&tampered);
    assert!(tampered.stderr.contains("does not match the sha256 recorded"), "{}", tampered.stderr);
    assert!(tampered.stderr.contains("compiled in"), "recompiled, not loaded: {}", tampered.stderr);
    assert!(cached_run(cache.path()).stderr.contains("from the compile cache"), "rewritten, then used again");

    std::fs::set_permissions(&compiled, std::fs::Permissions::from_mode(0o777)).unwrap();
    let shared = cached_run(cache.path());
    assert_ok(&shared);
    assert!(shared.stderr.contains("is writable by other users"), "{}", shared.stderr);
    assert!(shared.stderr.contains("compiled (cache off)"), "{}", shared.stderr);
}
