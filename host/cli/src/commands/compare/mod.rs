//! `loadhost compare BASE NEW`: two runs side by side, metric by metric, and `--fail-on` rules that
//! fail (exit 99) only on a change that is past its tolerance **and** real (docs/compare.md).
//!
//! - [`read`]: the two files (results files or summary JSON) and what each rule finds in them;
//! - [`report`]: the comparison as one model (the JSON is written from it), and the verdict line;
//! - [`table`]: the figures of both runs, row by row;
//! - [`render`]: the same model on the terminal and in Markdown.
//!
//! The rules and the test are domain logic, in `loadhost_metrics::compare`.

mod read;
mod render;
mod report;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::anyhow;
use clap::Args;
use loadhost_metrics::MetricKind;
use loadhost_metrics::compare::{Evidence, Judged, Rule, judge};
use loadhost_output::results::PER_PROCESS_KEYS;
use serde_json::Value;

use crate::exit::{Failure, THRESHOLDS_FAILED};
use crate::outputs::{Failed, append_step_summary, create_all, write_whole};
use read::Run;
use report::Report;

/// Arguments of `loadhost compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline: a results file (`loadhost run --results FILE`) or a summary JSON
    /// (`--summary-json FILE`).
    #[arg(value_name = "BASE")]
    base: PathBuf,

    /// The run judged against it (a results file or a summary JSON too).
    #[arg(value_name = "NEW")]
    new: PathBuf,

    /// Fail (exit 99) when a statistic got worse by more than this and the change is real, not
    /// noise (a one-sided Welch t-test on per-interval values); repeatable. METRIC[{tag:value}]:STAT
    /// then >+N% (relative), >+Npp (points of a rate), >+Nms or >+N (absolute), or <-… where lower
    /// is worse: 'latency_ms:p(99)>+10%', 'http_req_failed:rate>+0.5pp', 'service_ms:p(50)>+2ms',
    /// 'tasks_started:rate<-5%'.
    #[arg(long = "fail-on", value_name = "EXPR")]
    fail_on: Vec<Rule>,

    /// The chance of a false alarm the rules may share (each rule's test is held to ALPHA ÷ the
    /// number of rules).
    #[arg(long, value_name = "ALPHA", default_value_t = 0.01, value_parser = parse_alpha)]
    alpha: f64,

    /// Compare runs of different plugins (their sha256 differs) instead of refusing.
    #[arg(long)]
    allow_different_plugin: bool,

    /// Write the comparison as Markdown to FILE (for a pull-request comment); with
    /// $GITHUB_STEP_SUMMARY set, it is also appended there.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,

    /// Write the comparison as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

fn parse_alpha(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!("'{text}' is not a probability between 0 and 1 (such as 0.01)")),
    }
}

/// Read both runs, judge the rules, print and write the comparison; 99 when a rule failed.
pub fn run(args: CompareArgs) -> Result<ExitCode, Failure> {
    let base = Run::read(&args.base, "BASE").map_err(Failure::usage)?;
    let new = Run::read(&args.new, "NEW").map_err(Failure::usage)?;
    let mut notes = check_plugins(&base, &new, args.allow_different_plugin)?;
    notes.extend(plan_difference(&base.summary.config, &new.summary.config));
    notes.extend([base.partial_note(), new.partial_note()].into_iter().flatten());
    let kinds = validate(&args.fail_on, &base, &new)?;
    let judged = judge_all(&args.fail_on, &kinds, &base, &new, args.alpha)?;
    let report = Report::new(&base, &new, &args.fail_on, &kinds, &judged, args.alpha, notes);
    // Every check that can refuse the comparison is behind us: only now are files created.
    let [markdown, json] = create_all([("markdown", args.markdown.as_deref()), ("json", args.json.as_deref())])?;
    print!("{}", render::terminal(&report));
    let text = render::markdown(&report);
    // Each file whole or not at all, whatever became of the other (exit 6 when one failed).
    let mut failed = Failed::default();
    if let Some((path, file)) = markdown {
        let written = write_whole(&path, file, |out| out.write_all(text.as_bytes()));
        failed.note("markdown", &path, written.err(), false);
    }
    if let Some((path, file)) = json {
        let mut bytes = serde_json::to_vec_pretty(&report.json()).map_err(Failure::runtime)?;
        bytes.push(b'\n');
        failed.note("json", &path, write_whole(&path, file, |out| out.write_all(&bytes)).err(), false);
    }
    append_step_summary(&text, "the comparison", &mut failed);
    failed.check()?;
    Ok(if report.failed > 0 { ExitCode::from(THRESHOLDS_FAILED) } else { ExitCode::SUCCESS })
}

/// Refuse runs of different plugins unless allowed (then say so in the output).
fn check_plugins(base: &Run, new: &Run, allow: bool) -> Result<Vec<String>, Failure> {
    let (b, n) = (&base.summary.plugin.sha256, &new.summary.plugin.sha256);
    if b == n {
        return Ok(Vec::new());
    }
    let what = format!("{} and {} are runs of different plugins: plugin.sha256 {b} ≠ {n}", base.name(), new.name());
    if allow {
        Ok(vec![format!("{what} (compared anyway: --allow-different-plugin)")])
    } else {
        Err(Failure::usage(anyhow!("{what}; pass --allow-different-plugin to compare them anyway")))
    }
}

/// Options that say where a run wrote or how it was labelled, not what load it made.
const NOT_THE_PLAN: &[&str] = &["junit", "markdown", "check-rate", "tag", "plugin-output", "http-debug", "env-file"];

/// A note naming the options in which the two runs' plans differ (a comparison of different
/// loads is allowed, but should not pass for a comparison of builds).
fn plan_difference(base: &Value, new: &Value) -> Option<String> {
    let (Value::Object(a), Value::Object(b)) = (base, new) else { return None };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let differ: Vec<String> = keys
        .into_iter()
        .filter(|k| !PER_PROCESS_KEYS.contains(&k.as_str()) && !NOT_THE_PLAN.contains(&k.as_str()))
        .filter_map(|k| {
            let (x, y) = (a.get(k).unwrap_or(&Value::Null), b.get(k).unwrap_or(&Value::Null));
            (x != y).then(|| format!("{k} {x} → {y}"))
        })
        .collect();
    (!differ.is_empty()).then(|| format!("the runs' plans differ: {}", differ.join(", ")))
}

/// Check every rule against the runs (metric, statistic, tags, scenario, unit): each rule's
/// metric kind.
fn validate(rules: &[Rule], base: &Run, new: &Run) -> Result<Vec<MetricKind>, Failure> {
    let mut declared = base.declared();
    for (name, kind) in new.declared() {
        if !declared.iter().any(|(n, _)| *n == name) {
            declared.push((name, kind));
        }
    }
    let declared: Vec<(&str, MetricKind)> = declared.iter().map(|(n, k)| (n.as_str(), *k)).collect();
    let (base_scenarios, new_scenarios) = (base.scenarios(), new.scenarios());
    let mut kinds = Vec::with_capacity(rules.len());
    for rule in rules {
        let bad = |why: String| Failure::usage(anyhow!("--fail-on '{rule}': {why}"));
        if let Some(name) = rule.scenario() {
            for (run, scenarios) in [(base, &base_scenarios), (new, &new_scenarios)] {
                if !scenarios.iter().any(|s| s == name) {
                    return Err(bad(format!(
                        "{} has no scenario named '{name}' (field scenarios; it has: {})",
                        run.name(),
                        scenarios.join(", ")
                    )));
                }
            }
        }
        let scenarios: Vec<&str> = base_scenarios.iter().map(String::as_str).collect();
        kinds.push(rule.validate(&declared, &scenarios).map_err(|err| bad(err.to_string()))?);
    }
    Ok(kinds)
}

/// Each rule's values in both runs, its per-interval values when both are results files, and
/// its judgement at α ÷ rules (Bonferroni: the rules share the chance of a false alarm).
fn judge_all(rules: &[Rule], kinds: &[MetricKind], base: &Run, new: &Run, alpha: f64) -> Result<Vec<Judged>, Failure> {
    if rules.is_empty() {
        return Ok(Vec::new());
    }
    let refs: Vec<&Rule> = rules.iter().collect();
    let tested = base.results.is_some() && new.results.is_some();
    let units = |run: &Run| if tested { run.units(&refs).map_err(Failure::usage) } else { Ok(None) };
    let (base_units, new_units) = (units(base)?, units(new)?);
    let per_rule = alpha / rules.len() as f64;
    let mut judged = Vec::with_capacity(rules.len());
    for (i, (rule, kind)) in rules.iter().zip(kinds).enumerate() {
        let value = |run: &Run| -> Result<f64, Failure> {
            let bad = |why: String| Failure::usage(anyhow!("--fail-on '{rule}': {why}"));
            run.value(rule)
                .map_err(|err| bad(format!("{err:#}")))?
                .ok_or_else(|| bad(format!("{} has no samples of {}: nothing to compare", run.name(), rule.stat)))
        };
        let b = Evidence { value: value(base)?, units: base_units.as_ref().map(|u| u[i].as_slice()) };
        let n = Evidence { value: value(new)?, units: new_units.as_ref().map(|u| u[i].as_slice()) };
        judged.push(judge(rule, *kind, b, n, per_rule));
    }
    Ok(judged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_that_differ_are_named_but_outputs_and_labels_are_not() {
        let a = serde_json::json!({"rate": "200/s", "duration": "3s", "results": "a.lhr", "tag": ["build=1"]});
        let b = serde_json::json!({"rate": "300/s", "duration": "3s", "results": "b.lhr", "tag": ["build=2"]});
        assert_eq!(plan_difference(&a, &b).as_deref(), Some(r#"the runs' plans differ: rate "200/s" → "300/s""#));
        assert_eq!(plan_difference(&a, &a), None);
    }

    #[test]
    fn alpha_is_a_probability() {
        assert_eq!(parse_alpha("0.05"), Ok(0.05));
        for bad in ["0", "1", "-0.1", "often"] {
            assert!(parse_alpha(bad).is_err(), "{bad}");
        }
    }
}
