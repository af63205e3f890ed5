//! The generator's verdict in the reports (docs/outputs.md): a loadhost pinned to one core beside a
//! CPU hog is saturated (or at least degraded), and its HTML report shades those intervals on the
//! latency chart (checked in headless Chromium), its Markdown warns, its JUnit fails the
//! `generator_saturated` threshold with the generator's sentence; and `merge` of two segments, one
//! of them pinned beside the hog, names that segment.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::{Example, Loadhost, Run, plugin, root};
use crate::generator_health::Hog;
use crate::target_process::TargetProcess;

/// Segment `segment` of a 4-second closed-model run of HTTP GETs against `target` (4 workers
/// looping without a pause: the event loop always has work, so it competes with the hog for the
/// core), writing its results to `results`, under `taskset -c 0` when `pinned`.
fn segment(target: &TargetProcess, segment: &str, results: &Path, pinned: bool) -> Run {
    let url = format!("TARGET_URL={}/", target.url);
    let results = results.to_str().unwrap();
    let args = [
        "-e",
        &url,
        "--allow-host",
        &target.authority,
        "-w",
        "4",
        "-d",
        "4s",
        "--segment",
        segment,
        "--results",
        results,
        "--html",
        "report.html",
        "--markdown",
        "report.md",
        "--junit",
        "junit.xml",
        "--threshold",
        "generator_saturated:rate==0",
    ];
    let loadhost = if pinned {
        Loadhost::new().program("taskset").args(["-c", "0", env!("CARGO_BIN_EXE_loadhost")])
    } else {
        Loadhost::new()
    };
    loadhost.arg_run(&plugin(Example::HttpGet), &args).spawn().finish_within(Duration::from_secs(60))
}

fn has_taskset() -> bool {
    Command::new("taskset").args(["-c", "0", "true"]).status().is_ok_and(|s| s.success())
}

#[test]
fn a_saturated_segment_is_shaded_warned_failed_on_request_and_named_by_merge() {
    if !has_taskset() {
        eprintln!("skipped: no taskset (util-linux) on this machine");
        return;
    }
    let target = TargetProcess::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.lhr"), dir.path().join("b.lhr"));
    let quiet = segment(&target, "0/2", &a, false);
    let pinned = {
        let Some(_hog) = Hog::start() else { panic!("taskset ran, so the hog starts") };
        segment(&target, "1/2", &b, true)
    };
    // The quiet segment may be degraded or saturated on a busy machine: its threshold may fail.
    assert!(quiet.code == 0 || quiet.code == 99, "{}", quiet.stderr);
    assert!(pinned.code == 0 || pinned.code == 99, "{}", pinned.stderr);

    // The pinned segment's own reports.
    let g = pinned.summary()["generator"].clone();
    let verdict = g["verdict"].as_str().unwrap_or_else(|| panic!("a verdict: {g}")).to_owned();
    eprintln!("pinned beside a hog: {verdict}, run_queue_max {} · {}", g["run_queue_max"], g["why"]);
    assert!(verdict == "saturated" || verdict == "degraded", "the hog took the core: {g}");
    let why = g["why"].as_str().unwrap().to_owned();
    let markdown = pinned.file("report.md");
    assert!(markdown.contains(&format!("> ⚠️ {why}")), "{markdown}");
    assert!(markdown.contains(&format!("**Generator:** {verdict} · ")), "{markdown}");
    if verdict == "saturated" {
        assert_eq!(pinned.code, 99, "generator_saturated:rate==0 failed: {}", pinned.stdout);
        let junit = pinned.file("junit.xml");
        assert!(
            junit.contains("generator_saturated:rate==0 failed: measured ")
                && junit.contains(": the generator was saturated from "),
            "{junit}"
        );
        assert!(pinned.stdout.contains("✗ generator_saturated:rate==0"), "{}", pinned.stdout);
    }
    let html = pinned.file("report.html");
    assert!(
        html.contains("id=\"generator-verdict\"") && html.contains("id=\"generator-shading\""),
        "the sentence and the legend"
    );
    let check = Command::new(root().join("tests/browser/check_html.sh"))
        .arg(pinned.dir.path().join("report.html"))
        .arg(pinned.dir.path().join("report.png"))
        .output()
        .expect("tests/browser/check_html.sh runs");
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{said}\n{}", String::from_utf8_lossy(&check.stderr));
    let bands: u64 =
        said.split(" shaded bands").next().and_then(|s| s.rsplit(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(bands > 0, "the page shaded the intervals on the latency chart: {said}");

    // The merge judges each segment and names the pinned one.
    let out = Command::new(env!("CARGO_BIN_EXE_loadhost"))
        .arg("merge")
        .args([&a, &b])
        .args(["--summary-json", "merged.json", "--markdown", "merged.md"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(matches!(out.status.code(), Some(0 | 99)), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let merged: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("merged.json")).unwrap()).unwrap();
    let segments = merged["generator"]["segments"].as_array().unwrap_or_else(|| panic!("{}", merged["generator"]));
    assert_eq!(segments.len(), 2, "{}", merged["generator"]);
    assert_eq!(segments[1]["segment"], "1/2");
    assert_eq!(segments[1]["verdict"], verdict.as_str(), "judged from the file as the run judged it");
    let named = segments[1]["why"].as_str().unwrap();
    assert!(named.starts_with(&format!("segment 1/2: the generator was {verdict} from ")), "{named}");
    if segments[0]["verdict"] == "healthy" {
        // The worst segment is the pinned one: named in the summary, the terminal and the Markdown.
        assert_eq!(merged["generator"]["why"].as_str(), Some(named));
        assert!(stdout.contains(named), "{stdout}");
        let md = std::fs::read_to_string(dir.path().join("merged.md")).unwrap();
        assert!(md.contains(&format!("> ⚠️ {named}")), "{md}");
    }
}
