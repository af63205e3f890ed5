//! Distributed runs without a shared volume (issue 20), against a real registry on loopback
//! (Debian's `docker-registry`): segments that meet at a `--barrier` in the registry and start
//! together, results pushed with `--results oci://…` and merged from there by run id, a segment
//! that never arrives, one that arrives too late, and `--max-start-lateness`.

use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::common::{Fixture, Loadhost, Run, fixture, root};
use crate::registry::RegistryProcess;

/// Segment `i` of `n` of the metrics fixture's plan (`-r 2000 -n 1000`) for run `run_id`,
/// pushing its results to `repo`; `extra` flags after.
fn segment(i: u32, n: u32, repo: &str, run_id: &str, extra: &[&str]) -> Run {
    let seg = format!("{i}/{n}");
    let results = format!("oci://{repo}");
    let mut args = vec!["-r", "2000", "-n", "1000", "--segment", &seg, "--run-id", run_id, "--results", &results];
    args.extend_from_slice(extra);
    Loadhost::run_plugin(&fixture(Fixture::Metrics), &args)
}

fn merge(args: &[&str]) -> (i32, String, Option<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_loadhost"))
        .arg("merge")
        .args(args)
        .args(["--summary-json", "merged.json", "--metric", "size:trend"])
        .env("LOADHOST_CACHE_DIR", root().join("target").join("test-cache"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let summary =
        std::fs::read_to_string(dir.path().join("merged.json")).ok().and_then(|t| serde_json::from_str(&t).ok());
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned(), summary)
}

fn started_at(run: &Run) -> SystemTime {
    humantime::parse_rfc3339(run.summary()["started_at"].as_str().unwrap()).unwrap()
}

#[test]
fn four_segments_meet_at_the_barrier_push_their_results_and_merge_to_the_whole() {
    let registry = RegistryProcess::start();
    let repo = format!("{}/loadhost/runs", registry.addr);
    let run_id = "e2e-barrier";
    // Started up to 5 s apart, as pods scheduled on nodes that come up one by one.
    let handles: Vec<_> = [0.0, 1.5, 3.0, 5.0]
        .into_iter()
        .enumerate()
        .map(|(i, delay)| {
            let repo = repo.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs_f64(delay));
                segment(i as u32, 4, &repo, run_id, &["--barrier"])
            })
        })
        .collect();
    let runs: Vec<Run> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(run.code, 0, "segment {i}: {}", run.stderr);
        assert!(run.stderr.contains("arrived at the barrier"), "segment {i}: {}", run.stderr);
    }
    let started: Vec<SystemTime> = runs.iter().map(started_at).collect();
    let first = *started.iter().min().unwrap();
    let spread = started.iter().map(|t| t.duration_since(first).unwrap()).max().unwrap();
    eprintln!("barrier: the four segments started within {spread:?}");
    assert!(spread < Duration::from_millis(100), "the barrier lines the segments up: {spread:?}");

    // A segment's pod retried after the start keeps its first arrival and sees the barrier long
    // open: it does not run a second, misaligned share.
    let retried = segment(2, 4, &repo, run_id, &["--barrier"]);
    assert_eq!(retried.code, 5, "{}", retried.stderr);
    assert!(retried.stderr.contains("arrived at this barrier before (a retry)"), "{}", retried.stderr);
    assert!(retried.stderr.contains("the other segments are running"), "{}", retried.stderr);

    let whole = Loadhost::run_plugin(&fixture(Fixture::Metrics), &["-r", "2000", "-n", "1000"]);
    assert_eq!(whole.code, 0, "{}", whole.stderr);
    let whole = whole.summary();
    let oci = format!("oci://{repo}");
    let (code, stderr, merged) = merge(&[&oci, "--run-id", run_id]);
    assert_eq!(code, 0, "{stderr}");
    let merged = merged.expect("merged.json");
    assert_eq!(merged["tasks"]["scheduled"], 1000);
    assert_eq!(merged["tasks"]["passed"], whole["tasks"]["passed"]);
    for key in ["count", "min", "max", "mean"] {
        assert_eq!(merged["metrics"]["size"][key], whole["metrics"]["size"][key], "size.{key}: the single process's");
    }
    assert_eq!(merged["merged"]["segments"].as_array().unwrap().len(), 4, "{}", merged["merged"]);
}

#[test]
fn a_missing_segment_is_left_behind_a_late_one_does_not_start_and_merge_needs_partial() {
    let registry = RegistryProcess::start();
    let repo = format!("{}/loadhost/runs", registry.addr);
    let run_id = "e2e-partial";
    let barrier = ["--barrier", "--barrier-timeout", "2s"];
    let handles: Vec<_> = (0..3)
        .map(|i| {
            let repo = repo.clone();
            std::thread::spawn(move || segment(i, 4, &repo, run_id, &barrier))
        })
        .collect();
    let runs: Vec<Run> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for run in &runs {
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(run.stderr.contains("segments [3] did not arrive within --barrier-timeout"), "{}", run.stderr);
    }
    // The fourth arrives after the deadline: it must not run a share the others did not wait for.
    let late = segment(3, 4, &repo, run_id, &barrier);
    assert_eq!(late.code, 5, "{}", late.stderr);
    assert!(late.stderr.contains("arrived after the barrier's deadline"), "{}", late.stderr);
    assert!(!late.dir.path().join("summary.json").exists(), "a segment that did not start leaves no outputs");

    let oci = format!("oci://{repo}");
    let (code, stderr, _) = merge(&[&oci, "--run-id", run_id]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("segments 3/4 are missing"), "{stderr}");
    let (code, stderr, merged) = merge(&[&oci, "--run-id", run_id, "--partial"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(merged.unwrap()["tasks"]["scheduled"], 750, "three quarters of the plan");

    let (code, stderr, _) = merge(&[&oci, "--run-id", "another-run"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no results of run 'another-run'"), "{stderr}");
}

#[test]
fn parts_of_another_run_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (i, run_id) in [(0, "monday"), (1, "tuesday")] {
        let file = dir.path().join(format!("segment-{i}.lhr"));
        let seg = format!("{i}/2");
        let run = Loadhost::run_plugin(
            &fixture(Fixture::Metrics),
            &["-r", "2000", "-n", "100", "--segment", &seg, "--run-id", run_id, "--results", file.to_str().unwrap()],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        files.push(file);
    }
    let paths: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
    let (code, stderr, _) = merge(&paths);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("monday") && stderr.contains("tuesday"), "both runs are named: {stderr}");
    let (code, stderr, _) = merge(&[paths[0], "--run-id", "tuesday"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("a part of run 'monday', not of --run-id tuesday"), "{stderr}");
}

#[test]
fn a_start_ten_seconds_past_with_max_start_lateness_1s_refuses_to_run() {
    let past = humantime::format_rfc3339(SystemTime::now() - Duration::from_secs(10)).to_string();
    let run = Loadhost::run_plugin(
        &fixture(Fixture::Metrics),
        &["-r", "100", "-n", "10", "--start-at", &past, "--max-start-lateness", "1s", "--results", "r.lhr"],
    );
    assert_eq!(run.code, 5, "exit 5: did not start: {}", run.stderr);
    assert!(run.stderr.contains("more than --max-start-lateness 1s"), "{}", run.stderr);
    assert!(!run.dir.path().join("r.lhr").exists() && !run.dir.path().join("summary.json").exists());
    // Without the flag, a late start still runs (and says so), as before.
    let lenient = Loadhost::run_plugin(&fixture(Fixture::Metrics), &["-r", "100", "-n", "10", "--start-at", &past]);
    assert_eq!(lenient.code, 0, "{}", lenient.stderr);
}

/// `loadhost registry prune ARGS… oci://REPO` with the test store.
fn prune(repo: &str, args: &[&str]) -> Run {
    let results = format!("oci://{repo}");
    Loadhost::new().args(["registry", "prune", results.as_str()]).args(args).run()
}

/// Two segments of `run_id` that met at the barrier and pushed their results: four tags.
fn two_segments(repo: &str, run_id: &str) {
    let handles: Vec<_> = (0..2)
        .map(|i| {
            let (repo, run_id) = (repo.to_owned(), run_id.to_owned());
            std::thread::spawn(move || segment(i, 2, &repo, &run_id, &["--barrier", "--barrier-timeout", "20s"]))
        })
        .collect();
    for handle in handles {
        let run = handle.join().unwrap();
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
}

#[test]
fn registry_prune_deletes_a_runs_results_and_arrivals_and_leaves_the_rest() {
    let registry = RegistryProcess::start_with_deletes();
    let repo = format!("{}/loadhost/runs", registry.addr);
    two_segments(&repo, "old-run");
    two_segments(&repo, "new-run");
    // A plugin in the same repository: not a run's, so never pruned.
    let noop = crate::common::plugin(crate::common::Example::Noop);
    let pushed = Loadhost::new().args(["push".as_ref(), noop.as_os_str(), format!("{repo}:1.0").as_ref()]).run();
    assert_eq!(pushed.code, 0, "{}", pushed.stderr);
    let all = registry.tags("loadhost/runs");
    assert_eq!(all.len(), 9, "2 runs × 2 segments × (results, arrival) and the plugin: {all:?}");

    let dry = prune(&repo, &["--run-id", "old-run", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(dry.stdout.contains("would delete run old-run: 2 results, 2 arrivals"), "{}", dry.stdout);
    assert_eq!(registry.tags("loadhost/runs"), all, "--dry-run deletes nothing");

    let run = prune(&repo, &["--run-id", "old-run"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("deleted run old-run: 2 results, 2 arrivals"), "{}", run.stdout);
    assert!(run.stdout.contains("1 run(s) pruned, 4 manifest(s) deleted"), "{}", run.stdout);
    let left = registry.tags("loadhost/runs");
    assert!(left.iter().all(|t| !t.starts_with("old-run-")), "{left:?}");
    assert_eq!(left.len(), 5, "the other run and the plugin stay: {left:?}");
    // What is left is whole: the other run still merges, the pruned one is gone.
    let (code, stderr, summary) = merge(&[&format!("oci://{repo}"), "--run-id", "new-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(summary.unwrap()["tasks"]["scheduled"], 1000);
    let (code, stderr, _) = merge(&[&format!("oci://{repo}"), "--run-id", "old-run"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no results of run 'old-run'"), "{stderr}");

    // A run id with nothing to delete is named, with the runs there are.
    let typo = prune(&repo, &["--run-id", "nwe-run"]);
    assert_eq!(typo.code, 2, "{}", typo.stderr);
    assert!(
        typo.stderr.contains("no artifacts of run 'nwe-run'") && typo.stderr.contains("runs there: new-run"),
        "{}",
        typo.stderr
    );

    // By age: the run is a few seconds old, so an hour keeps it and a second does not.
    let kept = prune(&repo, &["--older-than", "1h"]);
    assert_eq!(kept.code, 0, "{}", kept.stderr);
    assert!(kept.stdout.contains("0 run(s) pruned"), "{}", kept.stdout);
    std::thread::sleep(Duration::from_millis(1100));
    let aged = prune(&repo, &["--older-than", "1s"]);
    assert_eq!(aged.code, 0, "{}", aged.stderr);
    assert!(aged.stdout.contains("deleted run new-run: 2 results, 2 arrivals"), "{}", aged.stdout);
    assert_eq!(registry.tags("loadhost/runs"), ["1.0"], "only the plugin is left");
}

#[test]
fn a_registry_that_refuses_deletes_is_said_so() {
    let registry = RegistryProcess::start();
    let repo = format!("{}/loadhost/runs", registry.addr);
    let run = segment(0, 1, &repo, "kept", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let refused = prune(&repo, &["--run-id", "kept"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("the registry refuses to delete"), "{}", refused.stderr);
    assert!(refused.stderr.contains("storage.delete.enabled: true"), "{}", refused.stderr);
    assert_eq!(refused.stderr.trim().lines().count(), 1, "one line: {}", refused.stderr);
    assert_eq!(registry.tags("loadhost/runs"), ["kept-results-0"]);
}

/// The manifest `reference` (a tag or digest) of `repo` names, as the registry serves it.
fn manifest_bytes(addr: &str, repo: &str, reference: &str) -> Vec<u8> {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET /v2/{repo}/manifests/{reference} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/vnd.oci.image.manifest.v1+json\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let at = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(response.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&response[..at]));
    response[at..].to_vec()
}

#[test]
fn registry_prune_spares_a_manifest_another_tag_names_and_says_which() {
    // Issue 41, defect 6: a run's results manifest also tagged `prod` and `baseline` (a results
    // file kept as a baseline, a plugin tag pointing at it): deleting it by digest would delete
    // those tags too, so it is spared, and said, with --dry-run too.
    let registry = RegistryProcess::start_with_deletes();
    let repo = format!("{}/loadhost/runs", registry.addr);
    let run = segment(0, 1, &repo, "kept-run", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = segment(0, 1, &repo, "gone-run", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let manifest = manifest_bytes(&registry.addr, "loadhost/runs", "kept-run-results-0");
    for tag in ["prod", "baseline"] {
        let status = crate::registry::http(
            &registry.addr,
            "PUT",
            &format!("/v2/loadhost/runs/manifests/{tag}"),
            "application/vnd.oci.image.manifest.v1+json",
            &manifest,
        );
        assert!(status.starts_with("HTTP/1.1 201"), "{status}");
    }
    let all = registry.tags("loadhost/runs");
    assert_eq!(all, ["baseline", "gone-run-results-0", "kept-run-results-0", "prod"]);

    let dry = prune(&repo, &["--run-id", "kept-run", "--run-id", "gone-run", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(dry.stdout.contains("spared kept-run-results-0"), "{}", dry.stdout);
    assert!(dry.stdout.contains("also tagged baseline, prod"), "{}", dry.stdout);
    assert!(dry.stdout.contains("would delete run gone-run: 1 results"), "{}", dry.stdout);
    assert!(dry.stdout.contains("1 tag(s) would be deleted, 1 tag(s) spared"), "{}", dry.stdout);
    assert_eq!(registry.tags("loadhost/runs"), all, "--dry-run deletes nothing");

    let run = prune(&repo, &["--run-id", "kept-run", "--run-id", "gone-run"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("spared kept-run-results-0") && run.stdout.contains("baseline, prod"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("1 manifest(s) deleted, 1 tag(s) spared"), "{}", run.stdout);
    assert_eq!(
        registry.tags("loadhost/runs"),
        ["baseline", "kept-run-results-0", "prod"],
        "prod and baseline (and the run tag naming their manifest) are kept"
    );
}
