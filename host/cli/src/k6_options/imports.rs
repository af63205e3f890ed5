//! What a k6 script's entry file names that the run must know before any instance: imports no run
//! could load (a k6 module the runner lacks, an extension, a remote module other than the jslib
//! copies the runner ships), and whether it exports `handleSummary`.

use std::path::Path;

use super::script_text;

/// The k6 modules the JavaScript runner carries (`sdk/js/runner/runner.js`'s `BUILTINS`; a test
/// reads that file to keep the two lists one).
pub const K6_MODULES: [&str; 8] =
    ["k6", "k6/http", "k6/metrics", "k6/execution", "k6/data", "k6/encoding", "k6/timers", "k6/crypto"];

/// k6's remote modules the JavaScript runner ships a copy of (`sdk/js/runner/jslib.js`'s `JSLIB`; a
/// test reads that file to keep the two lists one): `https://jslib.k6.io/NAME/VERSION/index.js`.
pub const JSLIB_MODULES: [&str; 4] = ["k6-utils", "k6-summary", "k6-reporter", "url"];

/// The jslib module `specifier` names when the runner ships it (any version).
fn shipped_jslib(specifier: &str) -> Option<&'static str> {
    // k6-reporter (not a jslib module, as popular), at any branch or tag of its repository.
    if let Some(rest) = specifier.strip_prefix("https://raw.githubusercontent.com/benc-uk/k6-reporter/")
        && let Some(reference) = rest.strip_suffix("/dist/bundle.js")
        && !reference.is_empty()
        && reference.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
    {
        return Some("k6-reporter");
    }
    let rest = specifier.strip_prefix("https://jslib.k6.io/")?;
    let (name, rest) = rest.split_once('/')?;
    let (version, file) = rest.split_once('/')?;
    let versioned = version.starts_with(|c: char| c.is_ascii_digit())
        && version.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    (versioned && (file.is_empty() || file == "index.js")).then_some(())?;
    JSLIB_MODULES.into_iter().find(|m| *m == name)
}

/// The first import of the JavaScript script `entry` that no run could load, as `FILE:LINE:
/// cannot import 'X': why`: a k6 module the runner lacks, a k6 extension or a remote module. The
/// runner refuses them too (exit 4, as setup); found here, before any instance, it is a usage
/// error (exit 2) with no load. Only the entry file is read: imports of its own modules are left to
/// the runner.
pub fn unloadable_import(entry: &Path) -> Option<String> {
    let (name, text) = script_text(entry, loadhost_component::script::Language::JavaScript)?;
    unloadable_import_in(&name, &text)
}

fn unloadable_import_in(name: &str, text: &str) -> Option<String> {
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if !trimmed.starts_with("import") {
            continue;
        }
        // The specifier: the quoted string after `from`, or right after `import`.
        let rest = trimmed.rsplit_once(" from ").map_or(&trimmed["import".len()..], |(_, r)| r).trim_start();
        let Some(quote) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') else { continue };
        let Some(specifier) = rest[1..].split(quote).next() else { continue };
        let why = if shipped_jslib(specifier).is_some() {
            continue;
        } else if specifier.starts_with("http://") || specifier.starts_with("https://") {
            format!(
                "a remote module: a script fetches nothing at run time (loadhost ships k6's jslib {} of \
                 https://jslib.k6.io/); save the module in the script's folder and import it by a relative path \
                 ('./name.js')",
                JSLIB_MODULES.join(", ")
            )
        } else if specifier.starts_with("k6/x/") {
            format!(
                "k6 extensions (Go code) cannot run in loadhost's sandbox; its k6 modules are {}",
                K6_MODULES.join(", ")
            )
        } else if (specifier == "k6" || specifier.starts_with("k6/")) && !K6_MODULES.contains(&specifier) {
            format!(
                "loadhost runs k6 scripts with its own k6 modules, {}; this one is not among them (docs/migrating.md)",
                K6_MODULES.join(", ")
            )
        } else {
            continue;
        };
        return Some(format!("{name}:{}: cannot import '{specifier}': {why}", i + 1));
    }
    None
}

/// Where the JavaScript script `entry` exports k6's `handleSummary` (`FILE:LINE`): the run then
/// hands its summary to the plugin's `summary` export at the end (run/handle_summary.rs), and only
/// then, so that other scripts cost no extra instance.
pub fn handle_summary(entry: &Path) -> Option<String> {
    let (name, text) = script_text(entry, loadhost_component::script::Language::JavaScript)?;
    handle_summary_in(&name, &text)
}

fn handle_summary_in(name: &str, text: &str) -> Option<String> {
    text.lines().enumerate().find_map(|(i, line)| {
        let rest = line.trim_start().strip_prefix("export")?.trim_start();
        let rest = rest.strip_prefix("async").map_or(rest, str::trim_start);
        let exported = match rest.strip_prefix("function") {
            Some(f) => f.trim_start().starts_with("handleSummary"),
            None => rest.starts_with('{') && rest.split([',', '{', '}']).any(|n| n.trim() == "handleSummary"),
        };
        exported.then(|| format!("{name}:{}", i + 1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_no_run_could_load_are_named_with_their_line() {
        let script = "import http from 'k6/http';\nimport { sleep } from \"k6\";\nimport exec from 'k6/execution';\n\
            import { chromium } from 'k6/browser';\n";
        let said = unloadable_import_in("s.js", script).unwrap();
        assert!(
            said.starts_with("s.js:4: cannot import 'k6/browser': loadhost runs k6 scripts with its own"),
            "{said}"
        );
        let said = unloadable_import_in("s.js", "import kafka from 'k6/x/kafka';").unwrap();
        assert!(said.contains("k6 extensions (Go code)"), "{said}");
        let said =
            unloadable_import_in("s.js", "import { Httpx } from 'https://jslib.k6.io/httpx/0.1.0/index.js';").unwrap();
        assert!(said.contains("a remote module"), "{said}");
        assert_eq!(unloadable_import_in("s.js", "import { a } from './lib.js';\nimport 'k6/timers';\n"), None);
    }

    #[test]
    fn an_exported_handle_summary_is_found() {
        for script in [
            "export function handleSummary(data) {}",
            "export async function handleSummary(data) {}",
            "function handleSummary(d) {}\nexport { handleSummary, x };",
        ] {
            assert!(handle_summary_in("s.js", script).is_some(), "{script}");
        }
        assert_eq!(handle_summary_in("s.js", "\n\nexport function handleSummary(data) {"), Some("s.js:3".into()));
        assert_eq!(handle_summary_in("s.js", "function handleSummary(d) {}\nexport default function () {}"), None);
    }

    #[test]
    fn the_jslib_modules_are_the_runners() {
        let jslib =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../sdk/js/runner/jslib.js")).unwrap();
        let block = jslib.split("export const JSLIB = {").nth(1).and_then(|b| b.split("\n};").next()).unwrap();
        let listed: Vec<&str> = block
            .lines()
            .filter(|l| l.starts_with("  ") && !l.starts_with("   ") && !l.trim_start().starts_with("//"))
            .filter_map(|l| l.trim_start().split_once(':').map(|(key, _)| key.trim_matches('\'')))
            .collect();
        assert_eq!(listed, JSLIB_MODULES, "sdk/js/runner/jslib.js's JSLIB");
        assert_eq!(shipped_jslib("https://jslib.k6.io/k6-utils/1.4.0/index.js"), Some("k6-utils"));
        assert_eq!(shipped_jslib("https://jslib.k6.io/url/1.0.0/"), Some("url"));
        let reporter = "https://raw.githubusercontent.com/benc-uk/k6-reporter/2.4.0/dist/bundle.js";
        assert_eq!(shipped_jslib(reporter), Some("k6-reporter"));
        assert_eq!(shipped_jslib(&reporter.replace("2.4.0", "main")), Some("k6-reporter"));
        assert_eq!(shipped_jslib(&reporter.replace("2.4.0", "../x")), None);
        assert_eq!(shipped_jslib(&reporter.replace("bundle.js", "other.js")), None);
        for other in [
            "https://jslib.k6.io/httpx/0.1.0/index.js",
            "https://jslib.k6.io/k6-utils/latest/index.js",
            "https://jslib.k6.io/k6-utils/1.4.0/other.js",
            "http://jslib.k6.io/k6-utils/1.4.0/index.js",
        ] {
            assert_eq!(shipped_jslib(other), None, "{other}");
            assert!(unloadable_import_in("s.js", &format!("import x from '{other}';")).is_some(), "{other}");
        }
        assert_eq!(
            unloadable_import_in("s.js", "import { uuidv4 } from 'https://jslib.k6.io/k6-utils/1.4.0/index.js';"),
            None
        );
    }

    #[test]
    fn the_k6_modules_are_the_runners() {
        let runner =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../sdk/js/runner/runner.js")).unwrap();
        let listed: Vec<&str> = runner
            .lines()
            .filter_map(|l| l.trim_start().split_once(':').map(|(key, _)| key.trim().trim_matches('\'')))
            .filter(|key| *key == "k6" || key.starts_with("k6/"))
            .collect();
        assert_eq!(listed, K6_MODULES, "sdk/js/runner/runner.js's BUILTINS");
    }
}
