//! The run's output files: created before any load (so a bad path costs none), streamed by the
//! outputs' thread while it runs, and the rest written at its end.

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use loadhost_config::RunSettings;
use loadhost_config::criteria::{OutSpec, PluginOutputSpec};
use loadhost_engine::Interrupt;
use loadhost_export::Scrape;
use loadhost_output::RunInfo;
use loadhost_output::csv::CsvWriter;
use loadhost_output::html::ChartRows;
use loadhost_output::jsonl::JsonLines;
use loadhost_output::progress::Progress;
use loadhost_output::results::{FORMAT_VERSION, PlannedScenario, ResultsWriter, RunStart};

use super::exports::Exports;
use super::metrics_api;
use super::observe::{RunObserver, Sinks};
use super::plugin_output::{JsonBacklog, PluginOutput};
use super::segments::{results_file, run_id};
use crate::exit::Failure;
use crate::judge::LiveJudge;
use crate::outputs::{Created, create_all, streaming};

/// The output files, created once the plugin is accepted and before any load is sent, so a bad
/// path fails fast, costs no load, and a rejected plugin leaves no empty files behind.
pub(super) struct OutputFiles {
    pub(super) csv: Created,
    pub(super) summary_json: Created,
    pub(super) jsonl: Created,
    pub(super) html: Created,
    pub(super) results: Created,
    pub(super) plugin_lines: Created,
    pub(super) junit: Created,
    pub(super) markdown: Created,
}

impl OutputFiles {
    /// Create `--csv`, `--summary-json`, `--out json=FILE`, `--html`, `--results` and
    /// `--plugin-output file=PATH`.
    pub(super) fn create(settings: &RunSettings) -> Result<Self, Failure> {
        let o = &settings.options;
        let jsonl = o
            .out
            .iter()
            .filter_map(|out| match out {
                OutSpec::Json(path) => Some(path),
                OutSpec::Push(..) => None,
            })
            .next_back();
        let plugin_lines = match &o.plugin_output {
            Some(PluginOutputSpec::File(path)) => Some(path.as_path()),
            _ => None,
        };
        let [csv, summary_json, jsonl, html, results, plugin_lines, junit, markdown] = create_all([
            ("csv", o.csv.as_deref()),
            ("summary-json", o.summary_json.as_deref()),
            ("out json=", jsonl.map(PathBuf::as_path)),
            ("html", o.html.as_deref()),
            ("results", results_file(settings).as_deref()),
            ("plugin-output file=", plugin_lines),
            ("junit", o.junit.as_deref()),
            ("markdown", o.markdown.as_deref()),
        ])?;
        Ok(Self { csv, summary_json, jsonl, html, results, plugin_lines, junit, markdown })
    }

    pub(super) fn paths(&self) -> Vec<PathBuf> {
        [
            &self.csv,
            &self.summary_json,
            &self.jsonl,
            &self.html,
            &self.results,
            &self.plugin_lines,
            &self.junit,
            &self.markdown,
        ]
        .into_iter()
        .flatten()
        .map(|(p, _)| p.clone())
        .collect()
    }
}

/// The files written only once the run is over.
pub(super) struct EndFiles {
    pub(super) html: Created,
    pub(super) summary_json: Created,
    pub(super) junit: Created,
    pub(super) markdown: Created,
}

/// Where the plugin's lines go (`--plugin-output`, its file taken from `files`), and the backlog
/// of lines for `--out json=FILE` when there is one.
pub(super) fn plugin_lines(
    settings: &RunSettings,
    files: &mut OutputFiles,
) -> (Arc<PluginOutput>, Option<Arc<JsonBacklog>>) {
    let log = matches!(settings.options.plugin_output, None | Some(PluginOutputSpec::Log));
    let logs = files.jsonl.is_some().then(|| Arc::new(JsonBacklog::default()));
    let scenarios = settings.plans.len() > 1;
    (Arc::new(PluginOutput::new(log, files.plugin_lines.take(), logs.clone(), scenarios)), logs)
}

/// Start the outputs' thread with the streaming outputs (progress, CSV, JSON lines, results,
/// OpenMetrics, live thresholds); the end-of-run files are handed back for later.
pub(super) fn start_observer(
    settings: &RunSettings,
    info: &RunInfo,
    files: OutputFiles,
    logs: Option<Arc<JsonBacklog>>,
    metrics: Option<TcpListener>,
    tokio: &tokio::runtime::Runtime,
    interrupt: &Arc<Interrupt>,
) -> Result<(RunObserver, EndFiles), Failure> {
    let csv = streaming("csv", files.csv, |f| CsvWriter::new(std::io::BufWriter::new(f), &info.config))?;
    let jsonl = streaming("out json=", files.jsonl, |f| JsonLines::new(std::io::BufWriter::new(f), info))?;
    let start = results_start(settings, info);
    let results = streaming("results", files.results, |f| ResultsWriter::from_file(f, &start))?;
    let scrape = metrics.map(|listener| {
        let scrape = Arc::new(Scrape::new());
        tokio.spawn(metrics_api::serve(listener, scrape.clone(), settings.options.metrics_token.clone()));
        scrape
    });
    let exports = Exports::start(settings, run_id(settings), scrape.clone())?;
    let observer = RunObserver::start(Sinks {
        progress: Progress::new(settings.planned_generation()),
        csv,
        jsonl,
        logs,
        results,
        scrape,
        exports,
        judge: LiveJudge::new(settings.options.threshold.clone()),
        interrupt: interrupt.clone(),
        rows: files.html.is_some().then(ChartRows::new),
        rss_seen: 0,
    })
    .context("starting the outputs' thread")
    .map_err(Failure::runtime)?;
    let end =
        EndFiles { html: files.html, summary_json: files.summary_json, junit: files.junit, markdown: files.markdown };
    Ok((observer, end))
}

/// The results file's `start` line: what a merge needs of this part even if the run is killed.
pub(super) fn results_start(settings: &RunSettings, info: &RunInfo) -> RunStart {
    RunStart {
        version: FORMAT_VERSION,
        loadhost_version: loadhost_output::VERSION.to_owned(),
        plugin_path: info.plugin_path.clone(),
        plugin_sha256: info.plugin_sha256.clone(),
        plugin_ref: info.plugin_ref.clone(),
        plugin_digest: info.plugin_digest.clone(),
        scenario_plugins: info.scenario_plugins.clone(),
        config: info.config.clone(),
        segment: settings.segment,
        run_id: run_id(settings),
        planned_start: settings.options.start_at.map(|at| at.0),
        interval: settings.interval(),
        scenarios: settings
            .plans
            .iter()
            .map(|plan| PlannedScenario {
                scenario: plan.scenario().to_owned(),
                offset: plan.start_delay(),
                target_rate: plan.target_rate(),
                target_rate_whole: plan.target_rate_whole(),
            })
            .collect(),
        merged: None,
    }
}
