//! `loadhost run PLUGIN [options]`: the main job. The steps, in order: settings, grants and the
//! plugin (any of them wrong is a usage error before any load); the control and metrics
//! endpoints; every output file, created; the load, with an outputs thread told of each interval;
//! then everything measured is written, and the exit code tells how the run ended.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use loadhost_config::criteria::{HttpDebugArg, OutSpec, PluginOutputSpec};
use loadhost_config::{RunOptions, RunSettings};
use loadhost_engine::{EngineError, Interrupt, Live, Plan, ScenarioPlugins, WorkerFactory};
use loadhost_metrics::{RunReport, ThresholdResult};
use loadhost_output::csv::CsvWriter;
use loadhost_output::html::{self, ChartRows};
use loadhost_output::jsonl::JsonLines;
use loadhost_output::openmetrics::Exporter;
use loadhost_output::progress::Progress;
use loadhost_output::results::{FORMAT_VERSION, PlannedScenario, ResultsWriter, RunStart};
use loadhost_output::summary::Summary;
use loadhost_output::{RunInfo, json, terminal};
use loadhost_runtime::{CacheOutcome, Grants, HttpDebug, LineSink, Plugin, check_capacity};
use std::net::TcpListener;

use crate::exit::{ABORTED, Failure, NO_TASK_PASSED, STOPPED, THRESHOLDS_FAILED};
use crate::judge::LiveJudge;
use crate::observe::{RunObserver, Sinks};
use crate::outputs::{Created, Failed, create_all, remove, streaming, write_ci_reports, write_whole};
use crate::plugin_output::{JsonBacklog, PluginOutput};
use crate::prepare::runtime_and_grants;
use crate::run_plugins::RunPlugins;
use crate::{control_api, describe, memory, metrics_api};

/// Arguments of `loadhost run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plugin: a WebAssembly component exporting loadhost:plugin/doer, or a registry
    /// reference (HOST[:PORT]/REPOSITORY[:TAG][@sha256:HEX], see docs/sharing.md). Optional when
    /// every [[scenario]] block of the -c file names its own `plugin`.
    plugin: Option<PathBuf>,

    /// Read options from a TOML file whose keys are the long flag names (rate = 2000, max-workers =
    /// 5, stage = ["10s:100"]); flags win. [[scenario]] blocks run several loads together.
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    config: Option<PathBuf>,

    #[command(flatten)]
    options: RunOptions,

    #[command(flatten)]
    registry: crate::registry_cmd::ResolveArgs,

    /// How the outputs name the plugin instead of its path: a plugin the binary carries is run
    /// from a temporary file whose name means nothing to the user.
    #[arg(skip)]
    named: Option<String>,
}

impl RunArgs {
    /// A run of a plugin the binary carries (`loadhost http`): its file at `plugin`, `named` in
    /// every output, with `options` as flags and the `-c` file `config`.
    pub(crate) fn built_in(plugin: PathBuf, named: &str, config: Option<PathBuf>, options: RunOptions) -> Self {
        let registry = crate::registry_cmd::ResolveArgs::default();
        Self { plugin: Some(plugin), config, options, registry, named: Some(named.to_owned()) }
    }
}

/// Run the load test and report it.
pub fn run(args: RunArgs) -> Result<ExitCode, Failure> {
    // A registry reference first: a bundle brings options of its own.
    let mut resolver = crate::registry_cmd::Resolver::new(&args.registry);
    let mut main = match &args.plugin {
        Some(path) => {
            let named = args.named.clone().unwrap_or_else(|| path.display().to_string());
            Some((named, resolver.resolve(path)?))
        }
        None => None,
    };
    let bundle = main.as_mut().and_then(|(_, r)| r.bundle.as_mut()).map(|b| std::mem::take(&mut b.options));
    let settings = settings(&args, bundle)?;
    // Grants first: a bad --allow-host or --ca-cert is a usage error, reported before the plugin
    // is even loaded.
    let (tokio, grants) = runtime_and_grants(&settings)?;
    let plugins = RunPlugins::load(main, &settings, &mut resolver)?;
    let info = run_info(&settings, &plugins);
    let endpoints = Endpoints::bind(&settings, &grants)?;
    let files = OutputFiles::create(&settings)?;
    for loaded in &plugins.loaded {
        log_loaded(&loaded.named, &loaded.plugin);
    }
    log_seed(&settings.options);
    if let (Some(repository), Some((path, _))) =
        (loadhost_config::distributed::results_repository(&settings.options), &files.results)
    {
        // Said now: a run that is killed leaves its completed intervals there, never pushed.
        tracing::info!("results go to {} as the run goes, pushed to oci://{repository} at its end", path.display());
    }
    let created = files.paths();
    let mut files = files;
    let (lines, logs) = plugin_lines(&settings, &mut files);
    let output = lines.is_used().then(|| {
        let debug = settings.options.http_debug.map(|level| match level {
            HttpDebugArg::Headers => HttpDebug::Headers,
            HttpDebugArg::Full => HttpDebug::Full,
        });
        (lines.clone() as Arc<dyn LineSink>, debug)
    });
    let factories = plugins.factories(&grants, &info.config.to_string(), output);
    let interrupt = Arc::new(Interrupt::new());
    crate::signals::watch(&tokio, interrupt.clone(), settings.grace());
    let mut settings = settings;
    // Nothing ran if the segment does not start: no output is left behind, as for a refused plugin.
    // Before the outputs start: the results file's start line records the planned start.
    start_together(&mut settings, &mut resolver, &interrupt)
        .inspect_err(|_| remove(created.iter().map(PathBuf::as_path)))?;
    let (mut observer, html) = start_observer(&settings, &info, files, logs, endpoints.metrics, &tokio, &interrupt)?;
    let control = endpoints.control.map(|listener| {
        let control = Arc::new(control_api::handle(&settings));
        tokio.spawn(control_api::serve(listener, control.clone(), settings.options.control_token.clone()));
        control
    });
    let result =
        tokio.block_on(execute(&settings, factories, &mut observer, Live { control, interrupt: Some(interrupt) }));
    // Every interval queued for the outputs is written before the run's end is.
    let sinks = observer.finish().map_err(Failure::runtime)?;
    let ended = result.map_err(|err| {
        // Only a setup or a first crew that failed gets here: nothing was run, so no empty output
        // files are left behind. Once the load has started, every output is finished and kept.
        remove(created.iter().map(PathBuf::as_path));
        engine_failure(err, &info.plugin_path)
    })?;
    let mut failed = Failed::default();
    if let Some((path, err)) = lines.finish() {
        failed.note("plugin-output file=", &path, Some(err), true);
    }
    let code = finish(&settings, info, sinks, html, ended, &mut failed);
    // A results file that could not be written whole is not pushed: it stays where it is, named.
    let pushed = match results_file(&settings) {
        Some(path) if failed.has("results", &path) => Ok(()),
        _ => push_results(&settings, &mut resolver),
    };
    let code = code?;
    pushed?;
    // An output lost says so in the exit code, whatever else the run did: it may be the file
    // that says the rest.
    failed.check()?;
    Ok(code)
}

/// Where the results file is written: `--results FILE`, or a file of its own to push when
/// `--results` names a registry.
fn results_file(settings: &RunSettings) -> Option<PathBuf> {
    let o = &settings.options;
    if loadhost_config::distributed::results_repository(o).is_none() {
        return o.results.clone();
    }
    let run = o.run_id.as_deref().unwrap_or("run");
    let index = settings.segment.map_or(0, |s| s.index());
    Some(std::env::temp_dir().join(format!("loadhost-{run}-results-{index}-{}.lhr", std::process::id())))
}

/// Push the results file to `--results oci://…`; the file is removed once it is there, kept (and
/// named) when the push fails.
fn push_results(settings: &RunSettings, resolver: &mut crate::registry_cmd::Resolver<'_>) -> Result<(), Failure> {
    let o = &settings.options;
    let (Some(repository), Some(run_id), Some(file)) =
        (loadhost_config::distributed::results_repository(o), o.run_id.as_deref(), results_file(settings))
    else {
        return Ok(());
    };
    let index = settings.segment.map_or(0, |s| s.index());
    let pushed = resolver.registry().and_then(|r| crate::results_oci::push(r, repository, run_id, index, &file));
    match pushed {
        Ok(_) => {
            let _ = std::fs::remove_file(&file);
            Ok(())
        }
        // The results are kept where they were written, and the error says where.
        Err(failure) => {
            Err(failure
                .context(format!("the results are kept in {} (merge that file, or push it again)", file.display())))
        }
    }
}

/// Wait until the segments start together: `--barrier` (then the planned start is the
/// barrier's, recorded as `start-at`) or `--start-at`; refuse to start past
/// `--max-start-lateness` (exit 5).
fn start_together(
    settings: &mut RunSettings,
    resolver: &mut crate::registry_cmd::Resolver<'_>,
    interrupt: &Interrupt,
) -> Result<(), Failure> {
    let o = &settings.options;
    if let (true, Some(repository), Some(run_id), Some(segment)) =
        (o.barrier, loadhost_config::distributed::results_repository(o), o.run_id.as_deref(), settings.segment)
    {
        let barrier = crate::rendezvous::Barrier {
            registry: resolver.registry()?,
            repository,
            run_id,
            index: segment.index(),
            count: segment.count(),
            timeout: o.barrier_timeout.map_or(crate::rendezvous::DEFAULT_TIMEOUT, |d| d.0),
        };
        let meeting = barrier.meet(&|| interrupt.requests() > 0)?;
        if !meeting.missing.is_empty() {
            tracing::warn!(
                "segments {:?} did not arrive within --barrier-timeout: starting without them (merge with --partial)",
                meeting.missing
            );
        }
        settings.options.start_at = Some(loadhost_config::distributed::StartAt(meeting.start));
    }
    let Some(at) = settings.options.start_at else { return Ok(()) };
    if let (Ok(late), Some(limit)) =
        (std::time::SystemTime::now().duration_since(at.0), settings.options.max_start_lateness)
        && late > limit.0
    {
        return Err(Failure::not_started(anyhow::anyhow!(
            "the planned start {at} was {:.1}s ago, more than --max-start-lateness {limit}: not starting a \
             misaligned share",
            late.as_secs_f64(),
        )));
    }
    wait_for_start(settings, interrupt);
    Ok(())
}

/// What the outputs say about the run besides its measurements.
fn run_info(settings: &RunSettings, plugins: &RunPlugins) -> RunInfo {
    let main = plugins.main().file();
    RunInfo {
        plugin_path: main.path,
        plugin_sha256: main.sha256,
        plugin_ref: main.reference,
        plugin_digest: main.digest,
        scenario_plugins: plugins.scenario_files(),
        config: serde_json::to_value(&settings.options).unwrap_or_default(),
        model: describe::run(settings),
        peak_rss: None,
        tags: settings.options.tag.iter().map(|t| (t.key.clone(), t.value.clone())).collect(),
    }
}

/// The run a results file belongs to: `--run-id`, else the planned start (`--start-at`), which
/// every segment of one distributed run shares and no other run has.
fn run_id(settings: &RunSettings) -> Option<String> {
    let o = &settings.options;
    o.run_id.clone().or_else(|| o.start_at.as_ref().map(|at| format!("start-at {at}")))
}

/// Where the plugin's lines go (`--plugin-output`, its file taken from `files`), and the backlog
/// of lines for `--out json=FILE` when there is one.
fn plugin_lines(settings: &RunSettings, files: &mut OutputFiles) -> (Arc<PluginOutput>, Option<Arc<JsonBacklog>>) {
    let log = matches!(settings.options.plugin_output, None | Some(PluginOutputSpec::Log));
    let logs = files.jsonl.is_some().then(|| Arc::new(JsonBacklog::default()));
    let scenarios = settings.plans.len() > 1;
    (Arc::new(PluginOutput::new(log, files.plugin_lines.take(), logs.clone(), scenarios)), logs)
}

/// The options (flags over the `-c` file over a pulled bundle's TOML) resolved into a plan, and
/// checked against the machine's capacity for instances.
fn settings(args: &RunArgs, bundle: Option<RunOptions>) -> Result<RunSettings, Failure> {
    let file_options = match &args.config {
        Some(path) => loadhost_config::file::load(path).map_err(Failure::usage)?,
        None => RunOptions::default(),
    };
    let options = args.options.clone().or(file_options).or(bundle.unwrap_or_default());
    let settings = loadhost_config::resolve(options).map_err(Failure::usage)?;
    check_capacity(settings.max_workers).map_err(|err| {
        let flag = if settings.plans.iter().any(Plan::is_open) { "--max-workers" } else { "--workers" };
        Failure::usage(anyhow::anyhow!("{flag} {}: {err}", settings.max_workers))
    })?;
    Ok(settings)
}

/// The seed in effect, logged before any load (once the run can start, so bad input still gets
/// its one line), so even a run that dies can be repeated with `--seed`.
fn log_seed(options: &RunOptions) {
    let Some(seed) = options.seed else { return };
    let arrivals = match options.arrivals {
        Some(loadhost_config::options::ArrivalsArg::Poisson) => ", poisson arrivals",
        Some(loadhost_config::options::ArrivalsArg::Even) => ", even arrivals",
        None => "",
    };
    tracing::info!("seed {seed}{arrivals} (--seed {seed} repeats this schedule)");
}

fn log_loaded(named: &str, plugin: &Plugin) {
    let how = match plugin.cache() {
        CacheOutcome::Hit => "from the compile cache",
        CacheOutcome::Miss => "compiled",
        CacheOutcome::Disabled => "compiled (cache off)",
    };
    tracing::info!("plugin {named} {how} in {:.1?}", plugin.load_time());
}

/// The control API and the OpenMetrics endpoint, bound before any load so a bad or busy address
/// fails fast (exit 2) and leaves no output files behind.
struct Endpoints {
    control: Option<TcpListener>,
    metrics: Option<TcpListener>,
}

impl Endpoints {
    fn bind(settings: &RunSettings, grants: &Grants) -> Result<Self, Failure> {
        let control = match settings.options.control {
            Some(addr) => {
                let listener =
                    control_api::bind(addr, settings.options.control_token.as_deref()).map_err(Failure::usage)?;
                tracing::info!("control API on http://{addr}/v1/status");
                Some(listener)
            }
            None => None,
        };
        let metrics = match settings.options.metrics_addr {
            Some(addr) => {
                let listener =
                    metrics_api::bind(addr, settings.options.metrics_token.as_deref()).map_err(Failure::usage)?;
                tracing::info!("OpenMetrics on http://{addr}/metrics");
                Some(listener)
            }
            None => None,
        };
        // Whatever the allow-list says, the plugin may not reach the host's own listeners.
        for (listener, flag) in [(&control, "--control"), (&metrics, "--metrics-addr")] {
            if let Some(addr) = listener.as_ref().and_then(|l| l.local_addr().ok()) {
                grants.http.refuse_listener(addr, flag);
            }
        }
        Ok(Self { control, metrics })
    }
}

/// The output files, created once the plugin is accepted and before any load is sent, so a bad
/// path fails fast, costs no load, and a rejected plugin leaves no empty files behind.
struct OutputFiles {
    csv: Created,
    summary_json: Created,
    jsonl: Created,
    html: Created,
    results: Created,
    plugin_lines: Created,
    junit: Created,
    markdown: Created,
}

impl OutputFiles {
    /// Create `--csv`, `--summary-json`, `--out json=FILE`, `--html`, `--results` and
    /// `--plugin-output file=PATH`.
    fn create(settings: &RunSettings) -> Result<Self, Failure> {
        let o = &settings.options;
        let jsonl = o.out.iter().map(|OutSpec::Json(path)| path).next_back();
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

    fn paths(&self) -> Vec<PathBuf> {
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
struct EndFiles {
    html: Created,
    summary_json: Created,
    junit: Created,
    markdown: Created,
}

/// Start the outputs' thread with the streaming outputs (progress, CSV, JSON lines, results,
/// OpenMetrics, live thresholds); the end-of-run files are handed back for later.
fn start_observer(
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
    let exporter = metrics.map(|listener| {
        let exporter = Arc::new(Exporter::new());
        tokio.spawn(metrics_api::serve(listener, exporter.clone(), settings.options.metrics_token.clone()));
        exporter
    });
    let observer = RunObserver::start(Sinks {
        progress: Progress::new(settings.planned_generation()),
        csv,
        jsonl,
        logs,
        results,
        exporter,
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
fn results_start(settings: &RunSettings, info: &RunInfo) -> RunStart {
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
            })
            .collect(),
    }
}

/// How the load ended: the run's report, each scenario's, and the host's own error when it broke
/// after the load had started (the measurements are still written).
struct Ended {
    report: RunReport,
    scenarios: Vec<RunReport>,
    broken: Option<String>,
}

/// Run the plans: a single run's one plan under live control, or every scenario side by side.
async fn execute<F: WorkerFactory + Clone>(
    settings: &RunSettings,
    mut plugins: ScenarioPlugins<F>,
    observer: &mut RunObserver,
    live: Live,
) -> Result<Ended, EngineError> {
    let ([plan], []) = (settings.plans.as_slice(), settings.scenarios()) else {
        return execute_scenarios(&settings.plans, plugins, observer, live).await;
    };
    // A single run: its one plan is the whole run, with no scenario section of its own.
    let factory = plugins.plugins.swap_remove(0).1;
    match loadhost_engine::run_live(plan, factory, observer, live).await {
        Ok(report) => Ok(Ended { report, scenarios: Vec::new(), broken: None }),
        Err(EngineError::Broken { report, reason }) => {
            Ok(Ended { report: *report, scenarios: Vec::new(), broken: Some(reason) })
        }
        Err(err) => Err(err),
    }
}

/// Run every scenario side by side, each reported on its own beside the whole run.
async fn execute_scenarios<F: WorkerFactory + Clone>(
    plans: &[Plan],
    plugins: ScenarioPlugins<F>,
    observer: &mut RunObserver,
    live: Live,
) -> Result<Ended, EngineError> {
    let runs = loadhost_engine::run_scenarios(plans, plugins, observer, live.interrupt).await?;
    // Every scenario together is the run; each also gets its own section in the outputs.
    let mut report = RunReport::combine(&runs.reports).unwrap_or_else(|| runs.reports[0].clone());
    report.teardown_error = runs.teardown_error;
    report.totals.merge(&runs.lifecycle);
    Ok(Ended { report, scenarios: runs.reports, broken: runs.broken })
}

/// Write everything measured, print the summary, and tell how the run ended. Each output is
/// written whatever became of the others (a failure is noted in `failed`, by flag and path), and
/// the summary is printed whatever became of them all.
fn finish(
    settings: &RunSettings,
    info: RunInfo,
    mut sinks: Sinks,
    files: EndFiles,
    ended: Ended,
    failed: &mut Failed,
) -> Result<ExitCode, Failure> {
    let Ended { report, scenarios, broken } = ended;
    let info = RunInfo { peak_rss: memory::peak_bytes().map(|p| p.max(sinks.rss_seen)), ..info };
    let thresholds = sinks.judge.finish(&report, &scenarios);
    // Everything measured is written before anything else can fail.
    let summary = Summary::new(&info, &report, &scenarios, &thresholds);
    if let Some(csv) = sinks.csv.take() {
        csv.finish(|w| w.finish(&summary).map(drop), failed);
    }
    if let Some(jsonl) = sinks.jsonl.take() {
        let logs = sinks.logs.as_ref().map(|l| l.drain()).unwrap_or_default();
        let finish = |mut w: JsonLines<_>| {
            w.logs(&logs)?;
            w.finish(&summary).map(drop)
        };
        jsonl.finish(finish, failed);
    }
    if let Some(results) = sinks.results.take() {
        let whole = results_start(settings, &info).into_results(report.clone(), scenarios.clone());
        results.finish(|w| w.finish(&whole), failed);
    }
    if let Some((path, file)) = files.html {
        let page = html::render(&summary, &sinks.rows.take().unwrap_or_default());
        failed.note("html", &path, write_whole(&path, file, |out| out.write_all(page.as_bytes())).err(), false);
    }
    if let Some((path, file)) = files.summary_json {
        let written = json::to_bytes(&summary).and_then(|text| write_whole(&path, file, |out| out.write_all(&text)));
        failed.note("summary-json", &path, written.err(), false);
    }
    let check_rate = settings.options.check_rate.map_or(1.0, |p| p.0);
    write_ci_reports(&summary, files.junit, files.markdown, check_rate, failed);
    print!("{}", terminal::render(&summary));
    if let Some(reason) = broken {
        // Every output above holds what was measured; the error is the host's, after them.
        return Err(Failure::runtime(anyhow::anyhow!("the run did not end cleanly after the load started: {reason}")));
    }
    let stopped_by_threshold = sinks.judge.aborted_by().is_some();
    Ok(exit_code(&report, &thresholds, stopped_by_threshold, settings.options.allow_failures))
}

/// Wait for `--start-at`, so every segment starts its load together; a stop request ends the wait.
fn wait_for_start(settings: &RunSettings, interrupt: &Interrupt) {
    let Some(at) = settings.options.start_at else { return };
    match at.0.duration_since(std::time::SystemTime::now()) {
        Ok(wait) => {
            tracing::info!("waiting {:.1}s to start at {at}", wait.as_secs_f64());
            let until = std::time::Instant::now() + wait;
            while interrupt.requests() == 0 {
                let left = until.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                std::thread::sleep(left.min(std::time::Duration::from_millis(50)));
            }
        }
        Err(late) => tracing::warn!("--start-at {at} was {:.1}s ago: starting now", late.duration().as_secs_f64()),
    }
}

/// The exit code for an engine error: the plugin refused (its setup, or a first worker's init) →
/// 4; a worker could not be made → 3; anything else is the host's (1).
fn engine_failure(err: EngineError, plugin: &str) -> Failure {
    let refused = match &err {
        EngineError::Setup(_) => true,
        EngineError::WorkerStart { source, .. } => source.is_refusal(),
        _ => false,
    };
    match err {
        EngineError::Setup(_) | EngineError::WorkerStart { .. } if refused => {
            Failure::aborted(anyhow::Error::new(err).context(plugin.to_owned()))
        }
        EngineError::WorkerStart { .. } => Failure::plugin(anyhow::Error::new(err).context(plugin.to_owned())),
        other => Failure::runtime(other),
    }
}

/// The documented exit code of a finished run: a threshold that stopped the run → 99; a stop by
/// the user → 130; a plugin abort or failed teardown → 4; a failed threshold → 99.
fn exit_code(
    report: &RunReport,
    thresholds: &[ThresholdResult],
    stopped_by_threshold: bool,
    allow_failures: bool,
) -> ExitCode {
    if stopped_by_threshold {
        return ExitCode::from(THRESHOLDS_FAILED);
    }
    if report.stopped.is_some() {
        return ExitCode::from(STOPPED);
    }
    if report.aborted.is_some() || report.teardown_error.is_some() {
        return ExitCode::from(ABORTED);
    }
    if thresholds.iter().any(|t| !t.passed) {
        return ExitCode::from(THRESHOLDS_FAILED);
    }
    let counts = report.counts();
    if counts.scheduled > 0 && counts.passed == 0 && !allow_failures {
        tracing::error!(
            "no task passed ({} scheduled): exit {NO_TASK_PASSED} (--allow-failures accepts such a run)",
            counts.scheduled
        );
        return ExitCode::from(NO_TASK_PASSED);
    }
    ExitCode::SUCCESS
}
