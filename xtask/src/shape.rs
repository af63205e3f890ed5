//! Checks of the code's shape that the compiler cannot make: every built-in metric name is
//! spelled once, in the catalogue (so adding a metric is one entry, and no output can drift to a
//! name of its own), and no host source file grows past what one reader holds in mind.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

/// The catalogue of built-in metrics: the one place their names are spelled.
const CATALOGUE: &str = "host/metrics/src/catalogue.rs";

/// Host files that may spell a metric's name, each with its reason.
const NAMES_ALLOWED: [(&str, &str); 1] =
    [("host/target/src/", "the built-in target's /stats keys are its own counters, not loadhost's metrics")];

/// The most lines a host source file may have.
const MAX_LINES: usize = 800;

/// Every `pub const NAME: &str = "value";` in the catalogue's `names` module: the names.
fn catalogue_names(catalogue: &str) -> Vec<String> {
    let Some(start) = catalogue.find("pub mod names {") else { return Vec::new() };
    let body = &catalogue[start..];
    let body = &body[..body.find("\n}\n").unwrap_or(body.len())];
    body.lines()
        .filter_map(|line| line.trim().strip_prefix("pub const "))
        .filter_map(|line| {
            line.split_once("= \"").and_then(|(_, rest)| rest.split_once('"')).map(|(v, _)| v.to_owned())
        })
        .collect()
}

/// The places in `source` (tests aside: from the first `#[cfg(test)]` on) that spell one of
/// `names` as a string literal: (line number, name).
fn literals(source: &str, names: &[String]) -> Vec<(usize, String)> {
    let code = source.split("#[cfg(test)]").next().unwrap_or_default();
    let mut found = Vec::new();
    for (i, line) in code.lines().enumerate() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        for name in names {
            if line.contains(&format!("\"{name}\"")) {
                found.push((i + 1, name.clone()));
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// Refuse a built-in metric's name spelled outside the catalogue (tests aside), and a host
/// source file over [`MAX_LINES`] lines.
pub fn check(root: &Path) -> Result<()> {
    let catalogue = std::fs::read_to_string(root.join(CATALOGUE)).with_context(|| format!("reading {CATALOGUE}"))?;
    let names = catalogue_names(&catalogue);
    if names.is_empty() {
        bail!(
            "{CATALOGUE}: no `pub mod names` with the metric names (has the catalogue moved? update xtask/src/shape.rs)"
        );
    }
    let mut files = Vec::new();
    rust_files(&root.join("host"), &mut files)?;
    let mut problems = Vec::new();
    for path in files {
        let relative = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
        let source = std::fs::read_to_string(&path).with_context(|| format!("reading {relative}"))?;
        let lines = source.lines().count();
        if lines > MAX_LINES {
            problems.push(format!("{relative}: {lines} lines (at most {MAX_LINES}: split it by job)"));
        }
        let test_only = relative.contains("/tests/") || relative.contains("/benches/");
        if relative == CATALOGUE || test_only || NAMES_ALLOWED.iter().any(|(p, _)| relative.starts_with(p)) {
            continue;
        }
        for (line, name) in literals(&source, &names) {
            problems.push(format!(
                "{relative}:{line}: \"{name}\" spelled out: use the catalogue's constant (loadhost_metrics::catalogue::names)"
            ));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    bail!("the code's shape:\n  {}", problems.join("\n  "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CATALOGUE_SAMPLE: &str = "//! doc\npub mod names {\n    /// A.\n    pub const LATENCY_MS: &str = \"latency_ms\";\n    pub const CHECKS: &str = \"checks\";\n}\n\npub const OTHER: &str = \"not_a_name\";\n";

    #[test]
    fn the_names_are_read_from_the_names_module_only() {
        assert_eq!(catalogue_names(CATALOGUE_SAMPLE), ["latency_ms", "checks"]);
    }

    #[test]
    fn a_spelled_out_name_is_found_outside_comments_and_tests() {
        let names = catalogue_names(CATALOGUE_SAMPLE);
        let source = "fn a() {\n    // \"checks\" in a comment is fine\n    let x = \"latency_ms\";\n    let y = \"latency_ms_total\";\n}\n#[cfg(test)]\nmod tests { const T: &str = \"checks\"; }\n";
        assert_eq!(literals(source, &names), [(3, "latency_ms".to_owned())]);
    }

    #[test]
    fn this_repository_has_its_shape() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        if let Err(err) = check(&root) {
            panic!("{err:#}");
        }
    }
}
