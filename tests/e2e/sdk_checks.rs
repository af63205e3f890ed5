//! The SDKs' own checks, alike in every language, on the `debugging` fixtures
//! (`plugins/debugging{,-python,-js,-c}`): a metric value that is not a number names the call, a
//! setting that does not parse is refused naming it (the option each declares), a Python or JavaScript exception names its
//! type, message and the plugin's line, and a Rust panic or a C trap names its cause and place. A
//! language whose toolchain is absent (`sdk/LANG/toolchain.sh check`) is skipped, with a note.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::{Example, Loadhost, Run, assert_identity, root, task_count, twin};

const LANGS: [&str; 4] = ["rust", "python", "js", "c"];

/// The fixture of `lang`, or None (with a note) when its toolchain is absent.
fn fixture(lang: &str) -> Option<PathBuf> {
    let example = match lang {
        "rust" => Example::Debugging,
        "python" => Example::DebuggingPython,
        "js" => Example::DebuggingJs,
        "c" => Example::DebuggingC,
        _ => unreachable!("no debugging example in {lang}"),
    };
    twin(lang, example)
}

/// The number of the line of the fixture's `file` that ends with the comment `marker`.
fn line_of(file: &str, marker: &str) -> usize {
    let path = root().join("plugins").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let found = text.lines().position(|line| line.trim_end().ends_with(marker));
    found.unwrap_or_else(|| panic!("{} has no line ending with {marker:?}", path.display())) + 1
}

fn run(lang: &str, args: &[&str]) -> Option<Run> {
    let fixture = fixture(lang)?;
    Some(Loadhost::run_plugin(&fixture, args))
}

fn assert_says(run: &Run, lang: &str, text: &str) {
    assert!(run.stderr.contains(text), "{lang}: the terminal should say {text:?}:\n{}", run.stderr);
}

#[test]
fn a_metric_value_that_is_not_a_number_fails_naming_the_call() {
    for lang in LANGS {
        let Some(run) = run(lang, &["-e", "MODE=bad-metric", "-n", "2", "-w", "1"]) else { continue };
        // Every task fails on the bad call, so the run fails closed (no task passed).
        assert_eq!(run.code, 98, "{lang}: {}", run.stderr);
        let s = run.summary();
        assert_identity(&s);
        assert_eq!(s["metrics"].get("t"), None, "{lang}: the bad sample is not recorded: {}", s["metrics"]);
        match lang {
            "python" => {
                assert_eq!(task_count(&s, "failed"), 2, "{lang}: {}", s["tasks"]);
                let line = line_of("debugging-python/app.py", "# the bad metric");
                let text = format!(
                    "a task failed on worker 0: TypeError: metrics.trend('t', '6.4ms'): value must be a finite \
                     number, got str '6.4ms' (app.py:{line})"
                );
                assert_says(&run, lang, &text);
            }
            "js" => {
                assert_eq!(task_count(&s, "failed"), 2, "{lang}: {}", s["tasks"]);
                let line = line_of("debugging-js/plugin.js", "// the bad metric");
                let text = format!(
                    "a task failed on worker 0: TypeError: metrics.trend('t', '6.4ms'): value must be a finite \
                     number, got string '6.4ms' (plugin.js:{line})"
                );
                assert_says(&run, lang, &text);
            }
            "c" => {
                assert_eq!(task_count(&s, "failed"), 2, "{lang}: {}", s["tasks"]);
                assert_says(
                    &run,
                    lang,
                    "a task failed on worker 0: loadhost_trend(\"t\", nan): value must be a finite number",
                );
            }
            _ => {
                // A Rust plugin panics, so the task traps; the panic hook's line names the plugin's call.
                assert_eq!(task_count(&s, "trapped"), 2, "{lang}: {}", s["tasks"]);
                let line = line_of("debugging/src/lib.rs", "// the bad metric");
                assert_says(&run, lang, &format!("panicked at debugging/src/lib.rs:{line}:"));
                assert_says(&run, lang, "metrics::trend(\"t\", NaN): value must be a finite number");
            }
        }
    }
}

#[test]
fn a_setting_that_does_not_parse_is_refused_before_any_load_alike_in_every_sdk() {
    // Each twin declares DELAY_MS an int (in its SDK's way), so loadhost refuses the run before
    // anything is compiled or sent, in the same words; the SDKs' own abort of a value that does not
    // parse (for an older host, or a setting read without a declaration) is in their unit suites.
    for lang in LANGS {
        let Some(run) = run(lang, &["-e", "DELAY_MS=abc", "-n", "5", "-w", "1"]) else { continue };
        assert_eq!(run.code, 2, "{lang}: a refused run exits 2\n{}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{lang}: {}", run.stderr);
        assert_says(&run, lang, ": -e DELAY_MS: expected an integer (int: wait this many milliseconds in each task); ");
        assert!(
            !run.stderr.contains("=abc") && !run.stderr.contains("'abc'") && run.stdout.is_empty(),
            "{lang}: {}",
            run.stderr
        );
        assert!(!run.dir.path().join("summary.json").exists(), "{lang}: nothing ran");
    }
}

#[test]
fn python_and_js_exceptions_name_type_message_and_the_plugins_line() {
    // Segment 3 of 4 of four tasks is iteration 3 alone: the one with the bug.
    let args = ["-n", "4", "--segment", "3/4"];
    let cases = [
        ("python", "IndexError: list index out of range", "app.py", "debugging-python/app.py", "# the bug"),
        (
            "js",
            "TypeError: can't access property \"total\", orders[i] is undefined",
            "plugin.js",
            "debugging-js/plugin.js",
            "// the bug",
        ),
    ];
    for (lang, error, file, source, marker) in cases {
        let Some(run) = run(lang, &args) else { continue };
        assert_eq!(run.code, 98, "{lang}: its one task failed: {}", run.stderr);
        let s = run.summary();
        assert_eq!((task_count(&s, "scheduled"), task_count(&s, "failed")), (1, 1), "{lang}: {}", s["tasks"]);
        let line = line_of(source, marker);
        assert_says(&run, lang, &format!("a task failed on worker 0: {error} ({file}:{line})"));
        assert!(!run.stderr.contains("<wasm function") && !run.stderr.contains("lib/"), "{lang}: {}", run.stderr);
    }
}

#[test]
fn a_rust_panic_and_a_c_trap_name_their_cause_and_place() {
    let args = ["-n", "4", "--segment", "3/4"];
    if let Some(run) = run("rust", &args) {
        assert_eq!(task_count(&run.summary(), "trapped"), 1, "{}", run.stderr);
        let line = line_of("debugging/src/lib.rs", "// the bug");
        let panic =
            format!("panicked at debugging/src/lib.rs:{line}:31: index out of bounds: the len is 0 but the index is 3");
        assert_says(&run, "rust", &panic);
    }
    if let Some(run) = run("c", &args) {
        assert_eq!(task_count(&run.summary(), "trapped"), 1, "{}", run.stderr);
        // The name section is kept, so the trap names the function that divided by zero.
        assert_says(&run, "c", "integer divide by zero");
        assert_says(&run, "c", "average_basket");
    }
}

#[test]
fn the_four_fixtures_end_their_tasks_alike() {
    // Iterations 0-9: 1, 2, 6 and 7 fail with their message, 3 is the bug, the other five pass.
    for lang in LANGS {
        let Some(run) = run(lang, &["-n", "10", "-w", "1"]) else { continue };
        assert_eq!(run.code, 0, "{lang}: {}", run.stderr);
        let s: Value = run.summary();
        // The bug traps in Rust and C (the instance is replaced) and fails the task in Python and JS.
        let expected = if matches!(lang, "rust" | "c") { (5, 4, 1) } else { (5, 5, 0) };
        let counts = (task_count(&s, "passed"), task_count(&s, "failed"), task_count(&s, "trapped"));
        assert_eq!(counts, expected, "{lang}: (passed, failed, trapped) {}", s["tasks"]);
        assert_says(&run, lang, "a task failed on worker 0: upstream said 503 for order 1");
    }
}
