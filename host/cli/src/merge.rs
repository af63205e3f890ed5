//! `loadhost merge FILES…`: the results files of one distributed run (`loadhost run --segment I/N
//! --results FILE` on each process) merged into the run one machine would have reported, with the
//! thresholds judged on the whole of it and the same outputs as `loadhost run` (docs/merge.md).

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use loadhost_config::criteria::{MetricDecl, ThresholdSpec};
use loadhost_metrics::IntervalRow;
use loadhost_output::csv::CsvWriter;
use loadhost_output::html::{self, ChartRows};
use loadhost_output::results::{self, Merged};
use loadhost_output::summary::{MergedFrom, Summary};
use loadhost_output::{RunInfo, json, terminal};

use crate::exit::{Failure, THRESHOLDS_FAILED};
use crate::judge::LiveJudge;
use crate::outputs::{Created, create_all, flag_path, write_all, write_ci_reports};

/// Arguments of `loadhost merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Results files written by `loadhost run --results FILE`, one per segment; or one
    /// oci://REGISTRY/REPO where the segments pushed theirs (`--results oci://…`), with --run-id.
    #[arg(required = true, value_name = "FILES|oci://REGISTRY/REPO")]
    files: Vec<PathBuf>,

    /// The run to merge: the parts of oci://… tagged RUN_ID-results-I; with files, any part of
    /// another run is refused.
    #[arg(long, value_name = "ID", env = "LOADHOST_RUN_ID")]
    run_id: Option<String>,

    #[command(flatten)]
    registry: crate::registry_cmd::ConnArgs,

    /// Write the merged run's summary as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    summary_json: Option<PathBuf>,

    /// Write one CSV row per interval of the merged run to FILE.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,

    /// Write a self-contained HTML report of the merged run to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,

    /// Write JUnit XML of the merged run to FILE (a test case per threshold, per check, for the
    /// accounting and for the verdict).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,

    /// In --junit, a check fails when its pass rate is under PCT (default 100).
    #[arg(long, value_name = "PCT")]
    check_rate: Option<loadhost_config::units::Percent>,

    /// Write a compact Markdown summary of the merged run to FILE (also appended to
    /// $GITHUB_STEP_SUMMARY when that is set).
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,

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
    let merged = read_and_merge(&args)?;
    check_thresholds(&args, &merged)?;
    if args.threshold.iter().any(|t| t.abort_on_fail) {
        tracing::warn!("abort_on_fail has no effect in merge: the run is over, every threshold is judged on the whole");
    }
    // Every output is created before any is written: a path that cannot be written is a usage
    // error (exit 2) that leaves no other file behind.
    let files = Opened::create(&args)?;
    let Merged {
        report,
        scenarios,
        rows,
        plugin_path,
        plugin_sha256,
        plugin_ref,
        plugin_digest,
        scenario_plugins,
        config,
        parts,
        segments,
        missing,
    } = merged;
    let segment_names: Vec<String> = segments.iter().map(results::segment_name).collect();
    let missing_names: Vec<String> = missing.iter().map(results::segment_name).collect();
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
        plugin_ref,
        plugin_digest,
        scenario_plugins,
        config,
        model: describe(parts, &segment_names, &missing_names),
        peak_rss: None,
        tags,
    };
    let thresholds = LiveJudge::new(args.threshold.clone()).finish(&report, &scenarios);
    let mut summary = Summary::new(&info, &report, &scenarios, &thresholds);
    summary.merged = Some(MergedFrom {
        files: args.files.iter().map(|p| p.display().to_string()).collect(),
        missing: missing_names,
        parts: parts as u64,
        segments: segment_names,
    });
    files.write(&summary, &rows)?;
    print!("{}", terminal::render(&summary));
    Ok(if summary.thresholds_ok() { ExitCode::SUCCESS } else { ExitCode::from(THRESHOLDS_FAILED) })
}

/// Read every file (lean: intervals stay encoded) and merge them; refuse a partial set unless
/// `--partial`.
fn read_and_merge(args: &MergeArgs) -> Result<Merged, Failure> {
    let (files, _pulled) = part_files(args)?;
    let mut parts = Vec::with_capacity(files.len());
    for path in &files {
        let part = results::read_for_merge(path).map_err(Failure::usage)?;
        if let Some(wanted) = &args.run_id
            && part.results.run_id.as_deref() != Some(wanted.as_str())
        {
            return Err(Failure::usage(anyhow::anyhow!(
                "{}: a part of run {}, not of --run-id {wanted}",
                path.display(),
                part.results.run_id.as_deref().map_or("(unnamed)".to_owned(), |id| format!("'{id}'"))
            )));
        }
        parts.push((path.display().to_string(), part));
    }
    let merged = results::merge_files(parts).map_err(Failure::usage)?;
    if !merged.missing.is_empty() && !args.partial {
        // Merging a partial set would report a fraction of the plan as if it were the run.
        let missing: Vec<String> = merged.missing.iter().map(results::segment_name).collect();
        return Err(Failure::usage(anyhow::anyhow!(
            "segments {} are missing from the {} files given: merge all of them, or pass --partial",
            missing.join(", "),
            merged.parts
        )));
    }
    Ok(merged)
}

/// The files to merge: those given, or the parts of `--run-id` pulled from `oci://…` into a
/// temporary folder (kept until the merge is done).
fn part_files(args: &MergeArgs) -> Result<(Vec<PathBuf>, Option<tempfile::TempDir>), Failure> {
    let oci: Vec<&str> = args.files.iter().filter_map(|p| p.to_str()?.strip_prefix("oci://")).collect();
    let Some(repository) = oci.first() else {
        return Ok((args.files.clone(), None));
    };
    if args.files.len() > 1 {
        return Err(Failure::usage(anyhow::anyhow!(
            "merge takes files, or one oci://REGISTRY/REPO, not both or several"
        )));
    }
    let Some(run_id) = &args.run_id else {
        return Err(Failure::usage(anyhow::anyhow!(
            "merge oci://{repository} needs --run-id ID: the repository may hold the parts of many runs"
        )));
    };
    let dir = tempfile::tempdir().map_err(|err| Failure::runtime(anyhow::anyhow!("a temporary folder: {err}")))?;
    let registry = crate::registry_cmd::registry(&args.registry)?;
    let files = crate::results_oci::pull_parts(&registry, repository, run_id, dir.path())?;
    tracing::info!("pulled {} part(s) of run {run_id} from oci://{repository}", files.len());
    Ok((files, Some(dir)))
}

/// The output files, created (empty) before anything is written.
struct Opened {
    csv: Created,
    html: Created,
    summary: Created,
    junit: Created,
    markdown: Created,
    check_rate: f64,
}

impl Opened {
    /// Create every output asked for; when one cannot be, remove the ones already made (exit 2).
    fn create(args: &MergeArgs) -> Result<Self, Failure> {
        let [csv, html, summary, junit, markdown] = create_all([
            ("csv", args.csv.as_deref()),
            ("html", args.html.as_deref()),
            ("summary-json", args.summary_json.as_deref()),
            ("junit", args.junit.as_deref()),
            ("markdown", args.markdown.as_deref()),
        ])?;
        let check_rate = args.check_rate.map_or(1.0, |p| p.0);
        Ok(Opened { csv, html, summary, junit, markdown, check_rate })
    }

    /// Write the merged run into each file.
    fn write(self, summary: &Summary, rows: &[IntervalRow]) -> Result<(), Failure> {
        let failed = |flag: &str, path: &Path| format!("{}: writing failed", flag_path(flag, path));
        if let Some((path, file)) = self.csv {
            write_csv(file, summary, rows).with_context(|| failed("csv", &path)).map_err(Failure::runtime)?;
        }
        if let Some((path, file)) = self.html {
            let page = html::render(summary, &rows.iter().collect::<ChartRows>());
            write_all(file, page.as_bytes()).with_context(|| failed("html", &path)).map_err(Failure::runtime)?;
        }
        if let Some((path, file)) = self.summary {
            json::write(file, summary).with_context(|| failed("summary-json", &path)).map_err(Failure::runtime)?;
        }
        write_ci_reports(summary, self.junit, self.markdown, self.check_rate);
        Ok(())
    }
}

/// The same checks as `loadhost run` makes before any load: declarations do not clash, and each
/// threshold names a known metric, an aggregate its kind has, and a scenario of the merged run.
fn check_thresholds(args: &MergeArgs, merged: &Merged) -> Result<(), Failure> {
    let scenarios: Vec<&str> = if merged.scenarios.is_empty() {
        vec!["default"]
    } else {
        merged.scenarios.iter().map(|s| s.scenario.as_str()).collect()
    };
    loadhost_config::criteria::check(&args.metric, &args.threshold, &scenarios).map_err(Failure::usage)
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

fn write_csv(file: File, summary: &Summary, rows: &[IntervalRow]) -> std::io::Result<()> {
    let mut writer = CsvWriter::new(BufWriter::new(file), &summary.config)?;
    for row in rows {
        writer.row(row)?;
    }
    let mut out = writer.finish(summary)?;
    out.flush()?;
    out.into_inner().map_err(std::io::IntoInnerError::into_error)?.sync_all()
}
