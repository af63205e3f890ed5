//! Loading a plugin, and rejecting one that cannot run with a reason that names what is wrong.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use loadhost_component::script::{Language, Script, ScriptError};
use sha2::{Digest as _, Sha256};
use thiserror::Error;
use wasmtime::component::{Component, ComponentExportIndex, Linker};

use crate::bindings::WorkloadPre;
use crate::cache::CacheOutcome;
use crate::ctx::DoerCtx;
use crate::wasmtime_engine::Runtime;

/// The export every plugin must have…
pub const DOER_EXPORT: &str = "loadhost:plugin/doer@0.1.0";

/// …or, for a plugin whose tasks are async functions (many in flight in one instance), this one.
pub const DOER_ASYNC_EXPORT: &str = "loadhost:plugin/doer-async@0.1.0";

/// Which `doer` a plugin exports, ready to instantiate.
#[derive(Clone)]
pub(crate) enum Exports {
    /// `doer`: one instance per worker.
    Doer(WorkloadPre<DoerCtx>),
    /// `doer-async`: many workers per instance (see `shared`).
    DoerAsync(crate::bindings_async::WorkloadAsyncPre<DoerCtx>),
}

/// The optional lifecycle export.
pub const LIFECYCLE_EXPORT: &str = "loadhost:plugin/lifecycle@0.1.0";

/// The optional end-of-run summary export (k6's `handleSummary`).
pub const SUMMARY_EXPORT: &str = "loadhost:plugin/summary@0.1.0";

/// The optional export of the plan a script computes (k6's computed `options`).
pub const PLAN_EXPORT: &str = "loadhost:plugin/plan@0.1.0";

/// Where the lifecycle functions are, when the plugin exports them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LifecycleExports {
    pub(crate) setup: ComponentExportIndex,
    pub(crate) init: ComponentExportIndex,
    pub(crate) teardown: ComponentExportIndex,
    /// `summary.handle-summary`, when the plugin exports it too.
    pub(crate) handle_summary: Option<ComponentExportIndex>,
    /// `plan.options`, when the plugin exports it too (the script runners do).
    pub(crate) plan_options: Option<ComponentExportIndex>,
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
    /// A script that cannot be taken (its folder, a malformed script section).
    #[error("{path}: {error}")]
    Script {
        /// The script or component.
        path: PathBuf,
        /// Why.
        error: ScriptError,
    },
    /// This binary has no runner for the script's language.
    #[error("{path}: {error}")]
    NoRunner {
        /// The script.
        path: PathBuf,
        /// Which runner is missing, and how to build it.
        error: crate::runners::NoRunner,
    },
}

impl PluginError {
    /// Whether the cause is the user's input (a missing file) rather than the plugin itself.
    pub fn is_usage_error(&self) -> bool {
        matches!(self, PluginError::Read { .. } | PluginError::NoRunner { .. })
            || matches!(
                self,
                PluginError::Script {
                    error: ScriptError::Read { .. } | ScriptError::NotScript(_) | ScriptError::TooMuch { .. },
                    ..
                }
            )
    }
}

/// A script's files, written to a private folder that its runner is granted read-only at
/// [`crate::runners::SCRIPT_DIR`]: exactly what a built script component carries, and nothing
/// else of the folder (no `.git`, no caches). Removed with the last plugin that uses it.
pub(crate) struct ScriptDir {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) script: Script,
}

/// A compiled, checked plugin, ready to instantiate.
#[derive(Clone)]
pub struct Plugin {
    pub(crate) runtime: Runtime,
    pub(crate) exports: Exports,
    pub(crate) lifecycle: Option<LifecycleExports>,
    path: PathBuf,
    sha256: String,
    size: u64,
    cache: CacheOutcome,
    load_time: Duration,
    /// For a script (or a script component): its files, granted to the runner.
    pub(crate) script: Option<Arc<ScriptDir>>,
}

/// wasmtime errors chain context; a user needs the whole chain on one line.
pub(crate) fn one_line(err: &wasmtime::Error) -> String {
    let text = format!("{err:#}");
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}

impl Plugin {
    pub(crate) fn load(runtime: &Runtime, path: &Path, source: &str) -> Result<Self, PluginError> {
        if Language::of(path).is_some() {
            return Self::load_script(runtime, path);
        }
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
        let script = |error| PluginError::Script { path: path.clone(), error };
        if let Some((runner, files)) = loadhost_component::script::split(&file).map_err(script)? {
            let identity = Identity { path: path.clone(), sha256, size };
            return Self::from_script(runtime, runner, files, identity);
        }
        let bytes = if loadhost_component::is_core_module(&file) {
            let component = loadhost_component::wrap::componentize(&file)
                .map_err(|err| PluginError::CoreModule { path: path.clone(), why: err.to_string() })?;
            tracing::info!("{}: a core module, wrapped into a component in-process", path.display());
            component
        } else {
            file
        };
        Self::compile(runtime, &bytes, source, Identity { path, sha256, size })
    }

    /// `loadhost run journey.py`: the script's folder, run by this binary's runner for its
    /// language. Its digest is that of the component `loadhost build` would make of it.
    fn load_script(runtime: &Runtime, path: &Path) -> Result<Self, PluginError> {
        let built = script_component(path)?;
        let identity = Identity { path: path.to_owned(), sha256: built.sha256, size: built.bytes.len() as u64 };
        Self::from_script(runtime, &built.bytes[..built.runner_bytes], built.script, identity)
    }

    /// A runner and a script: the runner compiled (or taken from the cache: every script of a
    /// language shares it), the script's files written where the runner is granted them.
    fn from_script(runtime: &Runtime, runner: &[u8], script: Script, identity: Identity) -> Result<Self, PluginError> {
        let label = format!("loadhost's {} runner", script.language);
        let key = format!("{:x}", Sha256::digest(runner));
        if !runtime.cache.holds(&runtime.engine, &key) {
            tracing::info!(
                "compiling {label}: once per machine and loadhost version (about 20 s on two cores); later runs of any \
                 {} script start at once",
                script.language
            );
        }
        let path = identity.path.clone();
        let written = |error| PluginError::Read { path: path.clone(), error };
        let dir = tempfile::Builder::new().prefix("loadhost-script-").tempdir().map_err(written)?;
        script.write_to(dir.path()).map_err(written)?;
        let mut plugin = Self::compile(runtime, runner, &label, identity)?;
        if plugin.lifecycle.is_none() {
            return Err(PluginError::Incompatible {
                path,
                message: "a script runner must export the lifecycle".into(),
            });
        }
        plugin.script = Some(Arc::new(ScriptDir { dir, script }));
        Ok(plugin)
    }

    /// Compile `bytes` (or take them from the cache, recorded as `source`) and check them.
    fn compile(runtime: &Runtime, bytes: &[u8], source: &str, identity: Identity) -> Result<Self, PluginError> {
        let Identity { path, sha256, size } = identity;
        let cache_key = format!("{:x}", Sha256::digest(bytes));
        let concurrent = loadhost_component::exports_interface(bytes, DOER_ASYNC_EXPORT);
        let internal = |err: anyhow::Error| PluginError::Invalid { path: path.clone(), message: format!("{err:#}") };
        let engine = if concurrent { runtime.concurrent_engine().map_err(internal)? } else { &runtime.engine };
        let (component, cache, load_time) = runtime
            .cache
            .load(engine, &cache_key, bytes, source)
            .map_err(|err| PluginError::Invalid { path: path.clone(), message: one_line(&err) })?;
        let incompatible =
            |err: wasmtime::Error| PluginError::Incompatible { path: path.clone(), message: one_line(&err) };
        let (exports, lifecycle) = if concurrent {
            let instance_pre = linker(engine, true)?.instantiate_pre(&component).map_err(incompatible)?;
            let pre = crate::bindings_async::WorkloadAsyncPre::new(instance_pre).map_err(incompatible)?;
            (Exports::DoerAsync(pre), None)
        } else {
            check_doer_export(engine, &component, &path)?;
            let lifecycle = lifecycle_exports(&component, &path)?;
            let instance_pre = linker(engine, false)?.instantiate_pre(&component).map_err(incompatible)?;
            (Exports::Doer(WorkloadPre::new(instance_pre).map_err(incompatible)?), lifecycle)
        };
        tracing::debug!("loaded {} ({size} bytes, sha256 {sha256}) in {load_time:?}, cache {cache:?}", path.display());
        Ok(Self { runtime: runtime.clone(), exports, lifecycle, path, sha256, size, cache, load_time, script: None })
    }

    /// The script it runs, when it is a script (or a script component).
    pub fn script(&self) -> Option<&Script> {
        self.script.as_ref().map(|s| &s.script)
    }

    /// Whether its tasks are async functions (`doer-async`), many in flight in one instance.
    pub fn is_async(&self) -> bool {
        matches!(self.exports, Exports::DoerAsync(_))
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

/// A script made a standalone component: what `loadhost build` writes, and what `loadhost run`
/// of the script runs (so both show the same digest).
pub struct ScriptComponent {
    /// The component: the runner, whole, then the script's sections.
    pub bytes: Vec<u8>,
    /// How many of `bytes` are the runner's.
    pub runner_bytes: usize,
    /// Hex sha256 of `bytes`.
    pub sha256: String,
    /// The script it carries.
    pub script: Script,
}

/// The component of the script whose entry file is `path`, with this binary's runner for its
/// language.
pub fn script_component(path: &Path) -> Result<ScriptComponent, PluginError> {
    let failed = |error| PluginError::Script { path: path.to_owned(), error };
    let script = loadhost_component::script::collect(path).map_err(failed)?;
    let runner = crate::runners::Runner::of(script.language)
        .map_err(|error| PluginError::NoRunner { path: path.to_owned(), error })?;
    let runner = runner.bytes().map_err(|error| PluginError::Read { path: path.to_owned(), error })?;
    let runner_bytes = runner.len();
    let bytes = loadhost_component::script::bundle(&runner, &script).map_err(failed)?;
    let sha256 = format!("{:x}", Sha256::digest(&bytes));
    Ok(ScriptComponent { bytes, runner_bytes, sha256, script })
}

/// How the outputs know a plugin: its file, digest and size.
struct Identity {
    path: PathBuf,
    sha256: String,
    size: u64,
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
    let handle_summary = component
        .get_export_index(None, SUMMARY_EXPORT)
        .and_then(|summary| component.get_export_index(Some(&summary), "handle-summary"));
    let plan_options = component
        .get_export_index(None, PLAN_EXPORT)
        .and_then(|plan| component.get_export_index(Some(&plan), "options"));
    Ok(Some(LifecycleExports {
        setup: find("setup")?,
        init: find("init")?,
        teardown: find("teardown")?,
        handle_summary,
        plan_options,
    }))
}

/// Everything a plugin may import: all of WASI 0.2 (granting nothing by default), wasi:http
/// (denied unless allowed) and loadhost's interfaces; with `concurrent`, those of the
/// `workload-async` world.
fn linker(engine: &wasmtime::Engine, concurrent: bool) -> Result<Linker<DoerCtx>, PluginError> {
    let internal =
        |err: wasmtime::Error| PluginError::Invalid { path: PathBuf::from("<host>"), message: one_line(&err) };
    let mut linker = Linker::new(engine);
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
    if concurrent {
        crate::bindings_async::WorkloadAsync::add_to_linker::<_, wasmtime::component::HasSelf<DoerCtx>>(
            &mut linker,
            |ctx| ctx,
        )
        .map_err(internal)?;
    } else {
        crate::bindings::Workload::add_to_linker::<_, wasmtime::component::HasSelf<DoerCtx>>(&mut linker, |ctx| ctx)
            .map_err(internal)?;
    }
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
