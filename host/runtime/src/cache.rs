//! Compiled plugins cached on disk, so the second run of the same plugin starts without compiling
//! (an interpreter guest such as Python takes about 10 s to compile).
//!
//! An entry is named by the plugin's sha256, the wasmtime version and a hash of the engine
//! settings that affect compiled code, so a changed plugin, a new loadhost or a different engine
//! configuration can never load a stale artifact.
//!
//! A cached artifact is native code the host will run, so the folder is trusted only when it is
//! the user's own and no one else may write to it (it is created 0700), and each artifact's sha256
//! is recorded when it is written (`NAME.cwasm.sha256`) and checked before it is loaded: anything
//! else is compiled afresh, and the line saying why names the folder or the file.

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
    /// A cache in `dir` (its `compiled/` subfolder); `None` disables caching, and so does a folder
    /// that is not safe to load code from (said once, on stderr).
    pub fn new(dir: Option<PathBuf>) -> Self {
        let dir = dir.and_then(|base| match prepare(&base) {
            Ok(compiled) => Some(compiled),
            Err(why) => {
                tracing::warn!("not using the compile cache {}: {why}; compiling instead", base.display());
                None
            }
        });
        Self { dir }
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
            match verified(&entry) {
                // SAFETY: the bytes are an artifact this cache wrote, unchanged since (its sha256
                // matches the one recorded at write), precompiled by this wasmtime version with
                // the same engine settings (both are in its name), in a folder only the user may
                // write to. wasmtime still checks the header and refuses an incompatible artifact.
                Ok(bytes) => match unsafe { Component::deserialize(engine, &bytes) } {
                    Ok(component) => return Ok((component, CacheOutcome::Hit, began.elapsed())),
                    Err(err) => tracing::debug!("ignoring unusable cache entry {}: {err}", entry.display()),
                },
                // An artifact from before digests were recorded is simply replaced; a changed one is
                // news.
                Err(Unverified::NoDigest) => tracing::debug!("{}: no sha256 recorded; recompiling", entry.display()),
                Err(Unverified::Other(why)) => tracing::warn!("{}: {why}; recompiling", entry.display()),
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

/// Where an artifact's sha256 is recorded.
fn digest_path(entry: &Path) -> PathBuf {
    let mut name = entry.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a cached artifact is not loaded.
enum Unverified {
    /// No digest beside it (written by an older loadhost).
    NoDigest,
    /// Unreadable, or changed since it was written.
    Other(String),
}

/// The artifact's bytes, when they still have the sha256 recorded when it was written.
fn verified(entry: &Path) -> Result<Vec<u8>, Unverified> {
    let recorded = std::fs::read_to_string(digest_path(entry)).map_err(|_| Unverified::NoDigest)?;
    let bytes = std::fs::read(entry).map_err(|err| Unverified::Other(format!("cannot read it: {err}")))?;
    if sha256_hex(&bytes) != recorded.trim() {
        return Err(Unverified::Other(
            "it does not match the sha256 recorded when it was written (changed since)".into(),
        ));
    }
    Ok(bytes)
}

/// Write atomically, the digest first: a concurrent run must never load a half-written artifact,
/// and an artifact without its digest is never loaded.
fn store(entry: &Path, compiled: &[u8]) -> std::io::Result<()> {
    let dir = entry.parent().unwrap_or(Path::new("."));
    let write = |path: &Path, bytes: &[u8]| -> std::io::Result<()> {
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(bytes)?;
        tmp.persist(path).map_err(|err| err.error)?;
        Ok(())
    };
    write(&digest_path(entry), sha256_hex(compiled).as_bytes())?;
    write(entry, compiled)
}

/// Make `base/compiled` (0700 when created) and check it can be trusted with native code: the
/// user's own, and writable by no one else, like its parent.
fn prepare(base: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
    let compiled = base.join("compiled");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&compiled)
        .map_err(|err| format!("cannot create {}: {err}", compiled.display()))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    for dir in [base, compiled.as_path()] {
        let meta = std::fs::metadata(dir).map_err(|err| format!("{}: {err}", dir.display()))?;
        if meta.uid() != me {
            return Err(format!("{} belongs to another user (uid {})", dir.display(), meta.uid()));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(format!("{} is writable by other users (mode {:o})", dir.display(), meta.mode() & 0o777));
        }
    }
    Ok(compiled)
}

/// The wasmtime version this binary embeds, for people reading the cache folder. Keep it in step
/// with the workspace pin; the settings hash in each name covers wasmtime's own version too, so a
/// stale value here can only cause a miss, never load a wrong artifact.
pub const WASMTIME_VERSION: &str = "48.0.8";
