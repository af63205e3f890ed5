//! `loadhost cache ls|clear`: the compiled-plugin cache (`$LOADHOST_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/loadhost`, else `~/.cache/loadhost`). Interpreter guests (Python, JS) take
//! about ten seconds to compile; a cached one starts in milliseconds.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Subcommand;

use crate::exit::Failure;

/// `loadhost cache` subcommands.
#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// List the compiled plugins (sha256 of what was compiled, size, age).
    Ls,
    /// Delete every compiled plugin.
    Clear,
}

fn compiled_dir() -> Result<PathBuf, Failure> {
    loadhost_runtime::cache::default_dir()
        .map(|d| d.join("compiled"))
        .ok_or_else(|| Failure::usage(anyhow::anyhow!("no cache folder: set LOADHOST_CACHE_DIR or HOME")))
}

/// The cache's entries: path, bytes, seconds since written.
fn entries(dir: &std::path::Path) -> Result<Vec<(PathBuf, u64, u64)>, Failure> {
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(Failure::runtime(anyhow::Error::new(err).context(dir.display().to_string()))),
    };
    let mut out = Vec::new();
    for entry in read.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "cwasm")
            && let Ok(meta) = entry.metadata()
        {
            let age = meta.modified().ok().and_then(|m| m.elapsed().ok()).map_or(0, |a| a.as_secs());
            out.push((path, meta.len(), age));
        }
    }
    out.sort();
    Ok(out)
}

/// `n` and the noun in its number: "1 entry", "2 entries".
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// List or clear.
pub fn run(command: CacheCommand) -> Result<ExitCode, Failure> {
    let dir = compiled_dir()?;
    let entries = entries(&dir)?;
    match command {
        CacheCommand::Ls => crate::stdout::write(|out| {
            let total = entries.iter().map(|e| e.1).sum::<u64>();
            writeln!(out, "{} ({}, {total} bytes)", dir.display(), count(entries.len(), "entry", "entries"))?;
            for (path, size, age) in &entries {
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let age = humantime::format_duration(std::time::Duration::from_secs(*age));
                writeln!(out, "  {name}  {size} bytes  {age}")?;
            }
            Ok(())
        })?,
        CacheCommand::Clear => {
            for (path, _, _) in &entries {
                std::fs::remove_file(path)
                    .with_context(|| format!("{}: cannot delete", path.display()))
                    .map_err(Failure::runtime)?;
                // Its recorded sha256, beside it.
                let mut digest = path.as_os_str().to_owned();
                digest.push(".sha256");
                let _ = std::fs::remove_file(digest);
            }
            let deleted = count(entries.len(), "compiled plugin", "compiled plugins");
            crate::stdout::write(|out| writeln!(out, "{}: deleted {deleted}", dir.display()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
