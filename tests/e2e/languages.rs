//! Plugins from any language: the `http-get` example in Rust, Python, JavaScript and C against the
//! same target, `loadhost inspect` on each, every `loadhost new` template built and run, and a
//! hand-written core module run as it is (wrapped in-process).

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Example, Loadhost, assert_identity, plugin, root};
use crate::target_process::TargetProcess;

const LANGS: [&str; 4] = ["rust", "python", "js", "c"];

/// The `http-get` example in each language.
const HTTP_GETS: [(&str, Example); 4] = [
    ("rust", Example::HttpGet),
    ("python", Example::HttpGetPython),
    ("js", Example::HttpGetJs),
    ("c", Example::HttpGetC),
];

fn get_run(plugin: &Path, target: &TargetProcess, tasks: &str) -> Value {
    let url = format!("TARGET_URL={}/", target.url);
    let run = Loadhost::run_plugin(plugin, &["-e", &url, "--allow-host", &target.authority, "-n", tasks, "-w", "4"]);
    assert_eq!(run.code, 0, "{}: {}\n{}", plugin.display(), run.stderr, run.stdout);
    run.summary()
}

#[test]
fn the_four_http_get_plugins_pass_their_check_and_agree_on_counts() {
    let target = TargetProcess::start(&[]);
    let mut requests = Vec::new();
    for (lang, example) in HTTP_GETS {
        let s = get_run(&plugin(example), &target, "200");
        assert_identity(&s);
        assert_eq!(s["tasks"]["passed"], 200, "{lang}: {}", s["tasks"]);
        assert_eq!(s["checks"]["status is 200"], serde_json::json!({ "passes": 200, "fails": 0 }), "{lang}");
        requests.push((lang, s["metrics"]["http_reqs"]["count"].as_u64().unwrap_or(0)));
    }
    assert!(requests.iter().all(|(_, n)| *n == 200), "one request per task in every language: {requests:?}");
    assert_eq!(target.stats()["requests"].as_u64(), Some(4 * 200 + 1), "the target saw them all (and this /stats)");
}

fn inspect(plugin: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_loadhost")).arg("inspect").arg("--json").arg(plugin).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("inspect --json prints JSON")
}

fn names(value: &Value) -> Vec<&str> {
    value.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect()
}

#[test]
fn inspect_reads_each_example_as_the_capabilities_it_asks_for() {
    for (lang, example, twin, language, tool) in [
        ("rust", Example::HttpGet, Example::Debugging, "Rust", "rustc "),
        ("python", Example::HttpGetPython, Example::DebuggingPython, "Python", "componentize-py"),
        ("js", Example::HttpGetJs, Example::DebuggingJs, "JavaScript", "ComponentizeJS "),
        ("c", Example::HttpGetC, Example::DebuggingC, "C", "clang "),
    ] {
        let i = inspect(&plugin(example));
        assert_eq!(i["language"], language, "{lang}: {i}");
        let toolchain = i["toolchain"].as_str().unwrap_or_default();
        assert!(toolchain.starts_with(language) && toolchain.contains(tool), "{lang}: {toolchain}");
        assert_eq!(i["sha256"].as_str().unwrap().len(), 64);
        // The plugin's interface only: no toolchain export (componentize-py's `exports`).
        assert_eq!(names(&i["exports"]), ["loadhost:plugin/lifecycle@0.1.0", "loadhost:plugin/doer@0.1.0"], "{lang}");
        assert!(names(&i["capabilities"]).contains(&"network: http via the host"), "{lang}");
        assert_eq!(i["metrics"], json!([{ "name": "status is 200", "kind": "rate", "tags": [] }]), "{lang}: {i}");
        // The debugging twins declare a trend and a tagged counter, each in its language's way.
        let d = inspect(&plugin(twin));
        assert_eq!(d["language"], language, "{twin}");
        assert_eq!(
            d["metrics"],
            json!([
                { "name": "journey_ms", "kind": "trend", "tags": [] },
                { "name": "orders", "kind": "counter", "tags": ["tier"] },
            ]),
            "{twin}"
        );
    }
    // An interpreter's own producers (CPython's runtime and the preview1 adapter are Rust) are
    // not the plugin's: they are apart, under nested_producers.
    let python = inspect(&plugin(Example::HttpGetPython));
    let own = names(&python["producers"]);
    assert!(own.iter().all(|p| !p.contains("Rust") && !p.contains("rustc")), "{own:?}");
    assert!(names(&python["nested_producers"]).iter().any(|p| p.starts_with("processed-by: rustc")), "{python}");
    let text = Command::new(env!("CARGO_BIN_EXE_loadhost"))
        .arg("inspect")
        .arg(plugin(Example::DebuggingPython))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("  toolchain: Python 3."), "{text}");
    assert!(text.contains("  metrics declared:\n    journey_ms:trend\n    orders{tier}:counter\n"), "{text}");
    assert!(!text.contains("language: Rust") && !text.contains("    exports\n"), "{text}");
    let python = inspect(&plugin(Example::HttpGetPython));
    assert!(names(&python["own_capabilities"]).contains(&"network: sockets"), "componentize-py imports sockets");
    let c = inspect(&plugin(Example::HttpGetC));
    assert_eq!(
        names(&c["own_capabilities"]),
        ["network: http via the host", "metrics"],
        "C asks for nothing beyond the adapter's: {c}"
    );
    assert_eq!(c["preview1_adapter"], true);
    assert!(names(&c["adapter_capabilities"]).contains(&"files"));
    assert_eq!(inspect(&plugin(Example::Noop))["network"], false, "a plugin without HTTP asks for no network");
}

#[test]
fn every_new_template_builds_and_runs() {
    let target = TargetProcess::start(&[]);
    let parent = tempfile::tempdir().unwrap();
    // Rust templates build against the same crates as the examples; sharing their target folder
    // keeps the dependencies compiled once.
    let cargo_target = root().join("target").join("new-template");
    for lang in LANGS {
        let name = format!("hello-{lang}");
        let new = Command::new(env!("CARGO_BIN_EXE_loadhost"))
            .args(["new", &name, "--lang", lang, "--dir"])
            .arg(parent.path())
            .output()
            .unwrap();
        assert!(new.status.success(), "loadhost new {name}: {}", String::from_utf8_lossy(&new.stderr));
        let project = parent.path().join(&name);
        assert!(project.join("README.md").is_file() && project.join("wit/plugin.wit").is_file(), "{lang}");
        let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
        assert!(readme.contains("build.sh"), "{lang}: the README says how to build");
        let built = Command::new(project.join("build.sh"))
            .arg(".")
            .arg(format!("{name}.wasm"))
            .current_dir(&project)
            .env("LOADHOST", env!("CARGO_BIN_EXE_loadhost"))
            .env("CARGO_TARGET_DIR", &cargo_target)
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "{lang}: ./build.sh failed:\n{}\n{}",
            String::from_utf8_lossy(&built.stdout),
            String::from_utf8_lossy(&built.stderr)
        );
        let s = get_run(&project.join(format!("{name}.wasm")), &target, "20");
        assert_eq!(s["tasks"]["passed"], 20, "{lang}: {}", s["tasks"]);
        assert_eq!(s["checks"]["status is 200"]["passes"], 20, "{lang}: {}", s["checks"]);
    }
    let again = Command::new(env!("CARGO_BIN_EXE_loadhost"))
        .args(["new", "hello-c", "--lang", "c", "--dir"])
        .arg(parent.path())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2), "an existing folder is not overwritten");
}

/// A core module written against the canonical ABI by hand: `do-task` takes the flattened task
/// (scenario, worker id, iteration, attempt, input) and returns `ok`; `cabi_realloc` is a bump
/// allocator the call resets.
const CORE_DOER: &str = r#"(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $at i32)
    (local.set $at (i32.and (i32.add (global.get $heap) (i32.const 7)) (i32.const -8)))
    (global.set $heap (i32.add (local.get $at) (local.get 3)))
    (local.get $at))
  (func (export "loadhost:plugin/doer@0.1.0#do-task")
    (param i32 i32 i32 i64 i32 i32 i32) (result i32)
    (global.set $heap (i32.const 1024))
    (i32.store8 (i32.const 16) (i32.const 0))
    (i32.const 16)))"#;

#[test]
fn a_core_module_runs_as_it_is_and_componentize_writes_the_component() {
    let dir = tempfile::tempdir().unwrap();
    let core = dir.path().join("doer.core.wasm");
    std::fs::write(&core, wat::parse_str(CORE_DOER).unwrap()).unwrap();
    let run = Loadhost::run_plugin(&core, &["-n", "1000", "-w", "2"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("a core module, wrapped into a component"), "{}", run.stderr);
    assert_eq!(run.summary()["tasks"]["passed"], 1000);
    let out = dir.path().join("doer.wasm");
    let wrapped = Command::new(env!("CARGO_BIN_EXE_loadhost"))
        .arg("componentize")
        .arg(&core)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(wrapped.status.success(), "{}", String::from_utf8_lossy(&wrapped.stderr));
    let i = inspect(&out);
    assert_eq!(i["kind"], "component");
    assert!(names(&i["exports"]).contains(&"loadhost:plugin/doer@0.1.0"), "{i}");
    assert!(names(&i["capabilities"]).is_empty(), "it imports nothing, so it asks for nothing: {i}");
}
