//! The generator's health and its verdict on itself (docs/outputs.md, `generator`), measured by
//! real runs against the built-in target: every interval has its CPU share, its event loops'
//! run-queue delay and timer overshoot, and a verdict, in the summary, the JSON lines and the CSV;
//! a loadhost pinned to one core beside a CPU hog pinned there too sees a large share of its time
//! spent waiting for that core and says it was not healthy; one in a cgroup with a fifth of a CPU
//! says it was saturated by throttling, and `generator_saturated:rate==0` fails the run (exit 99);
//! one whose descriptor limit is lower than its workers' connections sees its descriptors at the
//! limit, counts the connects that found none, and still ends with its results. Ports exhausted
//! (`EADDRNOTAVAIL`) are not provoked here (it takes the machine's whole ephemeral range): the
//! runtime's unit test of the errno classification covers them.

use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::cgroup::Cgroup;
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

/// The threshold CI uses to refuse a run whose figures cannot be trusted.
const REFUSE_SATURATED: &str = "generator_saturated:rate==0";

/// How loadhost is started.
enum Starved<'a> {
    /// As is.
    No,
    /// Under `taskset -c 0`.
    Pinned,
    /// In this CPU cgroup.
    Quota(&'a Cgroup),
}

/// `loadhost run` against `target`, with `extra` arguments, started as `starved` says.
fn run(target: &TargetProcess, starved: Starved<'_>, extra: &[&str]) -> Run {
    let url = format!("TARGET_URL={}/", target.url);
    let mut args = args(target, &url);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let loadhost = match starved {
        Starved::Pinned => Loadhost::new().program("taskset").args(["-c", "0", env!("CARGO_BIN_EXE_loadhost")]),
        Starved::No | Starved::Quota(_) => Loadhost::new(),
    };
    let loadhost = loadhost.arg_run(&plugin(Example::HttpGet), &args);
    let loadhost = match starved {
        Starved::Quota(cgroup) => loadhost.in_cgroup(&cgroup.procs()),
        _ => loadhost,
    };
    loadhost.spawn().finish_within(Duration::from_secs(60))
}

/// The verdict on `g` and each interval's, checked against one another: the run's is its worst
/// interval's, its counts are the intervals', and `why` is there exactly when one was not healthy.
fn verdicts(g: &Value) -> (String, Vec<Value>) {
    let order = ["healthy", "degraded", "saturated"];
    let intervals: Vec<Value> = g["intervals"].as_array().cloned().unwrap_or_default();
    let judged: Vec<&str> = intervals.iter().filter_map(|i| i["verdict"].as_str()).collect();
    let worst = judged.iter().copied().max_by_key(|v| order.iter().position(|o| o == v)).unwrap_or("none");
    assert_eq!(g["verdict"].as_str(), Some(worst), "{g}");
    assert_eq!(g["verdicts"]["judged"].as_u64(), Some(judged.len() as u64), "{g}");
    for (key, word) in [("degraded", "degraded"), ("saturated", "saturated")] {
        let n = judged.iter().filter(|v| **v == word).count() as u64;
        assert_eq!(g["verdicts"][key].as_u64(), Some(n), "{g}");
    }
    assert_eq!(g["why"].is_string(), worst != "healthy", "{g}");
    (worst.to_owned(), intervals)
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
    let run = run(&target, Starved::No, &[]);
    let g = generator(&run);
    let (verdict, _) = verdicts(&g);
    // Not asserted: on a busy machine (the suite's other tests share its cores) a run may well be
    // degraded or saturated; the verdict says so rather than hide it.
    eprintln!("unpinned: {verdict}: {}", g["why"]);
    eprintln!(
        "unpinned: run_queue {} cpu {} fds {} memory_peak {}",
        g["run_queue_max"], g["cpu"], g["fds"], g["memory_peak"]
    );
    assert!(g["cpu"]["max"].as_f64() >= g["cpu"]["mean"].as_f64(), "{g}");
    // The JSON lines: a `generator` object on each interval line, as the summary's interval.
    let lines = run.file("lines.jsonl");
    let intervals: Vec<Value> =
        lines.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|l| l["type"] == "interval").collect();
    assert_eq!(intervals.len(), g["intervals"].as_array().map_or(0, Vec::len), "{lines}");
    for (line, summary) in intervals.iter().zip(g["intervals"].as_array().into_iter().flatten()) {
        assert_eq!(line["generator"]["cpu"], summary["cpu"], "{line}");
        assert_eq!(line["generator"]["run_queue"], summary["run_queue"], "{line}");
        assert_eq!(line["generator"]["verdict"], summary["verdict"], "{line}");
        assert_eq!(line["generator"]["cause"], summary["cause"], "{line}");
    }
    // The CSV: the generator's columns after `scenario`, the CPU share and the verdict filled in.
    let csv = run.file("rows.csv");
    let mut rows = csv.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let (first, resources) = header[header.len() - 9..header.len() - 1].split_at(4);
    assert_eq!(first, ["scenario", "generator_cpu", "generator_run_queue", "generator_throttled"]);
    assert_eq!(header.last(), Some(&"generator_verdict"));
    assert_eq!(
        resources,
        ["generator_fds", "generator_memory", "generator_ports_exhausted", "generator_fds_exhausted"]
    );
    let rows: Vec<&str> = rows.collect();
    for row in &rows[..rows.len() - 1] {
        let fields: Vec<&str> = row.split(',').collect();
        assert_eq!(fields.len(), header.len(), "{row}");
        assert!(fields[header.len() - 8].parse::<f64>().is_ok_and(|c| c > 0.0), "{row}");
        assert!(["healthy", "degraded", "saturated"].contains(&fields[header.len() - 1]), "{row}");
    }
    // An ordinary run's descriptors: a few, of a limit far above them; none ran out.
    let fds = g["fds"]["max"].as_f64().unwrap_or_else(|| panic!("{g}"));
    assert!(fds > 0.0 && fds < 0.5, "{g}");
    assert!(g["memory_peak"]["max"].as_f64().is_some_and(|m| m > 0.0), "{g}");
    assert_eq!((&g["fds_exhausted"], &g["ports_exhausted"]), (&Value::from(0), &Value::from(0)), "{g}");
    let last_line = intervals.last().unwrap();
    assert!(last_line["generator"]["fds"].as_f64().is_some_and(|f| f > 0.0), "{last_line}");
    assert_eq!(last_line["generator"]["fds_exhausted"], 0, "{last_line}");
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
fn a_generator_pinned_beside_a_cpu_hog_waits_for_its_core_and_says_it_was_not_healthy() {
    let taskset = Command::new("taskset").args(["-c", "0", "true"]).status();
    if !taskset.is_ok_and(|s| s.success()) {
        eprintln!("skipped: no taskset (util-linux) on this machine");
        return;
    }
    let target = TargetProcess::start(&[]);
    let run = {
        let Some(_hog) = Hog::start() else { panic!("taskset ran, so the hog starts") };
        run(&target, Starved::Pinned, &["--threshold", REFUSE_SATURATED])
    };
    // The threshold fails the run exactly when an interval was saturated.
    let s = run.summary();
    let g = s["generator"].clone();
    let (verdict, intervals) = verdicts(&g);
    eprintln!("pinned beside a hog: {verdict}: run_queue_max {} cpu {}: {}", g["run_queue_max"], g["cpu"], g["why"]);
    let worst = g["run_queue_max"]["max"].as_f64().unwrap_or_else(|| panic!("{g}"));
    assert!(worst >= 0.2, "the event loop waited for core 0 a large share of the time: {g}");
    assert!(verdict == "degraded" || verdict == "saturated", "{g}");
    assert!(intervals.iter().any(|i| i["cause"] == "run_queue_max"), "the run-queue delay is named: {g}");
    let why = g["why"].as_str().unwrap_or_default();
    assert!(why.contains("waited for a CPU") && why.contains("give the generator CPUs of its own"), "{why}");
    let threshold = &s["thresholds"][REFUSE_SATURATED];
    assert_eq!(threshold["ok"], verdict != "saturated", "{threshold}");
    assert_eq!(run.code, if verdict == "saturated" { 99 } else { 0 }, "{}", run.stderr);
    assert!(run.stdout.contains(why), "the terminal says it in the same words: {}", run.stdout);
}

#[test]
fn a_generator_throttled_by_its_cgroup_is_saturated_and_the_threshold_refuses_the_run() {
    let Some(cgroup) = Cgroup::cpu(0.2) else {
        eprintln!("skipped: no CPU cgroup can be made here (not root, or no cpu controller)");
        return;
    };
    let target = TargetProcess::start(&[]);
    // Two workers looping want far more than a fifth of a CPU: the quota stops the process for
    // most of every 100 ms (measured: throttled 60–67% of the time, timers 70–80 ms late).
    let run = run(&target, Starved::Quota(&cgroup), &["--threshold", REFUSE_SATURATED]);
    assert_eq!(run.code, 99, "the threshold refuses the run: {}", run.stderr);
    let s = run.summary();
    let g = s["generator"].clone();
    let (verdict, intervals) = verdicts(&g);
    eprintln!("a fifth of a CPU: {verdict}: throttled {} cores {}: {}", g["throttled"], g["cores_allowed"], g["why"]);
    assert!((g["cores_allowed"].as_f64().unwrap_or_default() - 0.2).abs() < 1e-6, "the quota is read: {g}");
    assert_eq!(verdict, "saturated", "{g}");
    assert!(intervals.iter().any(|i| i["cause"] == "throttled"), "{g}");
    let why = g["why"].as_str().unwrap_or_default();
    assert!(why.starts_with("the generator was saturated from "), "{why}");
    assert!(
        why.contains("the cgroup throttled the process") && why.contains("raise the container's CPU limit"),
        "{why}"
    );
    assert_eq!(s["thresholds"][REFUSE_SATURATED]["ok"], false, "{}", s["thresholds"]);
    // The run's limit is the generator, named before the target, in the generator's own words.
    assert_eq!(s["verdict"]["limit"], "emitter", "{}", s["verdict"]);
    assert!(
        s["verdict"]["why"].as_str().is_some_and(|w| w.contains("the generator was saturated")),
        "{}",
        s["verdict"]
    );
}

/// The descriptor limit of the run below: loadhost's own descriptors (standard streams, the event
/// loops' epoll and timers, the output files) take a few dozen, so 100 workers each keeping a
/// connection pass it.
const FD_LIMIT: u32 = 64;

#[test]
fn a_generator_out_of_descriptors_says_so_and_ends_with_its_results() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/", target.url);
    let mut args = args(&target, &url);
    // 100 workers for 2 s (the shortest run with a full interval or two).
    args[5] = "100".into();
    args[7] = "2s".into();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // The shell lowers its own limit, then becomes loadhost.
    let limit = format!("ulimit -n {FD_LIMIT} && exec \"$@\"");
    let run = Loadhost::new()
        .program("sh")
        .args(["-c", &limit, "sh", env!("CARGO_BIN_EXE_loadhost")])
        .arg_run(&plugin(Example::HttpGet), &args)
        .spawn()
        .finish_within(Duration::from_secs(60));
    // It ends as any run does: some tasks passed on the connections it had, the rest failed.
    assert_ok(&run);
    let s = run.summary();
    assert_identity(&s);
    let g = &s["generator"];
    eprintln!(
        "out of descriptors: fds {} fds_exhausted {} memory_peak {}",
        g["fds"], g["fds_exhausted"], g["memory_peak"]
    );
    let fds = g["fds"]["max"].as_f64().unwrap_or_else(|| panic!("{g}"));
    // Descriptors inherited from the test above the limit may put it past 1.
    assert!(fds >= 0.9, "every descriptor allowed was open: {g}");
    let exhausted = g["fds_exhausted"].as_u64().unwrap_or_else(|| panic!("{g}"));
    assert!(exhausted > 0, "{g}");
    assert_eq!(g["ports_exhausted"], 0, "{g}");
    // A connect that found no descriptor failed its task, saying whose failure it was.
    assert!(s["tasks"]["failed"].as_u64().is_some_and(|f| f > 0), "{}", s["tasks"]);
    let errors = s["errors"].to_string();
    assert!(errors.contains("connect failed: the generator is out of file descriptors"), "{errors}");
    // The outputs that show the figures have them, to the terminal's line.
    let csv = run.file("rows.csv");
    let mut rows = csv.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let column = header.iter().position(|h| *h == "generator_fds_exhausted").unwrap_or_else(|| panic!("{header:?}"));
    let counted: u64 = rows
        .map(|row| row.split(',').nth(column).and_then(|n| n.parse::<u64>().ok()).unwrap_or_else(|| panic!("{row}")))
        .sum();
    assert_eq!(counted, exhausted, "the CSV's generator_fds_exhausted adds up to the summary's");
    assert!(run.stdout.contains(" connects out of fds"), "{}", run.stdout);
    assert!(run.stdout.contains("fds max "), "{}", run.stdout);
}
