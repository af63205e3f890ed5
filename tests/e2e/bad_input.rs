//! Bad input: each gives a non-zero exit, one line saying what is wrong, and sends no load.

use crate::common::{Example, Fixture, Loadhost, fixture, plugin};
use crate::target_process::TargetProcess;

struct Case {
    args: Vec<String>,
    code: i32,
    says: String,
}

fn case(args: &[&str], code: i32, says: &str) -> Case {
    with(args.iter().map(|s| s.to_string()).collect(), code, says)
}

fn with(args: Vec<String>, code: i32, says: &str) -> Case {
    Case { args, code, says: says.to_owned() }
}

/// A crew ceiling that cannot fit under this machine's `vm.max_map_count`.
fn too_many_workers() -> String {
    let limit: u64 = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(65_530);
    (limit / 6 + 1000).min(u64::from(u32::MAX)).to_string()
}

#[test]
fn bad_input_fails_with_one_specific_line_and_no_load() {
    // Every run that gets as far as a plugin gets one that would send requests to a live target, so
    // "no load" is checked by the target's own count, not only by the missing outputs.
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/", target.url);
    let http_get = plugin(Example::HttpGet).display().to_string();
    let run = |extra: &[&str]| -> Vec<String> {
        let base = ["run", http_get.as_str(), "-e", url.as_str(), "--allow-host", target.authority.as_str()];
        base.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_addr = busy.local_addr().unwrap().to_string();
    let cases = vec![
        // Plugin files.
        case(&["run", "missing.wasm"], 2, "missing.wasm: cannot read the plugin"),
        case(&["run", "text.txt"], 3, "text.txt: not a WebAssembly file"),
        case(&["run", "core.wasm"], 3, "core.wasm: a core WebAssembly module that cannot be wrapped into a plugin"),
        case(
            &["run", &fixture(Fixture::NoDoer).display().to_string()],
            3,
            "does not export loadhost:plugin/doer@0.1.0",
        ),
        case(
            &["run", &fixture(Fixture::BadImport).display().to_string()],
            3,
            "imports instance `test:bad-import/secret-store`",
        ),
        case(&["run"], 2, "no plugin for the run: name one on the command line (loadhost run PLUGIN)"),
        // `loadhost http`: the URL, the body file and the targets, checked before any load.
        case(&["http", "not-a-url"], 2, "'not-a-url' is not a URL loadhost can request"),
        case(&["http", &target.url, "--body-file", "missing.txt"], 2, "--body-file missing.txt: cannot read it"),
        case(&["http", "--targets", "bad.env"], 2, "--targets bad.env:1: expected a `METHOD URL` line first"),
        // Rates, durations, sizes, stages, pairs.
        with(run(&["-r", "abc"]), 2, "invalid value 'abc' for '--rate <RATE>'"),
        with(run(&["-d", "5x"]), 2, "invalid value '5x' for '--duration <DURATION>'"),
        with(run(&["--grace", "soon"]), 2, "invalid value 'soon' for '--grace <DURATION>'"),
        with(run(&["--think", "3s..1s", "-n", "1"]), 2, "the think time's range ends (1s) before it starts (3s)"),
        with(
            run(&["--pace", "100ms", "-r", "10", "-d", "1s"]),
            2,
            "--pace and --think space the closed model's workers",
        ),
        with(run(&["--max-memory", "12XB"]), 2, "invalid value '12XB' for '--max-memory <SIZE>'"),
        with(run(&["-n", "5", "--max-memory", "1MiB"]), 2, "--max-memory 1MiB: expected between 2MiB and 4GiB"),
        with(run(&["-n", "5", "--task-timeout", "0s"]), 2, "--task-timeout must be longer than 0s"),
        with(run(&["--stage", "10s"]), 2, "is not a stage: expected DURATION:TARGET"),
        with(run(&["-e", "LOADHOST_SURELY_UNSET"]), 2, "'LOADHOST_SURELY_UNSET' is not set in loadhost's environment"),
        with(run(&["-e", "=x"]), 2, "'=x' is not KEY=VALUE or KEY: the name is empty"),
        with(run(&["-n", "5", "--env-file", "missing.env"]), 2, "--env-file missing.env: cannot read it"),
        with(run(&["-n", "5", "--env-file", "bad.env"]), 2, "--env-file bad.env: line 2: expected KEY=VALUE"),
        with(run(&["-n", "5", "--max-response-body", "0"]), 2, "--max-response-body must be at least 1"),
        with(run(&["--tag", "team"]), 2, "'team' is not KEY=VALUE"),
        with(
            run(&["-n", "5", "--control-token-file", "missing.token"]),
            2,
            "--control-token-file missing.token: cannot read",
        ),
        with(run(&["--overload", "sometimes"]), 2, "invalid value 'sometimes' for '--overload <POLICY>'"),
        // Options that cannot go together.
        with(run(&["-r", "10"]), 2, "--rate needs --duration or --iterations"),
        with(run(&["-w", "0", "-n", "5"]), 2, "--workers must be at least 1"),
        with(
            run(&["-r", "10", "-d", "1s", "-w", "10", "--max-workers", "5"]),
            2,
            "--workers (10) is more than --max-workers (5)",
        ),
        with(run(&["-r", "10", "-d", "1s", "--retry-budget", "10"]), 2, "--retry-budget needs --retries N"),
        with(run(&["-n", "5", "--data-mode", "once"]), 2, "--data-mode needs --data FILE"),
        with(run(&["-n", "5", "--max-connections-per-host", "0"]), 2, "--max-connections-per-host must be at least 1"),
        with(run(&["-r", "10", "-n", "5", "--max-workers", &too_many_workers()]), 2, "memory mappings"),
        // Grants.
        with(run(&["-n", "5", "--allow-host", "http://x/y"]), 2, "--allow-host 'http://x/y' has a bad port"),
        with(run(&["-n", "5", "--dir", "no-such-dir"]), 2, "--dir no-such-dir: no such directory"),
        with(run(&["-n", "5", "--ca-cert", "nope.pem"]), 2, "--ca-cert nope.pem: cannot read it"),
        // TOML files.
        with(run(&["-c", "bad.toml"]), 2, "bad.toml:2:1: unknown field `ratez`"),
        with(run(&["-c", "nope.toml"]), 2, "nope.toml: cannot read the config file"),
        with(run(&["-c", "syntax.toml"]), 2, "syntax.toml:1:8: string values must be quoted"),
        with(run(&["-c", "types.toml"]), 2, "types.toml:1:8: 'fast' is not a rate"),
        with(run(&["-c", "dup.toml", "-d", "1s"]), 2, "[[scenario]] blocks need distinct, non-empty names; 'a'"),
        // Data files.
        with(run(&["-n", "5", "--data", "missing.jsonl"]), 2, "--data missing.jsonl: cannot read the file"),
        with(run(&["-n", "5", "--data", "bad.jsonl"]), 2, "--data bad.jsonl:2: not JSON"),
        // Output paths and the control port, checked before any load.
        with(run(&["-n", "5", "--csv", "no/such/dir/x.csv"]), 2, "--csv no/such/dir/x.csv: cannot write the file"),
        with(
            run(&["-n", "5", "--summary-json", "no/such/dir/s.json"]),
            2,
            "--summary-json no/such/dir/s.json: cannot write the file",
        ),
        with(run(&["-n", "5", "--control", &busy_addr]), 2, &format!("--control {busy_addr}: cannot listen")),
        // Thresholds are judged before any load: unknown metrics, wrong aggregates, bad options. Each
        // error names the flag and the expression once (clap's own words for a value that does not
        // parse, `--threshold 'EXPR': …` for one that cannot be judged).
        with(
            run(&["-n", "5", "--threshold", "nosuch:count<1"]),
            2,
            "error: --threshold 'nosuch:count<1': no metric named nosuch (built in: latency_ms,",
        ),
        with(
            run(&["-n", "5", "--threshold", "latency_ms:p(99)<<200"]),
            2,
            "error: invalid value 'latency_ms:p(99)<<200' for '--threshold <EXPR>': '<200' is not a number; expected METRIC",
        ),
        with(
            run(&["-n", "5", "--threshold", "latency_ms:rate<1"]),
            2,
            "--threshold 'latency_ms:rate<1': latency_ms (a trend: p(N), avg, min, max, med, count) has no rate",
        ),
        with(
            run(&["-n", "5", "--threshold", "latency_ms{scenario:nope}:p(99)<1"]),
            2,
            "--threshold 'latency_ms{scenario:nope}:p(99)<1': no scenario named 'nope' (the run has: default)",
        ),
        with(
            run(&["-n", "5", "--threshold", "latency_ms{status:500}:p(99)<1"]),
            2,
            "--threshold 'latency_ms{status:500}:p(99)<1': latency_ms takes no tags",
        ),
        with(
            run(&["-n", "5", "--threshold", "latency_ms:p(99)<1;abort"]),
            2,
            "for '--threshold <EXPR>': unknown option 'abort' (expected abort_on_fail or delay=DURATION)",
        ),
        with(
            run(&["-n", "5", "--threshold", "latency_ms:p(99)<1;delay=5s"]),
            2,
            "for '--threshold <EXPR>': delay= only applies with abort_on_fail",
        ),
        with(
            run(&["-n", "5", "--metric", "latency_ms:trend"]),
            2,
            "--metric latency_ms:trend: that name is a built-in",
        ),
        with(run(&["-n", "5", "--metric", "login:histogram"]), 2, "unknown metric kind 'histogram'"),
        with(
            run(&["-n", "5", "--metric", "login:counter", "--threshold", "login:p(99)<1"]),
            2,
            "--threshold 'login:p(99)<1': login (a counter: count, rate) has no p(99)",
        ),
        with(run(&["-n", "5", "--out", "influx=x"]), 2, "'influx=x' is not an output: expected json=FILE"),
        with(run(&["-n", "5", "--out", "json=no/such/x.jsonl"]), 2, "--out json=no/such/x.jsonl: cannot write"),
        with(run(&["-n", "5", "--html", "no/such/r.html"]), 2, "--html no/such/r.html: cannot write the file"),
        with(run(&["-n", "5", "--metrics-addr", &busy_addr]), 2, &format!("--metrics-addr {busy_addr}: cannot listen")),
        with(
            run(&["-n", "5", "--metrics-addr", "0.0.0.0:9"]),
            2,
            "--metrics-addr 0.0.0.0:9: not a loopback address; binding elsewhere needs --metrics-token",
        ),
        // k6's and Locust's flags name loadhost's (issue 42): one line, exit 2, no load.
        with(run(&["--vus", "10", "-d", "5s"]), 2, "unexpected argument '--vus' found: k6's --vus is loadhost's -w N"),
        with(run(&["-u", "10", "-d", "5s"]), 2, "found: Locust's (and k6's) -u is loadhost's -w N (--workers)"),
        with(run(&["--headless", "-d", "5s"]), 2, "'--headless' found: loadhost has no web UI to leave out"),
        with(run(&["-w", "2", "-t", "5s"]), 2, "'-t' found: Locust's run time is loadhost's -d DURATION"),
        with(run(&["-w", "2", "-d", "5s", "--spawn-rate", "2"]), 2, "Locust's spawn rate is a ramp of workers"),
        with(run(&["-i", "5"]), 2, "'-i' found: k6's -i is loadhost's -n N (--iterations)"),
        with(run(&["-n", "5", "--summary-export=s.json"]), 2, "k6's --summary-export is loadhost's --summary-json"),
        // Segments of a distributed plan.
        with(run(&["-n", "5", "--segment", "4/4"]), 2, "'4/4': the index is 0-based, from 0 to N-1"),
        with(run(&["-n", "5", "--segments", "4"]), 2, "--segments 4 needs $JOB_COMPLETION_INDEX"),
        with(run(&["-n", "5", "--segment", "1/2", "--segments", "3"]), 2, "disagree on the number of segments"),
        with(run(&["-n", "5", "--start-at", "tomorrow"]), 2, "is not a time"),
        with(
            run(&["-n", "5", "--segment", "0/2", "--control", "127.0.0.1:0"]),
            2,
            "--control drives one process's rate; it cannot be combined with segments",
        ),
        // Threshold expressions (find-max's SLOs) and find-max's own flags.
        case(
            &["find-max", &http_get, "--slo", "latency_ms:p(99)<<200"],
            2,
            "invalid value 'latency_ms:p(99)<<200' for '--slo <EXPR>': '<200' is not a number",
        ),
        case(&["find-max", &http_get, "--slo", "nosuch:count<1"], 2, "--slo 'nosuch:count<1': no metric named nosuch"),
        case(&["find-max", &http_get, "--slo", "nonsense"], 2, "no ':' between the metric and the aggregate"),
        case(
            &["find-max", &http_get, "--slo", "latency_ms:p(99)<200", "--factor", "1"],
            2,
            "--factor must be more than 1",
        ),
    ];
    assert!(cases.len() >= 25, "the issue asks for at least 25 cases");
    for case in cases {
        let cmd = Loadhost::new();
        for (name, text) in FILES {
            std::fs::write(cmd.path().join(name), text).unwrap();
        }
        let mut cmd = cmd.args(&case.args);
        if !case.args.iter().any(|a| a == "--summary-json") {
            cmd = cmd.args(["--summary-json", "summary.json"]);
        }
        let run = cmd.run();
        let what = case.args.join(" ");
        assert_eq!(run.code, case.code, "`{what}`: exit code; stderr: {}", run.stderr);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "`{what}`: exactly one line on stderr, got: {}", run.stderr);
        assert!(lines[0].contains(&case.says), "`{what}`: expected '{}' in: {}", case.says, lines[0]);
        assert_eq!(lines[0].matches(&case.says).count(), 1, "`{what}`: said once, not twice: {}", lines[0]);
        assert!(run.stdout.is_empty(), "`{what}`: no summary when nothing ran: {}", run.stdout);
        assert!(!run.dir.path().join("summary.json").exists(), "`{what}`: no output file for a run that never started");
    }
    let stats = target.stats();
    assert_eq!(stats["requests"].as_u64(), Some(1), "no load reached the target, only this /stats: {stats}");
}

#[test]
fn run_help_tells_the_defaults_and_what_stages_ramp() {
    let run = Loadhost::new().args(["run", "--help"]).run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let help = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    for says in [
        "the crew starts with N (default one per 20",
        "a closed model of N workers looping (default 1)",
        "up to N workers (default 1000)",
        "With --rate it ramps the rate (tasks/s), starting from --rate",
        "without --rate it ramps the number of looping workers, starting from -w (default 1)",
        "(default 100ms; needs --retries)",
        "(default 20; needs --retries)",
        "(default 100,000; needs --retries)",
        "(default 5s; needs --retries)",
        "interrupted (default 5s)",
        "(default 60s)",
        "(default 128MiB)",
        "(default 30s)",
        "default: one per CPU",
        "a bare HOST ports 80 and 443 only",
        "--metrics-addr <ADDR>",
        "loopback only, unless a --metrics-token",
        "Count it as dropped (the default)",
    ] {
        assert!(help.contains(says), "`run --help` should say '{says}':\n{}", run.stdout);
    }
}

/// The files the cases refer to, written into each run's folder.
const FILES: [(&str, &[u8]); 8] = [
    ("bad.env", b"A=1\nnot a pair\n"),
    ("text.txt", b"hello"),
    ("core.wasm", b"\0asm\x01\0\0\0"),
    ("bad.toml", b"rate = 10\nratez = 5\n"),
    ("syntax.toml", b"rate = \n"),
    ("types.toml", b"rate = \"fast\"\n"),
    ("dup.toml", b"[[scenario]]\nname = \"a\"\nrate = 1\n[[scenario]]\nname = \"a\"\nrate = 2\n"),
    ("bad.jsonl", b"{\"a\":1}\n{oops\n"),
];

#[test]
fn bad_plugin_references_fail_with_one_line() {
    let registry = crate::registry::RegistryProcess::start();
    let addr = registry.addr.as_str();
    crate::registry::push_raw(
        addr,
        "team/image",
        "1",
        "application/vnd.oci.image.config.v1+json",
        &["application/vnd.oci.image.layer.v1.tar+gzip"],
    );
    let wasm_config = "application/vnd.wasm.config.v0+json";
    crate::registry::push_raw(addr, "team/odd", "1", wasm_config, &["application/wasm", "application/x-unknown"]);
    crate::registry::push_raw(addr, "team/twice", "1", wasm_config, &["application/wasm", "application/wasm"]);
    let store = tempfile::tempdir().unwrap();
    // A stored blob whose bytes do not match its name.
    let digest = crate::registry::sha256(b"the manifest that was stored");
    let blobs = store.path().join("oci").join("blobs").join("sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    std::fs::write(blobs.join(digest.trim_start_matches("sha256:")), b"something else").unwrap();
    let cases = [
        (format!("{addr}/Team Checkout:1"), vec![], 2, "not a plugin reference".to_owned()),
        (format!("{addr}/team/none:1"), vec![], 2, format!("{addr}/team/none:1: not found in the registry")),
        ("127.0.0.1:1/team/x:1".to_owned(), vec![], 2, "127.0.0.1:1/team/x:1: registry error".to_owned()),
        (
            "registry.example.invalid/team/x:1".to_owned(),
            vec![],
            2,
            "unknown registry host registry.example.invalid".to_owned(),
        ),
        (
            format!("{addr}/team/image:1"),
            vec![],
            3,
            "not a wasm artifact (config media type application/vnd.oci.image.config.v1+json".to_owned(),
        ),
        (format!("{addr}/team/odd:1"), vec![], 3, "unknown layer media type application/x-unknown".to_owned()),
        (
            format!("{addr}/team/twice:1"),
            vec![],
            3,
            "2 layers of media type application/wasm: a loadhost artifact has one of each".to_owned(),
        ),
        (format!("{addr}/team/x@{digest}"), vec!["--pull", "never"], 3, "does not match its digest".to_owned()),
        (
            format!("{addr}/team/none:1"),
            vec!["--pull", "never"],
            2,
            "not in the local store and --pull never was given".to_owned(),
        ),
        (
            format!("{addr}/team/none:1"),
            vec!["--require-digest"],
            2,
            format!("pin it with `loadhost pin {addr}/team/none:1`"),
        ),
    ];
    for (reference, extra, code, says) in cases {
        let run = Loadhost::new()
            .env("LOADHOST_CACHE_DIR", store.path())
            .args(["run", reference.as_str(), "-n", "1"])
            .args(&extra)
            .run();
        assert_eq!(run.code, code, "`{reference}`: exit code; stderr: {}", run.stderr);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "`{reference}`: exactly one line on stderr, got: {}", run.stderr);
        assert!(lines[0].contains(&says), "`{reference}`: expected '{says}' in: {}", lines[0]);
    }
}

/// A sparse file of `size` bytes that starts with `head` (no disk is used for the rest).
fn sparse(path: &std::path::Path, head: &[u8], size: u64) {
    use std::io::Write as _;
    let mut file = std::fs::File::create(path).unwrap();
    file.write_all(head).unwrap();
    file.set_len(size).unwrap();
}

#[test]
fn input_files_that_are_not_regular_or_too_large_are_refused_before_they_are_read() {
    // Each is refused at once, in one line, exit 2: none is read whole or waited on. Every command
    // runs with its data segment limited to 2 GiB, so a reader without a cap fails the test (it
    // aborts) rather than the machine: `run /dev/zero` once grew to the 4 GiB kill.
    let noop = plugin(Example::Noop).display().to_string();
    let cases = [
        case(
            &["run", "/dev/zero"],
            2,
            "/dev/zero: cannot read the plugin: it is a character device, not a regular file",
        ),
        // With a plan, `run` reads the plugin's declarations first: those readers once read
        // /dev/zero without end (9.4 GB in 20 s) before the plugin's own gate.
        case(&["run", "/dev/zero", "-n", "1"], 2, "/dev/zero: cannot read the plugin: it is a character device"),
        case(&["run", "fifo.wasm", "-r", "1", "-d", "1s"], 2, "fifo.wasm: cannot read the plugin: it is a FIFO"),
        case(&["run", "fifo.py", "-n", "1"], 2, "fifo.py: cannot read the plugin: it is a FIFO"),
        case(&["inspect", "fifo.wasm"], 2, "fifo.wasm: cannot read the plugin: it is a FIFO"),
        case(&["build", "/dev/zero", "-o", "out.wasm"], 2, "/dev/zero: not a script"),
        case(&["build", "fifo.py", "-o", "out.wasm"], 2, "fifo.py: cannot read the script: it is a FIFO"),
        case(
            &["push", "/dev/zero", "127.0.0.1:9/team/zero:1"],
            2,
            "/dev/zero: cannot read the plugin: it is a character device",
        ),
        case(&["push", "fifo.wasm", "127.0.0.1:9/team/zero:1"], 2, "fifo.wasm: cannot read the plugin: it is a FIFO"),
        case(&["componentize", "fifo.wasm", "-o", "out.wasm"], 2, "fifo.wasm: cannot read the module: it is a FIFO"),
        case(
            &["run", "big.wasm"],
            2,
            "big.wasm: cannot read the plugin: it is 300 MiB, more than a plugin may be (256 MiB; --max-plugin-size raises it)",
        ),
        case(&["run", &noop, "--max-plugin-size", "1KiB"], 2, "more than a plugin may be (1 KiB; --max-plugin-size"),
        case(&["run", &noop, "--max-plugin-size", "0"], 2, "--max-plugin-size must be at least 1"),
        case(&["run", &noop, "-c", "/dev/zero"], 2, "/dev/zero: cannot read the config file: it is a character device"),
        case(&["run", &noop, "-c", "fifo.toml"], 2, "fifo.toml: cannot read the config file: it is a FIFO (a pipe)"),
        case(
            &["run", &noop, "-c", "big.toml"],
            2,
            "big.toml: cannot read the config file: it is 5 MiB, more than a config file may be (4 MiB)",
        ),
        case(&["run", &noop, "-c", "adir"], 2, "adir: cannot read the config file: it is a directory"),
        case(
            &["run", &noop, "-n", "1", "--data", "zero.csv"],
            2,
            "--data zero.csv: cannot read the file: it is a character device",
        ),
        case(
            &["run", &noop, "-n", "1", "--env-file", "/dev/zero"],
            2,
            "--env-file /dev/zero: cannot read it: it is a character device",
        ),
        case(
            &["run", &noop, "-n", "1", "--control-token-file", "/dev/zero"],
            2,
            "--control-token-file /dev/zero: cannot read it: it is a character device",
        ),
        case(
            &["run", &noop, "-n", "1", "--ca-cert", "/dev/zero"],
            2,
            "--ca-cert /dev/zero: cannot read it: it is a character device",
        ),
        case(
            &["run", &noop, "-n", "1", "--client-cert", "/dev/zero", "--client-key", "/dev/zero"],
            2,
            "--client-cert /dev/zero: cannot read it: it is a character device",
        ),
        case(
            &["http", "http://127.0.0.1:9/", "--body-file", "/dev/zero"],
            2,
            "--body-file /dev/zero: cannot read it: it is a character device",
        ),
        case(&["http", "--targets", "/dev/zero"], 2, "--targets /dev/zero: cannot read it: it is a character device"),
        case(&["merge", "/dev/zero"], 2, "/dev/zero: cannot read the file: it is a character device"),
        case(
            &["merge", "long.lhr"],
            2,
            "long.lhr: cannot read the file: a results file's line is at most 256 MiB; this one is longer",
        ),
        case(
            &["compare", "/dev/zero", "long.lhr"],
            2,
            "BASE /dev/zero: cannot read the file: it is a character device",
        ),
        case(&["inspect", "/dev/zero"], 2, "/dev/zero: cannot read the plugin: it is a character device"),
        case(
            &["componentize", "/dev/zero", "-o", "out.wasm"],
            2,
            "/dev/zero: cannot read the module: it is a character device",
        ),
        case(&["push", "big.wasm", "127.0.0.1:9/team/big:1"], 2, "big.wasm: cannot read the plugin: it is 300 MiB"),
    ];
    let loadhost = env!("CARGO_BIN_EXE_loadhost");
    for case in cases {
        let cmd = Loadhost::new();
        let dir = cmd.path().to_owned();
        sparse(&dir.join("big.wasm"), b"\0asm\x0d\0\x01\0", 300 << 20);
        sparse(&dir.join("big.toml"), b"rate = 1\n", 5 << 20);
        sparse(&dir.join("long.lhr"), b"loadhost-results 2\n", 300 << 20);
        std::fs::create_dir(dir.join("adir")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero.csv")).unwrap();
        for name in ["fifo.toml", "fifo.wasm", "fifo.py"] {
            let fifo = std::ffi::CString::new(dir.join(name).as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: mkfifo(3) with a NUL-terminated path and a mode; no memory is shared.
            assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        }
        let started = std::time::Instant::now();
        let run = cmd
            .program("prlimit")
            .args(["--data=2147483648", loadhost])
            .args(&case.args)
            .spawn()
            .finish_within(std::time::Duration::from_secs(60));
        let what = case.args.join(" ");
        assert_eq!(run.code, case.code, "`{what}`: exit code; stderr: {}", run.stderr);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "`{what}`: exactly one line on stderr, got: {}", run.stderr);
        assert!(lines[0].contains(&case.says), "`{what}`: expected '{}' in: {}", case.says, lines[0]);
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "`{what}`: refused at once, not read");
    }
}
