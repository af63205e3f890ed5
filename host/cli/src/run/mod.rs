//! `loadhost run`'s pipeline, which `loadhost http` shares. [`run`] reads as its steps: the run
//! prepared (settings, grants, the plugins, the control and metrics endpoints, every output file:
//! any of them wrong is a usage error before any load); the segments started together; the
//! outputs' thread started; the load, told to the outputs interval by interval; then everything
//! measured is written, the results pushed, and the exit code tells how the run ended.
//!
//! # Layout
//! - [`plugins`]: the run's plugins (its own, and each scenario's), loaded and made into factories.
//! - [`describe`]: the load-model lines every output shows.
//! - [`endpoints`]: the control API and the OpenMetrics endpoint, bound before any load.
//! - [`control_api`], [`metrics_api`]: what those endpoints answer; [`http_serve`] serves both.
//! - [`files`]: the output files, created before the load and streamed during it.
//! - [`plugin_output`]: where the plugin's lines go (`--plugin-output`).
//! - [`segments`]: a run split into segments: starting together, the results file and its push.
//! - [`rendezvous`]: `--barrier`, the segments meeting in a registry.
//! - [`observe`]: the outputs' thread, told of each interval.
//! - [`exports`]: the push receivers (`--out prometheus-rw=…`, `otlp=…`, `influxdb=…`), fed by it.
//! - [`load`]: the load itself, and the exit code of one that could not start.
//! - [`memory`]: the process's peak memory, for the summary.
//! - [`finish`]: everything measured written, the summary printed, the exit code.

mod control_api;
mod describe;
mod endpoints;
mod exports;
mod files;
mod finish;
mod handle_summary;
mod http_serve;
mod load;
mod memory;
mod metrics_api;
mod observe;
mod plugin_output;
mod plugins;
mod rendezvous;
mod request_body;
mod segments;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use loadhost_config::criteria::HttpDebugArg;
use loadhost_config::{RunOptions, RunSettings};
use loadhost_engine::{Control, Interrupt, Live, ScenarioPlugins};
use loadhost_output::RunInfo;
use loadhost_runtime::{CacheOutcome, Grants, HttpDebug, LineSink, Plugin, WasmWorkerFactory};

use self::endpoints::Endpoints;
use self::files::{OutputFiles, plugin_lines, start_observer};
use self::finish::finish;
use self::load::{engine_failure, execute};
use self::plugin_output::PluginOutput;
use self::plugins::RunPlugins;
use self::segments::{push_results, results_file, start_together};
use crate::commands::run::RunArgs;
use crate::exit::Failure;
use crate::outputs::{Failed, remove};
use crate::prepare::runtime_and_grants;
use crate::registry::Resolver;

/// A run ready for its load: built once by [`Run::prepare`], then read by every step.
struct Run<'a> {
    /// The options resolved into plans (`--barrier` sets its planned start).
    settings: RunSettings,
    /// Pulls plugin references, and reaches the registry of `--results oci://…` and `--barrier`.
    resolver: Resolver<'a>,
    /// The host's event loops.
    tokio: tokio::runtime::Runtime,
    /// What the plugins may reach.
    grants: Grants,
    /// The plugins, loaded.
    plugins: RunPlugins,
    /// What the outputs say about the run besides its measurements.
    info: RunInfo,
    /// Stop requests: Ctrl-C, SIGTERM, the control API, a threshold that aborts.
    interrupt: Arc<Interrupt>,
}

/// Run the load test and report it.
pub fn run(args: RunArgs) -> Result<ExitCode, Failure> {
    let (mut run, endpoints, mut files) = Run::prepare(&args)?;
    run.log_start(&files);
    let created = files.paths();
    let (lines, logs) = plugin_lines(&run.settings, &mut files);
    let factories = run.factories(&lines);
    // k6's handleSummary, when the script defines one: called once every output is written.
    let summarizer = factories
        .plugins
        .first()
        .filter(|_| crate::k6_options::handle_summary(Path::new(&run.plugins.main().file().path)).is_some())
        .map(|(_, factory)| handle_summary::Summarizer {
            factory: factory.clone(),
            tokio: &run.tokio,
            limit: run.settings.lifecycle_timeout(),
        });
    crate::signals::watch(&run.tokio, run.interrupt.clone(), run.settings.grace());
    // Nothing ran if the segment does not start: no output is left behind, as for a refused plugin.
    // Before the outputs start: the results file's start line records the planned start.
    start_together(&mut run.settings, &mut run.resolver, &run.interrupt)
        .inspect_err(|_| remove(created.iter().map(PathBuf::as_path)))?;
    let (mut observer, end_files) =
        start_observer(&run.settings, &run.info, files, logs, endpoints.metrics, &run.tokio, &run.interrupt)?;
    let live = Live { control: run.serve_control(endpoints.control), interrupt: Some(run.interrupt.clone()) };
    let result = run.tokio.block_on(execute(&run.settings, factories, &mut observer, live));
    // Every interval queued for the outputs is written before the run's end is.
    let sinks = observer.finish().map_err(Failure::runtime)?;
    let scrape = sinks.scrape.clone();
    let ended = result.map_err(|err| {
        // Only a setup or a first crew that failed gets here: nothing was run, so no empty output
        // files are left behind. Once the load has started, every output is finished and kept.
        remove(created.iter().map(PathBuf::as_path));
        engine_failure(err, &run.info.plugin_path)
    })?;
    let mut failed = Failed::default();
    if let Some((path, err)) = lines.finish() {
        failed.note("plugin-output file=", &path, Some(err), true);
    }
    let code = finish(&run.settings, run.info, sinks, end_files, ended, summarizer.as_ref(), &mut failed);
    // A results file that could not be written whole is not pushed: it stays where it is, named.
    let pushed = match results_file(&run.settings) {
        Some(path) if failed.has("results", &path) => Ok(()),
        _ => push_results(&run.settings, &mut run.resolver),
    };
    if let (Some(scrape), Some(limit)) = (scrape, run.settings.options.metrics_linger) {
        metrics_api::linger(&run.tokio, &scrape, limit.0, &run.interrupt);
    }
    let code = code?;
    pushed?;
    // An output lost says so in the exit code, whatever else the run did: it may be the file
    // that says the rest.
    failed.check()?;
    Ok(code)
}

impl<'a> Run<'a> {
    /// Settings, grants, the plugins, the endpoints and the output files, in that order; the
    /// endpoints and the files are handed on to the outputs and the load.
    fn prepare(args: &'a RunArgs) -> Result<(Self, Endpoints, OutputFiles), Failure> {
        // A registry reference first: a bundle brings options of its own.
        let mut resolver = Resolver::new(&args.registry).max_plugin_size(args.options.max_plugin_size.map(|s| s.0));
        let mut main = match &args.plugin {
            Some(path) => {
                let named = args.named.clone().unwrap_or_else(|| path.display().to_string());
                Some((named, resolver.resolve(path)?))
            }
            None => None,
        };
        let bundle = main.as_mut().and_then(|(_, r)| r.bundle.as_mut()).map(|b| std::mem::take(&mut b.options));
        let settings = settings(args, bundle)?;
        // Grants first: a bad --allow-host or --ca-cert is a usage error, reported before the plugin
        // is even loaded.
        let (tokio, grants) = runtime_and_grants(&settings)?;
        let plugins = RunPlugins::load(main, &settings, &mut resolver, args.options_computed)?;
        let info = run_info(&settings, &plugins);
        let endpoints = Endpoints::bind(&settings, &grants)?;
        let files = OutputFiles::create(&settings)?;
        let interrupt = Arc::new(Interrupt::new());
        Ok((Self { settings, resolver, tokio, grants, plugins, info, interrupt }, endpoints, files))
    }

    /// What the run loaded and will do, said before any load.
    fn log_start(&self, files: &OutputFiles) {
        for loaded in &self.plugins.loaded {
            log_loaded(&loaded.named, &loaded.plugin);
        }
        log_seed(&self.settings.options);
        if let (Some(repository), Some((path, _))) =
            (loadhost_config::distributed::results_repository(&self.settings.options), &files.results)
        {
            // Said now: a run that is killed leaves its completed intervals there, never pushed.
            tracing::info!("results go to {} as the run goes, pushed to oci://{repository} at its end", path.display());
        }
    }

    /// The plugins' worker factories, their lines going to `lines` when anything reads them.
    fn factories(&self, lines: &Arc<PluginOutput>) -> ScenarioPlugins<WasmWorkerFactory> {
        let output = lines.is_used().then(|| {
            let debug = self.settings.options.http_debug.map(|level| match level {
                HttpDebugArg::Headers => HttpDebug::Headers,
                HttpDebugArg::Full => HttpDebug::Full,
            });
            (lines.clone() as Arc<dyn LineSink>, debug)
        });
        self.plugins.factories(&self.grants, &self.info.config.to_string(), output)
    }

    /// The control API served on `listener` (`--control`), and its handle for the load.
    fn serve_control(&self, listener: Option<std::net::TcpListener>) -> Option<Arc<Control>> {
        listener.map(|listener| {
            let control = Arc::new(control_api::handle(&self.settings));
            let token = self.settings.options.control_token.clone();
            self.tokio.spawn(control_api::serve(listener, control.clone(), token));
            control
        })
    }
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

/// The options (flags over the `-c` file over a pulled bundle's TOML) resolved into a plan (checked
/// against the machine's capacity for instances as the plugins load: an async plugin's workers
/// share instances).
fn settings(args: &RunArgs, bundle: Option<RunOptions>) -> Result<RunSettings, Failure> {
    let file_options = match &args.config {
        Some(path) => loadhost_config::file::load(path).map_err(Failure::usage)?,
        None => RunOptions::default(),
    };
    let options = args.options.clone().or(file_options).or(bundle.unwrap_or_default());
    loadhost_config::resolve(options).map_err(Failure::usage)
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

/// Whether the plugin came from the compile cache, and how long it took to load.
fn log_loaded(named: &str, plugin: &Plugin) {
    let how = match plugin.cache() {
        CacheOutcome::Hit => "from the compile cache",
        CacheOutcome::Miss => "compiled",
        CacheOutcome::Disabled => "compiled (cache off)",
    };
    tracing::info!("plugin {named} {how} in {:.1?}", plugin.load_time());
}
