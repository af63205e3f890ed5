//! The `-e` options a plugin declares (`loadhost:options`): `loadhost run` refuses a required one
//! missing or a value of the wrong type before any load, warns about a key no option has with the
//! name it most likely meant, and hands the plugin its values typed, the defaults from the
//! declaration; `loadhost inspect` lists them. In every SDK's way of declaring them.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Example, Fixture, Loadhost, Run, assert_ok, fixture, plugin};
use crate::target_process::TargetProcess;

/// The Rust fixture that declares one option of each type (`TARGET_URL:url!`,
/// `BLOB_BYTES:int=1024`, `PAUSE:duration=250ms`, `RATIO:float=0.5`, `VERBOSE:bool=false`,
/// `LABEL:string`) and records what it read as gauges.
const DECLARING: Fixture = Fixture::Options;

fn run(target: &TargetProcess, args: &[&str]) -> Run {
    let mut all = vec!["-n", "3", "--allow-host", target.authority.as_str()];
    all.extend_from_slice(args);
    Loadhost::run_plugin(&fixture(DECLARING), &all)
}

/// The gauges the fixture recorded: what the SDK read, typed.
fn read(run: &Run) -> [f64; 5] {
    let m = &run.summary()["metrics"];
    ["blob_bytes", "pause_ms", "ratio", "verbose", "label_given"]
        .map(|name| m[name]["value"].as_f64().unwrap_or_else(|| panic!("{name}: {m}")))
}

#[test]
fn a_mistyped_option_warns_with_the_name_meant_and_the_run_goes_on() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/", target.url);
    let run = run(&target, &["-e", &url, "-e", "BLOB_BYTE=64", "-e", "SOMETHING_ELSE=1", "-e", "ratio=0.9"]);
    assert_ok(&run);
    let warned: Vec<&str> = run.stderr.lines().filter(|l| l.contains("no such option")).collect();
    assert_eq!(warned.len(), 3, "one warning per key no option has: {}", run.stderr);
    assert!(
        warned[0].ends_with("-e BLOB_BYTE: the plugin declares no such option: did you mean BLOB_BYTES?"),
        "{warned:?}"
    );
    assert!(
        warned[1].ends_with(
            "-e SOMETHING_ELSE: the plugin declares no such option (its options: TARGET_URL, BLOB_BYTES, PAUSE, RATIO, VERBOSE, LABEL); it is passed on all the same"
        ),
        "{warned:?}"
    );
    assert!(warned[2].ends_with("-e ratio: the plugin declares no such option: did you mean RATIO?"), "{warned:?}");
    assert!(warned.iter().all(|l| l.contains("WARN")), "warnings, not errors: {warned:?}");
    assert_eq!(read(&run), [1024.0, 250.0, 0.5, 0.0, 0.0], "the mistyped keys reached no option: the defaults");
    assert!(!run.stderr.contains("=64"), "no value is echoed: {}", run.stderr);
}

#[test]
fn declared_values_reach_the_plugin_typed_and_the_defaults_come_from_the_declaration() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/", target.url);
    let defaults = run(&target, &["-e", &url]);
    assert_ok(&defaults);
    assert!(!defaults.stderr.contains("WARN"), "every key is declared: {}", defaults.stderr);
    assert_eq!(read(&defaults), [1024.0, 250.0, 0.5, 0.0, 0.0]);
    let given = run(
        &target,
        &[
            "-e",
            &url,
            "-e",
            "BLOB_BYTES= 2048 ",
            "-e",
            "PAUSE=1m1.5s",
            "-e",
            "RATIO=1e-1",
            "-e",
            "VERBOSE=Yes",
            "-e",
            "LABEL=",
        ],
    );
    assert_ok(&given);
    assert_eq!(read(&given), [2048.0, 61_500.0, 0.1, 1.0, 1.0]);
}

#[test]
fn a_required_option_missing_exits_2_before_any_load() {
    let target = TargetProcess::start(&[]);
    let run = run(&target, &["-e", "BLOB_BYTES=64", "--rate", "100", "-d", "2s"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let plugin = fixture(DECLARING).display().to_string();
    assert_eq!(
        run.stderr.trim(),
        format!(
            "error: {plugin}: -e TARGET_URL is required (url: the page to GET); loadhost inspect {plugin} lists its options"
        ),
        "one line naming the option, its type and its help"
    );
    assert!(run.stdout.is_empty() && !run.dir.path().join("summary.json").exists(), "no run: {}", run.stdout);
    assert_eq!(target.stats()["requests"].as_u64(), Some(1), "the target saw no request but this /stats");
}

#[test]
fn values_of_the_wrong_type_exit_2_each_named_and_none_echoed() {
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/", target.url);
    let run = run(&target, &["-e", &url, "-e", "BLOB_BYTES=64k", "-e", "PAUSE=5", "-e", "VERBOSE=sometimes"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    for says in [
        ": -e BLOB_BYTES: expected an integer (int: bytes in each blob); ",
        "; -e PAUSE: expected a duration such as 500ms, 5s, 1.5m, 2h or 1m30s (duration: the think time, recorded, never slept); ",
        "; -e VERBOSE: expected a boolean (true/false, 1/0, yes/no, on/off) (bool: say what's read); loadhost inspect",
    ] {
        assert!(lines[0].contains(says), "{says} in: {}", lines[0]);
    }
    assert!(!lines[0].contains("64k") && !lines[0].contains("sometimes"), "the values stay out: {}", lines[0]);
    let bad_url = Loadhost::run_plugin(&fixture(DECLARING), &["-n", "1", "-e", "TARGET_URL=127.0.0.1:8080"]);
    assert_eq!(bad_url.code, 2, "{}", bad_url.stderr);
    assert!(
        bad_url
            .stderr
            .contains("-e TARGET_URL: expected an absolute URL such as http://127.0.0.1:8080/ (url: the page to GET)"),
        "{}",
        bad_url.stderr
    );
    assert_eq!(target.stats()["requests"].as_u64(), Some(1), "the target saw no request but this /stats");
}

#[test]
fn an_env_file_and_a_passed_through_key_count_as_given() {
    let target = TargetProcess::start(&[]);
    let cmd = Loadhost::new();
    std::fs::write(cmd.path().join("run.env"), format!("# the target\nTARGET_URL={}/\n", target.url)).unwrap();
    let from_file = cmd
        .arg_run(&fixture(DECLARING), &["-n", "2", "--allow-host", &target.authority, "--env-file", "run.env"])
        .run();
    assert_ok(&from_file);
    let passed = Loadhost::new()
        .env("TARGET_URL", format!("{}/", target.url))
        .env("BLOB_BYTES", "7")
        .arg_run(
            &fixture(DECLARING),
            &["-n", "2", "--allow-host", &target.authority, "-e", "TARGET_URL", "-e", "BLOB_BYTES"],
        )
        .run();
    assert_ok(&passed);
    assert_eq!(read(&passed)[0], 7.0, "-e KEY passes loadhost's own value, typed");
}

#[test]
fn a_plugin_that_declares_no_options_gets_neither_check() {
    // The metrics fixture reads no setting and declares none: any key goes to it unremarked.
    let run = Loadhost::run_plugin(&fixture(Fixture::Metrics), &["-n", "2", "-e", "BLOB_BYTE=1", "-e", "ANYTHING=x"]);
    assert_ok(&run);
    assert!(!run.stderr.contains("no such option") && !run.stderr.contains("WARN"), "{}", run.stderr);
    let i = inspect_json(&fixture(Fixture::Metrics));
    assert_eq!((&i["options"], &i["options_error"]), (&json!([]), &Value::Null));
}

#[test]
fn in_a_run_of_several_plugins_each_is_checked_and_a_key_is_one_none_declares() {
    let scenarios = |second: &Path| {
        format!(
            "workers = 1\niterations = 4\n\n[[scenario]]\nname = \"sleepy\"\n\n[[scenario]]\nname = \"other\"\nplugin = \"{}\"\n",
            second.display()
        )
    };
    let with = |main: Example, second: &Path, env: &[&str]| -> Run {
        let cmd = Loadhost::new();
        std::fs::write(cmd.path().join("run.toml"), scenarios(second)).unwrap();
        let mut args = vec!["-c", "run.toml"];
        for pair in env {
            args.extend(["-e", pair]);
        }
        cmd.arg_run(&plugin(main), &args).run()
    };
    // sleep declares SLEEP_MS, trap TRAP_EVERY: each key is one plugin's, the typo is neither's.
    let both = with(Example::Sleep, &plugin(Example::Trap), &["SLEEP_MS=1", "TRAP_EVERY=100", "TRAP_EVRY=3"]);
    assert_ok(&both);
    let warned: Vec<&str> = both.stderr.lines().filter(|l| l.contains("WARN -e")).collect();
    assert_eq!(warned.len(), 1, "{}", both.stderr);
    assert!(
        warned[0].ends_with("-e TRAP_EVRY: no plugin of the run declares it: did you mean TRAP_EVERY?"),
        "{warned:?}"
    );
    // noop declares nothing, so it may read any key: none is warned about.
    let open = with(Example::Noop, &plugin(Example::Trap), &["TRAP_EVRY=3"]);
    assert_ok(&open);
    assert!(!open.stderr.contains("WARN -e"), "{}", open.stderr);
    // The second plugin's required option is checked as the first's would be.
    let required = with(Example::Sleep, &fixture(DECLARING), &["SLEEP_MS=1"]);
    assert_eq!(required.code, 2, "{}", required.stderr);
    let named = fixture(DECLARING).display().to_string();
    assert!(
        required
            .stderr
            .trim()
            .starts_with(&format!("error: {named}: -e TARGET_URL is required (url: the page to GET)")),
        "{}",
        required.stderr
    );
}

fn inspect_json(plugin: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_loadhost")).arg("inspect").arg("--json").arg(plugin).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("inspect --json prints JSON")
}

fn inspect_text(plugin: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_loadhost")).arg("inspect").arg(plugin).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn inspect_lists_the_declared_options_as_text_and_json() {
    let i = inspect_json(&fixture(DECLARING));
    assert_eq!(
        i["options"][0],
        json!({ "name": "TARGET_URL", "type": "url", "required": true, "default": null, "help": "the page to GET" })
    );
    assert_eq!(
        i["options"][1],
        json!({ "name": "BLOB_BYTES", "type": "int", "required": false, "default": "1024", "help": "bytes in each blob" })
    );
    assert_eq!(
        i["options"][3],
        json!({ "name": "RATIO", "type": "float", "required": false, "default": "0.5", "help": "" })
    );
    assert_eq!(i["options"].as_array().map(Vec::len), Some(6));
    let text = inspect_text(&fixture(DECLARING));
    assert!(
        text.contains(concat!(
            "  options declared (-e NAME=VALUE; loadhost run checks them before any load):\n",
            "    TARGET_URL (url, required): the page to GET\n",
            "    BLOB_BYTES (int, default 1024): bytes in each blob\n",
            "    PAUSE (duration, default 250ms): the think time, recorded, never slept\n",
            "    RATIO (float, default 0.5)\n",
            "    VERBOSE (bool, default false): say what's read\n",
            "    LABEL (string): a label for the run (none: unlabelled)\n",
        )),
        "{text}"
    );
    assert!(
        inspect_text(&fixture(Fixture::Metrics))
            .contains("  options declared: none (loadhost run passes any -e to it unchecked)\n")
    );
}

/// The `http-get` example in each language.
const HTTP_GET: [Example; 4] = [Example::HttpGet, Example::HttpGetPython, Example::HttpGetJs, Example::HttpGetC];

#[test]
fn every_sdk_declares_the_examples_options_and_each_run_is_checked() {
    for example in HTTP_GET {
        let name = example.name();
        let i = inspect_json(&plugin(example));
        assert_eq!(
            i["options"],
            json!([{ "name": "TARGET_URL", "type": "url", "required": false, "default": "http://127.0.0.1:8080/", "help": "the page to GET" }]),
            "{name}: {i}"
        );
        // A mistyped key and a value of the wrong type: the warning, then the refusal, before any
        // compile (so this takes no time for the Python and JavaScript components).
        let run = Loadhost::run_plugin(
            &plugin(example),
            &["-n", "1", "-e", "TARGET_UR=http://h/", "-e", "TARGET_URL=localhost"],
        );
        assert_eq!(run.code, 2, "{name}: {}", run.stderr);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{name}: {}", run.stderr);
        assert!(
            lines[0].ends_with("-e TARGET_UR: the plugin declares no such option: did you mean TARGET_URL?"),
            "{name}: {}",
            lines[0]
        );
        assert!(
            lines[1].contains(
                ": -e TARGET_URL: expected an absolute URL such as http://127.0.0.1:8080/ (url: the page to GET); "
            ),
            "{name}: {}",
            lines[1]
        );
    }
}
