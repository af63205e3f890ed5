//! Locustfiles run unchanged (issue 42): each conformance locustfile of `tests/locust/` (written for
//! this suite in Locust's style) runs through the real Locust (PyPI's `locust`, installed by `cargo
//! xtask setup`) and through `loadhost run` against the same built-in target, with the same users,
//! and the counts agree: requests and failures for each request name (Locust's statistics table;
//! loadhost's `http_reqs{name:…}`, `http_req_failed{name:…}` and, for `catch_response=True`, the
//! check `METHOD NAME`). Each user stops itself after a set number of turns (`StopUser`), so the
//! counts are exact whatever the machine's speed. A file saying `# compare: total` picks tasks at
//! random: only the totals are compared. `# run-with: KEY=VALUE` sets Locust's environment
//! variable and loadhost's `-e` alike.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{Loadhost, root};
use crate::receivers::tools;
use crate::target_process::TargetProcess;

const USERS: &str = "4";
const RUN_TIME: &str = "4s";

/// Requests and failures by request name.
type Counts = BTreeMap<String, (u64, u64)>;

fn files() -> PathBuf {
    root().join("tests").join("locust")
}

/// Locust from the tools venv (or `$LOCUST`, or `PATH`).
fn locust() -> Option<PathBuf> {
    if let Some(locust) = std::env::var_os("LOCUST") {
        return Some(PathBuf::from(locust));
    }
    let venv = tools::venv_python_path().with_file_name("locust");
    if venv.exists() {
        return Some(venv);
    }
    tools::on_path("locust").then(|| PathBuf::from("locust"))
}

/// The `# run-with: KEY=VALUE` lines of a file.
fn run_with(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# run-with:"))
        .filter_map(|kv| kv.trim().split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect()
}

/// Run `file` through Locust; its statistics by name.
fn through_locust(locust: &Path, file: &Path, env: &[(String, String)], target: &TargetProcess, dir: &Path) -> Counts {
    let prefix = dir.join("stats");
    let out = Command::new(locust)
        .args(["-f"])
        .arg(file)
        .args(["--headless", "-u", USERS, "-r", USERS, "-t", RUN_TIME, "--only-summary", "--loglevel", "ERROR"])
        .args(["-H", target.url.trim_end_matches('/'), "--csv"])
        .arg(&prefix)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("locust runs");
    // Locust exits 1 when any request failed; its statistics say what happened.
    let csv = std::fs::read_to_string(dir.join("stats_stats.csv"))
        .unwrap_or_else(|_| panic!("locust {}: {}", file.display(), String::from_utf8_lossy(&out.stderr)));
    let mut counts = Counts::new();
    for line in csv.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() > 3 && fields[1] != "Aggregated" {
            let number = |i: usize| fields[i].parse::<u64>().expect("a count");
            counts.insert(fields[1].to_owned(), (number(2), number(3)));
        }
    }
    counts
}

/// The same from loadhost's summary: `http_reqs{name:N}`, its failures, and the fails of the check
/// `METHOD N` a `catch_response` block records.
fn loadhost_counts(summary: &Value) -> Counts {
    let metrics = summary["metrics"].as_object().expect("metrics");
    let mut counts = Counts::new();
    for (key, value) in metrics {
        let Some(name) = key.strip_prefix("http_reqs{name:").and_then(|k| k.strip_suffix('}')) else { continue };
        let failed = metrics.get(&format!("http_req_failed{{name:{name}}}")).and_then(|f| f["passes"].as_u64());
        counts.insert(name.to_owned(), (value["count"].as_u64().unwrap_or(0), failed.unwrap_or(0)));
    }
    for (check, c) in summary["checks"].as_object().into_iter().flatten() {
        let name = check.split_once(' ').map_or(check.as_str(), |(_, n)| n);
        if let Some(entry) = counts.get_mut(name) {
            entry.1 += c["fails"].as_u64().unwrap_or(0);
        }
    }
    counts
}

fn totals(counts: &Counts) -> (u64, u64) {
    counts.values().fold((0, 0), |(r, f), (rr, ff)| (r + rr, f + ff))
}

#[test]
fn locustfiles_give_the_counts_locust_gives() {
    let Some(locust) = locust() else {
        assert!(tools::usable("locust", false));
        return;
    };
    let work = tempfile::tempdir().expect("a temp dir");
    let mut names: Vec<String> = std::fs::read_dir(files())
        .expect("tests/locust")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.ends_with(".py"))
        .collect();
    names.sort();
    assert!(names.len() >= 25, "the conformance locustfiles: {names:?}");
    let mut differences = Vec::new();
    for name in &names {
        let path = files().join(name);
        let text = std::fs::read_to_string(&path).expect("the locustfile");
        let env = run_with(&text);
        // A target each, so its /stats counts each tool's requests.
        let target = TargetProcess::start(&[]);
        let dir = work.path().join(name);
        std::fs::create_dir_all(&dir).expect("a folder");
        let theirs = through_locust(&locust, &path, &env, &target, &dir);
        let locust_seen = target.stats()["requests"].as_u64().expect("requests") - 1;
        let mut args = vec!["-w", USERS, "-d", RUN_TIME, "--allow-host", &target.authority];
        let host = format!("LOCUST_HOST={}", target.url.trim_end_matches('/'));
        let extra: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        args.extend(["-e", &host]);
        for kv in &extra {
            args.extend(["-e", kv]);
        }
        let run = Loadhost::run_plugin(&path, &args);
        if run.code != 0 {
            differences.push(format!("loadhost {name}: exit {}: {}", run.code, run.stderr));
            continue;
        }
        let ours = loadhost_counts(&run.summary());
        assert!(!theirs.is_empty(), "{name}: Locust made no request");
        if text.contains("# compare: total") {
            if totals(&ours) != totals(&theirs) {
                differences.push(format!("{name}: totals loadhost {:?}, Locust {:?}", totals(&ours), totals(&theirs)));
            }
        } else if ours != theirs {
            differences.push(format!("{name}:\n  loadhost {ours:?}\n  Locust   {theirs:?}"));
        }
        // The target saw as many requests from each (its own /stats reads excepted).
        let all = target.stats()["requests"].as_u64().expect("requests") - 2;
        if all - locust_seen != locust_seen {
            differences
                .push(format!("{name}: the target saw {} from loadhost, {locust_seen} from Locust", all - locust_seen));
        }
    }
    assert!(differences.is_empty(), "{} differences from Locust:\n{}", differences.len(), differences.join("\n"));
}

/// What a sandboxed worker cannot run (gevent; a LoadTestShape naming user classes per tick) is
/// refused before any load: the file and line named (exit 2 for an import, 4 for what the
/// runner finds), no load.
#[test]
fn what_cannot_map_is_refused_before_any_load() {
    let target = TargetProcess::start(&[]);
    let dir = tempfile::tempdir().expect("a temp dir");
    let user = format!(
        "class Shopper(HttpUser):\n    host = '{}'\n\n    @task\n    def buy(self):\n        self.client.get('/')\n",
        target.url.trim_end_matches('/')
    );
    for (head, says) in [
        (
            "import gevent\nfrom locust import HttpUser, task\n",
            "locustfile.py:1: cannot import 'gevent': a worker is one Locust user",
        ),
        (
            "from locust import HttpUser, LoadTestShape, task\nclass Steps(LoadTestShape):\n    def tick(self):\n        return (2, 1, [HttpUser])\n",
            "locustfile.py:2: computing Steps's ticks: options returned an error: locustfile.py: Steps.tick() names user classes per tick",
        ),
    ] {
        let file = dir.path().join("locustfile.py");
        std::fs::write(&file, format!("{head}{user}")).expect("the locustfile");
        let run = Loadhost::run_plugin(&file, &["--allow-host", &target.authority, "-w", "2", "-d", "2s"]);
        let code = if head.contains("gevent") { 2 } else { 4 };
        assert_eq!(run.code, code, "{head}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{head}: {}", run.stderr);
    }
    assert_eq!(target.stats()["requests"].as_u64(), Some(1), "no load, only this /stats");
}

/// A `LoadTestShape` gives the load in both tools: its ticks planned as stages (2 users for 2 s,
/// then 4 until 4 s, then the end), Locust's `-u`, `-r` and `-t` without effect on it. The
/// requests agree within the users' boundary turns (each user paces a request every 0.25 s; where
/// a step starts and the run stops differs by a turn or so per user between the tools).
#[test]
fn a_load_shape_gives_the_load_locust_gives() {
    let Some(locust) = locust() else {
        assert!(tools::usable("locust", false));
        return;
    };
    let file = files().join("shape").join("steps.py");
    let target = TargetProcess::start(&[]);
    let work = tempfile::tempdir().expect("a temp dir");
    let theirs = through_locust(&locust, &file, &[], &target, work.path());
    let (theirs, _) = totals(&theirs);
    let host = target.url.trim_end_matches('/').to_owned();
    let run = Loadhost::new()
        .args(["locust".as_ref(), "-f".as_ref(), file.as_os_str()])
        .args(["--headless", "-u", "10", "-r", "10", "-t", "20", "-H", &host, "--", "--summary-json", "summary.json"])
        .run();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("steps.py:15: Steps's ticks planned as --stage 100ms:2 1900ms:2 100ms:4 1900ms:4")
            && run.stderr.contains("-u, -r, -t have no effect on it"),
        "{}",
        run.stderr
    );
    let summary = run.summary();
    assert_eq!(summary["workers"]["peak"].as_u64(), Some(4), "{}", summary["workers"]);
    let seconds = summary["duration_s"].as_f64().expect("duration_s");
    assert!((3.9..6.0).contains(&seconds), "ran {seconds} s");
    let (ours, failed) = totals(&loadhost_counts(&summary));
    assert_eq!(failed, 0);
    assert!(
        (40..=60).contains(&ours) && (40..=60).contains(&theirs) && ours.abs_diff(theirs) <= 6,
        "loadhost {ours} requests, Locust {theirs}"
    );
}

/// Locust's own command line, `loadhost locust -f FILE -u -r -t -H --headless`, runs the file as
/// `run` would: the users ramp at the spawn rate, `-H` is the host and its grant, and the counts are
/// the file's (4 users × 8 turns of `bytes`, one `home` each); a failed request exits 99.
#[test]
fn locusts_command_line_runs_a_locustfile() {
    let target = TargetProcess::start(&[]);
    let file = files().join("basic_get.py");
    let host = target.url.trim_end_matches('/').to_owned();
    let run = Loadhost::new()
        .args(["locust".as_ref(), "-f".as_ref(), file.as_os_str()])
        .args(["--headless", "-u", "4", "-r", "8", "-t", "3", "-H", &host, "--", "--summary-json", "summary.json"])
        .run();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("as loadhost run") && run.stderr.contains("--stage 500ms:4"), "{}", run.stderr);
    let summary = run.summary();
    assert_eq!(summary["workers"]["peak"].as_u64(), Some(4), "{}", summary["workers"]);
    let counts = loadhost_counts(&summary);
    assert_eq!(counts.get("bytes"), Some(&(32, 0)), "{counts:?}");
    assert_eq!(counts.get("home"), Some(&(4, 0)), "{counts:?}");
    // Locust exits 1 when a request failed; loadhost locust's threshold exits 99.
    let failing = files().join("status_failures.py");
    let run = Loadhost::new()
        .args(["locust".as_ref(), "-f".as_ref(), failing.as_os_str()])
        .args(["-u", "1", "-t", "2", "-H", &host])
        .run();
    assert_eq!(run.code, 99, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("http_req_failed:rate==0"), "{}", run.stdout);
    // A failure the file declares with catch_response fails the run too, as in Locust (whose exit
    // code counts those requests failed): here a check of the request's name (its own target, so
    // this one's count below stays the two files').
    let declared = files().join("catch_response.py");
    let other = TargetProcess::start(&[]);
    let run = Loadhost::new()
        .args(["locust".as_ref(), "-f".as_ref(), declared.as_os_str()])
        .args(["-u", "1", "-t", "2", "-H", other.url.trim_end_matches('/')])
        .run();
    assert_eq!(run.code, 99, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("✗ checks:rate==1"), "{}", run.stdout);
    // Without -t there is no end to run to: said, exit 2, no load.
    let run =
        Loadhost::new().args(["locust".as_ref(), "-f".as_ref(), file.as_os_str(), "-H".as_ref(), host.as_ref()]).run();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("needs -t/--run-time"), "{}", run.stderr);
    // basic_get's 36, status_failures' 1 user × 5 loops × 4, and this /stats.
    assert_eq!(target.stats()["requests"].as_u64(), Some(57), "{}", target.stats());
}

/// `loadhost new NAME --lang locust` writes a locustfile that loadhost and Locust both run, with
/// the command its README gives.
#[test]
fn the_locust_starter_runs_in_loadhost_and_in_locust() {
    let target = TargetProcess::start(&[]);
    let parent = tempfile::tempdir().expect("a temp dir");
    let made = Command::new(env!("CARGO_BIN_EXE_loadhost"))
        .args(["new", "shop", "--lang", "locust", "--dir"])
        .arg(parent.path())
        .output()
        .expect("loadhost new");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    assert!(String::from_utf8_lossy(&made.stdout).contains("loadhost locust -f"), "the next command is said");
    let file = parent.path().join("shop").join("locustfile.py");
    assert!(
        std::fs::read_to_string(parent.path().join("shop/README.md")).expect("README").contains("loadhost locust -f")
    );
    let host = target.url.trim_end_matches('/').to_owned();
    let run = Loadhost::new()
        .args(["locust".as_ref(), "-f".as_ref(), file.as_os_str()])
        .args(["-u", "2", "-r", "10", "-t", "2", "-H", &host, "--", "--summary-json", "summary.json"])
        .run();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let counts = loadhost_counts(&run.summary());
    assert_eq!(counts.get("start"), Some(&(2, 0)), "{counts:?}");
    assert!(counts.get("home").is_some_and(|(n, failed)| *n > 0 && *failed == 0), "{counts:?}");
    let Some(locust) = locust() else {
        assert!(tools::usable("locust", false));
        return;
    };
    let dir = parent.path().join("stats");
    std::fs::create_dir_all(&dir).expect("a folder");
    let theirs = through_locust(&locust, &file, &[], &target, &dir);
    assert_eq!(theirs.get("start"), Some(&(4, 0)), "Locust runs the starter as written (4 users here): {theirs:?}");
}
