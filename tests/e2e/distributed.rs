//! One plan run by several processes: `--segment i/N` shares that add up to the plan exactly,
//! with iteration numbers that never collide, started together with `--start-at`.

use serde_json::Value;

use crate::common::{Example, Fixture, Loadhost, assert_identity, fixture};

/// Run segment `i` of `n` of the metrics fixture's plan (`-n 1000`, open model), writing into
/// the run's folder.
fn segment(i: u32, n: u32, extra: &[&str]) -> crate::common::Run {
    let seg = format!("{i}/{n}");
    let mut args = vec!["-r", "2000", "-n", "1000", "--segment", seg.as_str()];
    args.extend_from_slice(extra);
    let run = Loadhost::run_plugin(&fixture(Fixture::Metrics), &args);
    assert_eq!(run.code, 0, "segment {seg}: {}", run.stderr);
    run
}

#[test]
fn four_segments_run_the_plan_exactly_with_disjoint_iterations() {
    let start = humantime::format_rfc3339(std::time::SystemTime::now() + std::time::Duration::from_secs(2)).to_string();
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let start = start.clone();
            std::thread::spawn(move || segment(i, 4, &["--start-at", &start]))
        })
        .collect();
    let runs: Vec<crate::common::Run> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let summaries: Vec<Value> = runs.iter().map(|r| r.summary()).collect();
    let scheduled: Vec<u64> = summaries.iter().map(|s| s["tasks"]["scheduled"].as_u64().unwrap()).collect();
    assert_eq!(scheduled, [250, 250, 250, 250]);
    for (i, s) in summaries.iter().enumerate() {
        assert_identity(s);
        // The fixture records its iteration number as the trend `size`: segment i ran exactly
        // the iterations i, i+4, i+8, …
        let size = &s["metrics"]["size"];
        assert_eq!(size["count"], 250, "{size}");
        assert_eq!(size["min"].as_f64(), Some(i as f64));
        assert_eq!(size["max"].as_f64(), Some(996.0 + i as f64));
        assert!(runs[i].stdout.contains(&format!("segment {i} of 4")), "{}", runs[i].stdout);
        assert!((s["rate"]["target_per_s"].as_f64().unwrap() - 500.0).abs() < 1.0, "a quarter of 2000/s");
    }
    let started: Vec<std::time::SystemTime> =
        summaries.iter().map(|s| humantime::parse_rfc3339(s["started_at"].as_str().unwrap()).unwrap()).collect();
    let first = *started.iter().min().unwrap();
    let spread = started.iter().map(|t| t.duration_since(first).unwrap()).max().unwrap();
    assert!(spread < std::time::Duration::from_millis(500), "--start-at lines them up: {spread:?}");
}

fn merge(args: &[&std::ffi::OsStr], dir: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_loadhost"))
        .arg("merge")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn merged_segments_equal_the_whole_run_and_thresholds_judge_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<std::path::PathBuf> = (0..4).map(|i| dir.path().join(format!("segment-{i}.lhr"))).collect();
    for (i, file) in files.iter().enumerate() {
        segment(i as u32, 4, &["--results", file.to_str().unwrap()]);
    }
    // The same plan in one process, for the trend the merge must reproduce exactly.
    let whole = Loadhost::run_plugin(&fixture(Fixture::Metrics), &["-r", "2000", "-n", "1000"]);
    assert_eq!(whole.code, 0, "{}", whole.stderr);
    let whole = whole.summary();

    let mut args: Vec<&std::ffi::OsStr> = files.iter().map(|f| f.as_os_str()).collect();
    // Each segment records 250 sizes and would pass; the whole run records 1,000 and fails.
    args.extend(
        ["--summary-json", "merged.json", "--metric", "size:trend", "--threshold", "size:count<300"]
            .map(std::ffi::OsStr::new),
    );
    let out = merge(&args, dir.path());
    assert_eq!(out.status.code(), Some(99), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(dir.path().join("merged.json")).unwrap();
    let merged: Value = serde_json::from_str(&text).unwrap();
    assert_identity(&merged);
    // The merged summary is the same type as a run's, `merged` included, byte for byte.
    let typed: loadhost_output::summary::Summary = serde_json::from_str(&text).unwrap();
    assert_eq!(String::from_utf8(loadhost_output::json::to_bytes(&typed).unwrap()).unwrap(), text);
    assert_eq!(
        typed.merged.as_ref().map(|m| m.segments.clone()),
        Some(vec!["0/4", "1/4", "2/4", "3/4"].into_iter().map(String::from).collect())
    );
    assert_eq!(merged["tasks"]["scheduled"], 1000, "the plan, exactly");
    assert_eq!(merged["tasks"]["passed"], 1000);
    assert_eq!(merged["metrics"]["size"], whole["metrics"]["size"], "the merged HDR is the HDR of all the samples");
    assert_eq!(merged["metrics"]["tasks"]["count"], 1000);
    assert_eq!(merged["checks"]["even"], serde_json::json!({ "passes": 500, "fails": 500 }));
    assert_eq!(merged["thresholds"]["size:count<300"]["ok"], false);
    assert_eq!(merged["thresholds"]["size:count<300"]["value"], 1000.0);
    assert_eq!(merged["merged"]["parts"], 4, "{}", merged["merged"]);

    // Three of the four: refused, unless asked for a partial merge, which says what is missing.
    let three: Vec<&std::ffi::OsStr> = files[..3].iter().map(|f| f.as_os_str()).collect();
    let refused = merge(&three, dir.path());
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("segments 3/4 are missing"), "{:?}", refused);
    let mut partial = three.clone();
    let outputs = [
        "--summary-json",
        "partial.json",
        "--markdown",
        "partial.md",
        "--junit",
        "partial.xml",
        "--html",
        "partial.html",
    ];
    partial.extend(["--partial", "--results", "partial.lhr"].iter().chain(&outputs).map(std::ffi::OsStr::new));
    let out = merge(&partial, dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let said = "partial: 1 of 4 segments missing (segment 3/4): 25% of the plan did not run";
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("\n  ⚠ {said}\n")), "{out:?}");
    let partial: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("partial.json")).unwrap()).unwrap();
    assert_eq!(partial["tasks"]["scheduled"], 750);
    assert_eq!(partial["merged"]["missing"], serde_json::json!(["3/4"]));
    assert_eq!(partial["merged"]["missing_share"], 0.25);
    // The rate is stated against the whole plan (2000/s), not the three segments' 1500/s.
    assert_eq!(partial["rate"]["target_per_s"], 2000.0, "{}", partial["rate"]);

    // Markdown: not a clean ✅, the missing segment on its first lines, the rate against the plan.
    let markdown = std::fs::read_to_string(dir.path().join("partial.md")).unwrap();
    let mut lines = markdown.lines().filter(|l| !l.is_empty());
    assert!(lines.next().is_some_and(|l| l.starts_with("### ⚠️ loadhost")), "{markdown}");
    assert_eq!(lines.next(), Some(format!("> ⚠️ {said}").as_str()), "{markdown}");
    assert!(markdown.contains("/s of 2000.0/s planned (25% of the plan was in the missing segment 3/4)"), "{markdown}");
    // JUnit, read by a real XML parser: the whole plan's case fails naming the segment.
    let junit = crate::ci_reports::parse_junit(&dir.path().join("partial.xml"));
    assert!(junit.contains(&format!("failed whole plan merged | {said}\n")), "{junit}");
    let html = std::fs::read_to_string(dir.path().join("partial.html")).unwrap();
    assert!(html.contains("<p class=\"bad\">⚠️ Partial: 1 of 4 segments missing (segment 3/4)"), "the report says it");

    // The merged run's results file, read back: the whole plan's run, short of segment 3/4.
    let results = loadhost_output::results::read(&dir.path().join("partial.lhr")).unwrap();
    assert_eq!(results.segment, None);
    assert_eq!(results.report.counts().scheduled, 750);
    assert_eq!(results.intervals.iter().map(|i| i.window.counts.scheduled).sum::<u64>(), 750, "rows hold every task");
    let from = results.merged.as_ref().expect("the file says it is a merge");
    assert_eq!((from.missing.clone(), from.parts), (vec!["3/4".to_owned()], 3));
    let file = loadhost_output::results::read_for_merge(
        &dir.path().join("partial.lhr"),
        loadhost_output::results::CutFiles::Refuse,
    )
    .unwrap();
    assert_eq!(file.start.map(|s| s.scenarios[0].target_rate_whole), Some(Some(2000.0)));
    // Merged again with the segment that was missing, it is refused: its segments would count twice.
    let again = merge(&[dir.path().join("partial.lhr").as_os_str(), files[3].as_os_str()], dir.path());
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("partial.lhr is already a merged run"), "{again:?}");
}

#[test]
fn merge_refuses_results_of_different_plugins() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.lhr");
    let b = dir.path().join("b.lhr");
    segment(0, 2, &["--results", a.to_str().unwrap()]);
    let other = Loadhost::run_plugin(
        &crate::common::plugin(Example::Noop),
        &["-r", "2000", "-n", "1000", "--segment", "1/2", "--results", b.to_str().unwrap()],
    );
    assert_eq!(other.code, 0, "{}", other.stderr);
    let out = merge(&[a.as_os_str(), b.as_os_str()], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("b.lhr") && err.contains("plugin"), "{err}");
}

/// `text` (a results file) with the task counts `scheduled` and `passed` of its first interval and
/// of its end line's totals set to `count`.
fn crafted(text: &str, count: u64) -> String {
    let mut first_interval = true;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let Ok(mut v) = serde_json::from_str::<Value>(line) else { return line.to_owned() };
            let counts = if let Some(interval) = v.get_mut("interval").filter(|_| first_interval) {
                first_interval = false;
                &mut interval["window"]["counts"]
            } else if let Some(end) = v.get_mut("end") {
                &mut end["report"]["totals"]["counts"]
            } else {
                return line.to_owned();
            };
            counts["scheduled"] = count.into();
            counts["passed"] = count.into();
            v.to_string()
        })
        .collect();
    lines.join("\n") + "\n"
}

#[test]
fn merge_and_compare_refuse_counts_that_would_wrap_naming_the_file() {
    // A real 600-task run, and a copy whose counts are u64::MAX: added with `+`, 599 tasks.
    let real = Loadhost::run_plugin(
        &crate::common::plugin(Example::Noop),
        &["-r", "600", "-n", "600", "--results", "real.lhr"],
    );
    assert_eq!(real.code, 0, "{}", real.stderr);
    let dir = real.dir.path();
    std::fs::write(dir.join("crafted.lhr"), crafted(&real.file("real.lhr"), u64::MAX)).unwrap();
    let out = merge(&["real.lhr", "crafted.lhr", "--summary-json", "merged.json"].map(std::ffi::OsStr::new), dir);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "refused\nstdout: {stdout}\nstderr: {stderr}");
    assert!(stderr.starts_with("error: crafted.lhr: the results file is corrupt"), "{stderr}");
    assert!(stderr.contains("tasks scheduled comes to more than"), "{stderr}");
    assert!(!dir.join("merged.json").exists() && !stdout.contains("599"), "nothing merged: {stdout}");
    let compared = Loadhost::new()
        .args(["compare".as_ref(), dir.join("real.lhr").as_os_str(), dir.join("crafted.lhr").as_os_str()])
        .run();
    assert_eq!(compared.code, 2, "{}", compared.stderr);
    assert!(
        compared.stderr.contains("crafted.lhr") && compared.stderr.contains("comes to more than"),
        "{}",
        compared.stderr
    );

    // Each file below 2^53, their sum past it: refused by the merge, naming the part it could not add.
    let half = (1u64 << 52) + 1;
    std::fs::write(dir.join("half-a.lhr"), crafted(&real.file("real.lhr"), half)).unwrap();
    std::fs::write(dir.join("half-b.lhr"), crafted(&real.file("real.lhr"), half)).unwrap();
    let out = merge(&["half-a.lhr", "half-b.lhr"].map(std::ffi::OsStr::new), dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("half-b.lhr: cannot be added to the other parts: tasks scheduled"), "{stderr}");
}

#[test]
fn compare_refuses_a_summary_json_whose_counts_would_wrap() {
    let run = Loadhost::run_plugin(&crate::common::plugin(Example::Noop), &["-r", "100", "-n", "100"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut crafted = run.summary();
    crafted["tasks"]["passed"] = u64::MAX.into();
    crafted["tasks"]["failed"] = 2.into();
    let dir = run.dir.path();
    std::fs::write(dir.join("crafted.json"), crafted.to_string()).unwrap();
    let compared = Loadhost::new()
        .args(["compare".as_ref(), dir.join("summary.json").as_os_str(), dir.join("crafted.json").as_os_str()])
        .run();
    assert_eq!(compared.code, 2, "{}\n{}", compared.stderr, compared.stdout);
    assert!(compared.stderr.contains("crafted.json: tasks.passed is more than loadhost counts"), "{}", compared.stderr);
}
