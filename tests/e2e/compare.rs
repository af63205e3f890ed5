//! `loadhost compare BASE NEW`: real runs of the `http-get` plugin against the built-in target,
//! compared by the real binary (docs/compare.md).

use std::path::Path;

use serde_json::Value;

use crate::common::{Example, Loadhost, Run, plugin};
use crate::target_process::TargetProcess;

/// A 3-second run at 200/s of `http-get` on `/delay?ms=DELAY`, writing `NAME.lhr` and `NAME.json`
/// into `dir`.
/// A 3 s run of GETs of the built-in target's `/delay?ms=DELAY_MS`. The delays the tests use are
/// tens of milliseconds, so a busy machine's scheduling jitter (a millisecond or two) stays well
/// inside a 20% tolerance: two runs of the same delay compare equal.
fn delay_run(target: &TargetProcess, dir: &Path, name: &str, delay_ms: u32) {
    let url = format!("TARGET_URL={}/delay?ms={delay_ms}", target.url);
    let results = dir.join(format!("{name}.lhr"));
    let summary = dir.join(format!("{name}.json"));
    let run = Loadhost::new()
        .args(["run".as_ref(), plugin(Example::HttpGet).as_os_str()])
        .args(["-e", &url, "--allow-host", &target.authority, "-r", "200", "-d", "3s"])
        .args(["--results".as_ref(), results.as_os_str(), "--summary-json".as_ref(), summary.as_os_str()])
        .run();
    assert_eq!(run.code, 0, "{name}: {}", run.stderr);
}

/// `loadhost compare DIR/BASE DIR/NEW ARGS…`; `{dir}` in an argument is replaced by `dir`.
fn compare(dir: &Path, base: &str, new: &str, args: &[&str]) -> Run {
    compare_with(Loadhost::new(), dir, base, new, args)
}

fn compare_with(loadhost: Loadhost, dir: &Path, base: &str, new: &str, args: &[&str]) -> Run {
    let shown = dir.display().to_string();
    loadhost
        .args(["compare".as_ref(), dir.join(base).as_os_str(), dir.join(new).as_os_str()])
        .args(args.iter().map(|a| a.replace("{dir}", &shown)))
        .run()
}

fn last_line(text: &str) -> &str {
    text.lines().last().unwrap_or_default()
}

fn json(dir: &Path, name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap()
}

#[test]
fn identical_runs_pass_and_a_slower_target_fails_naming_the_metric() {
    let target = TargetProcess::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    delay_run(&target, d, "base", 20);
    delay_run(&target, d, "same", 20);
    delay_run(&target, d, "slower", 32);
    drop(target);
    let rules = ["--fail-on", "latency_ms:p(50)>+20%", "--fail-on", "http_req_failed:rate>+0.5pp"];

    let same = compare(d, "base.lhr", "same.lhr", &rules);
    assert_eq!(same.code, 0, "{}\n{}", same.stdout, same.stderr);
    assert!(last_line(&same.stdout).starts_with("compare: every rule held (2 rules)"), "{}", same.stdout);

    let outputs = ["--json", "{dir}/cmp.json", "--markdown", "{dir}/cmp.md"];
    // In a GitHub Actions job the Markdown also lands on the job's summary page.
    let job_summary = d.join("step-summary.md");
    let slower = compare_with(
        Loadhost::new().env("GITHUB_STEP_SUMMARY", &job_summary),
        d,
        "base.lhr",
        "slower.lhr",
        &[["--fail-on", "latency_ms:p(50)>+20%"].as_slice(), &outputs].concat(),
    );
    assert_eq!(slower.code, 99, "{}\n{}", slower.stdout, slower.stderr);
    let verdict = last_line(&slower.stdout);
    assert!(verdict.starts_with("compare: 1 of 1 rule failed: latency_ms:p(50) +"), "{verdict}");
    assert!(verdict.contains("% (p"), "the change and the p-value: {verdict}");
    let report = json(d, "cmp.json");
    let rule = &report["rules"][0];
    assert_eq!((rule["verdict"].as_str(), rule["significant"].as_bool()), (Some("failed"), Some(true)), "{rule}");
    assert!(rule["test"]["p_value"].as_f64().unwrap() < 0.01, "{rule}");
    assert!(rule["test"]["n_base"].as_u64().unwrap() >= 2 && rule["test"]["n_new"].as_u64().unwrap() >= 2);
    assert!(rule["relative"].as_f64().unwrap() > 0.2, "{rule}");
    assert_eq!(report["verdict"].as_str(), Some(verdict));
    let markdown = std::fs::read_to_string(d.join("cmp.md")).unwrap();
    assert!(markdown.contains("| ✗ | `latency_ms:p(50)>+20%` |"), "{markdown}");
    assert_eq!(last_line(&markdown), verdict, "the Markdown ends with the same verdict");
    assert_eq!(std::fs::read_to_string(&job_summary).unwrap().trim_end(), markdown.trim_end());
}

/// Two distributed runs (two `--segment I/2` processes each, started together, 3 s at 200/s of
/// `/delay?ms=DELAY`), each merged with `merge --results`, compared with the significance test as
/// single runs are.
#[test]
fn merged_distributed_runs_compare_with_the_significance_test() {
    let target = TargetProcess::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let start = humantime::format_rfc3339(std::time::SystemTime::now() + std::time::Duration::from_secs(2)).to_string();
    let runs = [("base", 20), ("slower", 32)];
    std::thread::scope(|scope| {
        let (target, start) = (&target, &start);
        let handles: Vec<_> = runs
            .iter()
            .flat_map(|&(name, delay)| (0..2).map(move |i| (name, delay, i)))
            .map(|(name, delay, i)| {
                scope.spawn(move || {
                    let url = format!("TARGET_URL={}/delay?ms={delay}", target.url);
                    let results = d.join(format!("{name}-{i}.lhr"));
                    let run = Loadhost::new()
                        .args(["run".as_ref(), plugin(Example::HttpGet).as_os_str()])
                        .args(["-e", &url, "--allow-host", &target.authority, "-r", "200", "-d", "3s"])
                        .args(["--segment", &format!("{i}/2"), "--start-at", start, "--run-id", name])
                        .args(["--results".as_ref(), results.as_os_str()])
                        .run();
                    assert_eq!(run.code, 0, "{name} {i}/2: {}", run.stderr);
                })
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().unwrap());
    });
    drop(target);
    for (name, _) in runs {
        let merged = Loadhost::new()
            .args([
                "merge".as_ref(),
                d.join(format!("{name}-0.lhr")).as_os_str(),
                d.join(format!("{name}-1.lhr")).as_os_str(),
            ])
            .args(["--results".as_ref(), d.join(format!("{name}.lhr")).as_os_str()])
            .run();
        assert_eq!(merged.code, 0, "{name}: {}", merged.stderr);
    }
    let slower =
        compare(d, "base.lhr", "slower.lhr", &["--fail-on", "latency_ms:p(50)>+20%", "--json", "{dir}/cmp.json"]);
    assert_eq!(slower.code, 99, "{}\n{}", slower.stdout, slower.stderr);
    assert!(slower.stdout.contains("merged from 2 of 2 segments"), "{}", slower.stdout);
    let verdict = last_line(&slower.stdout);
    assert!(verdict.starts_with("compare: 1 of 1 rule failed: latency_ms:p(50) +"), "{verdict}");
    assert!(verdict.contains("% (p"), "the change and the test's p-value: {verdict}");
    let rule = &json(d, "cmp.json")["rules"][0];
    assert_eq!((rule["verdict"].as_str(), rule["significant"].as_bool()), (Some("failed"), Some(true)), "{rule}");
    assert!(rule["test"]["n_base"].as_u64().unwrap() >= 2 && rule["test"]["n_new"].as_u64().unwrap() >= 2, "{rule}");
    // The same run against itself holds.
    let same = compare(d, "base.lhr", "base.lhr", &["--fail-on", "latency_ms:p(50)>+20%"]);
    assert_eq!(same.code, 0, "{}", same.stdout);
}

#[test]
fn summary_json_is_compared_on_tolerance_alone_and_agrees_with_the_results_file() {
    let target = TargetProcess::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    delay_run(&target, d, "base", 20);
    delay_run(&target, d, "slower", 32);
    drop(target);

    let slower = compare(d, "base.json", "slower.json", &["--fail-on", "latency_ms:p(50)>+20%"]);
    assert_eq!(slower.code, 99, "{}\n{}", slower.stdout, slower.stderr);
    assert!(slower.stdout.contains("no significance test: summary JSON has no per-interval data"), "{}", slower.stdout);
    assert!(last_line(&slower.stdout).contains("latency_ms:p(50) +"), "{}", slower.stdout);
    let within = compare(d, "base.json", "slower.json", &["--fail-on", "latency_ms:p(50)>+200%"]);
    assert_eq!(within.code, 0, "{}", within.stdout);

    // A run's results file and its own summary JSON are the same run: every figure is equal.
    let same = compare(d, "base.lhr", "base.json", &["--json", "{dir}/self.json"]);
    assert_eq!(same.code, 0, "{}", same.stderr);
    let report = json(d, "self.json");
    for row in report["metrics"].as_array().unwrap() {
        assert_eq!(row["delta"].as_f64(), row["base"].as_f64().map(|_| 0.0), "{row}");
    }
    // A statistic a summary does not keep is refused, naming the file and the field.
    let p97 = compare(d, "base.json", "slower.json", &["--fail-on", "latency_ms:p(97)>+20%"]);
    assert_eq!(p97.code, 2);
    assert!(p97.stderr.contains("base.json") && p97.stderr.contains("(field latency_ms)"), "{}", p97.stderr);
}

#[test]
fn runs_of_different_plugins_and_bad_rules_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, example) in [("noop", Example::Noop), ("sleep", Example::Sleep)] {
        let results = d.join(format!("{name}.lhr"));
        let run =
            Loadhost::run_plugin(&plugin(example), &["-r", "100", "-d", "2s", "--results", results.to_str().unwrap()]);
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let refused = compare(d, "noop.lhr", "sleep.lhr", &["--fail-on", "latency_ms:p(50)>+20%"]);
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    for named in ["noop.lhr", "sleep.lhr", "plugin.sha256", "--allow-different-plugin"] {
        assert!(refused.stderr.contains(named), "{named}: {}", refused.stderr);
    }
    let allowed = compare(d, "noop.lhr", "sleep.lhr", &["--allow-different-plugin"]);
    assert_eq!(allowed.code, 0, "{}", allowed.stderr);
    assert!(allowed.stdout.contains("runs of different plugins"), "{}", allowed.stdout);

    for (rule, says) in [
        ("latency_ms:p(50)>=+20%", "only > (worse when higher) and < (worse when lower)"),
        ("latency_ms:p(50)>-20%", "its change is +N"),
        ("latency_ms:p(50)>+20s", "'20s' is not a number"),
        ("latencyms:p(50)>+20%", "neither run has a metric named latencyms: did you mean latency_ms?"),
        ("http_req_failed:rate>+2ms", "ms is for durations"),
        ("latency_ms{scenario:api}:p(50)>+1%", "has no scenario named 'api'"),
    ] {
        let out = compare(d, "noop.lhr", "noop.lhr", &["--fail-on", rule]);
        assert_eq!(out.code, 2, "{rule}: {}", out.stdout);
        assert!(out.stderr.contains(says) && out.stderr.lines().count() == 1, "{rule}: {}", out.stderr);
    }

    std::fs::write(d.join("notes.txt"), "not a run\n").unwrap();
    let neither = compare(d, "noop.lhr", "notes.txt", &[]);
    assert_eq!(neither.code, 2);
    assert!(
        neither.stderr.contains("NEW") && neither.stderr.contains("notes.txt: neither a results file"),
        "{}",
        neither.stderr
    );
    let missing = compare(d, "gone.lhr", "noop.lhr", &[]);
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("BASE") && missing.stderr.contains("gone.lhr"), "{}", missing.stderr);
}

#[test]
fn a_redirect_count_reads_the_same_from_results_files_and_summary_json() {
    // Issue 28: over summary JSONs `http_reqs{redirect:true}` read 0 (the tag's value was parsed as
    // a status), while results files gave the count.
    let target = TargetProcess::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/redirect?n=2&to=/", target.url);
    let results = dir.path().join("r.lhr");
    let summary = dir.path().join("s.json");
    let run = Loadhost::new()
        .args(["http", &url, "-n", "5", "-w", "1"])
        .args(["--results".as_ref(), results.as_os_str(), "--summary-json".as_ref(), summary.as_os_str()])
        .run();
    assert!(run.code == 0 || run.code == 99, "{}", run.stderr);
    let by_status =
        serde_json::from_str::<Value>(&std::fs::read_to_string(&summary).unwrap()).unwrap()["metrics"]["http_status"]
            .clone();
    let redirects: u64 = ["301", "302", "303", "307", "308"].iter().filter_map(|s| by_status[s].as_u64()).sum();
    assert!(redirects >= 5, "the target answered redirects: {by_status}");

    // `N → N`: the value read from each side, whichever kind of file it is.
    let read = format!("{redirects} → {redirects}");
    for (base, new) in [("r.lhr", "r.lhr"), ("s.json", "s.json")] {
        let out = compare(dir.path(), base, new, &["--fail-on", "http_reqs{redirect:true}:count>+50%"]);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        let line = out.stdout.lines().find(|l| l.contains("http_reqs{redirect:true}")).unwrap_or_default();
        assert!(line.contains(&read), "{base}: {read} in {line:?}");
    }
}
