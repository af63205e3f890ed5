//! The JavaScript script runner (`sdk/js/runner/`, built by `sdk/js/build-runner.sh` into
//! `target/runners/js.wasm` by `cargo xtask runners` and carried by the loadhost binary): one
//! prebuilt component that runs a script from its own folder, run as a user runs one, `loadhost
//! run journey.js`. The host grants the folder read-only at `/script` and names the script in
//! `LOADHOST_SCRIPT`.

use std::path::{Path, PathBuf};
use std::sync::Once;

use serde_json::{Value, json};

use crate::common::{Loadhost, Run, assert_identity, assert_ok, root, task_count};
use crate::target_process::TargetProcess;

/// The fixtures: `journey.js` with its `helpers.js`, and `broken/`.
fn scripts() -> PathBuf {
    root().join("tests").join("scripts").join("js")
}

/// `loadhost run FOLDER/ENTRY`.
fn run_script(folder: &Path, entry: &str, args: &[&str]) -> Run {
    warm_up();
    Loadhost::run_plugin(&folder.join(entry), args)
}

/// Compile the runner into the tests' cache once, before the tests run it side by side (a first
/// compile takes 7-40 s on two cores; several at once would each take it).
fn warm_up() {
    static WARM: Once = Once::new();
    WARM.call_once(|| {
        let run = Loadhost::run_plugin(&scripts().join("broken").join("journey.js"), &[]);
        assert_eq!(run.code, 4, "the warm-up's broken script: {}", run.stderr);
    });
}

/// A folder of scripts written by the test: (name, text) pairs.
fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a folder");
        std::fs::write(&path, text).expect("a script");
    }
    dir
}

/// The run stopped before any load (setup failed, exit 4) saying `message`.
#[track_caller]
fn assert_refused(run: &Run, message: &str) {
    assert_eq!(run.code, 4, "exit code {}\nstderr: {}", run.code, run.stderr);
    assert!(run.stderr.contains(message), "expected `{message}` in:\n{}", run.stderr);
}

fn count(summary: &Value, metric: &str) -> u64 {
    summary["metrics"][metric]["count"].as_u64().unwrap_or_else(|| panic!("{metric} missing: {}", summary["metrics"]))
}

#[test]
fn a_journey_script_passes_against_the_target_with_the_module_it_imports() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}", target.url);
    let run =
        run_script(&scripts(), "journey.js", &["-e", &url, "--allow-host", &target.authority, "-n", "12", "-w", "2"]);
    assert_ok(&run);
    let s = run.summary();
    assert_identity(&s);
    assert_eq!(task_count(&s, "passed"), 12, "{}", s["tasks"]);
    // "… answered …" are the checks of helpers.js's step(): the helper module was imported and ran.
    for check in ["home answered 200", "order echoed", "status 204 answered 204"] {
        assert_eq!(s["checks"][check], json!({ "passes": 12, "fails": 0 }), "{check}: {}", s["checks"]);
    }
    assert_eq!(count(&s, "http_reqs"), 36);
    assert_eq!(count(&s, "journeys{marker:v1}"), 12);
    // init's console.log, once per worker, tagged as every plugin's printed lines are.
    let printed = format!("{}{}", run.stdout, run.stderr);
    assert!(printed.contains("[worker 1] worker 1 starts against"), "{printed}");
}

#[test]
fn an_edit_of_the_script_shows_on_the_next_run_with_no_compile() {
    let journey = std::fs::read_to_string(scripts().join("journey.js")).expect("journey.js");
    let helpers = std::fs::read_to_string(scripts().join("helpers.js")).expect("helpers.js");
    let dir = folder(&[("journey.js", &journey), ("helpers.js", &helpers)]);
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}", target.url);
    let args = ["-e", url.as_str(), "--allow-host", target.authority.as_str(), "-n", "3"];

    let first = run_script(dir.path(), "journey.js", &args);
    assert_ok(&first);
    assert_eq!(count(&first.summary(), "journeys{marker:v1}"), 3);

    let edited = journey.replace("marker: 'v1'", "marker: 'v2'");
    assert_ne!(edited, journey, "the fixture tags its counter with marker v1");
    std::fs::write(dir.path().join("journey.js"), edited).expect("the edit");
    let helpers_edited = helpers.replace("answered ${status}", "said ${status}");
    assert_ne!(helpers_edited, helpers, "the fixture names its checks `NAME answered STATUS`");
    std::fs::write(dir.path().join("helpers.js"), helpers_edited).expect("the helper's edit");

    let second = run_script(dir.path(), "journey.js", &args);
    assert_ok(&second);
    let s = second.summary();
    assert_eq!(count(&s, "journeys{marker:v2}"), 3, "{}", s["metrics"]);
    assert!(s["metrics"].get("journeys{marker:v1}").is_none(), "{}", s["metrics"]);
    assert_eq!(s["checks"]["home said 200"], json!({ "passes": 3, "fails": 0 }), "{}", s["checks"]);
    // The runner's bytes did not change, so the edit compiled nothing.
    assert!(second.stderr.contains("from the compile cache"), "{}", second.stderr);
}

#[test]
fn a_syntax_error_stops_the_run_before_any_load_naming_the_file_and_line() {
    let run = run_script(&scripts().join("broken"), "journey.js", &["-n", "5"]);
    assert_refused(&run, "journey.js:6:24: SyntaxError: Unexpected token ')'");
}

#[test]
fn a_module_that_cannot_be_loaded_says_which_import_failed_and_why() {
    let helper = "export function step() {}\n";
    for (journey, message) in [
        (
            "import { step } from './helper.js';\nexport function doTask() { step(); }\n",
            "journey.js:1: cannot import './helper.js' (helper.js): there is no such file in the script's folder",
        ),
        (
            "\nimport { stepp } from './helpers.js';\nexport function doTask() {}\n",
            "journey.js:2: './helpers.js' has no export named 'stepp' (it has step)",
        ),
        (
            "import _ from 'lodash';\nexport function doTask() {}\n",
            "journey.js:1: cannot import 'lodash': a script has no packages",
        ),
        (
            "import { step } from './helpers.js';\nexport function do_task() {}\n",
            "journey.js must export a function doTask(task)",
        ),
        (
            "import { boom } from './sub/top.js';\nexport function doTask() {}\n",
            "sub/top.js:2: RangeError: the helper refused to load",
        ),
    ] {
        let dir = folder(&[
            ("journey.js", journey),
            ("helpers.js", helper),
            ("sub/top.js", "export function boom() {}\nthrow new RangeError('the helper refused to load');\n"),
        ]);
        let run = run_script(dir.path(), "journey.js", &["-n", "2"]);
        assert_refused(&run, message);
    }
}

#[test]
fn an_exception_in_a_task_names_the_scripts_own_file_and_line() {
    let dir = folder(&[
        (
            "journey.js",
            "import { boom } from './sub/util.js';\nexport function doTask(task) {\n  boom(task.iteration);\n}\n",
        ),
        ("sub/util.js", "export function boom(i) {\n  throw new RangeError(`too big: ${i}`);\n}\n"),
    ]);
    let run = run_script(dir.path(), "journey.js", &["-n", "2"]);
    let s = run.summary();
    assert_eq!(task_count(&s, "failed"), 2, "{}", s["tasks"]);
    assert_eq!(s["errors"][0]["example"], "RangeError: too big: 0 (sub/util.js:2)", "{}", s["errors"]);
}

#[test]
fn fetch_is_a_js_error_that_names_the_sdks_get_not_a_trap() {
    // Issue 41, defect 10: fetch() trapped the instance ("unreachable … [constructor]fields").
    let dir =
        folder(&[("journey.js", "export async function doTask(task) {\n  await fetch('http://127.0.0.1:9/');\n}\n")]);
    let run = run_script(dir.path(), "journey.js", &["-n", "2"]);
    let s = run.summary();
    assert_eq!(task_count(&s, "failed"), 2, "{}", s["tasks"]);
    assert_eq!(task_count(&s, "trapped"), 0, "{}", s["tasks"]);
    let example = s["errors"][0]["example"].as_str().unwrap_or_default();
    assert!(
        example.starts_with("TypeError: fetch() is not available to a loadhost plugin")
            && example.contains("get(url).send()")
            && example.ends_with("(journey.js:2)"),
        "{}",
        s["errors"]
    );
}

#[test]
fn a_script_reads_its_own_folder_only_and_cannot_write_in_it() {
    let outside = folder(&[("secret.js", "export const secret = 'outside';\n")]);
    let inside = outside.path().join("script");

    // The loader refuses a path above the folder before asking for it.
    std::fs::create_dir_all(&inside).expect("a folder");
    std::fs::write(inside.join("journey.js"), "import { secret } from '../secret.js';\nexport function doTask() {}\n")
        .expect("a script");
    let run = run_script(&inside, "journey.js", &["-n", "1"]);
    assert_refused(&run, "journey.js:1: cannot import '../secret.js': it is outside the script's folder");

    // And the sandbox refuses the folder's handle itself: a write in it, a read above it.
    let probe = "import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';\n\
        export function doTask(task) {\n\
          const [[folder, path]] = getDirectories();\n\
          if (path !== '/script') throw new Error(`granted ${path}`);\n\
          if (task.iteration === 0n) folder.openAt({}, 'written.txt', { create: true }, { write: true });\n\
          else folder.openAt({ symlinkFollow: true }, '../secret.js', {}, { read: true });\n\
        }\n";
    std::fs::write(inside.join("journey.js"), probe).expect("a script");
    let run = run_script(&inside, "journey.js", &["-n", "2"]);
    let s = run.summary();
    assert_eq!(task_count(&s, "failed"), 2, "{}", s["tasks"]);
    let examples: Vec<&str> =
        s["errors"].as_array().expect("errors").iter().filter_map(|e| e["example"].as_str()).collect();
    assert!(examples.iter().all(|e| e.starts_with("Error: not-permitted (journey.js:")), "{examples:?}");
    assert!(!inside.join("written.txt").exists(), "the write went through");
}

#[test]
fn scripts_written_for_build_sh_run_unchanged() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/", target.url);
    let allow = ["--allow-host", target.authority.as_str()];

    // The SDK's whole surface (sdk/js/test.sh's fixture), with test.sh's expectations.
    let surface = root().join("sdk").join("js").join("test").join("surface");
    let env = ["-e", url.as_str(), "-e", "N=42", "-e", "FLAG=yes", "-e", "S=hello world"];
    let run = run_script(&surface, "plugin.js", &[&env[..], &allow[..], &["-n", "10", "-w", "1"]].concat());
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(
        (task_count(&s, "passed"), task_count(&s, "failed"), task_count(&s, "aborted")),
        (4, 6, 0),
        "{}",
        s["tasks"]
    );
    let checks = s["checks"].as_object().expect("checks");
    assert!(checks.len() >= 13, "{checks:?}");
    assert!(checks.values().all(|c| c["fails"] == 0 && c["passes"].as_u64() > Some(0)), "{checks:?}");
    assert_eq!(count(&s, "units"), 20);
    assert!(s["teardown_error"].is_null(), "{}", s["teardown_error"]);

    // Exception texts name the plugin's own files, as test.sh's checks fixture expects.
    let checks_fixture = root().join("sdk").join("js").join("test").join("checks");
    let run = run_script(&checks_fixture, "plugin.js", &["-e", "MODE=throw", "-n", "1"]);
    assert_eq!(
        run.summary()["errors"][0]["example"],
        "TypeError: can't access property \"total\", orders[0] is undefined (orders.js:4)"
    );

    // The http-get example's plugin.js as a script: its check passes on every task.
    let example = root().join("plugins").join("http-get-js");
    let run =
        run_script(&example, "plugin.js", &[&["-e", url.as_str()][..], &allow[..], &["-n", "20", "-w", "2"]].concat());
    assert_ok(&run);
    assert_eq!(run.summary()["checks"]["status is 200"], json!({ "passes": 20, "fails": 0 }));
}

/// `LOADHOST_PERF_MAP` names each wasm function for perf in `/tmp/perf-PID.map` (a profiling aid
/// for benches); without it no map is written.
#[test]
fn perf_map_names_wasm_functions_only_when_asked() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let script = dir.path().join("noop.js");
    std::fs::write(&script, "export function doTask() {}\n").expect("the script");
    for asked in [true, false] {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_loadhost"));
        command.arg("run").arg(&script).args(["-n", "1"]).stdout(std::process::Stdio::null());
        command.stderr(std::process::Stdio::null()).env_remove("LOADHOST_PERF_MAP");
        if asked {
            command.env("LOADHOST_PERF_MAP", "1");
        }
        let mut child = command.spawn().expect("loadhost starts");
        let map = std::path::PathBuf::from(format!("/tmp/perf-{}.map", child.id()));
        assert!(child.wait().expect("loadhost ends").success());
        let text = std::fs::read_to_string(&map).unwrap_or_default();
        let _ = std::fs::remove_file(&map);
        assert_eq!(text.contains("wasm[0]::function["), asked, "{}: {} bytes", map.display(), text.len());
    }
}
