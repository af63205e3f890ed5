//! Compiled plugins cached on disk, so the second run of the same plugin starts without compiling
//! (an interpreter guest such as Python takes about 10 s to compile).
//!
//! An entry is named by the plugin's sha256, the wasmtime version and a hash of the engine
//! settings that affect compiled code, so a changed plugin, a new loadhost or a different engine
//! configuration can never load a stale artifact.

use std::hash::{DefaultHasher, Hash as _, Hasher as _};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use wasmtime::Engine;
use wasmtime::component::Component;

/// Whether a load used the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// The compiled artifact was on disk.
    Hit,
    /// The plugin was compiled (and the artifact stored when possible).
    Miss,
    /// The cache is turned off.
    Disabled,
}

/// The on-disk cache of compiled plugins.
#[derive(Debug)]
pub struct CompileCache {
    dir: Option<PathBuf>,
}

/// `$LOADHOST_CACHE_DIR`, else `$XDG_CACHE_HOME/loadhost`, else `~/.cache/loadhost`.
pub fn default_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("LOADHOST_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("loadhost"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache").join("loadhost"))
}

impl CompileCache {
    /// A cache in `dir` (its `compiled/` subfolder); `None` disables caching.
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self { dir: dir.map(|d| d.join("compiled")) }
    }

    /// The cache folder, when enabled.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    fn entry(&self, engine: &Engine, sha256: &str) -> Option<PathBuf> {
        let mut settings = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut settings);
        let name = format!("{sha256}-wasmtime{}-{:016x}.cwasm", WASMTIME_VERSION, settings.finish());
        self.dir.as_ref().map(|d| d.join(name))
    }

    /// The compiled component for `bytes`, from the cache or freshly compiled, and how long the
    /// load took.
    pub fn load(
        &self,
        engine: &Engine,
        sha256: &str,
        bytes: &[u8],
    ) -> wasmtime::Result<(Component, CacheOutcome, Duration)> {
        let began = Instant::now();
        let Some(entry) = self.entry(engine, sha256) else {
            let component = Component::new(engine, bytes)?;
            return Ok((component, CacheOutcome::Disabled, began.elapsed()));
        };
        if entry.exists() {
            // SAFETY: the file is one this cache wrote: precompiled by this wasmtime version with
            // the same engine settings (both are in its name), in the user's own cache folder.
            // wasmtime still checks the header and refuses an incompatible artifact.
            match unsafe { Component::deserialize_file(engine, &entry) } {
                Ok(component) => return Ok((component, CacheOutcome::Hit, began.elapsed())),
                Err(err) => tracing::debug!("ignoring unusable cache entry {}: {err}", entry.display()),
            }
        }
        let compiled = engine.precompile_component(bytes)?;
        if let Err(err) = store(&entry, &compiled) {
            tracing::warn!("could not write the compile cache {}: {err}", entry.display());
        }
        // SAFETY: `compiled` was produced just now by `precompile_component` on this engine.
        let component = unsafe { Component::deserialize(engine, &compiled)? };
        Ok((component, CacheOutcome::Miss, began.elapsed()))
    }
}

/// Write atomically: a concurrent run must never map a half-written artifact.
fn store(entry: &Path, compiled: &[u8]) -> std::io::Result<()> {
    let dir = entry.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(compiled)?;
    tmp.persist(entry).map_err(|err| err.error)?;
    Ok(())
}

/// The wasmtime version this binary embeds, for people reading the cache folder. Keep it in step
/// with the workspace pin; the settings hash in each name covers wasmtime's own version too, so a
/// stale value here can only cause a miss, never load a wrong artifact.
pub const WASMTIME_VERSION: &str = "48.0.8";
