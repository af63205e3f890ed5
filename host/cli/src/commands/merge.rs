//! `loadhost merge FILES…`: the results files of one distributed run (`loadhost run --segment I/N
//! --results FILE` on each process) merged into the run one machine would have reported, with the
//! thresholds judged on the whole of it and the same outputs as `loadhost run` (docs/merge.md).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

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
use crate::outputs::{Created, Failed, create_all, write_ci_reports, write_whole};

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
    registry: crate::registry::ConnArgs,

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

    /// Write the merged run's results file to FILE (the format `run --results` writes, of the whole
    /// plan, with the segments it came from and any missing), which `loadhost compare` tests as it
    /// tests a single run's.
    #[arg(long, value_name = "FILE")]
    results: Option<PathBuf>,

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

    /// Merge even when segments are missing (a pod that failed), or a file was cut off before its
    /// end (a killed process: its completed intervals are merged): the result is then not the
    /// whole plan, and the outputs say which segments are absent and which files were cut off.
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
        plugin_path,
        plugin_sha256,
        plugin_ref,
        plugin_digest,
        scenario_plugins,
        config,
        parts,
        segments,
        missing,
        cut,
        generators,
        target_rate_whole,
        scenario_target_rates_whole,
        ..
    } = &merged;
    let segment_names: Vec<String> = segments.iter().map(results::segment_name).collect();
    let missing_names: Vec<String> = missing.iter().map(results::segment_name).collect();
    let missing_share = missing_share(&missing_names, report.target_rate, *target_rate_whole);
    // The parts were one run, so their tags are the run's (they travel in its echoed config).
    let tags = config["tag"]
        .as_array()
        .map(|tags| {
            tags.iter().filter_map(|t| t.as_str()?.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect()
        })
        .unwrap_or_default();
    let info = RunInfo {
        plugin_path: plugin_path.clone(),
        plugin_sha256: plugin_sha256.clone(),
        plugin_ref: plugin_ref.clone(),
        plugin_digest: plugin_digest.clone(),
        scenario_plugins: scenario_plugins.clone(),
        config: config.clone(),
        model: describe(*parts, &segment_names, &missing_names, cut),
        peak_rss: None,
        tags,
    };
    let thresholds = LiveJudge::new(args.threshold.clone()).finish(report, scenarios);
    // The verdict is judged on what the merged parts planned (a missing segment is not the
    // emitter falling short); the rate is stated against the whole plan, missing segments included.
    let mut summary = Summary::new(&info, report, scenarios, &thresholds);
    summary.rate.target_per_s = *target_rate_whole;
    for (name, scenario) in summary.scenarios.iter_mut().flat_map(|s| s.0.iter_mut()) {
        scenario.rate.target_per_s = scenario_target_rates_whole.get(name.as_str()).copied();
    }
    // Each process had its own generator: judged segment by segment, the worst one named.
    summary.generator = loadhost_output::summary::Generator::of_segments(generators);
    summary.merged = Some(MergedFrom {
        cut: cut.clone(),
        files: args.files.iter().map(|p| p.display().to_string()).collect(),
        missing: missing_names,
        missing_share,
        parts: *parts as u64,
        segments: segment_names,
    });
    let mut failed = Failed::default();
    files.write(&summary, &merged, &mut failed);
    print!("{}", terminal::render(&summary));
    failed.check()?;
    Ok(if summary.thresholds_ok() { ExitCode::SUCCESS } else { ExitCode::from(THRESHOLDS_FAILED) })
}

/// Read every file (lean: intervals stay encoded) and merge them; refuse a partial set unless
/// `--partial`.
fn read_and_merge(args: &MergeArgs) -> Result<Merged, Failure> {
    let (files, _pulled) = part_files(args)?;
    let mut parts = Vec::with_capacity(files.len());
    for path in &files {
        let cut = if args.partial { results::CutFiles::Accept } else { results::CutFiles::Refuse };
        let part = results::read_for_merge(path, cut).map_err(Failure::usage)?;
        if part.cut {
            tracing::warn!(
                "{}: cut off after {} (no end line: was the process killed?): merging the intervals it completed",
                path.display(),
                loadhost_output::plural(part.intervals() as u64, "interval", "intervals")
            );
        }
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
    let windows = if args.results.is_some() { results::Windows::Keep } else { results::Windows::Drop };
    let merged = results::merge_files_with(parts, windows).map_err(Failure::usage)?;
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
    let registry = crate::registry::registry(&args.registry)?;
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
    results: Created,
    check_rate: f64,
}

impl Opened {
    /// Create every output asked for; when one cannot be, remove the ones already made (exit 2).
    fn create(args: &MergeArgs) -> Result<Self, Failure> {
        if let Some(path) = &args.results
            && path.to_str().is_some_and(|p| p.starts_with("oci://"))
        {
            return Err(Failure::usage(anyhow::anyhow!(
                "--results {}: merge writes its results file to a path (oci:// is where segments push theirs)",
                path.display()
            )));
        }
        let [csv, html, summary, junit, markdown, results] = create_all([
            ("csv", args.csv.as_deref()),
            ("html", args.html.as_deref()),
            ("summary-json", args.summary_json.as_deref()),
            ("junit", args.junit.as_deref()),
            ("markdown", args.markdown.as_deref()),
            ("results", args.results.as_deref()),
        ])?;
        let check_rate = args.check_rate.map_or(1.0, |p| p.0);
        Ok(Opened { csv, html, summary, junit, markdown, results, check_rate })
    }

    /// Write the merged run into each file, each whole or not at all, whatever became of the
    /// others; those that failed are noted in `failed`.
    fn write(self, summary: &Summary, merged: &Merged, failed: &mut Failed) {
        let rows = &merged.rows[..];
        if let Some((path, file)) = self.csv {
            let written = write_whole(&path, file, |out| write_csv(out, summary, rows));
            failed.note("csv", &path, written.err(), false);
        }
        if let Some((path, file)) = self.html {
            let page = html::render(summary, &rows.iter().collect::<ChartRows>());
            failed.note("html", &path, write_whole(&path, file, |out| out.write_all(page.as_bytes())).err(), false);
        }
        if let Some((path, file)) = self.summary {
            let written = json::to_bytes(summary).and_then(|text| write_whole(&path, file, |out| out.write_all(&text)));
            failed.note("summary-json", &path, written.err(), false);
        }
        if let (Some((path, file)), Some(from)) = (self.results, &summary.merged) {
            let written = write_whole(&path, file, |out| results::write_merged(out, merged, from));
            failed.note("results", &path, written.err(), false);
        }
        write_ci_reports(summary, self.junit, self.markdown, self.check_rate, failed);
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

/// The share of the whole plan's tasks in the missing segments: 1 − what the merged parts planned
/// ÷ the whole plan's rate (the segments' tasks are shared out over the same planned time); 0 when
/// none is missing; `None` without a planned rate (the closed model).
fn missing_share(missing: &[String], merged: Option<f64>, whole: Option<f64>) -> Option<f64> {
    let (merged, whole) = (merged?, whole?);
    if missing.is_empty() {
        return Some(0.0);
    }
    (whole > 0.0).then(|| ((1.0 - merged / whole).clamp(0.0, 1.0) * 1e6).round() / 1e6)
}

/// The model line: how many files, which segments, and which files were cut off.
fn describe(parts: usize, segments: &[String], missing: &[String], cut: &[String]) -> String {
    let files = if parts == 1 { "1 results file".to_owned() } else { format!("{parts} results files") };
    let mut line = if segments.is_empty() {
        format!("merged from {files} (whole runs, no segments")
    } else {
        format!("merged from {files} (segments {}", segments.join(", "))
    };
    if !missing.is_empty() {
        line.push_str(&format!("; missing {}", missing.join(", ")));
    }
    if !cut.is_empty() {
        line.push_str(&format!("; cut off before the end: {}", cut.join(", ")));
    }
    line.push(')');
    line
}

fn write_csv(out: &mut dyn Write, summary: &Summary, rows: &[IntervalRow]) -> std::io::Result<()> {
    let mut writer = CsvWriter::new(out, &summary.config)?;
    for row in rows {
        writer.row(row)?;
    }
    writer.finish(summary).map(drop)
}
