//! The module graph of a crate: which of its top-level modules use which (`crate::X`, or `super::X`
//! from as deep as the module's root), and its cycles. A cycle means two modules each need the
//! other, so neither has one job; `cargo xtask lint` refuses one in the crates listed in
//! [`ACYCLIC`].
//!
//! It reads the text, not the compiler's view: comments and each file's `#[cfg(test)]` module (at
//! its end, as every file here puts it) are left out, since a test may use any module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context as _, Result};

/// The crates (under `host/`) whose top-level modules must not form a cycle.
pub const ACYCLIC: [&str; 2] = ["engine", "metrics"];

/// Where one module uses another: the file (relative to `src/`) and the 1-based line.
pub type Place = (String, usize);

/// The uses between a crate's top-level modules: `from → to → the first place it happens`.
pub type Graph = BTreeMap<String, BTreeMap<String, Place>>;

/// The graph of the crate whose sources are in `src`.
pub fn graph(src: &Path) -> Result<Graph> {
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(src).with_context(|| format!("reading {}", src.display()))? {
        let path = entry?.path();
        let name = path.file_stem().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if path.is_dir() || (path.extension().is_some_and(|e| e == "rs") && name != "lib" && name != "main") {
            modules.insert(name, path);
        }
    }
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let mut graph = Graph::new();
    for (name, path) in &modules {
        let mut files = Vec::new();
        collect(path, &mut files)?;
        let uses = graph.entry(name.clone()).or_default();
        for file in files {
            let relative = file.strip_prefix(src).unwrap_or(&file);
            // `X.rs` and `X/mod.rs` are one `super::` below the root; `X/a.rs` two.
            let mut depth = relative.components().count();
            if relative.file_name().is_some_and(|n| n == "mod.rs") {
                depth -= 1;
            }
            let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            for (line, used) in uses_in(&text, depth) {
                if used != *name && names.contains(&used) {
                    uses.entry(used).or_insert_with(|| (relative.display().to_string(), line));
                }
            }
        }
    }
    Ok(graph)
}

fn collect(path: &Path, files: &mut Vec<std::path::PathBuf>) -> Result<()> {
    if path.is_dir() {
        for entry in std::fs::read_dir(path)? {
            collect(&entry?.path(), files)?;
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        files.push(path.to_owned());
    }
    Ok(())
}

/// The root-level names a file's code uses, with their lines: `crate::X`, `crate::{X, Y::…}`,
/// and `super::…::X` with `depth` `super`s.
pub fn uses_in(text: &str, depth: usize) -> Vec<(usize, String)> {
    let root = "super::".repeat(depth);
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let next = lines.get(i + 1).copied().unwrap_or_default();
        if line.starts_with("#[cfg(test)]") && next.starts_with("mod ") && next.ends_with('{') {
            break;
        }
        let code = line.split("//").next().unwrap_or_default();
        for prefix in ["crate::", root.as_str()] {
            let mut from = 0;
            while let Some(offset) = code[from..].find(prefix) {
                let at = from + offset;
                from = at + prefix.len();
                // Part of a longer path (`a::crate::`, a `super::` after another) or a name.
                let before = code[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                    || code[from..].starts_with("super::")
                {
                    continue;
                }
                found.extend(names_at(&code[from..]).into_iter().map(|n| (i + 1, n)));
            }
        }
    }
    found
}

/// The first name of a path (`X::…`), or each first name of a group (`{X, Y::…}`).
fn names_at(rest: &str) -> Vec<String> {
    let ident = |s: &str| s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident(rest)].into_iter().filter(|n| !n.is_empty()).collect();
    };
    let (mut depth, mut names, mut start) = (0, Vec::new(), 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                names.push(ident(&group[start..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                names.push(ident(&group[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// Each cycle of `graph` as a path that returns to its start (`a → b → a`), one per strongly
/// connected set of modules, with where each step happens.
pub fn cycles(graph: &Graph) -> Vec<Vec<(String, Place)>> {
    let mut found: Vec<Vec<(String, Place)>> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for start in graph.keys() {
        if seen.contains(start) {
            continue;
        }
        if let Some(path) = path_back(graph, start) {
            seen.extend(path.iter().map(|(name, _)| name.clone()));
            found.push(path);
        }
    }
    found
}

/// The shortest path of uses from `start` back to it (breadth first), if there is one.
fn path_back(graph: &Graph, start: &str) -> Option<Vec<(String, Place)>> {
    let mut came_from: BTreeMap<&str, (&str, &Place)> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        for (next, place) in graph.get(at).into_iter().flatten() {
            if next == start {
                let mut path = vec![(at.to_owned(), place.clone())];
                let mut step = at;
                while step != start {
                    let (prev, place) = came_from[step];
                    path.push((prev.to_owned(), place.clone()));
                    step = prev;
                }
                path.reverse();
                return Some(path);
            }
            if !came_from.contains_key(next.as_str()) && next != start {
                came_from.insert(next, (at, place));
                queue.push_back(next);
            }
        }
    }
    None
}

/// Fail when a crate in [`ACYCLIC`] has a module cycle, naming each step and where it happens.
pub fn check(root: &Path) -> Result<()> {
    let mut report = Vec::new();
    for krate in ACYCLIC {
        for cycle in cycles(&graph(&root.join("host").join(krate).join("src"))?) {
            let steps: Vec<String> = cycle
                .iter()
                .enumerate()
                .map(|(i, (from, (file, line)))| {
                    let to = cycle.get(i + 1).map_or(&cycle[0].0, |(next, _)| next);
                    format!("{from} → {to} ({file}:{line})")
                })
                .collect();
            report.push(format!("host/{krate}: {}", steps.join(", ")));
        }
    }
    anyhow::ensure!(
        report.is_empty(),
        "module cycles (each module should need the next, never back):\n{}",
        report.join("\n")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uses_are_read_from_paths_groups_and_supers_but_not_comments_or_tests() {
        let text = "use crate::a::X;\nuse crate::{b, c::{D, E}};\n// crate::f::G\nuse super::h::I;\n\
                    fn x() { super::super::j::K; }\n#[cfg(test)]\nmod tests {\n    use crate::z;\n}\n";
        let names: Vec<String> = uses_in(text, 1).into_iter().map(|(_, n)| n).collect();
        assert_eq!(names, ["a", "b", "c", "h"]);
        let deeper: Vec<String> = uses_in(text, 2).into_iter().map(|(_, n)| n).collect();
        assert_eq!(deeper, ["a", "b", "c", "j"], "two levels down, super::super:: is the root");
    }

    #[test]
    fn a_cycle_is_found_and_a_chain_is_not() {
        let place = |n: usize| ("x.rs".to_owned(), n);
        let mut graph = Graph::new();
        graph.entry("a".into()).or_default().insert("b".into(), place(1));
        graph.entry("b".into()).or_default().insert("c".into(), place(2));
        graph.entry("c".into()).or_default();
        assert!(cycles(&graph).is_empty(), "a → b → c is a chain");
        graph.entry("c".into()).or_default().insert("a".into(), place(3));
        let found = cycles(&graph);
        assert_eq!(found.len(), 1, "{found:?}");
        let names: Vec<&str> = found[0].iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(found[0][2].1, place(3), "c → a, where it happens");
    }

    #[test]
    fn the_crates_that_must_be_acyclic_are() {
        check(&crate::root()).unwrap();
    }

    #[test]
    fn a_crate_on_disk_with_a_cycle_fails() {
        let dir = std::env::temp_dir().join(format!("xtask-modules-{}", std::process::id()));
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("b")).unwrap();
        std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
        std::fs::write(src.join("a.rs"), "use crate::b::Thing;\n").unwrap();
        std::fs::write(src.join("b/mod.rs"), "mod inner;\n").unwrap();
        std::fs::write(src.join("b/inner.rs"), "use super::super::a::Other;\n").unwrap();
        let found = cycles(&graph(&src).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0][1].1, ("b/inner.rs".to_owned(), 1));
    }
}
