//! What `run` and `find-max` set up before any load: the async runtime, what the user grants the
//! plugin (environment, directories, hosts), and the plugin itself, compiled or from the cache,
//! with the thresholds checked against the metrics it declares and the environment against the
//! options it declares.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use loadhost_component::declared::declared_metrics;
use loadhost_component::options::{self, DeclaredOption};
use loadhost_config::criteria::MetricDecl;
use loadhost_config::{RunSettings, check_plugin_metrics};
use loadhost_engine::Plan;
use loadhost_runtime::http::allow::AllowRule;
use loadhost_runtime::http::proxy::ProxyOptions;
use loadhost_runtime::http::tls::{ClientCert, TlsOptions};
use loadhost_runtime::plugin_text::PluginText;
use loadhost_runtime::{Grants, HttpClient, HttpOptions, Plugin, Runtime, RuntimeOptions, cache, check_capacity};

use crate::exit::Failure;

/// Make the runtime for the run's instances and limits, and load (compile or take from the cache)
/// the plugin. The thresholds are checked with the metrics the plugin declares first: a misspelt
/// metric is told before a compile that may take many seconds.
pub(crate) fn load_plugin(path: &Path, source: &str, settings: &RunSettings) -> Result<Plugin, Failure> {
    let mut plugins = load_plugins(&[(path, source)], settings, None)?;
    plugins.pop().ok_or_else(|| Failure::runtime(anyhow::anyhow!("{source}: not loaded")))
}

/// [`load_plugin`] for every plugin of the run (`(file, as named)`), from one runtime: the
/// thresholds are checked with the metrics any of them declares. `options_computed`: the file
/// whose k6 options `run` computed and applied already.
pub(crate) fn load_plugins(
    files: &[(&Path, &str)],
    settings: &RunSettings,
    options_computed: Option<&Path>,
) -> Result<Vec<Plugin>, Failure> {
    // Every file named goes through the input gate before anything reads it: the readers below
    // (declarations, options, the async check) each ignore a file they cannot read, and one of
    // them once read `/dev/zero` without end.
    for (path, _) in files {
        gate(path, settings.plugin_cap())?;
        if let Some(said) = crate::k6_options::unloadable_import(path).or_else(|| crate::locustfile::unloadable(path)) {
            return Err(Failure::usage(anyhow::anyhow!("{said}")));
        }
        if options_computed != Some(*path) {
            unread_k6_options(path)?;
            if let Some((at, class)) = crate::locustfile::shape(path) {
                refuse_under_ci(format!(
                    "{at}: the locustfile's {class} does not shape this load (`loadhost run` plans it): the flags give it"
                ))?;
            }
        }
    }
    let mut declared = Vec::new();
    let mut all_read = true;
    for (path, _) in files {
        match plugin_metrics(path, settings.plugin_cap())? {
            Some(metrics) => declared.extend(metrics),
            None => all_read = false,
        }
    }
    if all_read {
        check_plugin_metrics(settings, &declared).map_err(Failure::usage)?;
    }
    check_plugin_options(files, settings)?;
    let runtime = runtime(settings, pooled_instances(files, settings)?)?;
    let mut plugins = Vec::with_capacity(files.len());
    for (path, source) in files {
        plugins.push(load_as(&runtime, path, source)?);
    }
    if !all_read {
        check_plugin_metrics(settings, &declared).map_err(Failure::usage)?;
    }
    Ok(plugins)
}

/// The runtime for `settings`' plugins, holding at most `max_instances` instances, with the
/// compile cache.
pub(crate) fn runtime(settings: &RunSettings, max_instances: u32) -> Result<Runtime, Failure> {
    let options = RuntimeOptions {
        max_instances,
        cache_dir: cache::default_dir(),
        cache_max: settings.cache_max(),
        max_memory: settings.max_memory(),
        plugin_cap: settings.plugin_cap(),
    };
    Runtime::new(options).map_err(Failure::runtime)
}

/// The plugin at `path` (named `source`) loaded on `runtime`: a file it cannot take is a usage
/// error, a component it refuses a rejected plugin.
pub(crate) fn load_as(runtime: &Runtime, path: &Path, source: &str) -> Result<Plugin, Failure> {
    runtime
        .load_as(path, source)
        .map_err(|err| if err.is_usage_error() { Failure::usage(err) } else { Failure::plugin(err) })
}

/// `path` is a file loadhost may read as a plugin: a regular file (a script's folder is checked
/// when it is collected) no larger than `cap`. Refused in one line, exit 2, before it is read.
fn gate(path: &Path, cap: loadhost_input::Cap) -> Result<(), Failure> {
    let checked = if loadhost_component::script::Language::of(path).is_some() {
        loadhost_input::open(path).map(drop)
    } else {
        loadhost_input::reader(path, cap).map(drop)
    };
    checked.map_err(|err| Failure::usage(anyhow::anyhow!("{}: cannot read the plugin: {err}", path.display())))
}

/// A script that sets k6's `options` is told that loadhost does not read them (its load,
/// thresholds and scenarios would silently not apply: one iteration, no thresholds, exit 0); under
/// CI (`CI` set, as CI services set it) that is refused, exit 2, so a gate cannot pass by mistake.
fn unread_k6_options(path: &Path) -> Result<(), Failure> {
    use crate::k6_options::{NotRead, apply};
    let what = match apply(path, &mut loadhost_config::RunOptions::default()) {
        // Read as flags by `run` (commands/run.rs); what it did not read is said here.
        Ok(Some(applied)) => return report_unread_k6_options(&applied),
        Err(NotRead::NotLiteral { at, why }) => format!(
            "{at}: sets k6's `options`, which loadhost reads only as a literal object or from the -e values ({why}): \
             its vus, duration, stages and thresholds do not apply; give them as flags (-r/-d or -n, -w, --threshold)"
        ),
        Err(NotRead::Invalid { .. }) | Ok(None) => {
            let Some(at) = loadhost_component::script::k6_options(path) else { return Ok(()) };
            format!(
                "{at}: sets k6's `options`, which loadhost does not read: its vus, duration, stages, scenarios and \
                 thresholds do not apply; give them as flags (-r/-d or -n, -w, --threshold)"
            )
        }
    };
    refuse_under_ci(what)
}

/// The keys of a script's k6 `options` that loadhost does not read, warned about; when they are
/// its `scenarios` (which `run` reads but another command does not), the load they describe does
/// not apply, which CI refuses.
pub(crate) fn report_unread_k6_options(applied: &crate::k6_options::Applied) -> Result<(), Failure> {
    if applied.unread.is_empty() {
        return Ok(());
    }
    let what = format!(
        "{}: k6's options {} are not read by loadhost (docs/migrating.md lists the ones it reads)",
        applied.at,
        applied.unread.join(", ")
    );
    if !applied.unread.iter().any(|k| k == "scenarios") {
        tracing::warn!("{what}");
        return Ok(());
    }
    refuse_under_ci(format!(
        "{what}: the load its scenarios describe does not apply; give it as flags (-r/-d or -n, -w)"
    ))
}

/// `what` (options that do not apply) warned about, or refused under CI, exit 2.
fn refuse_under_ci(what: String) -> Result<(), Failure> {
    if under_ci() {
        return Err(Failure::usage(anyhow::anyhow!(
            "{what} (refused because CI is set: a CI gate must not pass on options that were never applied)"
        )));
    }
    tracing::warn!("{what}");
    Ok(())
}

/// Whether this runs under CI: the `CI` variable most CI services set, to anything but false.
fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// How many instances the run's pool must hold: one per worker, checked against the machine's
/// capacity, unless every plugin is async (its workers share instances made on demand, not pooled).
fn pooled_instances(files: &[(&Path, &str)], settings: &RunSettings) -> Result<u32, Failure> {
    let all_async = files.iter().all(|(path, _)| {
        loadhost_input::read(path, settings.plugin_cap()).is_ok_and(|bytes| {
            loadhost_component::exports_interface(&bytes, loadhost_runtime::plugin::DOER_ASYNC_EXPORT)
        })
    });
    if all_async {
        tracing::debug!("every plugin is async: its workers share instances, none is pooled");
        return Ok(1);
    }
    check_capacity(settings.max_workers, settings.max_memory()).map_err(|err| {
        let flag = if settings.plans.iter().any(Plan::is_open) { "--max-workers" } else { "--workers" };
        Failure::usage(anyhow::anyhow!("{flag} {}: {err}", settings.max_workers))
    })?;
    Ok(settings.max_workers)
}

/// The metrics the plugin file declares (its `loadhost:metrics` sections), as `--metric` would
/// declare them. `None` when the file is not readable WebAssembly: loading it says why. A
/// malformed declaration rejects the plugin (exit 3), naming it.
pub(crate) fn plugin_metrics(path: &Path, cap: loadhost_input::Cap) -> Result<Option<Vec<MetricDecl>>, Failure> {
    if loadhost_component::script::Language::of(path).is_some() {
        return script_metrics(path);
    }
    let Ok(bytes) = loadhost_input::read(path, cap) else { return Ok(None) };
    if !bytes.starts_with(b"\0asm") {
        return Ok(None);
    }
    match declared_metrics(&bytes) {
        Ok(all) => Ok(Some(all.into_iter().map(|m| MetricDecl { name: m.name, kind: m.kind }).collect())),
        Err(loadhost_component::declared::DeclaredError::Parse(_)) => Ok(None),
        Err(err) => Err(Failure::plugin(anyhow::anyhow!("{}: {err}", path.display()))),
    }
}

/// The metrics a script declares (its `declare_metrics(…)` literals). `None` when its folder cannot
/// be read: loading it says why.
fn script_metrics(path: &Path) -> Result<Option<Vec<MetricDecl>>, Failure> {
    use loadhost_component::script;
    let Ok(files) = script::collect(path) else { return Ok(None) };
    let rejected = |why: String| Failure::plugin(anyhow::anyhow!("{}: {why}", path.display()));
    let lines = script::declarations(&files).map_err(|err| rejected(err.to_string()))?;
    let all = loadhost_component::declared::parse(&lines.join("\n")).map_err(|err| rejected(err.to_string()))?;
    Ok(Some(all.into_iter().map(|m| MetricDecl { name: m.name, kind: m.kind }).collect()))
}

/// The run's environment checked against the options each plugin declares, before any load (and
/// before a compile that may take many seconds): a required option missing, or a value of the wrong
/// type, is refused (exit 2) naming the option, its type and its help; an `-e` key that no option
/// has is warned about, with the name it most likely meant. A plugin that declares no options gets
/// neither check: it may read anything, as plugins built before declarations do.
fn check_plugin_options(files: &[(&Path, &str)], settings: &RunSettings) -> Result<(), Failure> {
    let mut declared = Vec::with_capacity(files.len());
    let mut refused = Vec::new();
    for (path, named) in files {
        let options = plugin_options(path, settings.plugin_cap())?;
        if let Some(options) = &options {
            let problems: Vec<String> =
                options::check(options, &settings.env).iter().map(ToString::to_string).collect();
            if !problems.is_empty() {
                refused.push(format!("{named}: {}; loadhost inspect {named} lists its options", problems.join("; ")));
            }
        }
        declared.push(options);
    }
    // Every plugin of the run must declare its options for a key to be one that none reads.
    if declared.iter().all(|d| d.as_ref().is_some_and(|d| !d.is_empty())) {
        let declared: Vec<DeclaredOption> = declared.into_iter().flatten().flatten().collect();
        warn_undeclared(&declared, &settings.env, files.len());
    }
    if refused.is_empty() { Ok(()) } else { Err(Failure::usage(anyhow::anyhow!(refused.join("; ")))) }
}

/// A warning for each key of `env` that no option of the run's `plugins` plugins has.
fn warn_undeclared(declared: &[DeclaredOption], env: &[(String, String)], plugins: usize) {
    let none = if plugins == 1 { "the plugin declares no such option" } else { "no plugin of the run declares it" };
    for (key, meant) in options::undeclared(declared, env.iter().map(|(key, _)| key.as_str())) {
        match meant {
            Some(name) => tracing::warn!("-e {key}: {none}: did you mean {name}?"),
            None => {
                tracing::warn!("-e {key}: {none} ({}); it is passed on all the same", option_names(declared));
            }
        }
    }
}

/// `its options: A, B, C`, each name once; past ten, how many (`loadhost inspect` lists them).
fn option_names(declared: &[DeclaredOption]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for option in declared {
        if !names.contains(&option.name.as_str()) {
            names.push(&option.name);
        }
    }
    if names.len() > 10 {
        format!("{} options declared: loadhost inspect lists them", names.len())
    } else {
        format!("its options: {}", names.join(", "))
    }
}

/// The options the plugin file declares (its `loadhost:options` sections, or a script's
/// `declare_options(…)` literals). `None` when the file is not readable WebAssembly or a script
/// whose folder can be read: loading it says why. A malformed declaration rejects the plugin
/// (exit 3), naming it.
pub(crate) fn plugin_options(path: &Path, cap: loadhost_input::Cap) -> Result<Option<Vec<DeclaredOption>>, Failure> {
    use loadhost_component::script;
    let rejected = |why: String| Failure::plugin(anyhow::anyhow!("{}: {why}", path.display()));
    if script::Language::of(path).is_some() {
        let Ok(files) = script::collect(path) else { return Ok(None) };
        let lines = script::option_declarations(&files).map_err(|err| rejected(err.to_string()))?;
        return options::parse(&lines.join("\n")).map(Some).map_err(|err| rejected(err.to_string()));
    }
    let Ok(bytes) = loadhost_input::read(path, cap) else { return Ok(None) };
    if !bytes.starts_with(b"\0asm") {
        return Ok(None);
    }
    match options::declared_options(&bytes) {
        Ok(all) => Ok(Some(all)),
        Err(options::OptionsError::Parse(_)) => Ok(None),
        Err(err) => Err(rejected(err.to_string())),
    }
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
    let client_certs = ClientCert::pair(&options.client_cert, &options.client_key)
        .map_err(|err| Failure::usage(anyhow::anyhow!(err)))?;
    let proxy = proxy_options(options.proxy.as_deref());
    // Every `-e`/`--env-file` value and token, kept out of all the plugin says (issue 26).
    let tokens =
        [&options.control_token, &options.metrics_token, &options.out_token].into_iter().flatten().map(String::as_str);
    let secrets = settings.env.iter().filter(|(k, _)| !crate::commands::http::PUBLIC_ENV.contains(&k.as_str()));
    let text = Arc::new(PluginText::new(secrets.map(|(k, v)| (k.as_str(), v.as_str())), tokens));
    let http = HttpOptions {
        allow,
        tls: TlsOptions { ca_certs: options.ca_cert.clone(), insecure: options.insecure, client_certs },
        h2c: options.h2c,
        max_connections_per_host: options.max_connections_per_host,
        max_response_body: options.max_response_body.map_or(u64::MAX, |s| s.0),
        proxy,
        cookies: !options.no_cookies,
        text: text.clone(),
    };
    let http = HttpClient::new(&http).map_err(Failure::usage)?;
    let dirs = options.dir.iter().map(|d| (d.host.clone(), d.guest.clone())).collect();
    Ok(Grants { env: settings.env.clone(), dirs, http, text })
}

/// The run's proxies: `--proxy`, else loadhost's own `HTTP_PROXY`/`HTTPS_PROXY` (never the plugin's
/// `-e` environment); logged once, credentials redacted, so a run that goes through one says so.
fn proxy_options(flag: Option<&str>) -> ProxyOptions {
    let proxy = ProxyOptions::resolve(flag, |name| std::env::var(name).ok());
    for (scheme, setting) in [("http", &proxy.http), ("https", &proxy.https)] {
        if let Some(setting) = setting {
            let url = loadhost_runtime::http::proxy::redact(&setting.url);
            tracing::info!("{scheme} targets go through the proxy {url} (from {})", setting.from);
        }
    }
    proxy
}
