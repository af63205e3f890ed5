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

#[test]
fn k6_options_in_a_script_are_warned_about_and_refused_under_ci() {
    // Issue 41, defect 13: `export const options` was ignored without a word (one iteration, no
    // thresholds, exit 0: a CI gate passing by mistake).
    let target = TargetProcess::start(&[]);
    let made = Loadhost::new().args(["new", "shop", "--lang", "js"]).run();
    assert_eq!(made.code, 0, "{}", made.stderr);
    let script = made.dir.path().join("shop").join("plugin.js");
    let mut text = std::fs::read_to_string(&script).expect("the script");
    text.push_str(
        "\nexport const options = { vus: Math.max(2, 10), thresholds: { http_req_failed: ['rate<0.01'] } };\n",
    );
    let line = text.lines().count();
    std::fs::write(&script, &text).expect("the edit");
    let script_arg = script.to_str().expect("a UTF-8 path");
    let url = format!("TARGET_URL={}/", target.url);
    let args = ["run", script_arg, "-e", &url, "--allow-host", &target.authority, "-n", "3"];
    // Computed when the script runs, so not read (a literal object is: k6_scripts.rs).
    let says = format!(
        "plugin.js:{line}: sets k6's `options`, which loadhost reads only as a literal object or from the -e \
         values ('Math…' is computed when the script runs)"
    );

    let warned = Loadhost::new().env("CI", "").args(args).run();
    assert_eq!(warned.code, 0, "{}", warned.stderr);
    assert!(warned.stderr.contains(&says), "{}", warned.stderr);
    let before = target.stats()["requests"].as_u64().expect("a count");
    let refused = Loadhost::new().env("CI", "true").args(args).run();
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(&says) && refused.stderr.contains("refused because CI is set"),
        "{}",
        refused.stderr
    );
    assert_eq!(target.stats()["requests"].as_u64(), Some(before + 1), "the refused run sent nothing");

    // `build` never writes over the script or another file of its folder (defect 10).
    for output in ["plugin.js", "notes.txt"] {
        let path = made.dir.path().join("shop").join(output);
        std::fs::write(made.dir.path().join("shop").join("notes.txt"), "mine").expect("notes");
        let before = std::fs::read(&path).expect("the file");
        let built = Loadhost::new().args(["build", script_arg, "-o", path.to_str().expect("UTF-8")]).run();
        assert_eq!(built.code, 2, "-o {output}: {}", built.stderr);
        assert!(built.stderr.contains("of the script's folder, which the component carries"), "{}", built.stderr);
        assert_eq!(std::fs::read(&path).expect("the file"), before, "{output} unchanged");
    }
}

#[test]
fn a_script_folder_past_its_limits_is_refused_as_docs_scripts_md_says() {
    // Exit 2, naming the folder, before any load (the docs said 3 while the code said 2).
    let work = tempfile::tempdir().expect("a temp dir");
    std::fs::write(work.path().join("app.py"), "def do_task(task):\n    pass\n").expect("the script");
    for i in 0..1000 {
        std::fs::write(work.path().join(format!("f{i}.txt")), "x").expect("a file");
    }
    let script = work.path().join("app.py");
    let run = Loadhost::new().args(["run", script.to_str().expect("UTF-8"), "-n", "1"]).run();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("holds more than 1000 files"), "{}", run.stderr);
    let out = work.path().join("app.wasm");
    let built =
        Loadhost::new().args(["build", script.to_str().expect("UTF-8"), "-o", out.to_str().expect("UTF-8")]).run();
    assert_eq!(built.code, 2, "{}", built.stderr);
}

/// `sleep` in the JavaScript and Python SDKs (issue 42): the host's timer, in the task's time and in
/// no request's. Two tasks on one worker, each a request then 300 ms asleep.
#[test]
fn sleep_is_think_time_in_the_task_not_in_its_request() {
    let target = TargetProcess::start(&[]);
    let url = format!("{}/", target.url.trim_end_matches('/'));
    let scripts = [
        (
            "think.js",
            format!(
                "import {{ get, sleep }} from './lib/loadhost.js';\n\
                 export function doTask() {{ get('{url}').send(); sleep(0.3); }}\n"
            ),
        ),
        (
            "think.py",
            format!("from loadhost import http, sleep\n\ndef do_task(task):\n    http.get('{url}')\n    sleep(0.3)\n"),
        ),
    ];
    for (entry, text) in scripts {
        let dir = tempfile::tempdir().expect("a temp dir");
        std::fs::write(dir.path().join(entry), text).expect("the script");
        let script = dir.path().join(entry);
        let run = Loadhost::run_plugin(&script, &["--allow-host", &target.authority, "-n", "2", "-w", "1"]);
        assert_ok(&run);
        let s = run.summary();
        assert_eq!(task_count(&s, "passed"), 2, "{entry}: {}", s["tasks"]);
        let task_ms = s["latency_ms"]["min"].as_f64().expect("latency");
        let request_ms = s["metrics"]["http_req_duration"]["max"].as_f64().expect("requests");
        assert!(task_ms >= 300.0, "{entry}: each task slept 300 ms: {}", s["latency_ms"]);
        assert!(request_ms < 300.0, "{entry}: the sleep is not in the request: {}", s["metrics"]["http_req_duration"]);
        // A bad argument is a clear error in the task, naming the call.
        let bad = dir.path().join(format!("bad{}", &entry[5..]));
        let call = if entry.ends_with(".js") {
            "import { sleep } from './lib/loadhost.js';\nexport function doTask() { sleep('1s'); }\n"
        } else {
            "from loadhost import sleep\n\ndef do_task(task):\n    sleep('1s')\n"
        };
        std::fs::write(&bad, call).expect("the bad script");
        let run = Loadhost::run_plugin(&bad, &["-n", "1", "--allow-failures"]);
        let s = run.summary();
        assert_eq!(task_count(&s, "failed"), 1, "{entry}: {}\n{}", s["tasks"], run.stderr);
        assert!(
            s.to_string().contains("sleep(seconds): expected a finite number of seconds"),
            "{entry}: {}",
            s["errors"]
        );
    }
}

/// Every instance of a runner starts from one snapshot, so each must seed its random source:
/// otherwise every worker would make the same "random" choices (the same user, the same item,
/// the same think time), and a load meant to spread would hammer one path. Each of 4 workers
/// records its instance's first draw; the draws differ.
#[test]
fn each_worker_draws_its_own_random_numbers() {
    let scripts = [
        (
            "draw.js",
            "import { sleep, trend } from './lib/loadhost.js';\nlet first;\n\
             export function doTask() {\n  if (first === undefined) { first = Math.random(); trend('first_draw', first * 1e6); }\n\
             sleep(0.05);\n}\n",
        ),
        (
            "draw.py",
            "import random\n\nfrom loadhost import sleep, trend\n\nfirst = None\n\n\ndef do_task(task):\n    global first\n\
             \x20   if first is None:\n        first = random.random()\n        trend('first_draw', first * 1e6)\n    sleep(0.05)\n",
        ),
    ];
    for (entry, text) in scripts {
        let dir = tempfile::tempdir().expect("a temp dir");
        std::fs::write(dir.path().join(entry), text).expect("the script");
        // Each task sleeps 50 ms, so all 4 workers take some of the 16.
        let run = Loadhost::run_plugin(&dir.path().join(entry), &["-w", "4", "-n", "16"]);
        assert_ok(&run);
        let draws = &run.summary()["metrics"]["first_draw"];
        let (count, min, max) = (draws["count"].as_u64(), draws["min"].as_f64(), draws["max"].as_f64());
        assert!(count >= Some(2), "{entry}: at least two workers drew: {draws}");
        assert!(min < max, "{entry}: the workers drew the same number: {draws}");
    }
}
