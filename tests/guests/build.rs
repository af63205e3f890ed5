//! Reads the folders of `plugins/` (example plugins) and `tests/plugins/` (test fixtures) and
//! writes `OUT_DIR/guests.rs`: the `Example` enum, one variant per example, and the
//! `foreach_fixture!` macro, which hands every fixture to a macro of the test crate's (see lib.rs).
//! Generated at each build, never committed, so it cannot go stale: a folder added or removed
//! reruns this script (cargo watches both folders, recursively).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..");
    let examples = folders(&root.join("plugins"));
    let fixtures = folders(&root.join("tests/plugins"));
    let mut out = String::new();
    write_examples(&mut out, &examples);
    write_fixtures(&mut out, &fixtures);
    let path = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("guests.rs");
    std::fs::write(&path, out).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// The names of the folders in `dir`, sorted, each checked to make a Rust name; `dir` is watched.
fn folders(dir: &Path) -> Vec<String> {
    println!("cargo::rerun-if-changed={}", dir.display());
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    let mut names: Vec<String> = entries
        .map(|entry| entry.unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())).path())
        // `target/`: guest builds under `plugins/` without CARGO_TARGET_DIR put theirs there.
        .filter(|path| path.is_dir() && !path.ends_with("target"))
        .map(|path| path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
        .collect();
    names.sort();
    for name in &names {
        let fits = name.starts_with(|c: char| c.is_ascii_lowercase())
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        assert!(fits, "{}/{name}: a guest folder's name is lower-case letters, digits and dashes", dir.display());
    }
    names
}

/// `http-get-c` → `HttpGetC`.
fn variant(folder: &str) -> String {
    folder
        .split('-')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map(|first| first.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect()
}

fn write_examples(out: &mut String, examples: &[String]) {
    let mut variants = String::new();
    let mut names = String::new();
    for folder in examples {
        let v = variant(folder);
        let _ = writeln!(variants, "    #[doc = \"`plugins/{folder}`\"]\n    {v},");
        let _ = writeln!(names, "            Self::{v} => \"{folder}\",");
    }
    let _ = write!(
        out,
        "/// An example plugin: a folder of `plugins/`, built to `target/plugins/NAME.wasm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Example {{
{variants}}}

impl Example {{
    /// Its folder's name, which is also its built file's (`NAME.wasm`).
    pub const fn name(self) -> &'static str {{
        match self {{
{names}        }}
    }}
}}

impl std::fmt::Display for Example {{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {{
        f.write_str(self.name())
    }}
}}

"
    );
}

fn write_fixtures(out: &mut String, fixtures: &[String]) {
    let list: Vec<String> = fixtures.iter().map(|folder| format!("{} \"{folder}\"", variant(folder))).collect();
    let _ = write!(
        out,
        "/// Calls `$then! {{ Variant \"folder\", … }}` with every folder of `tests/plugins/`.
#[macro_export]
macro_rules! foreach_fixture {{
    ($then:ident) => {{
        $then! {{ {} }}
    }};
}}
",
        list.join(", ")
    );
}
