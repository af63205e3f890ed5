//! The generator's health (docs/outputs.md, `generator`), measured by real runs against the
//! built-in target: every interval has its CPU share and its event loops' run-queue delay, in the
//! summary, the JSON lines and the CSV; and a loadhost pinned to one core beside a CPU hog pinned
//! there too sees a large share of its time spent waiting for that core.

use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{Example, Loadhost, Run, assert_identity, assert_ok, plugin};
use crate::target_process::TargetProcess;

/// The run's arguments: 3 s of HTTP GETs against `target` from two workers looping without a
/// pause (the closed model: the event loop always has work, so it competes for a CPU like the hog
/// does; an open model at a modest rate sleeps most of the time, and a sleeper's wake-ups preempt
/// a hog), with every output that carries the figures.
fn args(target: &TargetProcess, url: &str) -> Vec<String> {
    let mut args: Vec<String> =
        ["-e", url, "--allow-host", &target.authority, "-w", "2", "-d", "3s"].iter().map(|s| (*s).to_owned()).collect();
    args.extend(["--out", "json=lines.jsonl", "--csv", "rows.csv"].map(str::to_owned));
    args
}

/// `loadhost run` against `target`, under `taskset -c 0` when `pinned`.
fn run(target: &TargetProcess, pinned: bool) -> Run {
    let url = format!("TARGET_URL={}/", target.url);
    let args = args(target, &url);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let loadhost = if pinned {
        Loadhost::new().program("taskset").args(["-c", "0", env!("CARGO_BIN_EXE_loadhost")])
    } else {
        Loadhost::new()
    };
    loadhost.arg_run(&plugin(Example::HttpGet), &args).spawn().finish_within(Duration::from_secs(60))
}

/// The summary's `generator` section, checked for what every measured run has.
fn generator(run: &Run) -> Value {
    assert_ok(run);
    let s = run.summary();
    assert_identity(&s);
    let g = s["generator"].clone();
    assert!(g["cores_allowed"].as_f64().is_some_and(|c| c > 0.0), "{g}");
    let intervals = g["intervals"].as_array().unwrap_or_else(|| panic!("generator.intervals in {s}"));
    assert!(intervals.len() >= 3, "a 3 s run has 3 intervals or more: {g}");
    // The last interval may be the few milliseconds after the schedule, too short for a share.
    let (last, full) = intervals.split_last().unwrap();
    assert!(last["cpu"].is_null() || last["cpu"].as_f64().is_some_and(|c| c > 0.0 && c <= 1.5), "{last}");
    for i in full {
        let cpu = i["cpu"].as_f64().unwrap_or_else(|| panic!("cpu in {i}"));
        assert!(cpu > 0.0 && cpu <= 1.5, "a share of the cores allowed: {i}");
        assert!(i["run_queue"].is_f64() && i["run_queue_max"].is_f64(), "the event loops' delay: {i}");
        assert!(i["start_s"].is_f64(), "{i}");
    }
    g
}

#[test]
fn every_interval_has_the_generators_cpu_and_run_queue_in_every_output() {
    let target = TargetProcess::start(&[]);
    let run = run(&target, false);
    let g = generator(&run);
    eprintln!("unpinned: run_queue {} cpu {}", g["run_queue_max"], g["cpu"]);
    assert!(g["cpu"]["max"].as_f64() >= g["cpu"]["mean"].as_f64(), "{g}");
    // The JSON lines: a `generator` object on each interval line, as the summary's interval.
    let lines = run.file("lines.jsonl");
    let intervals: Vec<Value> =
        lines.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|l| l["type"] == "interval").collect();
    assert_eq!(intervals.len(), g["intervals"].as_array().map_or(0, Vec::len), "{lines}");
    for (line, summary) in intervals.iter().zip(g["intervals"].as_array().into_iter().flatten()) {
        assert_eq!(line["generator"]["cpu"], summary["cpu"], "{line}");
        assert_eq!(line["generator"]["run_queue"], summary["run_queue"], "{line}");
    }
    // The CSV: four columns after `scenario`, the CPU share and the verdict filled in.
    let csv = run.file("rows.csv");
    let mut rows = csv.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    assert_eq!(
        header[header.len() - 5..],
        ["scenario", "generator_cpu", "generator_run_queue", "generator_throttled", "generator_verdict"]
    );
    let rows: Vec<&str> = rows.collect();
    for row in &rows[..rows.len() - 1] {
        let fields: Vec<&str> = row.split(',').collect();
        assert_eq!(fields.len(), header.len(), "{row}");
        assert!(fields[header.len() - 4].parse::<f64>().is_ok_and(|c| c > 0.0), "{row}");
        assert!(["healthy", "degraded", "saturated"].contains(&fields[header.len() - 1]), "{row}");
    }
    // The terminal's line.
    // The terminal's line: the run's verdict, then the figures.
    let verdict = g["verdict"].as_str().unwrap_or_else(|| panic!("a verdict in {g}"));
    assert!(run.stdout.contains(&format!("  generator........: {verdict} · cpu p50 ")), "{}", run.stdout);
}

/// `taskset -c 0 timeout 60 sh -c 'spin'`: a CPU hog on core 0 in a process group of its own,
/// the whole group killed on drop (killing `timeout` alone would leave its spinning child), and
/// ended by `timeout` after a minute should the test itself die. Also used by `generator_reports`.
pub(crate) struct Hog(Child);

impl Hog {
    pub(crate) fn start() -> Option<Self> {
        Command::new("taskset")
            .args(["-c", "0", "timeout", "60", "sh", "-c", "while :; do :; done"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .ok()
            .map(Hog)
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.0.wait();
    }
}

#[test]
fn a_generator_pinned_beside_a_cpu_hog_waits_for_its_core() {
    let taskset = Command::new("taskset").args(["-c", "0", "true"]).status();
    if !taskset.is_ok_and(|s| s.success()) {
        eprintln!("skipped: no taskset (util-linux) on this machine");
        return;
    }
    let target = TargetProcess::start(&[]);
    let run = {
        let Some(_hog) = Hog::start() else { panic!("taskset ran, so the hog starts") };
        run(&target, true)
    };
    let g = generator(&run);
    eprintln!(
        "pinned beside a hog: run_queue {} run_queue_max {} cpu {}",
        g["run_queue"], g["run_queue_max"], g["cpu"]
    );
    let worst = g["run_queue_max"]["max"].as_f64().unwrap_or_else(|| panic!("{g}"));
    assert!(worst >= 0.2, "the event loop waited for core 0 a large share of the time: {g}");
}
