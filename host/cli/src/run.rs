//! `loadhost run PLUGIN [options]`: the main job.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use loadhost_config::criteria::OutSpec;
use loadhost_config::{RunOptions, RunSettings};
use loadhost_engine::{Control, EngineError, Interrupt, Live, Model, Overload};
use loadhost_metrics::limit::verdict;
use loadhost_metrics::{RunReport, ThresholdResult};
use loadhost_output::csv::CsvWriter;
use loadhost_output::jsonl::JsonLines;
use loadhost_output::openmetrics::Exporter;
use loadhost_output::progress::Progress;
use loadhost_output::results::{FORMAT_VERSION, ResultsWriter, RunResults, Segment};
use loadhost_output::{RunInfo, json, summary};
use loadhost_runtime::http::allow::AllowRule;
use loadhost_runtime::http::tls::TlsOptions;
use loadhost_runtime::{
    CacheOutcome, Grants, HttpClient, HttpOptions, Plugin, Runtime, RuntimeOptions, cache, check_capacity,
};

use crate::exit::{ABORTED, Failure, STOPPED, THRESHOLDS_FAILED};
use crate::judge::LiveJudge;
use crate::observe::{FileOutput, RunObserver};
use crate::{control_api, metrics_api};

/// Arguments of `loadhost run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plugin: a WebAssembly component exporting loadhost:plugin/doer.
    plugin: PathBuf,

    /// Read options from a TOML file whose keys are the long flag names; flags win.
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    config: Option<PathBuf>,

    #[command(flatten)]
    options: RunOptions,
}

/// Outputs are opened once the plugin is accepted and before any load is sent, so a bad path
/// fails fast, costs no load, and a rejected plugin leaves no empty files behind.
struct Outputs {
    csv: Option<(PathBuf, File)>,
    summary_json: Option<(PathBuf, File)>,
    jsonl: Option<(PathBuf, File)>,
    html: Option<(PathBuf, File)>,
    results: Option<(PathBuf, File)>,
}

/// A file flag as the user typed it: `--csv rows.csv`, `--out json=run.jsonl`.
fn flag_path(flag: &str, path: &Path) -> String {
    let gap = if flag.ends_with('=') { "" } else { " " };
    format!("--{flag}{gap}{}", path.display())
}

fn open_output(flag: &str, path: &Path) -> Result<(PathBuf, File), Failure> {
    File::create(path)
        .map(|file| (path.to_owned(), file))
        .with_context(|| format!("{}: cannot write the file", flag_path(flag, path)))
        .map_err(Failure::usage)
}

/// A streaming output over an opened file: its writer, made by `make` (which writes a header).
fn file_output<W>(
    flag: &str,
    opened: Option<(PathBuf, File)>,
    make: impl FnOnce(File) -> std::io::Result<W>,
) -> Result<Option<FileOutput<W>>, Failure> {
    let Some((path, file)) = opened else { return Ok(None) };
    let writer = make(file)
        .with_context(|| format!("{}: cannot write the file", flag_path(flag, &path)))
        .map_err(Failure::usage)?;
    Ok(Some(FileOutput { writer, path, error: None }))
}

fn describe(settings: &RunSettings) -> String {
    let live = settings.options.control.is_some();
    if !settings.scenarios.is_empty() {
        let each: Vec<String> = settings
            .scenarios
            .iter()
            .map(|plan| {
                let model = describe_plan(plan, live);
                let at = plan.start_delay();
                if at.is_zero() {
                    format!("{}: {model}", plan.scenario())
                } else {
                    format!("{} (from {at:?}): {model}", plan.scenario())
                }
            })
            .collect();
        return format!("{} scenarios\n    {}", each.len(), each.join("\n    "));
    }
    describe_plan(&settings.plan, live)
}

/// A line of this process's `/proc/self/status` (`VmRSS`, `VmHWM`), in bytes.
pub(crate) fn proc_status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line[field.len()..].trim_start_matches(':').trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// This process's share, when the plan is split.
fn describe_segment(settings: &RunSettings) -> String {
    match settings.segment {
        Some(s) => format!(
            "\n  segment {} of {} (0-based): the slots and iterations k with k mod {} = {}, and its share of the workers",
            s.index(),
            s.count(),
            s.count(),
            s.index()
        ),
        None => String::new(),
    }
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

/// The limits in force, defaults included.
fn describe_limits(settings: &RunSettings) -> String {
    let o = &settings.options;
    let show = |d: Option<loadhost_config::units::Dur>| d.map(|d| d.to_string()).unwrap_or_default();
    format!(
        "limits: {} memory per instance, {} per task, {} grace on stop, {} KiB wasm stack",
        loadhost_config::units::Size(settings.max_memory),
        show(o.task_timeout),
        show(o.grace),
        loadhost_runtime::limits::MAX_WASM_STACK >> 10,
    )
}

fn describe_plan(plan: &loadhost_engine::Plan, live: bool) -> String {
    let loops = match plan.event_loops(live) {
        1 => "1 event loop".to_owned(),
        n => format!("{n} event loops"),
    };
    let model = match plan.model() {
        Model::Open { workers, max_workers, overload, .. } => {
            let overload = match overload {
                Overload::Drop => "drop",
                Overload::Queue => "queue",
            };
            let what = if plan.retries().is_some() { "slots (tasks and retries)" } else { "tasks" };
            format!(
                "open model: {} {what} over {:.1}s ({:.1}/s on average), {workers} to {max_workers} workers, overload {overload}",
                plan.planned_tasks().unwrap_or(0),
                plan.planned_generation().unwrap_or_default().as_secs_f64(),
                plan.target_rate().unwrap_or(0.0),
            )
        }
        Model::Closed { workers, duration, max_tasks } => {
            let mut bounds = Vec::new();
            if let Some(d) = duration {
                bounds.push(format!("for {:.1}s", d.as_secs_f64()));
            }
            if let Some(n) = max_tasks {
                bounds.push(format!("up to {n} tasks"));
            }
            format!("closed model: {workers} workers looping {}", bounds.join(", "))
        }
    };
    format!("{model}, on {loops}")
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

/// Make the runtime for the run's instances and limits, and load (compile or take from the cache)
/// the plugin.
pub(crate) fn load_plugin(path: &Path, settings: &RunSettings) -> Result<Plugin, Failure> {
    let options = RuntimeOptions {
        max_instances: settings.max_instances,
        cache_dir: cache::default_dir(),
        max_memory: settings.max_memory,
    };
    let runtime = Runtime::new(options).map_err(Failure::runtime)?;
    runtime.load(path).map_err(|err| if err.is_usage_error() { Failure::usage(err) } else { Failure::plugin(err) })
}

/// The run's multi-threaded async runtime, and the grants built inside it (the HTTP client
/// needs a runtime to start its connection pool).
pub(crate) fn runtime_and_grants(settings: &RunSettings) -> Result<(tokio::runtime::Runtime, Grants), Failure> {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
        .map_err(Failure::runtime)?;
    let grants = {
        let _runtime = tokio.enter();
        grants(settings)?
    };
    Ok((tokio, grants))
}

/// The environment and network the user grants the plugin.
fn grants(settings: &RunSettings) -> Result<Grants, Failure> {
    let options = &settings.options;
    let allow = options
        .allow_host
        .iter()
        .map(|rule| rule.parse::<AllowRule>().map_err(|err| Failure::usage(anyhow::anyhow!("--allow-host {err}"))))
        .collect::<Result<Vec<_>, _>>()?;
    if options.insecure {
        tracing::warn!("--insecure: https certificates are not checked; use it only against your own test targets");
    }
    let http = HttpOptions {
        allow,
        tls: TlsOptions { ca_certs: options.ca_cert.clone(), insecure: options.insecure },
        h2c: options.h2c,
        max_connections_per_host: options.max_connections_per_host,
        max_response_body: options.max_response_body.map_or(u64::MAX, |s| s.0),
    };
    let http = HttpClient::new(&http).map_err(Failure::usage)?;
    let dirs = settings.dirs.iter().map(|d| (d.host.clone(), d.guest.clone())).collect();
    Ok(Grants { env: settings.env.clone(), dirs, http })
}

/// Open `--csv`, `--summary-json`, `--out json=FILE`, `--html` and `--results` before any load;
/// when one cannot be written, the ones already created are removed again.
fn open_outputs(settings: &RunSettings) -> Result<Outputs, Failure> {
    let jsonl = settings.options.out.iter().map(|OutSpec::Json(path)| path).next_back();
    let wanted = [
        ("csv", settings.csv.as_deref()),
        ("summary-json", settings.summary_json.as_deref()),
        ("out json=", jsonl.map(PathBuf::as_path)),
        ("html", settings.options.html.as_deref()),
        ("results", settings.options.results.as_deref()),
    ];
    let mut opened = Vec::new();
    for (flag, path) in wanted {
        match path.map(|p| open_output(flag, p)).transpose() {
            Ok(file) => opened.push(file),
            Err(failure) => {
                for (path, _) in opened.into_iter().flatten() {
                    let _ = std::fs::remove_file(path);
                }
                return Err(failure);
            }
        }
    }
    let mut opened = opened.into_iter();
    let mut next = || opened.next().flatten();
    Ok(Outputs { csv: next(), summary_json: next(), jsonl: next(), html: next(), results: next() })
}

/// Run the load test and report it.
pub fn run(args: RunArgs) -> Result<ExitCode, Failure> {
    let file_options = match &args.config {
        Some(path) => loadhost_config::file::load(path).map_err(Failure::usage)?,
        None => RunOptions::default(),
    };
    let settings = loadhost_config::resolve(args.options.or(file_options)).map_err(Failure::usage)?;
    check_capacity(settings.max_instances).map_err(|err| {
        let flag = if settings.plan.is_open() { "--max-workers" } else { "--workers" };
        Failure::usage(anyhow::anyhow!("{flag} {}: {err}", settings.max_instances))
    })?;
    // Grants first: a bad --allow-host or --ca-cert is a usage error, reported before the plugin
    // is even loaded.
    let (tokio, grants) = runtime_and_grants(&settings)?;
    let plugin = load_plugin(&args.plugin, &settings)?;
    let info = RunInfo {
        plugin_path: args.plugin.display().to_string(),
        plugin_sha256: plugin.sha256().to_owned(),
        config: serde_json::to_value(&settings.options).unwrap_or_default(),
        model: format!("{}{}\n  {}", describe(&settings), describe_segment(&settings), describe_limits(&settings)),
        peak_rss: None,
        tags: settings.options.tag.iter().map(|t| (t.key.clone(), t.value.clone())).collect(),
    };
    // The endpoints are bound before any load, so a bad or busy address fails fast (exit 2) and
    // leaves no output files behind.
    let control_listener = match settings.options.control {
        Some(addr) => {
            let listener =
                control_api::bind(addr, settings.options.control_token.as_deref()).map_err(Failure::usage)?;
            tracing::info!("control API on http://{addr}/v1/status");
            Some(listener)
        }
        None => None,
    };
    let metrics_listener = match settings.options.metrics_addr {
        Some(addr) => {
            let listener = metrics_api::bind(addr).map_err(Failure::usage)?;
            tracing::info!("OpenMetrics on http://{addr}/metrics");
            Some(listener)
        }
        None => None,
    };
    // Whatever the allow-list says, the plugin may not reach the host's own listeners.
    for (listener, flag) in [(&control_listener, "--control"), (&metrics_listener, "--metrics-addr")] {
        if let Some(addr) = listener.as_ref().and_then(|l| l.local_addr().ok()) {
            grants.http.refuse_listener(addr, flag);
        }
    }
    let outputs = open_outputs(&settings)?;
    let created: Vec<PathBuf> = [&outputs.csv, &outputs.summary_json, &outputs.jsonl, &outputs.html, &outputs.results]
        .into_iter()
        .flatten()
        .map(|(p, _)| p.clone())
        .collect();
    let how = match plugin.cache() {
        CacheOutcome::Hit => "from the compile cache",
        CacheOutcome::Miss => "compiled",
        CacheOutcome::Disabled => "compiled (cache off)",
    };
    tracing::info!("plugin {} {how} in {:.1?}", args.plugin.display(), plugin.load_time());
    let factory = plugin.factory(grants).with_setup_options(info.config.to_string());
    let interrupt = Arc::new(Interrupt::new());
    crate::signals::watch(&tokio, interrupt.clone(), settings.plan.grace());

    let csv = file_output("csv", outputs.csv, |f| CsvWriter::new(BufWriter::new(f), &info.config))?;
    let jsonl = file_output("out json=", outputs.jsonl, |f| JsonLines::new(BufWriter::new(f), &info))?;
    let results = file_output("results", outputs.results, ResultsWriter::from_file)?;
    let planned = if settings.scenarios.is_empty() {
        settings.plan.planned_generation()
    } else {
        settings.scenarios.iter().filter_map(|p| p.planned_generation().map(|g| p.start_delay() + g)).max()
    };
    let exporter = metrics_listener.map(|listener| {
        let exporter = Arc::new(Exporter::new());
        tokio.spawn(metrics_api::serve(listener, exporter.clone()));
        exporter
    });
    let mut observer = RunObserver {
        progress: Progress::new(planned),
        csv,
        jsonl,
        results,
        exporter,
        judge: LiveJudge::new(settings.options.threshold.clone()),
        interrupt: interrupt.clone(),
        rows: outputs.html.is_some().then(Vec::new),
        rss_seen: 0,
    };
    wait_for_start(&settings, &interrupt);
    let control = control_listener.map(|listener| {
        let control = Arc::new(Control::new());
        let token = settings.options.control_token.clone();
        tokio.spawn(control_api::serve(listener, control.clone(), token));
        control
    });
    let result = if settings.scenarios.is_empty() {
        let live = Live { control, interrupt: Some(interrupt) };
        match tokio.block_on(loadhost_engine::run_live(&settings.plan, factory, &mut observer, live)) {
            Ok(report) => Ok((report, Vec::new(), None)),
            Err(EngineError::Broken { report, reason }) => Ok((*report, Vec::new(), Some(reason))),
            Err(err) => Err(err),
        }
    } else {
        let run = loadhost_engine::run_scenarios(&settings.scenarios, factory, &mut observer, Some(interrupt));
        tokio.block_on(run).map(|runs| {
            // Every scenario together is the run; each also gets its own section in the outputs.
            let mut all = RunReport::combine(&runs.reports).unwrap_or_else(|| runs.reports[0].clone());
            all.teardown_error = runs.teardown_error;
            all.totals.merge(&runs.lifecycle);
            (all, runs.reports, runs.broken)
        })
    };
    observer.progress.finish();
    let (report, scenario_reports, broken) = result.map_err(|err| {
        // Only a setup or a first crew that failed gets here: nothing was run, so no empty output
        // files are left behind. Once the load has started, every output is finished and kept.
        for path in &created {
            let _ = std::fs::remove_file(path);
        }
        engine_failure(err, &info.plugin_path)
    })?;

    let peak_rss = proc_status_bytes("VmHWM").into_iter().chain(proc_status_bytes("VmRSS")).max();
    let info = RunInfo { peak_rss: peak_rss.map(|p| p.max(observer.rss_seen)), ..info };
    let thresholds = observer.judge.finish(&report, &scenario_reports);
    let limit = verdict(&report, &thresholds);
    // Everything measured is written before anything else can fail.
    let mut summary_json = json::summary(&info, &report);
    summary_json["thresholds"] = json::thresholds(&thresholds);
    summary_json["verdict"] = serde_json::json!({
        "limit": limit.as_ref().map(|(l, _)| l.name()),
        "why": limit.as_ref().map(|(_, why)| why),
    });
    if !scenario_reports.is_empty() {
        summary_json["scenarios"] = json::scenarios(&scenario_reports);
    }
    if let Some(FileOutput { writer, path, error }) = observer.csv.take() {
        report_write_error("csv", &path, error.or(writer.finish(&report, &thresholds).err()));
    }
    if let Some(FileOutput { writer, path, error }) = observer.jsonl.take() {
        report_write_error("out json=", &path, error.or(writer.finish(&summary_json).err()));
    }
    if let Some(FileOutput { writer, path, error }) = observer.results.take() {
        let results = RunResults {
            version: FORMAT_VERSION,
            loadhost_version: loadhost_output::VERSION.to_owned(),
            plugin_path: info.plugin_path.clone(),
            plugin_sha256: info.plugin_sha256.clone(),
            config: info.config.clone(),
            segment: settings.segment.map(|s| Segment { index: s.index(), count: s.count() }),
            interval: settings.plan.interval(),
            started_at: report.started_at,
            report: report.clone(),
            scenarios: scenario_reports.clone(),
            intervals: Vec::new(),
        };
        report_write_error("results", &path, error.or(writer.finish(&results).err()));
    }
    if let Some((path, file)) = outputs.html {
        let rows = observer.rows.take().unwrap_or_default();
        let page = loadhost_output::html::render(&info, &report, &scenario_reports, &rows, &thresholds);
        if let Err(err) = write_all(file, page.as_bytes()) {
            tracing::error!("{}: writing failed: {err}", flag_path("html", &path));
        }
    }
    if let Some((path, file)) = outputs.summary_json {
        drop(file);
        json::write(&path, &summary_json)
            .with_context(|| format!("--summary-json {}: cannot write the file", path.display()))
            .map_err(Failure::runtime)?;
    }
    print!("{}", summary::render(&info, &report));
    if !scenario_reports.is_empty() {
        print!("{}", summary::render_scenarios(&scenario_reports));
    }
    print!("{}", summary::render_thresholds(&thresholds));
    print!("{}", summary::render_verdict(limit.as_ref().map(|(l, why)| (l.name(), why.as_str()))));
    if let Some(reason) = broken {
        // Every output above holds what was measured; the error is the host's, after them.
        return Err(Failure::runtime(anyhow::anyhow!("internal error after the load started: {reason}")));
    }
    Ok(exit_code(&report, &thresholds, observer.judge.aborted_by().is_some()))
}

/// The documented exit code of a finished run: a threshold that stopped the run → 99; a stop by
/// the user → 130; a plugin abort or failed teardown → 4; a failed threshold → 99.
fn exit_code(report: &RunReport, thresholds: &[ThresholdResult], stopped_by_threshold: bool) -> ExitCode {
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
    ExitCode::SUCCESS
}

fn report_write_error(flag: &str, path: &Path, error: Option<std::io::Error>) {
    if let Some(err) = error {
        tracing::error!("{}: writing failed: {err}", flag_path(flag, path));
    }
}

fn write_all(mut file: File, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    file.write_all(bytes)?;
    file.sync_all()
}
