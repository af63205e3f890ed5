//! What the host reads of a locustfile before any instance (issue 42): the imports no run could
//! load, refused (a locustfile written for Locust's process: gevent, its own HTTP libraries,
//! processes), and the `LoadTestShape` whose ticks `run` plans as stages. The Python runner
//! refuses the same imports when it loads the script (as its setup failing, exit 4); found here
//! the refusal is a usage error, exit 2, with no load. Only the entry file is read: its own
//! modules' imports are left to the runner.

use std::path::Path;

/// Modules that cannot run in a sandboxed worker, and what to do instead. The Python runner's
/// `CANNOT_MAP` names the same modules (a test keeps the two lists one).
pub const CANNOT_IMPORT: [(&str, &str); 4] = [
    (
        "gevent",
        "a worker is one Locust user and the host runs them concurrently; drop the gevent calls \
         (gevent.sleep is the user's wait_time or loadhost.sleep, a pool of greenlets is more -w)",
    ),
    ("geventhttpclient", "requests go through the host's client: use self.client (FastHttpUser maps to it)"),
    ("requests", "requests go through the host's client: use self.client (an HttpUser) or loadhost.http"),
    ("multiprocessing", "a worker runs one task at a time; run more workers (-w) instead of processes"),
];

/// The first line of the Python script `entry` that no run could load, as `FILE:LINE: …`.
pub fn unloadable(entry: &Path) -> Option<String> {
    let (name, text) = crate::k6_options::script_text(entry, loadhost_component::script::Language::Python)?;
    unloadable_in(&name, &text)
}

fn unloadable_in(name: &str, text: &str) -> Option<String> {
    for (i, line) in text.lines().enumerate() {
        let at = format!("{name}:{}", i + 1);
        // Only statements at the top level: an import inside a function may never run.
        if let Some(module) = imported(line) {
            let top = module.split('.').next().unwrap_or(module);
            if let Some((_, why)) = CANNOT_IMPORT.iter().find(|(m, _)| *m == top) {
                return Some(format!("{at}: cannot import '{module}': {why}"));
            }
        }
    }
    None
}

/// The module a top-level `import X` / `from X import …` line names.
fn imported(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("import ").or_else(|| line.strip_prefix("from "))?;
    let module = rest.split([' ', ',', ';']).next()?.trim();
    (!module.is_empty() && !module.starts_with('.')).then_some(module)
}

/// Where the Python script `entry` defines a `LoadTestShape` (`FILE:LINE`), and its class.
pub fn shape(entry: &Path) -> Option<(String, String)> {
    let (name, text) = crate::k6_options::script_text(entry, loadhost_component::script::Language::Python)?;
    shape_in(&name, &text)
}

fn shape_in(name: &str, text: &str) -> Option<(String, String)> {
    text.lines()
        .enumerate()
        .find_map(|(i, line)| load_shape(line).map(|class| (format!("{name}:{}", i + 1), class.to_owned())))
}

/// The class a top-level `class X(…LoadTestShape…):` line defines.
fn load_shape(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("class ")?;
    let (class, bases) = rest.split_once('(')?;
    let bases = bases.split(')').next()?;
    bases.split(',').any(|b| b.trim().rsplit('.').next() == Some("LoadTestShape")).then_some(class.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gevent_is_refused_and_a_load_shape_found_with_their_line() {
        let file = "from locust import HttpUser\nimport gevent.pool\n";
        let said = unloadable_in("locustfile.py", file).expect("refused");
        assert!(
            said.starts_with("locustfile.py:2: cannot import 'gevent.pool': a worker is one Locust user"),
            "{said}"
        );
        let file = "import locust\n\nclass Steps(locust.LoadTestShape):\n    pass\n";
        assert_eq!(unloadable_in("f.py", file), None, "a shape is planned, not refused");
        assert_eq!(shape_in("f.py", file), Some(("f.py:3".to_owned(), "Steps".to_owned())));
        assert_eq!(shape_in("f.py", "class Steps(HttpUser):\n    pass\n"), None);
    }

    #[test]
    fn what_a_script_may_import_passes() {
        let file = "import json\nfrom locust import HttpUser, task\nfrom .helpers import x\nimport random, time\n\
                    def f():\n    import gevent\nclass User(HttpUser):\n    pass\n# import requests\n";
        assert_eq!(unloadable_in("ok.py", file), None);
    }

    #[test]
    fn the_runner_refuses_the_same_modules() {
        let runner = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk/python/runner/loadhost_runner.py"),
        )
        .expect("the Python runner's source");
        let start = runner.find("CANNOT_MAP = {").expect("CANNOT_MAP in the runner");
        let body = &runner[start..start + runner[start..].find("\n}").expect("its end")];
        let theirs: Vec<&str> = body.lines().filter_map(|l| l.trim().strip_prefix('"')?.split('"').next()).collect();
        let ours: Vec<&str> = CANNOT_IMPORT.iter().map(|(m, _)| *m).collect();
        assert_eq!(theirs, ours);
    }
}
