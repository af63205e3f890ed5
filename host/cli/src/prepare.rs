//! What `run` and `find-max` set up before any load: the async runtime, what the user grants the
//! plugin (environment, directories, hosts), and the plugin itself, compiled or from the cache.

use std::path::Path;

use anyhow::Context as _;
use loadhost_config::RunSettings;
use loadhost_runtime::http::allow::AllowRule;
use loadhost_runtime::http::tls::TlsOptions;
use loadhost_runtime::{Grants, HttpClient, HttpOptions, Plugin, Runtime, RuntimeOptions, cache};

use crate::exit::Failure;

/// Make the runtime for the run's instances and limits, and load (compile or take from the cache)
/// the plugin.
pub(crate) fn load_plugin(path: &Path, settings: &RunSettings) -> Result<Plugin, Failure> {
    let options = RuntimeOptions {
        max_instances: settings.max_instances,
        cache_dir: cache::default_dir(),
        max_memory: settings.max_memory(),
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
    let dirs = options.dir.iter().map(|d| (d.host.clone(), d.guest.clone())).collect();
    Ok(Grants { env: settings.env.clone(), dirs, http })
}
