//! Names what a `loadhost` binary was built from, for `loadhost --version`: the commit, the
//! wasmtime version it embeds and the WIT package its plugins are built against, e.g.
//! `0.1.0 (commit abc1234, wasmtime 48.0.8, WIT loadhost:plugin@0.1.0)` (`LOADHOST_VERSION`).
//!
//! - the commit: `git rev-parse --short HEAD` when the sources are a git checkout; else the
//!   `LOADHOST_COMMIT` variable (an image or release build from an exported tree sets it); else
//!   `unknown`. The script reruns when HEAD or the branch it points at moves, so the name is not
//!   stale after a commit;
//! - wasmtime: its version in the workspace's Cargo.lock (the one actually compiled in);
//! - WIT: the `package` line of `wit/plugin.wit`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..");
    let lock = root.join("Cargo.lock");
    let wit = root.join("wit/plugin.wit");
    println!("cargo::rerun-if-changed={}", lock.display());
    println!("cargo::rerun-if-changed={}", wit.display());
    println!("cargo::rerun-if-env-changed=LOADHOST_COMMIT");

    let commit = git_commit(&root)
        .or_else(|| std::env::var("LOADHOST_COMMIT").ok().filter(|c| !c.trim().is_empty()).map(|c| short(c.trim())))
        .unwrap_or_else(|| "unknown".to_owned());
    let wasmtime = std::fs::read_to_string(&lock)
        .ok()
        .and_then(|text| locked_version(&text, "wasmtime"))
        .unwrap_or_else(|| "unknown".to_owned());
    let package =
        std::fs::read_to_string(&wit).ok().and_then(|text| wit_package(&text)).unwrap_or_else(|| "unknown".to_owned());
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!("cargo::rustc-env=LOADHOST_VERSION={version} (commit {commit}, wasmtime {wasmtime}, WIT {package})");
}

/// The short commit of HEAD, when `root` is in a git checkout and git runs; it also tells cargo
/// to rerun this script when HEAD, the ref it names, or the packed refs change.
fn git_commit(root: &Path) -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).current_dir(root).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=7", "HEAD"])?;
    // A worktree keeps HEAD in its own git dir and the refs in the common one: `--git-path`
    // answers both. A detached HEAD names no ref. Only files that exist are watched: cargo reruns
    // the script, and rebuilds the binary, on every build for a missing one (packed-refs often
    // is; a ref that is not a loose file is in packed-refs, which then is there).
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(reference);
    }
    for path in watched {
        if let Some(file) = git(&["rev-parse", "--path-format=absolute", "--git-path", &path])
            && Path::new(&file).exists()
        {
            println!("cargo::rerun-if-changed={file}");
        }
    }
    Some(commit)
}

/// A full commit given by a build (`LOADHOST_COMMIT=$(git rev-parse HEAD)`) shortened like git's.
fn short(commit: &str) -> String {
    if commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        commit[..7].to_owned()
    } else {
        commit.to_owned()
    }
}

/// The version of package `name` in a Cargo.lock (the first entry: wasmtime is there once).
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let lock: toml::Table = toml::from_str(lock).ok()?;
    lock.get("package")?.as_array()?.iter().find_map(|package| {
        let package = package.as_table()?;
        (package.get("name")?.as_str()? == name).then(|| package.get("version")?.as_str().map(str::to_owned))?
    })
}

/// `loadhost:plugin@0.1.0` from the `package loadhost:plugin@0.1.0;` line of a WIT file.
fn wit_package(wit: &str) -> Option<String> {
    wit.lines()
        .find_map(|line| line.trim().strip_prefix("package "))
        .map(|rest| rest.trim().trim_end_matches(';').trim().to_owned())
}
