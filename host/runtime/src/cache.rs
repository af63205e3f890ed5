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
//!
//! The folder stays under a size cap (`--cache-max`): after each write the least recently used
//! entries are deleted until it fits. Each entry also has `NAME.cwasm.meta` (`key=value` lines:
//! what was compiled and when; informational only, never trusted for loading), and its last use is
//! the artifact's mtime, touched on every hit.

use std::hash::{DefaultHasher, Hash as _, Hasher as _};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

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
    /// The most bytes the folder may hold after a write.
    max_bytes: u64,
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
    /// A cache in `dir` (its `compiled/` subfolder) holding at most `max_bytes`; `None` or a cap
    /// of 0 disables caching, and so does a folder that is not safe to load code from (said once,
    /// on stderr).
    pub fn new(dir: Option<PathBuf>, max_bytes: u64) -> Self {
        let dir = dir.filter(|_| max_bytes > 0).and_then(|base| match prepare(&base) {
            Ok(compiled) => Some(compiled),
            Err(why) => {
                tracing::warn!("not using the compile cache {}: {why}; compiling instead", base.display());
                None
            }
        });
        Self { dir, max_bytes }
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

    /// Whether the compiled form of the component with this sha256 is on disk (a load would hit).
    pub fn holds(&self, engine: &Engine, sha256: &str) -> bool {
        self.entry(engine, sha256).is_some_and(|entry| entry.exists())
    }

    /// The compiled component for `bytes`, from the cache or freshly compiled, and how long the
    /// load took. `source` (the plugin path as the user named it, or a registry reference) is
    /// recorded with the entry for `loadhost cache ls`.
    pub fn load(
        &self,
        engine: &Engine,
        sha256: &str,
        bytes: &[u8],
        source: &str,
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
                    Ok(component) => {
                        used(&entry, source);
                        return Ok((component, CacheOutcome::Hit, began.elapsed()));
                    }
                    Err(err) => tracing::debug!("ignoring unusable cache entry {}: {err}", entry.display()),
                },
                // An artifact from before digests were recorded is simply replaced; a changed one is
                // news.
                Err(Unverified::NoDigest) => tracing::debug!("{}: no sha256 recorded; recompiling", entry.display()),
                Err(Unverified::Other(why)) => tracing::warn!("{}: {why}; recompiling", entry.display()),
            }
        }
        let compiled = engine.precompile_component(bytes)?;
        match store(&entry, &compiled, source) {
            Ok(()) => self.evict(&entry),
            Err(err) => tracing::warn!("could not write the compile cache {}: {err}", entry.display()),
        }
        // SAFETY: `compiled` was produced just now by `precompile_component` on this engine.
        let component = unsafe { Component::deserialize(engine, &compiled)? };
        Ok((component, CacheOutcome::Miss, began.elapsed()))
    }

    /// Bring the folder under the cap, least recently used first, never deleting `written` (the
    /// entry this run needs), and say in one line what went.
    fn evict(&self, written: &Path) {
        let Some(dir) = self.dir.as_deref() else { return };
        let limits = Prune { max_bytes: Some(self.max_bytes), older_than: None };
        match prune(dir, &limits, Some(written)) {
            Ok(gone) if !gone.is_empty() => {
                let bytes = gone.iter().map(|e| e.size).sum::<u64>();
                let names: Vec<String> = gone.iter().map(Entry::describe).collect();
                tracing::info!(
                    "compile cache over {} (--cache-max): evicted {} least recently used ({}): {}",
                    human_size(self.max_bytes),
                    gone.len(),
                    human_size(bytes),
                    names.join(", ")
                );
            }
            Ok(_) => {}
            Err(err) => tracing::warn!("could not trim the compile cache: {err}"),
        }
    }
}

/// A cache folder that could not be read or trimmed.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The folder could not be listed.
    #[error("cannot read {}: {source}", dir.display())]
    List {
        /// The folder.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An entry's file could not be deleted.
    #[error("cannot delete {}: {source}", path.display())]
    Remove {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// One compiled plugin in the cache, as `loadhost cache ls` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The artifact, `NAME.cwasm`.
    pub path: PathBuf,
    /// What was compiled (a plugin path as named, or a registry reference); `None` for an entry
    /// written before sources were recorded.
    pub source: Option<String>,
    /// Bytes on disk: the artifact and its sidecars.
    pub size: u64,
    /// When it was last loaded or written (the artifact's mtime).
    pub last_used: SystemTime,
    /// When it was first written, when recorded.
    pub created: Option<SystemTime>,
}

impl Entry {
    /// The sha256 of what was compiled (the start of the artifact's name).
    pub fn hash(&self) -> String {
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        name.split('-').next().unwrap_or_default().to_owned()
    }

    /// The source, or the short hash when none was recorded, for log lines.
    pub fn describe(&self) -> String {
        self.source.clone().unwrap_or_else(|| self.hash().chars().take(12).collect())
    }
}

/// What [`prune`] deletes: least recently used entries until at most `max_bytes` remain, and
/// entries unused for longer than `older_than`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Prune {
    /// The most bytes to keep.
    pub max_bytes: Option<u64>,
    /// Delete entries last used longer ago than this.
    pub older_than: Option<Duration>,
}

/// The complete entries of a `compiled/` folder, least recently used first (none when it does
/// not exist). Temporary files of a write under way are not entries.
pub fn entries(dir: &Path) -> Result<Vec<Entry>, CacheError> {
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(CacheError::List { dir: dir.to_owned(), source }),
    };
    let mut out = Vec::new();
    for file in read.flatten() {
        let path = file.path();
        if path.extension().is_none_or(|e| e != "cwasm") {
            continue;
        }
        // Another process may delete it between the listing and here: it is simply gone.
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        let sidecars: u64 = [digest_path(&path), meta_path(&path)]
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        let last_used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        let recorded = read_meta(&path).unwrap_or_default();
        let created = recorded.created.map(|secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
        out.push(Entry { size: meta.len() + sidecars, last_used, source: recorded.source, created, path });
    }
    out.sort_by(|a, b| a.last_used.cmp(&b.last_used).then_with(|| a.path.cmp(&b.path)));
    Ok(out)
}

/// Delete what `limits` says from the `compiled/` folder `dir`, never `keep`; the deleted entries.
/// A file another process deleted first is not an error.
pub fn prune(dir: &Path, limits: &Prune, keep: Option<&Path>) -> Result<Vec<Entry>, CacheError> {
    let all = entries(dir)?;
    let doomed = select(&all, limits, SystemTime::now(), keep);
    let mut gone = Vec::with_capacity(doomed.len());
    for i in doomed {
        remove(&all[i].path)?;
        gone.push(all[i].clone());
    }
    Ok(gone)
}

/// Which of `entries` (least recently used first) to delete: those older than the age limit,
/// then the least recently used until the rest fit in the size limit; never `keep`.
fn select(entries: &[Entry], limits: &Prune, now: SystemTime, keep: Option<&Path>) -> Vec<usize> {
    let kept = |e: &Entry| keep.is_some_and(|k| e.path == k);
    let mut doomed = vec![false; entries.len()];
    if let Some(age) = limits.older_than {
        for (i, e) in entries.iter().enumerate() {
            let idle = now.duration_since(e.last_used).unwrap_or_default();
            doomed[i] = idle > age && !kept(e);
        }
    }
    if let Some(max) = limits.max_bytes {
        let mut total: u64 = entries.iter().zip(&doomed).filter(|(_, d)| !**d).map(|(e, _)| e.size).sum();
        for (i, e) in entries.iter().enumerate() {
            if total <= max {
                break;
            }
            if !doomed[i] && !kept(e) {
                doomed[i] = true;
                total -= e.size;
            }
        }
    }
    doomed.iter().enumerate().filter(|(_, d)| **d).map(|(i, _)| i).collect()
}

/// Delete an entry: the digest first, so a concurrent load sees "no digest" and recompiles
/// quietly rather than half an entry.
pub fn remove(entry: &Path) -> Result<(), CacheError> {
    for path in [digest_path(entry), entry.to_owned(), meta_path(entry)] {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(CacheError::Remove { path, source }),
        }
    }
    Ok(())
}

/// `bytes` in binary units, one decimal: "36.2 MiB".
pub fn human_size(bytes: u64) -> String {
    let mut value = bytes as f64;
    for unit in ["B", "KiB", "MiB", "GiB"] {
        if value < 1024.0 || unit == "GiB" {
            return if unit == "B" { format!("{bytes} B") } else { format!("{value:.1} {unit}") };
        }
        value /= 1024.0;
    }
    format!("{bytes} B")
}

/// What the `.meta` sidecar records.
#[derive(Debug, Default, PartialEq, Eq)]
struct Meta {
    /// What was compiled.
    source: Option<String>,
    /// When the entry was first written, in seconds since the epoch.
    created: Option<u64>,
}

/// Where an artifact's metadata is recorded.
fn meta_path(entry: &Path) -> PathBuf {
    let mut name = entry.as_os_str().to_owned();
    name.push(".meta");
    PathBuf::from(name)
}

/// `key=value` lines; unknown keys are skipped, so later versions may add some.
fn read_meta(entry: &Path) -> Option<Meta> {
    let text = std::fs::read_to_string(meta_path(entry)).ok()?;
    let mut meta = Meta::default();
    for line in text.lines() {
        match line.split_once('=') {
            Some(("source", value)) => meta.source = Some(value.to_owned()),
            Some(("created", value)) => meta.created = value.parse().ok(),
            _ => {}
        }
    }
    Some(meta)
}

fn meta_text(source: &str, created: u64) -> String {
    // A newline in a path would start a new key.
    let source = source.replace(['\n', '\r'], "?");
    format!("source={source}\ncreated={created}\n")
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A hit: mark the entry used now (its mtime), and record the source when it is new. Failing
/// either only makes `cache ls` less exact, so it is not an error.
fn used(entry: &Path, source: &str) {
    if let Err(err) = std::fs::File::open(entry).and_then(|f| f.set_modified(SystemTime::now())) {
        tracing::debug!("{}: cannot mark it used: {err}", entry.display());
    }
    let meta = read_meta(entry).unwrap_or_default();
    if meta.source.as_deref() != Some(source) {
        let text = meta_text(source, meta.created.unwrap_or_else(unix_now));
        if let Err(err) = write_atomically(&meta_path(entry), text.as_bytes()) {
            tracing::debug!("{}: cannot record its source: {err}", entry.display());
        }
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

/// Write `bytes` to a temporary file beside `path` and rename it there, so no reader sees half.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|err| err.error)?;
    Ok(())
}

/// Write atomically, the metadata and digest first: a concurrent run must never load a
/// half-written artifact, an artifact without its digest is never loaded, and a listed entry
/// already has its source.
fn store(entry: &Path, compiled: &[u8], source: &str) -> std::io::Result<()> {
    write_atomically(&meta_path(entry), meta_text(source, unix_now()).as_bytes())?;
    write_atomically(&digest_path(entry), sha256_hex(compiled).as_bytes())?;
    write_atomically(entry, compiled)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, size: u64, used_secs_ago: u64, now: SystemTime) -> Entry {
        Entry {
            path: PathBuf::from(format!("{name}.cwasm")),
            source: Some(name.to_owned()),
            size,
            last_used: now - Duration::from_secs(used_secs_ago),
            created: None,
        }
    }

    #[test]
    fn the_least_recently_used_go_first_until_the_rest_fit_and_the_kept_one_stays() {
        let now = SystemTime::now();
        // Least recently used first, as `entries` sorts them.
        let all = [entry("a", 40, 300, now), entry("b", 40, 200, now), entry("c", 40, 100, now)];
        let cap = |max| Prune { max_bytes: Some(max), older_than: None };
        assert_eq!(select(&all, &cap(120), now, None), Vec::<usize>::new(), "it fits");
        assert_eq!(select(&all, &cap(100), now, None), vec![0]);
        assert_eq!(select(&all, &cap(40), now, None), vec![0, 1]);
        assert_eq!(select(&all, &cap(0), now, None), vec![0, 1, 2]);
        // The entry just written is never evicted, even when the oldest or larger than the cap.
        assert_eq!(select(&all, &cap(50), now, Some(Path::new("a.cwasm"))), vec![1, 2]);
        assert_eq!(select(&all, &cap(0), now, Some(Path::new("c.cwasm"))), vec![0, 1]);
    }

    #[test]
    fn an_age_limit_deletes_the_idle_ones_and_counts_them_against_the_size() {
        let now = SystemTime::now();
        let all = [entry("a", 40, 3000, now), entry("b", 40, 2000, now), entry("c", 40, 100, now)];
        let old = |secs| Prune { max_bytes: None, older_than: Some(Duration::from_secs(secs)) };
        assert_eq!(select(&all, &old(1000), now, None), vec![0, 1]);
        assert_eq!(select(&all, &old(5000), now, None), Vec::<usize>::new());
        let both = Prune { max_bytes: Some(40), older_than: Some(Duration::from_secs(2500)) };
        assert_eq!(select(&all, &both, now, None), vec![0, 1]);
    }

    #[test]
    fn prune_deletes_whole_entries_and_leaves_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("aaaa-wasmtime-0.cwasm");
        let b = dir.path().join("bbbb-wasmtime-0.cwasm");
        store(&a, &[0; 100], "plugins/a.wasm").unwrap();
        store(&b, &[0; 100], "plugins/b.wasm").unwrap();
        let old = std::fs::File::open(&a).unwrap();
        old.set_modified(SystemTime::now() - Duration::from_secs(60)).unwrap();
        std::fs::write(dir.path().join(".tmp123"), [0; 500]).unwrap();
        let listed = entries(dir.path()).unwrap();
        assert_eq!(
            listed.iter().map(|e| e.source.as_deref()).collect::<Vec<_>>(),
            [Some("plugins/a.wasm"), Some("plugins/b.wasm")]
        );
        assert!(listed[0].size > 100 && listed[0].created.is_some(), "{listed:?}");
        let gone = prune(dir.path(), &Prune { max_bytes: Some(listed[1].size), older_than: None }, None).unwrap();
        assert_eq!(gone, listed[..1]);
        let mut left: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().flatten().map(|f| f.file_name().to_string_lossy().into()).collect();
        left.sort();
        assert_eq!(
            left,
            [".tmp123", "bbbb-wasmtime-0.cwasm", "bbbb-wasmtime-0.cwasm.meta", "bbbb-wasmtime-0.cwasm.sha256"]
        );
        // A second prune of entries another process already removed is fine.
        remove(&a).unwrap();
    }

    #[test]
    fn metadata_keeps_unknown_keys_out_and_a_source_on_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.cwasm");
        std::fs::write(meta_path(&a), format!("{}kind=ref\nfuture=1\n", meta_text("x\ny", 7))).unwrap();
        assert_eq!(read_meta(&a), Some(Meta { source: Some("x?y".into()), created: Some(7) }));
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(36 << 20), "36.0 MiB");
        assert_eq!(human_size(3 << 30), "3.0 GiB");
    }
}
