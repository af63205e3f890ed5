//! `loadhost --version` names what the binary was built from: its commit, the wasmtime it embeds
//! and the WIT package its plugins build against (host/cli/build.rs).

use std::process::Command;

use crate::common::{Loadhost, root};

#[test]
fn version_names_the_commit_wasmtime_and_the_wit_package() {
    let run = Loadhost::new().args(["--version"]).run();
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let line = run.stdout.trim();
    assert!(line.starts_with(&format!("loadhost {} (", env!("CARGO_PKG_VERSION"))), "{line}");

    // wasmtime: the version Cargo.lock compiles in.
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).unwrap();
    let wasmtime = lock
        .split("\n[[package]]\n")
        .find_map(|entry| {
            let mut lines = entry.lines();
            (lines.next()? == "name = \"wasmtime\"").then(|| lines.next()?.strip_prefix("version = ")).flatten()
        })
        .expect("wasmtime in Cargo.lock")
        .trim_matches('"');
    assert!(line.contains(&format!(", wasmtime {wasmtime},")), "{line}");

    // The WIT package, as wit/plugin.wit declares it.
    let wit = std::fs::read_to_string(root().join("wit/plugin.wit")).unwrap();
    let package = wit.lines().find_map(|l| l.strip_prefix("package ")).unwrap().trim_end_matches(';');
    assert!(line.ends_with(&format!(", WIT {package})")), "{line}");

    // The commit: HEAD's, when this is a checkout git can read (else the build said `unknown` or
    // took LOADHOST_COMMIT).
    let head = Command::new("git").args(["rev-parse", "--short=7", "HEAD"]).current_dir(root()).output();
    match head {
        Ok(out) if out.status.success() => {
            let head = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            assert!(line.contains(&format!("(commit {head}, ")), "{line} (HEAD is {head})");
        }
        _ => assert!(line.contains("(commit "), "{line}"),
    }
}
