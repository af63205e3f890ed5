//! The Python runner (`sdk/python/build-runner.sh`, built into `target/runners/python.wasm` by
//! `cargo xtask runners` and carried by the loadhost binary): an unbuilt script from
//! `tests/scripts/python/`, run as a user runs one, `loadhost run journey.py`. The host grants the
//! script's folder read-only at `/script` and names the entry file in `LOADHOST_SCRIPT`.

use std::path::Path;
use std::sync::Once;

use serde_json::json;

use crate::common::{Loadhost, Run, assert_identity, assert_ok, root, task_count};
use crate::target_process::TargetProcess;

/// A copy of the fixture folder `tests/scripts/python/NAME` (flat), to edit or to put things
/// beside without touching the repository.
fn script_folder(name: &str) -> tempfile::TempDir {
    let copy = tempfile::tempdir().unwrap();
    let from = root().join("tests/scripts/python").join(name);
    for entry in std::fs::read_dir(&from).unwrap().flatten() {
        if entry.path().is_file() {
            std::fs::copy(entry.path(), copy.path().join(entry.file_name())).unwrap();
        }
    }
    copy
}

/// `loadhost run FOLDER/ENTRY`.
fn run_script(folder: &Path, entry: &str, args: &[&str]) -> Run {
    warm_up();
    Loadhost::run_plugin(&folder.join(entry), args)
}

/// Compile the runner into the tests' cache once, before the tests run it side by side (a first
/// compile takes 15-40 s on two cores; several at once would each take it).
fn warm_up() {
    static WARM: Once = Once::new();
    WARM.call_once(|| {
        let folder = script_folder("broken");
        let run = Loadhost::run_plugin(&folder.path().join("broken.py"), &[]);
        assert_eq!(run.code, 4, "the warm-up's broken script: {}", run.stderr);
    });
}

fn target_args(target: &TargetProcess) -> Vec<String> {
    vec!["-e".into(), format!("TARGET_URL={}/", target.url), "--allow-host".into(), target.authority.clone()]
}

#[test]
fn a_journey_runs_with_its_own_module_and_an_edit_shows_on_the_next_run() {
    let target = TargetProcess::start(&[]);
    let folder = script_folder("");
    let args = target_args(&target);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["-w", "2", "-n", "20"]);

    let run = run_script(folder.path(), "journey.py", &args);
    assert_ok(&run);
    let s = run.summary();
    assert_identity(&s);
    assert_eq!(task_count(&s, "passed"), 20, "{}", s["tasks"]);
    assert_eq!(s["checks"]["status is 200"], json!({ "passes": 20, "fails": 0 }));
    // The tag comes from steps.py, a module of the script's folder; setup printed through it.
    assert_eq!(s["metrics"]["steps{step:first}"]["count"], 20, "{}", s["metrics"]);
    assert!(run.stderr.contains("[setup] setup: hello from steps.py"), "{}", run.stderr);
    assert_eq!(target.stats()["requests"].as_u64(), Some(20 + 1), "the target saw them (and this /stats)");

    // An edit of the helper shows on the next run, and the runner is not compiled again.
    let steps = folder.path().join("steps.py");
    let edited = std::fs::read_to_string(&steps).unwrap().replace("STEP = \"first\"", "STEP = \"edited\"");
    std::fs::write(&steps, edited).unwrap();
    let run = run_script(folder.path(), "journey.py", &args);
    assert_ok(&run);
    assert_eq!(run.summary()["metrics"]["steps{step:edited}"]["count"], 20);
    assert!(run.stderr.contains("from the compile cache"), "{}", run.stderr);
}

#[test]
fn an_exception_in_a_task_names_its_type_and_the_scripts_own_line() {
    let target = TargetProcess::start(&[]);
    let folder = script_folder("");
    let args = target_args(&target);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["-e", "MODE=fail", "-n", "3"]);
    let run = run_script(folder.path(), "journey.py", &args);
    assert_eq!(task_count(&run.summary(), "failed"), 3);
    // The innermost line of the script's own code: in steps.py, not the dict lookup itself.
    let errors = run.summary()["errors"].to_string();
    assert!(errors.contains("KeyError: 'absent' (steps.py:10)"), "{errors}");

    // An import inside a task of a module the runner does not have fails that task, saying so.
    let args: Vec<&str> = ["-e", "MODE=missing", "-n", "2"].into_iter().collect();
    let run = run_script(folder.path(), "journey.py", &args);
    let errors = run.summary()["errors"].to_string();
    assert!(errors.contains("ModuleNotFoundError: the Python runner has no module 'numpy'"), "{errors}");
    assert!(errors.contains("(journey.py:29)"), "{errors}");
}

#[test]
fn a_script_that_cannot_be_loaded_stops_the_run_before_any_load_naming_the_place() {
    let folder = script_folder("broken");
    for (entry, says) in [
        ("broken.py", "SyntaxError: expected ':' (broken.py:4)"),
        ("no_do_task.py", "no_do_task.py must define a function do_task(task)"),
        (
            "imports_numpy.py",
            "ModuleNotFoundError: the Python runner has no module 'numpy': a script may import its own files",
        ),
        ("imports_numpy.py", "(imports_numpy.py:4)"),
        ("raises.py", "KeyError: 'limit' (raises.py:6)"),
    ] {
        let run = run_script(folder.path(), entry, &["-n", "5"]);
        assert_eq!(run.code, 4, "{entry}: {}", run.stderr);
        // One line, the run's only error: the setup (its first call) loaded the script.
        let errors: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{entry}: {}", run.stderr);
        assert!(errors[0].contains("the plugin's setup failed: setup returned an error: "), "{entry}: {}", errors[0]);
        assert!(errors[0].contains(says), "{entry}: expected {says:?} in\n{}", errors[0]);
    }
    // A script that is not there is the host's to refuse, before any runner starts.
    let run = run_script(folder.path(), "absent.py", &["-n", "5"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("absent.py"), "{}", run.stderr);
    // A module of the standard library the runner left out is named as such.
    std::fs::write(folder.path().join("trace.py"), "import tracemalloc\n\ndef do_task(task):\n    pass\n").unwrap();
    let run = run_script(folder.path(), "trace.py", &["-n", "1"]);
    assert!(run.stderr.contains("no standard-library module 'tracemalloc'"), "{}", run.stderr);
}

#[test]
fn a_script_reads_its_own_folder_and_nothing_else_and_writes_nowhere() {
    let parent = tempfile::tempdir().unwrap();
    let folder = parent.path().join("sandbox");
    std::fs::create_dir(&folder).unwrap();
    let fixture = script_folder("sandbox");
    for name in ["sandbox.py", "data.txt"] {
        std::fs::copy(fixture.path().join(name), folder.join(name)).unwrap();
    }
    // Beside the folder, and reachable from it through a symlink: neither may be read.
    std::fs::write(parent.path().join("outside.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(parent.path().join("outside.txt"), folder.join("link.txt")).unwrap();

    let run = run_script(&folder, "sandbox.py", &["-n", "1"]);
    assert_ok(&run);
    let checks = run.summary()["checks"].clone();
    for name in [
        "reads its own folder",
        "write in its folder refused",
        "mkdir in its folder refused",
        "read outside its folder refused",
        "read through .. refused",
        "read through a symlink out refused",
    ] {
        assert_eq!(checks[name], json!({ "passes": 1, "fails": 0 }), "{name}: {checks}");
    }
    assert!(!folder.join("written.txt").exists() && !folder.join("made").exists());
}

#[test]
fn the_standard_library_a_script_reaches_for_is_in_the_runner() {
    let folder = script_folder("stdlib");
    let run = run_script(folder.path(), "stdlib.py", &["-n", "1"]);
    assert_ok(&run);
    let checks = run.summary()["checks"].clone();
    let checks = checks.as_object().unwrap();
    assert_eq!(checks.len(), 18, "one check per module used: {checks:?}");
    for (name, counts) in checks {
        assert_eq!(counts, &json!({ "passes": 1, "fails": 0 }), "{name}");
    }
}

/// As when Python runs a script from its folder, a bare relative path is the script's own file
/// (`open("payload.json")` at the top level, as locustfiles do), and `shutil` is there.
#[test]
fn a_relative_path_is_the_scripts_own_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("payload.json"), r#"{"user": "ada"}"#).unwrap();
    std::fs::write(
        dir.path().join("relative.py"),
        "import json\nimport shutil\n\nimport loadhost\n\nwith open('payload.json') as f:\n    USER = json.load(f)['user']\n\n\n\
         def do_task(task):\n    loadhost.check('read its own file', USER == 'ada' and callable(shutil.copyfile))\n",
    )
    .unwrap();
    let run = run_script(dir.path(), "relative.py", &["-n", "2"]);
    assert_ok(&run);
    assert_eq!(run.summary()["checks"]["read its own file"], json!({ "passes": 2, "fails": 0 }));
}
