//! The sources the plugin embedded in `loadhost` (`host/cli/assets/http-generic.wasm`) is built
//! from, and their digest. `cargo xtask embed` records the digest beside the component; a unit
//! test of the cli crate (which includes this file) recomputes it, so a change to the plugin, the
//! SDK or the WIT that was not embedded again fails the tests instead of shipping a stale plugin.

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// What the embedded plugin is built from, relative to the repository root: files, or folders
/// taken whole (any `target/` inside skipped).
pub const EMBEDDED_SOURCES: [&str; 4] = ["plugins/http-generic", "sdk/rust/Cargo.toml", "sdk/rust/src", "wit"];

/// The embedded component, relative to the repository root.
pub const EMBEDDED_WASM: &str = "host/cli/assets/http-generic.wasm";

/// The record of what it was built from, relative to the repository root.
pub const EMBEDDED_RECORD: &str = "host/cli/assets/http-generic.wasm.sources";

/// Hex sha256 over every source file, in path order: each file's path (relative, `/`-separated),
/// a NUL, its length as 8 little-endian bytes and its bytes.
pub fn sources_digest(root: &Path) -> std::io::Result<String> {
    let mut files = Vec::new();
    for source in EMBEDDED_SOURCES {
        collect(&root.join(source), &mut files)?;
    }
    let mut named: Vec<(String, PathBuf)> = files
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let parts: Vec<String> =
                relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            (parts.join("/"), path)
        })
        .collect();
    named.sort();
    let mut hasher = Sha256::new();
    for (name, path) in named {
        let bytes = std::fs::read(&path)?;
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hex(&hasher.finalize()))
}

/// Hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The record's text: the sources' digest and the component's.
pub fn record(sources: &str, wasm: &str) -> String {
    format!(
        "# Written by `cargo xtask embed`: http-generic.wasm was built from these sources\n\
         # ({}). A unit test of the cli crate checks both digests.\n\
         sources {sources}\n\
         wasm {wasm}\n",
        EMBEDDED_SOURCES.join(", ")
    )
}

/// The `(sources, wasm)` digests a record holds.
pub fn parse_record(text: &str) -> Option<(String, String)> {
    let value = |key: &str| {
        text.lines().find_map(|line| line.strip_prefix(key).and_then(|rest| rest.strip_prefix(' ')).map(str::to_owned))
    };
    Some((value("sources")?, value("wasm")?))
}

/// Every file under `path` (or `path` itself), skipping build output.
fn collect(path: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if path.is_file() {
        files.push(path.to_path_buf());
        return Ok(());
    }
    for entry in std::fs::read_dir(path)? {
        let entry = entry?.path();
        if entry.is_dir() && entry.file_name().is_some_and(|n| n == "target") {
            continue;
        }
        collect(&entry, files)?;
    }
    Ok(())
}
