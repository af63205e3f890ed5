//! `loadhost find-max`: a capacity search. It runs the plugin at rising constant rates
//! (`--start`, times `--factor` each step, `--step-duration` each) until a step fails, then bisects
//! between the last passing and the first failing rate until they are within `--precision` of each
//! other, and names what limited the lowest failing step:
//!
//! - **emitter**: the pacer itself fell behind (underrun) or the achieved rate fell short; the load
//!   generator, not the target, is the bottleneck, so no capacity figure beyond this is valid;
//! - **crew**: due tasks found no idle worker (at `--max-workers`, or growing too slowly);
//! - **gate**: due tasks found the gate full, or waited at it (`--max-in-flight`);
//! - **target**: an SLO broke while the host kept up, so the system under test is the limit.
//!
//! The highest passing rate is the capacity under those SLOs; the lowest failing rate bounds it
//! from above.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use loadhost_config::RunOptions;
use loadhost_config::units::{Dur, Rate};
use loadhost_engine::{EngineError, Interrupt, Live};
use loadhost_metrics::limit::{Limit, limiting};
use loadhost_metrics::{IntervalRow, MetricKind, RunReport, Threshold, ThresholdError};

use crate::exit::Failure;
use crate::prepare::{load_plugin, runtime_and_grants};

/// Arguments of `loadhost find-max`.
#[derive(Debug, Args)]
pub struct FindMaxArgs {
    /// The plugin, or a registry reference (docs/sharing.md; a bundle's TOML and feed are not
    /// applied by find-max).
    plugin: PathBuf,

    /// The rate of the first step (tasks/s).
    #[arg(long, default_value = "100", value_name = "RATE")]
    start: Rate,

    /// Each step's rate is the previous one times this.
    #[arg(long, default_value_t = 2.0, value_name = "F")]
    factor: f64,

    /// How long each step runs.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    step_duration: Dur,

    /// A service-level objective every passing step must meet (repeatable, threshold syntax):
    /// `latency_ms:p(99)<200`, `tasks_not_passed:rate<0.01`, `http_req_failed:rate<0.01`.
    #[arg(long = "slo", value_name = "EXPR", required = true)]
    slos: Vec<Threshold>,

    /// Stop refining once the lowest failing rate is within this of the highest passing one: a
    /// fraction (`0.05`) or a percentage (`5%`).
    #[arg(long, default_value = "5%", value_name = "P", value_parser = parse_precision)]
    precision: f64,

    /// Give up after this many steps, the climb and the bisection together (at `--factor 2`,
    /// bisecting to 5% takes at most 5 steps after the first failure).
    #[arg(long, default_value_t = 20, value_name = "N")]
    max_steps: u32,

    #[command(flatten)]
    options: RunOptions,

    #[command(flatten)]
    registry: crate::registry::ResolveArgs,
}

/// Each SLO's expression, the value measured, and whether it held.
type SloResults = Vec<(String, f64, bool)>;

/// What limited a step, and why in words.
type Limited = Option<(Limit, String)>;

struct Step {
    rate: f64,
    /// Run while bisecting (after the first failure), not while climbing.
    bisecting: bool,
    report: RunReport,
    slo: SloResults,
    limit: Limited,
}

fn judge(rate: f64, report: &RunReport, slos: &[Threshold]) -> Result<(SloResults, Limited), Failure> {
    let mut slo = Vec::new();
    for threshold in slos {
        // No samples (no request made, no check run) fails the SLO, as it fails a threshold.
        let value = threshold.measure(&report.totals, report.elapsed).map_err(|err| slo_error(threshold, err))?;
        let passed = value.is_some_and(|v| threshold.holds(v));
        slo.push((threshold.source.clone(), value.unwrap_or(f64::NAN), passed));
    }
    let broken = slo.iter().find(|(_, _, passed)| !passed).map(|(expr, value, _)| (expr.as_str(), *value));
    let limit = limiting(report, Some(rate), broken);
    Ok((slo, limit))
}

/// A bundle's options as a search applies them (under the flags): its data, gate, retries and
/// the rest, but not its load model nor its thresholds (the search sets the rate, `--slo` judges).
fn searchable(bundle: RunOptions) -> RunOptions {
    let model = [
        ("rate", bundle.rate.is_some()),
        ("duration", bundle.duration.is_some()),
        ("stage", !bundle.stage.is_empty()),
        ("iterations", bundle.iterations.is_some()),
        ("workers", bundle.workers.is_some()),
        ("threshold", !bundle.threshold.is_empty()),
        ("[[scenario]]", !bundle.scenarios.is_empty()),
    ];
    let ignored: Vec<&str> = model.iter().filter(|(_, set)| *set).map(|(key, _)| *key).collect();
    if !ignored.is_empty() {
        tracing::info!(
            "find-max applies the bundle's options but its {}: the search sets the load",
            ignored.join(", ")
        );
    }
    RunOptions {
        rate: None,
        duration: None,
        stage: Vec::new(),
        iterations: None,
        workers: None,
        threshold: Vec::new(),
        scenarios: Vec::new(),
        ..bundle
    }
}

/// An SLO that cannot be judged, named as the user wrote it.
fn slo_error(slo: &Threshold, err: ThresholdError) -> Failure {
    Failure::usage(anyhow::anyhow!("--slo '{}': {err}", slo.source))
}

/// Search.
pub fn run(mut args: FindMaxArgs) -> Result<ExitCode, Failure> {
    let mut resolved = crate::registry::resolve(&args.plugin, &args.registry)?;
    if let Some(bundle) = resolved.bundle.as_mut() {
        args.options = args.options.clone().or(searchable(std::mem::take(&mut bundle.options)));
    }
    // The plugin as the user named it (a path, or the reference pulled), for the cache and the header.
    let named = std::mem::replace(&mut args.plugin, resolved.path);
    check(&args)?;
    let mut step_options = args.options.clone();
    step_options.summary_json = None;
    step_options.csv = None;
    step_options.rate = Some(args.start);
    step_options.duration = Some(args.step_duration);
    let first = loadhost_config::resolve(step_options.clone()).map_err(Failure::usage)?;
    let (tokio, grants) = runtime_and_grants(&first)?;
    let plugin = load_plugin(&args.plugin, &named.display().to_string(), &first)?;

    println!(
        "\n  find-max · {} · SLO {}",
        named.display(),
        args.slos.iter().map(|s| s.source.as_str()).collect::<Vec<_>>().join(", ")
    );
    // Ctrl-C or SIGTERM stops the step under way (with the usual grace); the steps judged so far
    // are still reported and written, and the search exits 130.
    let interrupt = Arc::new(Interrupt::new());
    crate::signals::watch(&tokio, interrupt.clone(), first.grace());
    let mut search = Search { steps: Vec::new(), stopped_at: None, precision: args.precision };
    let mut bracket = Bracket::default();
    let mut next = Some(args.start.0);
    for _ in 0..args.max_steps {
        let Some(rate) = next else { break };
        step_options.rate = Some(Rate(rate));
        let settings = loadhost_config::resolve(step_options.clone()).map_err(Failure::usage)?;
        // The search's options hold no [[scenario]] block (`searchable` drops a bundle's): one plan.
        let [plan] = settings.plans.as_slice() else {
            return Err(Failure::usage(anyhow::anyhow!(
                "find-max searches a single load: [[scenario]] blocks do not apply"
            )));
        };
        let live = Live { control: None, interrupt: Some(interrupt.clone()) };
        let mut quiet = |_: &IntervalRow| {};
        let run = loadhost_engine::run_live(plan, plugin.factory(grants.clone()), &mut quiet, live);
        let report = tokio.block_on(run).map_err(|err| match err {
            EngineError::Setup(_) => Failure::aborted(err),
            other => Failure::runtime(other),
        })?;
        if report.stopped.is_some() {
            // A step cut short says nothing about the rate: it is not judged.
            println!("  {rate:>9.0}/s  stopped by the user before the step ended: not judged");
            search.stopped_at = Some(rate);
            break;
        }
        let (slo, limit) = judge(rate, &report, &args.slos)?;
        let step = Step { rate, bisecting: bracket.fail.is_some(), report, slo, limit };
        print_step(&step);
        bracket.record(rate, step.limit.is_none());
        search.steps.push(step);
        next = bracket.next(args.factor, args.precision);
    }
    search.print_verdict();
    // `--summary-json FILE` (a run option) gets the steps and the verdict.
    if let Some(path) = &args.options.summary_json {
        std::fs::write(path, format!("{:#}\n", search.to_json()))
            .with_context(|| format!("--summary-json {}: cannot write the file", path.display()))
            .map_err(Failure::runtime)?;
    }
    Ok(if search.stopped_at.is_some() {
        ExitCode::from(crate::exit::STOPPED)
    } else if search.best().is_none() {
        // Not even the first rate met the SLOs: a CI job must not pass on that.
        ExitCode::from(crate::exit::THRESHOLDS_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// The flags find-max sets itself are not given, the factor grows, and every SLO can be judged:
/// all before any load, as `run` judges its thresholds.
fn check(args: &FindMaxArgs) -> Result<(), Failure> {
    if args.options.rate.is_some() || args.options.duration.is_some() || !args.options.stage.is_empty() {
        return Err(Failure::usage(anyhow::anyhow!(
            "find-max sets the rate and duration itself: use --start, --factor and --step-duration"
        )));
    }
    let o = &args.options;
    let unused = [
        ("--threshold", !o.threshold.is_empty(), "use --slo"),
        ("--html", o.html.is_some(), "find-max writes its steps with --summary-json"),
        ("--csv", o.csv.is_some(), "find-max writes its steps with --summary-json"),
        ("--out", !o.out.is_empty(), "find-max writes its steps with --summary-json"),
        ("--results", o.results.is_some(), "find-max writes its steps with --summary-json"),
        ("--junit", o.junit.is_some(), "find-max writes its steps with --summary-json"),
        ("--markdown", o.markdown.is_some(), "find-max writes its steps with --summary-json"),
        ("--segment", o.segment.is_some() || o.segments.is_some(), "a search runs in one process"),
        ("--control", o.control.is_some(), "the search sets the rate itself"),
    ];
    if let Some((flag, _, instead)) = unused.iter().find(|(_, given, _)| *given) {
        return Err(Failure::usage(anyhow::anyhow!("find-max does not take {flag}: {instead}")));
    }
    if args.factor.is_nan() || args.factor <= 1.0 || !args.factor.is_finite() {
        return Err(Failure::usage(anyhow::anyhow!("--factor must be more than 1, got {}", args.factor)));
    }
    if !(args.start.0.is_finite() && args.start.0 > 0.0) {
        return Err(Failure::usage(anyhow::anyhow!("--start must be more than 0 tasks/s, got {}", args.start)));
    }
    // The plugin's own declarations count as `--metric` flags do.
    let cap = loadhost_config::resolve::plugin_cap(&args.options);
    let plugin = crate::prepare::plugin_metrics(&args.plugin, cap)?.unwrap_or_default();
    let declared: Vec<(&str, MetricKind)> =
        plugin.iter().chain(&args.options.metric).map(|d| (d.name.as_str(), d.kind)).collect();
    for slo in &args.slos {
        slo.validate_among(&declared, &["default"]).map_err(|err| slo_error(slo, err))?;
    }
    Ok(())
}

/// `--precision`: a fraction (`0.05`) or a percentage (`5%`), more than 0 and at most 100%.
fn parse_precision(text: &str) -> Result<f64, String> {
    let hint = "expected a fraction such as 0.05 or a percentage such as 5%";
    let (number, scale) = match text.trim().strip_suffix('%') {
        Some(percent) => (percent.trim(), 100.0),
        None => (text.trim(), 1.0),
    };
    let value = number.parse::<f64>().map_err(|_| format!("'{text}': {hint}"))? / scale;
    if !(value > 0.0 && value <= 1.0) {
        // A bare `5` is most likely meant as 5%, so say which forms are taken.
        return Err(format!("'{text}' is not between 0 and 100%: {hint}"));
    }
    Ok(value)
}

/// Where the search stands: the highest rate that passed and the lowest that failed. Rates are
/// only ever tried between the two, so the highest pass stays below the lowest failure.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Bracket {
    pass: Option<f64>,
    fail: Option<f64>,
}

impl Bracket {
    /// Fold in a judged step.
    fn record(&mut self, rate: f64, passed: bool) {
        if passed {
            self.pass = Some(self.pass.map_or(rate, |p| p.max(rate)));
        } else {
            self.fail = Some(self.fail.map_or(rate, |f| f.min(rate)));
        }
    }

    /// Whether the bounds are within `precision` of the highest pass.
    fn narrow(&self, precision: f64) -> bool {
        matches!((self.pass, self.fail), (Some(pass), Some(fail)) if fail - pass <= precision * pass)
    }

    /// The next rate to try (the first is `--start`): times `factor` until a step fails, then
    /// halfway between the bounds until they are within `precision`; `None` when the search is
    /// over (narrow enough, or the first step failed, so there is nothing below to bisect).
    fn next(&self, factor: f64, precision: f64) -> Option<f64> {
        match (self.pass, self.fail) {
            (Some(pass), None) => Some(pass * factor),
            (Some(pass), Some(fail)) if !self.narrow(precision) => {
                let mid = (pass + fail) / 2.0;
                // Whole tasks per second read better, where the bounds are far enough apart.
                let mid = if fail - pass > 2.0 { mid.round() } else { mid };
                (mid > pass && mid < fail).then_some(mid)
            }
            _ => None,
        }
    }
}

fn print_step(step: &Step) {
    let report = &step.report;
    let t = &report.totals;
    println!(
        "  {:>9.0}/s  achieved {:>9.1}/s  latency p99 {:>8.2} ms  dropped {:>6} (gate {:>6})  underrun {:>5}  {}",
        step.rate,
        report.achieved_rate(),
        t.latency.percentiles().p99,
        report.counts().dropped,
        t.dropped_at_gate,
        t.underrun,
        match &step.limit {
            None => "pass".to_owned(),
            Some((limit, why)) => format!("limit: {} ({why})", limit.name()),
        }
    );
}

/// The steps judged, and the rate at which the user stopped the search, if they did.
struct Search {
    steps: Vec<Step>,
    stopped_at: Option<f64>,
    /// `--precision`: how close the bounds must come.
    precision: f64,
}

impl Search {
    /// The highest rate whose step passed.
    fn best(&self) -> Option<f64> {
        self.steps.iter().filter(|s| s.limit.is_none()).map(|s| s.rate).reduce(f64::max)
    }

    /// The lowest rate whose step failed, and what limited it: the limit nearest the capacity.
    fn lowest_failing(&self) -> Option<&Step> {
        self.steps.iter().filter(|s| s.limit.is_some()).min_by(|a, b| a.rate.total_cmp(&b.rate))
    }

    /// What limited the lowest failing step.
    fn verdict(&self) -> Limited {
        self.lowest_failing().and_then(|s| s.limit.clone())
    }

    /// How far apart the bounds are, as a share of the highest passing rate.
    fn gap(&self) -> Option<f64> {
        Some((self.lowest_failing()?.rate - self.best()?) / self.best()?)
    }

    fn print_verdict(&self) {
        match (self.best(), self.lowest_failing().map(|s| s.rate), self.verdict()) {
            (Some(best), Some(fail), Some((limit, why))) => {
                let gap = self.gap().unwrap_or(f64::NAN);
                let note = if gap <= self.precision {
                    format!("{:.1}% apart", gap * 100.0)
                } else {
                    format!("{:.1}% apart: raise --max-steps to refine to {:.1}%", gap * 100.0, self.precision * 100.0)
                };
                println!("\n  highest passing rate: {best:.0}/s; lowest failing: {fail:.0}/s ({note})");
                println!("  the limit is the {}: {why}", limit.name());
            }
            (None, _, Some((limit, why))) => println!("\n  no step passed; the limit is the {}: {why}", limit.name()),
            (Some(best), _, _) => {
                println!("\n  every step passed, up to {best:.0}/s (raise --max-steps to go further)")
            }
            (None, _, None) => println!("\n  no step was judged"),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        let verdict = self.verdict();
        serde_json::json!({
            "highest_passing_per_s": self.best(),
            "lowest_failing_per_s": self.lowest_failing().map(|s| s.rate),
            "precision": self.precision,
            "precision_reached": self.gap().is_some_and(|gap| gap <= self.precision),
            "limit": verdict.as_ref().map(|(l, _)| l.name()),
            "why": verdict.as_ref().map(|(_, why)| why.clone()),
            "stopped_at_per_s": self.stopped_at,
            "steps": self.steps.iter().map(Step::to_json).collect::<Vec<_>>(),
        })
    }
}

impl Step {
    fn to_json(&self) -> serde_json::Value {
        let slo: Vec<_> =
            self.slo.iter().map(|(e, v, p)| serde_json::json!({"expr": e, "value": v, "passed": p})).collect();
        serde_json::json!({
            "rate_per_s": self.rate,
            "phase": if self.bisecting { "bisect" } else { "climb" },
            "achieved_per_s": self.report.achieved_rate(),
            "latency_p99_ms": self.report.totals.latency.percentiles().p99,
            "dropped": self.report.counts().dropped,
            "dropped_at_gate": self.report.totals.dropped_at_gate,
            "underrun": self.report.totals.underrun,
            "workers_peak": self.report.workers.peak,
            "slo": slo,
            "limit": self.limit.as_ref().map(|(l, _)| l.name()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rates a search tries against a host that passes every rate up to `capacity`.
    fn search(capacity: f64, start: f64, factor: f64, precision: f64, max_steps: u32) -> (Vec<f64>, Bracket) {
        let mut bracket = Bracket::default();
        let mut tried = Vec::new();
        let mut next = Some(start);
        for _ in 0..max_steps {
            let Some(rate) = next else { break };
            tried.push(rate);
            bracket.record(rate, rate <= capacity);
            next = bracket.next(factor, precision);
        }
        (tried, bracket)
    }

    #[test]
    fn the_search_climbs_then_bisects_to_the_precision() {
        let (tried, bracket) = search(760.0, 100.0, 2.0, 0.05, 20);
        assert_eq!(tried, [100.0, 200.0, 400.0, 800.0, 600.0, 700.0, 750.0, 775.0]);
        assert_eq!((bracket.pass, bracket.fail), (Some(750.0), Some(775.0)));
        assert!(bracket.narrow(0.05));
        // The old search stopped at 400/s; the default --max-steps leaves room for both phases.
        let (tried, bracket) = search(3000.0, 100.0, 2.0, 0.05, 20);
        assert!(tried.len() <= 11 && bracket.narrow(0.05), "{tried:?}");
    }

    #[test]
    fn the_bounds_always_bracket_the_capacity() {
        for capacity in [1.5, 99.0, 101.0, 333.0, 799.0, 800.0, 12_345.0] {
            for precision in [0.01, 0.05, 0.2] {
                let (tried, b) = search(capacity, 100.0, 2.0, precision, 40);
                let (pass, fail) = (b.pass.unwrap_or(0.0), b.fail.unwrap_or(f64::INFINITY));
                assert!(pass <= capacity && capacity < fail, "{capacity} {precision}: {tried:?}");
                if b.pass.is_some() {
                    assert!(b.narrow(precision), "{capacity} {precision}: {tried:?}");
                }
            }
        }
    }

    #[test]
    fn a_failed_first_step_ends_the_search() {
        let (tried, bracket) = search(50.0, 100.0, 2.0, 0.05, 20);
        assert_eq!(tried, [100.0]);
        assert_eq!(bracket.next(2.0, 0.05), None);
    }

    #[test]
    fn max_steps_cuts_the_bisection_short() {
        let (tried, bracket) = search(760.0, 100.0, 2.0, 0.05, 5);
        assert_eq!(tried.len(), 5);
        assert_eq!((bracket.pass, bracket.fail), (Some(600.0), Some(800.0)));
        assert!(!bracket.narrow(0.05));
    }

    #[test]
    fn precision_is_a_fraction_or_a_percentage() {
        assert_eq!(parse_precision("5%"), Ok(0.05));
        assert_eq!(parse_precision(" 0.05 "), Ok(0.05));
        assert_eq!(parse_precision("100%"), Ok(1.0));
        for bad in ["5", "0", "0%", "-1%", "101%", "x", "", "NaN", "inf%"] {
            assert!(parse_precision(bad).is_err(), "{bad}");
        }
    }
}
