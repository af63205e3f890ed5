//! A script as a new user meets it: `loadhost new NAME --lang python|js`, then `loadhost run` of
//! the generated script, on a machine where no toolchain can be found (no `python3` or `node` on
//! `PATH`, an empty toolchains folder, a home without caches): the runner in the binary is all it
//! takes. The runners' own behaviour is in runner_python.rs and runner_js.rs.

use crate::common::{Loadhost, Run, assert_identity, assert_ok, task_count};
use crate::target_process::TargetProcess;

/// `loadhost ARGS…` with every toolchain out of reach.
fn without_toolchains(args: &[&str]) -> Run {
    let empty = tempfile::tempdir().expect("a temp dir");
    Loadhost::new()
        .env("PATH", "")
        .env("HOME", empty.path())
        .env("XDG_CACHE_HOME", empty.path())
        .env("LOADHOST_TOOLCHAINS", empty.path())
        .args(args)
        .run()
}

fn generated_script_runs_and_an_edit_shows(lang: &str, entry: &str) {
    let target = TargetProcess::start(&[]);
    // `new` makes the project in its run's folder, which lives as long as `made`.
    let made = Loadhost::new().args(["new", "shop", "--lang", lang]).run();
    assert_eq!(made.code, 0, "{}", made.stderr);
    let script = made.dir.path().join("shop").join(entry);
    let script_arg = script.to_str().expect("a UTF-8 path");
    let url = format!("TARGET_URL={}/", target.url);
    let args = ["run", script_arg, "-e", &url, "--allow-host", &target.authority, "-n", "20", "-w", "2"];
    let summary = ["--summary-json", "summary.json"];

    let run = without_toolchains(&[&args[..], &summary[..]].concat());
    assert_ok(&run);
    let s = run.summary();
    assert_identity(&s);
    assert_eq!(task_count(&s, "passed"), 20, "{lang}: {}", s["tasks"]);
    assert_eq!(s["checks"]["status is 200"]["passes"], 20, "{lang}: {}", s["checks"]);

    // The edit shows on the next run, and nothing is compiled for it.
    let text = std::fs::read_to_string(&script).expect("the script");
    std::fs::write(&script, text.replace("status is 200", "status was 200")).expect("the edit");
    let run = without_toolchains(&[&args[..], &summary[..]].concat());
    assert_ok(&run);
    let s = run.summary();
    assert_eq!(s["checks"]["status was 200"]["passes"], 20, "{lang}: {}", s["checks"]);
    assert!(run.stderr.contains("from the compile cache"), "{lang}: {}", run.stderr);

    // And it builds into the component to share, with no toolchain either.
    let out = made.dir.path().join("shop.wasm");
    let built = without_toolchains(&["build", script_arg, "-o", out.to_str().expect("UTF-8")]);
    assert_eq!(built.code, 0, "{lang}: {}", built.stderr);
    let run = without_toolchains(&[&["run", out.to_str().expect("UTF-8")][..], &args[2..], &summary[..]].concat());
    assert_ok(&run);
    assert_eq!(run.summary()["checks"]["status was 200"]["passes"], 20);
}

#[test]
fn a_new_python_script_runs_as_generated_without_any_toolchain() {
    generated_script_runs_and_an_edit_shows("python", "app.py");
}

#[test]
fn a_new_js_script_runs_as_generated_without_any_toolchain() {
    generated_script_runs_and_an_edit_shows("js", "plugin.js");
}
