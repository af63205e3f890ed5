//! Loading a plugin, and rejecting one that cannot run with a reason that names what is wrong.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest as _, Sha256};
use thiserror::Error;
use wasmtime::component::{Component, ComponentExportIndex, Linker};

use crate::bindings::WorkloadPre;
use crate::cache::CacheOutcome;
use crate::ctx::DoerCtx;
use crate::wasmtime_engine::Runtime;

/// The export every plugin must have.
pub const DOER_EXPORT: &str = "loadhost:plugin/doer@0.1.0";

/// The optional lifecycle export.
pub const LIFECYCLE_EXPORT: &str = "loadhost:plugin/lifecycle@0.1.0";

/// Where the lifecycle functions are, when the plugin exports them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LifecycleExports {
    pub(crate) setup: ComponentExportIndex,
    pub(crate) init: ComponentExportIndex,
    pub(crate) teardown: ComponentExportIndex,
}

/// Why a plugin was not accepted. Each variant's message is one line naming the file.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PluginError {
    /// The file could not be read.
    #[error("{path}: cannot read the plugin: {error}")]
    Read {
        /// The plugin path.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// Not WebAssembly at all.
    #[error("{path}: not a WebAssembly file (it does not start with the \\0asm magic bytes)")]
    NotWasm {
        /// The plugin path.
        path: PathBuf,
    },
    /// A core module that cannot be wrapped into a plugin component.
    #[error(
        "{path}: a core WebAssembly module that cannot be wrapped into a plugin: {why} (it must export {DOER_EXPORT}#do-task by its canonical name; or build a component for wasm32-wasip2)"
    )]
    CoreModule {
        /// The plugin path.
        path: PathBuf,
        /// Why wrapping failed.
        why: String,
    },
    /// The component is malformed or uses features the host does not enable.
    #[error("{path}: not a valid component: {message}")]
    Invalid {
        /// The plugin path.
        path: PathBuf,
        /// What wasmtime said.
        message: String,
    },
    /// The required export is missing.
    #[error("{path}: does not export {DOER_EXPORT} (its exports: {exports})")]
    MissingDoer {
        /// The plugin path.
        path: PathBuf,
        /// The exports it has, comma-separated.
        exports: String,
    },
    /// It imports something the host does not provide, or its `doer` has the wrong shape.
    #[error("{path}: {message}")]
    Incompatible {
        /// The plugin path.
        path: PathBuf,
        /// What does not match.
        message: String,
    },
}

impl PluginError {
    /// Whether the cause is the user's input (a missing file) rather than the plugin itself.
    pub fn is_usage_error(&self) -> bool {
        matches!(self, PluginError::Read { .. })
    }
}

/// A compiled, checked plugin, ready to instantiate.
#[derive(Clone)]
pub struct Plugin {
    pub(crate) runtime: Runtime,
    pub(crate) pre: WorkloadPre<DoerCtx>,
    pub(crate) lifecycle: Option<LifecycleExports>,
    path: PathBuf,
    sha256: String,
    size: u64,
    cache: CacheOutcome,
    load_time: Duration,
}

/// wasmtime errors chain context; a user needs the whole chain on one line.
pub(crate) fn one_line(err: &wasmtime::Error) -> String {
    let text = format!("{err:#}");
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}

impl Plugin {
    pub(crate) fn load(runtime: &Runtime, path: &Path, source: &str) -> Result<Self, PluginError> {
        // A regular file within the cap: `run /dev/zero`, or a 500 MB file that starts like wasm,
        // is refused before it is read.
        let file = loadhost_input::read(path, runtime.plugin_cap)
            .map_err(|error| PluginError::Read { path: path.to_owned(), error })?;
        let path = path.to_owned();
        if file.get(..4) != Some(b"\0asm") {
            return Err(PluginError::NotWasm { path });
        }
        // The file's digest names the plugin in outputs; the cache is keyed by what is compiled.
        let sha256 = format!("{:x}", Sha256::digest(&file));
        let size = file.len() as u64;
        let bytes = if loadhost_component::is_core_module(&file) {
            let component = loadhost_component::wrap::componentize(&file)
                .map_err(|err| PluginError::CoreModule { path: path.clone(), why: err.to_string() })?;
            tracing::info!("{}: a core module, wrapped into a component in-process", path.display());
            component
        } else {
            file
        };
        let cache_key = format!("{:x}", Sha256::digest(&bytes));
        let (component, cache, load_time) = runtime
            .cache
            .load(&runtime.engine, &cache_key, &bytes, source)
            .map_err(|err| PluginError::Invalid { path: path.clone(), message: one_line(&err) })?;
        check_doer_export(&runtime.engine, &component, &path)?;
        let lifecycle = lifecycle_exports(&component, &path)?;
        let linker = linker(runtime)?;
        let incompatible =
            |err: wasmtime::Error| PluginError::Incompatible { path: path.clone(), message: one_line(&err) };
        let instance_pre = linker.instantiate_pre(&component).map_err(incompatible)?;
        let pre = WorkloadPre::new(instance_pre).map_err(incompatible)?;
        tracing::debug!(
            "loaded {} ({} bytes, sha256 {sha256}) in {load_time:?}, cache {cache:?}",
            path.display(),
            bytes.len()
        );
        Ok(Self { runtime: runtime.clone(), pre, lifecycle, path, sha256, size, cache, load_time })
    }

    /// Whether the plugin exports `loadhost:plugin/lifecycle`.
    pub fn has_lifecycle(&self) -> bool {
        self.lifecycle.is_some()
    }

    /// The file it came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Hex sha256 of the file.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Size of the file in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether the compiled form came from the cache.
    pub fn cache(&self) -> CacheOutcome {
        self.cache
    }

    /// How long compiling (or loading from the cache) took.
    pub fn load_time(&self) -> Duration {
        self.load_time
    }
}

fn check_doer_export(engine: &wasmtime::Engine, component: &Component, path: &Path) -> Result<(), PluginError> {
    if component.get_export_index(None, DOER_EXPORT).is_some() {
        return Ok(());
    }
    let exports: Vec<String> = component.component_type().exports(engine).map(|(name, _)| name.to_owned()).collect();
    let exports = if exports.is_empty() { "none".to_owned() } else { exports.join(", ") };
    Err(PluginError::MissingDoer { path: path.to_owned(), exports })
}

fn lifecycle_exports(component: &Component, path: &Path) -> Result<Option<LifecycleExports>, PluginError> {
    let Some(interface) = component.get_export_index(None, LIFECYCLE_EXPORT) else { return Ok(None) };
    let find = |name: &str| {
        component.get_export_index(Some(&interface), name).ok_or_else(|| PluginError::Incompatible {
            path: path.to_owned(),
            message: format!("its {LIFECYCLE_EXPORT} export has no `{name}` function"),
        })
    };
    Ok(Some(LifecycleExports { setup: find("setup")?, init: find("init")?, teardown: find("teardown")? }))
}

/// Everything a plugin may import: all of WASI 0.2 (granting nothing by default), wasi:http
/// (denied unless allowed) and loadhost's metrics.
fn linker(runtime: &Runtime) -> Result<Linker<DoerCtx>, PluginError> {
    let internal =
        |err: wasmtime::Error| PluginError::Invalid { path: PathBuf::from("<host>"), message: one_line(&err) };
    let mut linker = Linker::new(&runtime.engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(internal)?;
    // Name lookups go through the allow-list: wasi's own implementation, behind a filter.
    linker.allow_shadowing(true);
    wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::add_to_linker::<_, crate::name_lookup::NameLookup>(
        &mut linker,
        DoerCtx::name_lookup,
    )
    .map_err(internal)?;
    linker.allow_shadowing(false);
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).map_err(internal)?;
    crate::bindings::Workload::add_to_linker::<_, wasmtime::component::HasSelf<DoerCtx>>(&mut linker, |ctx| ctx)
        .map_err(internal)?;
    Ok(linker)
}

// Loading is the runtime's entry point, defined here beside what it makes, so the runtime's module
// does not depend on this one.
impl Runtime {
    /// Load, compile (or take from the cache) and check a plugin.
    pub fn load(&self, path: &std::path::Path) -> Result<Plugin, PluginError> {
        Plugin::load(self, path, &path.display().to_string())
    }

    /// Load the plugin file at `path`, known to the user as `source` (a registry reference for a
    /// pulled plugin), which the compile cache records for `cache ls`.
    pub fn load_as(&self, path: &std::path::Path, source: &str) -> Result<Plugin, PluginError> {
        Plugin::load(self, path, source)
    }
}
