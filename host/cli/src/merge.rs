//! `loadhost merge FILES…`: the results files of one distributed run (`loadhost run --segment I/N
//! --results FILE` on each process) merged into the run one machine would have reported, with the
//! thresholds judged on the whole of it and the same outputs as `loadhost run` (docs/merge.md).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use loadhost_config::criteria::{MetricDecl, ThresholdSpec};
use loadhost_metrics::limit::verdict;
use loadhost_metrics::threshold::built_in_kind;
use loadhost_metrics::{RunReport, ThresholdResult};
use loadhost_output::csv::CsvWriter;
use loadhost_output::results::{self, Merged};
use loadhost_output::{RunInfo, json, summary};
use serde_json::json;

use crate::exit::{Failure, THRESHOLDS_FAILED};
use crate::judge::LiveJudge;

/// Arguments of `loadhost merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Results files written by `loadhost run --results FILE`, one per segment.
    #[arg(required = true, value_name = "FILES")]
    files: Vec<PathBuf>,

    /// Write the merged run's summary as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    summary_json: Option<PathBuf>,

    /// Write one CSV row per interval of the merged run to FILE.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,

    /// Write a self-contained HTML report of the merged run to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,

    /// A pass/fail criterion in k6's syntax, judged on the whole merged run, such as
    /// 'latency_ms:p(99)<200' (repeatable); a failure exits 99.
    #[arg(long = "threshold", value_name = "EXPR")]
    threshold: Vec<ThresholdSpec>,

    /// Declare a metric the plugin records, NAME:KIND (trend, counter, rate, gauge), so thresholds
    /// can name it (repeatable).
    #[arg(long = "metric", value_name = "NAME:KIND")]
    metric: Vec<MetricDecl>,

    /// Merge even when segments are missing (a pod that failed): the result is then not the whole
    /// plan, and the outputs say which segments are absent.
    #[arg(long)]
    partial: bool,
}

/// Merge the files, judge the thresholds and write the outputs.
pub fn run(args: MergeArgs) -> Result<ExitCode, Failure> {
    let mut parts = Vec::with_capacity(args.files.len());
    for path in &args.files {
        let part = results::read_for_merge(path).map_err(Failure::usage)?;
        parts.push((path.display().to_string(), part));
    }
    let merged = results::merge_files(parts).map_err(Failure::usage)?;
    if !merged.missing.is_empty() && !args.partial {
        // Merging a partial set would report a fraction of the plan as if it were the run.
        let missing: Vec<String> = merged.missing.iter().map(ToString::to_string).collect();
        return Err(Failure::usage(anyhow::anyhow!(
            "segments {} are missing from the {} files given: merge all of them, or pass --partial",
            missing.join(", "),
            merged.parts
        )));
    }
    check_thresholds(&args, &merged)?;
    if args.threshold.iter().any(|t| t.abort_on_fail) {
        tracing::warn!("abort_on_fail has no effect in merge: the run is over, every threshold is judged on the whole");
    }

    let Merged { report, scenarios, rows, plugin_path, plugin_sha256, config, parts, segments, missing } = merged;
    let segment_names: Vec<String> = segments.iter().map(ToString::to_string).collect();
    let missing_names: Vec<String> = missing.iter().map(ToString::to_string).collect();
    // The parts were one run, so their tags are the run's (they travel in its echoed config).
    let tags = config["tag"]
        .as_array()
        .map(|tags| {
            tags.iter().filter_map(|t| t.as_str()?.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect()
        })
        .unwrap_or_default();
    let info = RunInfo {
        plugin_path,
        plugin_sha256,
        config,
        model: describe(parts, &segment_names, &missing_names),
        peak_rss: None,
        tags,
    };
    let thresholds = LiveJudge::new(args.threshold.clone()).finish(&report, &scenarios);
    let limit = verdict(&report, &thresholds);

    // Every output is created before any is written: a path that cannot be written is a usage
    // error (exit 2) that leaves no other file behind.
    let mut created: Vec<PathBuf> = Vec::new();
    let mut open = |flag: &str, path: &Option<PathBuf>| -> Result<Option<File>, Failure> {
        let Some(path) = path else { return Ok(None) };
        match File::create(path) {
            Ok(file) => {
                created.push(path.clone());
                Ok(Some(file))
            }
            Err(err) => {
                for earlier in &created {
                    let _ = std::fs::remove_file(earlier);
                }
                Err(Failure::usage(anyhow::anyhow!("--{flag} {}: cannot write the file: {err}", path.display())))
            }
        }
    };
    let csv_file = open("csv", &args.csv)?;
    let html_file = open("html", &args.html)?;
    let summary_file = open("summary-json", &args.summary_json)?;

    let mut summary_json = json::summary(&info, &report);
    summary_json["thresholds"] = json::thresholds(&thresholds);
    summary_json["verdict"] = json!({
        "limit": limit.as_ref().map(|(l, _)| l.name()),
        "why": limit.as_ref().map(|(_, why)| why),
    });
    if !scenarios.is_empty() {
        summary_json["scenarios"] = json::scenarios(&scenarios);
    }
    summary_json["merged"] = json!({
        "parts": parts,
        "files": args.files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "segments": segment_names,
        "missing": missing_names,
    });

    let failed = |flag: &str, path: &Option<PathBuf>| {
        format!("--{flag} {}: writing failed", path.as_deref().unwrap_or(Path::new("")).display())
    };
    if let Some(file) = csv_file {
        write_csv(file, &info.config, &rows, &report, &thresholds)
            .with_context(|| failed("csv", &args.csv))
            .map_err(Failure::runtime)?;
    }
    if let Some(file) = html_file {
        let page = loadhost_output::html::render(&info, &report, &scenarios, &rows, &thresholds);
        write_all(file, page.as_bytes()).with_context(|| failed("html", &args.html)).map_err(Failure::runtime)?;
    }
    if let Some(file) = summary_file {
        let mut text = serde_json::to_vec_pretty(&summary_json).unwrap_or_default();
        text.push(b'\n');
        write_all(file, &text).with_context(|| failed("summary-json", &args.summary_json)).map_err(Failure::runtime)?;
    }
    print!("{}", summary::render(&info, &report));
    if !scenarios.is_empty() {
        print!("{}", summary::render_scenarios(&scenarios));
    }
    print!("{}", summary::render_thresholds(&thresholds));
    print!("{}", summary::render_verdict(limit.as_ref().map(|(l, why)| (l.name(), why.as_str()))));
    Ok(if thresholds.iter().any(|t| !t.passed) { ExitCode::from(THRESHOLDS_FAILED) } else { ExitCode::SUCCESS })
}

/// The same checks as `loadhost run` makes before any load: declarations do not clash, and each
/// threshold names a known metric, an aggregate its kind has, and a scenario of the merged run.
fn check_thresholds(args: &MergeArgs, merged: &Merged) -> Result<(), Failure> {
    let mut declared = HashMap::new();
    for decl in &args.metric {
        let clash = if built_in_kind(&decl.name).is_some() {
            Some("that name is a built-in metric")
        } else if declared.insert(decl.name.as_str(), decl.kind).is_some_and(|kind| kind != decl.kind) {
            Some("declared twice with different kinds")
        } else {
            None
        };
        if let Some(why) = clash {
            return Err(Failure::usage(anyhow::anyhow!("--metric {decl}: {why}")));
        }
    }
    let scenarios: Vec<&str> = if merged.scenarios.is_empty() {
        vec!["default"]
    } else {
        merged.scenarios.iter().map(|s| s.scenario.as_str()).collect()
    };
    let lookup = |name: &str| declared.get(name).copied();
    for spec in &args.threshold {
        spec.threshold
            .validate(&lookup, &scenarios)
            .map_err(|err| Failure::usage(anyhow::anyhow!("--threshold {err}")))?;
    }
    Ok(())
}

/// The model line: how many files, and which segments.
fn describe(parts: usize, segments: &[String], missing: &[String]) -> String {
    let files = if parts == 1 { "1 results file".to_owned() } else { format!("{parts} results files") };
    if segments.is_empty() {
        return format!("merged from {files} (whole runs, no segments)");
    }
    let mut line = format!("merged from {files} (segments {}", segments.join(", "));
    if !missing.is_empty() {
        line.push_str(&format!("; missing {}", missing.join(", ")));
    }
    line.push(')');
    line
}

fn write_all(mut file: File, bytes: &[u8]) -> std::io::Result<()> {
    file.write_all(bytes)?;
    file.sync_all()
}

fn write_csv(
    file: File,
    config: &serde_json::Value,
    rows: &[loadhost_metrics::IntervalRow],
    report: &RunReport,
    thresholds: &[ThresholdResult],
) -> std::io::Result<()> {
    let mut writer = CsvWriter::new(BufWriter::new(file), config)?;
    for row in rows {
        writer.row(row)?;
    }
    let mut out = writer.finish(report, thresholds)?;
    out.flush()?;
    out.into_inner().map_err(std::io::IntoInnerError::into_error)?.sync_all()
}
