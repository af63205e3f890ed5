//! Checks and steps first-class, in every SDK, on the `checkout` fixtures
//! (`plugins/checkout{,-python,-js,-c}`) against the built-in target: thresholds on a check whose
//! name has spaces and on its tags (k6's `checks{check:NAME,tag:value}`), the per-check and
//! per-tag breakdown in the terminal, the summary JSON and the HTML report, groups timed as
//! `group_duration{group:::a::b}`, and expected statuses (a 404, a 410) kept out of
//! `http_req_failed`. A language whose toolchain is absent is skipped, with a note.

use serde_json::{Value, json};

use crate::common::{Example, Loadhost, Run, assert_identity, assert_ok, task_count, twin};
use crate::target_process::TargetProcess;

/// The `checkout` example in each language.
const CHECKOUTS: [(&str, Example); 4] = [
    ("rust", Example::Checkout),
    ("python", Example::CheckoutPython),
    ("js", Example::CheckoutJs),
    ("c", Example::CheckoutC),
];

/// Eight tasks on one worker: tiers alternate gold and silver, and the silver tasks 1 and 5 get
/// a 503 (their `status is 200` fails, and so do they); three requests a task.
fn run(lang: &str, example: Example, target: &TargetProcess, thresholds: &[&str], extra: &[&str]) -> Option<Run> {
    let plugin = twin(lang, example)?;
    let url = format!("TARGET_URL={}", target.url);
    let mut args = vec!["--allow-host", target.authority.as_str(), "-e", &url, "-n", "8", "-w", "1"];
    for threshold in thresholds {
        args.extend(["--threshold", threshold]);
    }
    args.extend(extra);
    Some(Loadhost::run_plugin(&plugin, &args))
}

fn threshold(summary: &Value, expr: &str) -> (bool, Value) {
    let t = &summary["thresholds"][expr];
    (t["ok"].as_bool().unwrap_or_else(|| panic!("{expr} missing in {}", summary["thresholds"])), t["value"].clone())
}

#[test]
fn tagged_checks_groups_and_expected_statuses_in_every_sdk() {
    let target = TargetProcess::start(&[]);
    let passing = [
        "checks{check:status is 200,tier:gold}:rate==1",
        "checks{tier:silver}:rate>=0.5",
        "checks{group:::checkout::pay}:rate==1",
        "group_duration{group:::checkout}:count==8",
        "group_duration{group:::checkout::pay}:p(95)<5000",
        "http_req_failed:rate<0.1",
    ];
    let failing = "checks{check:status is 200}:rate>0.9";
    let thresholds: Vec<&str> = passing.iter().copied().chain([failing]).collect();
    for (lang, example) in CHECKOUTS {
        let Some(run) = run(lang, example, &target, &thresholds, &["--html", "report.html"]) else { continue };
        assert_eq!(run.code, 99, "{lang}: one threshold fails\n{}\n{}", run.stderr, run.stdout);
        let s = run.summary();
        assert_identity(&s);
        assert_eq!((task_count(&s, "passed"), task_count(&s, "failed")), (6, 2), "{lang}: {}", s["errors"]);
        for expr in passing {
            assert!(threshold(&s, expr).0, "{lang}: {expr} holds: {}", s["thresholds"]);
        }
        assert_eq!(threshold(&s, failing), (false, json!(0.75)), "{lang}: 6 of 8 across the tiers");
        assert_eq!(threshold(&s, "checks{tier:silver}:rate>=0.5").1, json!(0.5), "{lang}");

        // Which tagged case failed, in the JSON…
        let checks = &s["checks"];
        assert_eq!(
            checks["status is 200"],
            json!({"cases": [
                {"fails": 0, "passes": 4, "tags": {"group": "::checkout", "tier": "gold"}},
                {"fails": 2, "passes": 2, "tags": {"group": "::checkout", "tier": "silver"}},
            ], "fails": 2, "passes": 6}),
            "{lang}"
        );
        let pay = json!([{"fails": 0, "passes": 8, "tags": {"group": "::checkout::pay"}}]);
        assert_eq!(checks["basket gone"]["cases"], pay, "{lang}: the group's path, nested");
        assert_eq!(checks["coupon expired"], json!({"fails": 0, "passes": 8}), "{lang}: outside any group, no cases");
        // …on the terminal…
        assert!(
            run.stdout.contains("✗ {group:::checkout,tier:silver}: 50.00% (2 passed, 2 failed)"),
            "{lang}: {}",
            run.stdout
        );
        assert!(run.stdout.contains("✓ {group:::checkout,tier:gold}: 100.00% (4 passed, 0 failed)"), "{lang}");
        // …and in the HTML report.
        let html = run.file("report.html");
        assert!(html.contains("<tr class=\"bad case\"><td class=\"mark\">✗</td><td class=\"text\"><code>{group:::checkout,tier:silver}</code>"), "{lang}");

        // Groups, nested k6's way.
        let metrics = &s["metrics"];
        assert_eq!(metrics["group_duration{group:::checkout}"]["count"], 8, "{lang}: {metrics}");
        assert_eq!(metrics["group_duration{group:::checkout::pay}"]["count"], 8, "{lang}");
        let outer = metrics["group_duration{group:::checkout}"]["max"].as_f64().unwrap_or_default();
        assert!(outer > 0.0, "{lang}: a group takes time: {outer}");

        // Expected statuses: of 24 requests, the two 503s failed; the 404s and 410s did not.
        assert_eq!(metrics["http_reqs"]["count"], 24, "{lang}");
        assert_eq!(
            (&metrics["http_reqs{status:404}"]["count"], &metrics["http_reqs{status:410}"]["count"]),
            (&json!(8), &json!(8))
        );
        assert_eq!(metrics["http_req_failed"]["passes"], 2, "{lang}: failed requests: {}", metrics["http_req_failed"]);
    }
}

#[test]
fn checks_and_groups_in_thresholds_pass_with_exit_0_and_a_typo_exits_2() {
    let target = TargetProcess::start(&[]);
    let held = ["checks{check:status is 200,tier:gold}:rate==1", "group_duration{group:::checkout::pay}:max<5000"];
    let Some(run) = run("rust", Example::Checkout, &target, &held, &[]) else { return };
    assert_ok(&run);
    assert!(run.stdout.contains("all 2 thresholds passed"), "{}", run.stdout);

    // A check name a typo away from a declared one is refused before any load, naming it.
    let Some(typo) = run_bad(&target, "checks{check:status is 20}:rate>0.9") else { return };
    assert_eq!(typo.code, 2, "{}", typo.stderr);
    assert!(
        typo.stderr.contains(
            "--threshold 'checks{check:status is 20}:rate>0.9': no check named 'status is 20': did you mean 'status is 200'?"
        ),
        "{}",
        typo.stderr
    );
    // A check's name as if it were a metric's says where it goes.
    let Some(bare) = run_bad(&target, "status is 200:rate>0.9") else { return };
    assert_eq!(bare.code, 2, "{}", bare.stderr);
    assert!(bare.stderr.contains("a check's name goes in checks{check:status is 200}"), "{}", bare.stderr);
}

fn run_bad(target: &TargetProcess, threshold: &str) -> Option<Run> {
    let run = run("rust", Example::Checkout, target, &[threshold], &[])?;
    assert!(!run.stdout.contains("tasks............:"), "refused before any load: {}", run.stdout);
    Some(run)
}

/// `compare --fail-on` reads the same selectors: from results files (the series) and from summary
/// JSON (each check's `cases`), so a tagged case that got worse fails the rule.
#[test]
fn compare_judges_a_tagged_case_from_results_files_and_summary_json() {
    let target = TargetProcess::start(&[]);
    let Some(base) = run("rust", Example::Checkout, &target, &[], &["--results", "base.lhr"]) else { return };
    assert_ok(&base);
    let dir = base.dir.path();
    let rule = ["--fail-on", "checks{check:status is 200,tier:silver}:rate<-10pp"];
    let compare = |a: &str, b: &str| {
        Loadhost::new().args(["compare".as_ref(), dir.join(a).as_os_str(), dir.join(b).as_os_str()]).args(rule).run()
    };
    let same = compare("base.lhr", "base.lhr");
    assert_eq!(same.code, 0, "{}\n{}", same.stdout, same.stderr);
    let same = compare("summary.json", "summary.json");
    assert_eq!(same.code, 0, "{}\n{}", same.stdout, same.stderr);
    assert!(same.stdout.contains("50.00%"), "the silver case's rate, read from `cases`: {}", same.stdout);

    // The silver case failing every time: 50% → 0%, 50 points worse.
    let mut worse = base.summary();
    let silver = &mut worse["checks"]["status is 200"]["cases"][1];
    assert_eq!(silver["tags"]["tier"], "silver");
    silver["passes"] = json!(0);
    silver["fails"] = json!(4);
    std::fs::write(dir.join("worse.json"), serde_json::to_string_pretty(&worse).unwrap()).unwrap();
    let worse = compare("summary.json", "worse.json");
    assert_eq!(worse.code, 99, "{}\n{}", worse.stdout, worse.stderr);
    assert!(worse.stdout.contains("✗ checks{check:status is 200,tier:silver}:rate<-10pp"), "{}", worse.stdout);
}
