//! `loadhost cache ls|prune|clear`: the compiled-plugin cache (`$LOADHOST_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/loadhost`, else `~/.cache/loadhost`). Interpreter guests (Python, JS) take
//! about ten seconds to compile; a cached one starts in milliseconds. `run --cache-max` keeps the
//! folder under a cap; `prune` trims it by hand.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use clap::Subcommand;
use loadhost_config::resolve::DEFAULT_CACHE_MAX;
use loadhost_config::units::Size;
use loadhost_runtime::cache::{self, Entry, Prune, human_size};

use crate::exit::Failure;

/// `loadhost cache` subcommands.
#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// List the compiled plugins: what was compiled (path or reference), size, last use and the
    /// sha256, least recently used first, and the total.
    Ls,
    /// Delete compiled plugins, least recently used first, down to --max (default 1GiB, as
    /// run --cache-max), or those unused for longer than --older-than.
    Prune {
        /// Keep at most SIZE (0 deletes every entry).
        #[arg(long, value_name = "SIZE")]
        max: Option<Size>,
        /// Delete the entries last used longer ago than DURATION (12h, 7d, 30days).
        #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
        older_than: Option<Duration>,
    },
    /// Delete every compiled plugin.
    Clear,
}

fn compiled_dir() -> Result<PathBuf, Failure> {
    cache::default_dir()
        .map(|d| d.join("compiled"))
        .ok_or_else(|| Failure::usage(anyhow::anyhow!("no cache folder: set LOADHOST_CACHE_DIR or HOME")))
}

/// `n` and the noun in its number: "1 entry", "2 entries".
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// How long ago, in the largest whole unit: "just now", "42s ago", "3h ago", "12d ago".
fn ago(then: SystemTime, now: SystemTime) -> String {
    let secs = now.duration_since(then).unwrap_or_default().as_secs();
    match secs {
        0 => "just now".to_owned(),
        1..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86400),
    }
}

/// The listing: a total line, then a row per entry.
fn list(out: &mut dyn std::io::Write, dir: &std::path::Path, entries: &[Entry]) -> std::io::Result<()> {
    let total = entries.iter().map(|e| e.size).sum::<u64>();
    writeln!(out, "{} ({}, {})", dir.display(), count(entries.len(), "entry", "entries"), human_size(total))?;
    if entries.is_empty() {
        return Ok(());
    }
    let now = SystemTime::now();
    // Entries written before sources were recorded have none.
    let sources: Vec<String> = entries.iter().map(|e| e.source.clone().unwrap_or_else(|| "?".to_owned())).collect();
    let width = sources.iter().map(|s| s.chars().count()).max().unwrap_or(0).max("SOURCE".len());
    writeln!(out, "  {:width$}  {:>10}  {:>9}  SHA256", "SOURCE", "SIZE", "LAST USE")?;
    for (entry, source) in entries.iter().zip(&sources) {
        let hash: String = entry.hash().chars().take(12).collect();
        let (size, used) = (human_size(entry.size), ago(entry.last_used, now));
        writeln!(out, "  {source:width$}  {size:>10}  {used:>9}  {hash}")?;
    }
    Ok(())
}

/// The plugins pulled from registries (`loadhost run REF`, `push`): each stored manifest with the
/// references it came as, its size and digest. Listed only when there are some.
fn list_store(
    out: &mut dyn std::io::Write,
    base: &std::path::Path,
    pulled: &[loadhost_registry::StoreEntry],
) -> std::io::Result<()> {
    if pulled.is_empty() {
        return Ok(());
    }
    let total = pulled.iter().map(|e| e.size).sum::<u64>();
    let store = base.join("oci");
    writeln!(out, "{} ({}, {})", store.display(), count(pulled.len(), "artifact", "artifacts"), human_size(total))?;
    for entry in pulled {
        let refs = if entry.references.is_empty() { "?".to_owned() } else { entry.references.join(", ") };
        writeln!(out, "  {refs}  {:>10}  {}", human_size(entry.size), entry.digest)?;
    }
    Ok(())
}

/// Delete what `limits` says and say what went.
fn prune(dir: &std::path::Path, limits: &Prune) -> Result<(), Failure> {
    let gone = cache::prune(dir, limits, None).map_err(|err| Failure::runtime(anyhow::Error::new(err)))?;
    let left = cache::entries(dir).map_err(|err| Failure::runtime(anyhow::Error::new(err)))?;
    let freed = human_size(gone.iter().map(|e| e.size).sum());
    let kept = human_size(left.iter().map(|e| e.size).sum());
    crate::stdout::write(|out| {
        for entry in &gone {
            writeln!(out, "deleted {} ({})", entry.describe(), human_size(entry.size))?;
        }
        let deleted = count(gone.len(), "compiled plugin", "compiled plugins");
        writeln!(out, "{}: deleted {deleted} ({freed}); {} left ({kept})", dir.display(), left.len())
    })?;
    Ok(())
}

/// List, prune or clear.
pub fn run(command: CacheCommand) -> Result<ExitCode, Failure> {
    let dir = compiled_dir()?;
    match command {
        CacheCommand::Ls => {
            let entries = cache::entries(&dir).map_err(|err| Failure::runtime(anyhow::Error::new(err)))?;
            let base = dir.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
            let pulled = loadhost_registry::store_entries(&base);
            crate::stdout::write(|out| {
                list(out, &dir, &entries)?;
                list_store(out, &base, &pulled)
            })?;
        }
        CacheCommand::Prune { max, older_than } => {
            // Without either limit, prune to what `run` would keep by default.
            let max_bytes = max.map(|s| s.0).or(older_than.is_none().then_some(DEFAULT_CACHE_MAX));
            prune(&dir, &Prune { max_bytes, older_than })?;
        }
        CacheCommand::Clear => {
            let gone = cache::prune(&dir, &Prune { max_bytes: Some(0), older_than: None }, None)
                .map_err(|err| Failure::runtime(anyhow::Error::new(err)))?;
            let deleted = count(gone.len(), "compiled plugin", "compiled plugins");
            crate::stdout::write(|out| writeln!(out, "{}: deleted {deleted}", dir.display()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_in_the_largest_whole_unit() {
        let now = SystemTime::now();
        let ago_secs = |s| ago(now - Duration::from_secs(s), now);
        assert_eq!(ago_secs(0), "just now");
        assert_eq!(ago_secs(42), "42s ago");
        assert_eq!(ago_secs(3 * 3600 + 59), "3h ago");
        assert_eq!(ago_secs(12 * 86400), "12d ago");
    }

    #[test]
    fn prune_help_states_the_default_the_code_uses() {
        let command = CacheCommand::augment_subcommands(clap::Command::new("cache"));
        let about = command.find_subcommand("prune").and_then(|p| p.get_about()).map(ToString::to_string);
        let about = about.unwrap_or_default();
        assert!(about.contains(&format!("(default {},", Size(DEFAULT_CACHE_MAX))), "{about}");
    }
}
