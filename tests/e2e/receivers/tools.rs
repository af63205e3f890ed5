//! Where the programs `cargo xtask setup` installs are, and what a test does when one is missing.

use std::path::PathBuf;
use std::process::Command;

/// Set (to anything) to let a test whose program is missing pass, saying it skipped; unset, a
/// missing program fails the test, so a machine without the tools cannot pass unnoticed.
const SKIP_MISSING: &str = "LOADHOST_SKIP_MISSING_TOOLS";

/// The tools venv's python, found where xtask's `tools::venv` makes it:
/// `$LOADHOST_TOOLCHAINS/tools/bin/python` (default `~/.cache/loadhost/toolchains`).
pub fn venv_python_path() -> PathBuf {
    let base = std::env::var_os("LOADHOST_TOOLCHAINS").map(PathBuf::from).unwrap_or_else(|| {
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache"));
        cache.join("loadhost").join("toolchains")
    });
    base.join("tools").join("bin").join("python")
}

/// The tools venv's python (with oras, opentelemetry-proto, …); panics, saying to run `cargo
/// xtask setup`, when there is none.
pub fn venv_python() -> PathBuf {
    let python = venv_python_path();
    assert!(python.exists(), "{} is missing: run `cargo xtask setup`", python.display());
    python
}

/// Whether the tools venv's python can import `module`.
pub fn venv_has_module(module: &str) -> bool {
    Command::new(venv_python_path())
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Whether `command` is on `PATH`.
pub fn on_path(command: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(command).is_file())
}

/// Whether a test can use `tool`: true when `installed`; when not, false (with a note: the test
/// returns) if `LOADHOST_SKIP_MISSING_TOOLS` is set, and a panic saying to run `cargo xtask setup`
/// otherwise.
pub fn usable(tool: &str, installed: bool) -> bool {
    if installed {
        return true;
    }
    assert!(
        std::env::var_os(SKIP_MISSING).is_some(),
        "{tool} is missing: run `cargo xtask setup` (or set {SKIP_MISSING} to skip the tests that need it)"
    );
    eprintln!("skipped: {tool} is missing ({SKIP_MISSING} is set; `cargo xtask setup` installs it)");
    false
}
