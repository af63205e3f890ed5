//! `loadhost find-max`: a capacity search (seed 001). It runs the plugin at rising constant rates
//! (`--start`, times `--factor` each step, `--step-duration` each) until a step fails, and names
//! what limited it:
//!
//! - **emitter**: the pacer itself fell behind (underrun) or the achieved rate fell short; the load
//!   generator, not the target, is the bottleneck, so no capacity figure beyond this is valid;
//! - **crew**: due tasks found no idle worker (at `--max-workers`, or growing too slowly);
//! - **gate**: due tasks found the gate full, or waited at it (`--max-in-flight`);
//! - **target**: an SLO broke while the host kept up, so the system under test is the limit.
//!
//! The highest passing rate is the capacity under those SLOs.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use loadhost_config::RunOptions;
use loadhost_config::units::{Dur, Rate};
use loadhost_engine::{EngineError, Interrupt, Live};
use loadhost_metrics::limit::{Limit, limiting};
use loadhost_metrics::{IntervalRow, RunReport, Threshold};

use crate::exit::Failure;
use crate::run::{load_plugin, runtime_and_grants};

/// Arguments of `loadhost find-max`.
#[derive(Debug, Args)]
pub struct FindMaxArgs {
    /// The plugin.
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
    /// `latency_ms:p(99)<200`, `tasks_failed:rate<0.01`, `http_req_failed:rate<0.01`.
    #[arg(long = "slo", value_name = "EXPR", required = true)]
    slos: Vec<Threshold>,

    /// Give up after this many steps.
    #[arg(long, default_value_t = 12, value_name = "N")]
    max_steps: u32,

    #[command(flatten)]
    options: RunOptions,
}

/// Each SLO's expression, the value measured, and whether it held.
type SloResults = Vec<(String, f64, bool)>;

/// What limited a step, and why in words.
type Limited = Option<(Limit, String)>;

struct Step {
    rate: f64,
    report: RunReport,
    slo: SloResults,
    limit: Limited,
}

fn judge(rate: f64, report: &RunReport, slos: &[Threshold]) -> Result<(SloResults, Limited), Failure> {
    let mut slo = Vec::new();
    for threshold in slos {
        let verdict = threshold.evaluate(report).map_err(Failure::usage)?;
        slo.push((threshold.source.clone(), verdict.value, verdict.passed));
    }
    let broken = slo.iter().find(|(_, _, passed)| !passed).map(|(expr, value, _)| (expr.as_str(), *value));
    let limit = limiting(report, Some(rate), broken);
    Ok((slo, limit))
}

/// Search.
pub fn run(args: FindMaxArgs) -> Result<ExitCode, Failure> {
    if args.options.rate.is_some() || args.options.duration.is_some() || !args.options.stage.is_empty() {
        return Err(Failure::usage(anyhow::anyhow!(
            "find-max sets the rate and duration itself: use --start, --factor and --step-duration"
        )));
    }
    if args.factor.is_nan() || args.factor <= 1.0 || !args.factor.is_finite() {
        return Err(Failure::usage(anyhow::anyhow!("--factor must be more than 1, got {}", args.factor)));
    }
    let mut step_options = args.options.clone();
    step_options.summary_json = None;
    step_options.csv = None;
    step_options.rate = Some(args.start);
    step_options.duration = Some(args.step_duration);
    let first = loadhost_config::resolve(step_options.clone()).map_err(Failure::usage)?;
    let (tokio, grants) = runtime_and_grants(&first)?;
    let plugin = load_plugin(&args.plugin, &first)?;

    println!(
        "\n  find-max · {} · SLO {}",
        args.plugin.display(),
        args.slos.iter().map(|s| s.source.as_str()).collect::<Vec<_>>().join(", ")
    );
    // Ctrl-C or SIGTERM stops the step under way (with the usual grace); the steps judged so far
    // are still reported and written, and the search exits 130.
    let interrupt = Arc::new(Interrupt::new());
    crate::signals::watch(&tokio, interrupt.clone(), first.plan.grace());
    let mut steps: Vec<Step> = Vec::new();
    let mut stopped_at = None;
    let mut rate = args.start.0;
    for _ in 0..args.max_steps {
        step_options.rate = Some(Rate(rate));
        let settings = loadhost_config::resolve(step_options.clone()).map_err(Failure::usage)?;
        let factory = plugin.factory(grants.clone());
        let live = Live { control: None, interrupt: Some(interrupt.clone()) };
        let report = tokio
            .block_on(loadhost_engine::run_live(&settings.plan, factory, &mut |_: &IntervalRow| {}, live))
            .map_err(|err| match err {
                EngineError::Setup(_) => Failure::aborted(err),
                other => Failure::runtime(other),
            })?;
        if report.stopped.is_some() {
            // A step cut short says nothing about the rate: it is not judged.
            println!("  {rate:>9.0}/s  stopped by the user before the step ended: not judged");
            stopped_at = Some(rate);
            break;
        }
        let (slo, limit) = judge(rate, &report, &args.slos)?;
        let t = &report.totals;
        println!(
            "  {:>9.0}/s  achieved {:>9.1}/s  latency p99 {:>8.2} ms  dropped {:>6} (gate {:>6})  underrun {:>5}  {}",
            rate,
            report.achieved_rate(),
            t.latency.percentiles().p99,
            report.counts().dropped,
            t.dropped_at_gate,
            t.underrun,
            match &limit {
                None => "pass".to_owned(),
                Some((limit, why)) => format!("limit: {} ({why})", limit.name()),
            }
        );
        let stop = limit.is_some();
        steps.push(Step { rate, report, slo, limit });
        if stop {
            break;
        }
        rate *= args.factor;
    }

    let best = steps
        .iter()
        .filter(|s| s.limit.is_none())
        .map(|s| s.rate)
        .fold(None, |best: Option<f64>, r| Some(best.map_or(r, |b| b.max(r))));
    let verdict = steps.iter().find_map(|s| s.limit.clone());
    match (&best, &verdict) {
        (Some(best), Some((limit, why))) => {
            println!("\n  highest passing rate: {best:.0}/s");
            println!("  the limit is the {}: {why}", limit.name());
        }
        (None, Some((limit, why))) => println!("\n  no step passed; the limit is the {}: {why}", limit.name()),
        (Some(best), None) => println!("\n  every step passed, up to {best:.0}/s (raise --max-steps to go further)"),
        (None, None) => println!("\n  no step was judged"),
    }
    // `--summary-json FILE` (a run option) gets the steps and the verdict.
    if let Some(path) = &args.options.summary_json {
        let json = serde_json::json!({
            "highest_passing_per_s": best,
            "limit": verdict.as_ref().map(|(l, _)| l.name()),
            "why": verdict.as_ref().map(|(_, why)| why.clone()),
            "stopped_at_per_s": stopped_at,
            "steps": steps.iter().map(|s| serde_json::json!({
                "rate_per_s": s.rate,
                "achieved_per_s": s.report.achieved_rate(),
                "latency_p99_ms": s.report.totals.latency.percentiles().p99,
                "dropped": s.report.counts().dropped,
                "dropped_at_gate": s.report.totals.dropped_at_gate,
                "underrun": s.report.totals.underrun,
                "workers_peak": s.report.workers.peak,
                "slo": s.slo.iter().map(|(e, v, p)| serde_json::json!({"expr": e, "value": v, "passed": p})).collect::<Vec<_>>(),
                "limit": s.limit.as_ref().map(|(l, _)| l.name()),
            })).collect::<Vec<_>>(),
        });
        std::fs::write(path, format!("{json:#}\n"))
            .with_context(|| format!("--summary-json {}: cannot write the file", path.display()))
            .map_err(Failure::runtime)?;
    }
    if stopped_at.is_some() {
        return Ok(ExitCode::from(crate::exit::STOPPED));
    }
    Ok(ExitCode::SUCCESS)
}
