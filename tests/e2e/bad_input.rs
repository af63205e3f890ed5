//! Bad input: each gives a non-zero exit, one line saying what is wrong, and sends no load.

use crate::common::{Loadhost, fixture, plugin};

struct Case {
    args: Vec<String>,
    code: i32,
    says: &'static str,
}

fn case(args: &[&str], code: i32, says: &'static str) -> Case {
    Case { args: args.iter().map(|s| s.to_string()).collect(), code, says }
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
    let noop = plugin("noop").display().to_string();
    let cases = vec![
        case(&["run", "missing.wasm"], 2, "missing.wasm: cannot read the plugin"),
        case(&["run", "text.txt"], 3, "text.txt: not a WebAssembly file"),
        case(&["run", "core.wasm"], 3, "core.wasm: a core WebAssembly module, not a component"),
        case(&["run", &fixture("no-doer").display().to_string()], 3, "does not export loadhost:plugin/doer@0.1.0"),
        case(
            &["run", &fixture("bad-import").display().to_string()],
            3,
            "imports instance `test:bad-import/secret-store`",
        ),
        case(&["run", &noop, "-r", "abc"], 2, "invalid value 'abc' for '--rate <RATE>'"),
        case(&["run", &noop, "-d", "5x"], 2, "invalid value '5x' for '--duration <DURATION>'"),
        case(&["run", &noop, "-c", "bad.toml"], 2, "bad.toml:2:1: unknown field `ratez`"),
        case(&["run", &noop, "-c", "nope.toml"], 2, "nope.toml: cannot read the config file"),
        case(&["run", &noop, "-r", "10"], 2, "--rate needs --duration or --iterations"),
        case(&["run", &noop, "-w", "0", "-n", "5"], 2, "--workers must be at least 1"),
        case(&["run", &noop, "--stage", "10s"], 2, "is not a stage: expected DURATION:RATE"),
        case(&["run", &noop, "-e", "NOEQUALS"], 2, "'NOEQUALS' is not KEY=VALUE"),
        case(&["run", &noop, "--overload", "sometimes"], 2, "invalid value 'sometimes' for '--overload <POLICY>'"),
        case(
            &["run", &noop, "-n", "5", "--csv", "no/such/dir/x.csv"],
            2,
            "--csv no/such/dir/x.csv: cannot write the file",
        ),
        case(&["run"], 2, "required arguments were not provided: <PLUGIN>"),
        case(&["run", &noop, "-r", "10", "-n", "5", "--max-workers", &too_many_workers()], 2, "memory mappings"),
    ];
    for case in cases {
        let cmd = Loadhost::new();
        std::fs::write(cmd.path().join("text.txt"), "hello").unwrap();
        std::fs::write(cmd.path().join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
        std::fs::write(cmd.path().join("bad.toml"), "rate = 10\nratez = 5\n").unwrap();
        let run = cmd.args(&case.args).args(["--summary-json", "summary.json"]).run();
        let what = case.args.join(" ");
        assert_eq!(run.code, case.code, "`{what}`: exit code; stderr: {}", run.stderr);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "`{what}`: exactly one line on stderr, got: {}", run.stderr);
        assert!(lines[0].contains(case.says), "`{what}`: expected '{}' in: {}", case.says, lines[0]);
        assert!(run.stdout.is_empty(), "`{what}`: no summary when nothing ran: {}", run.stdout);
        assert!(!run.dir.path().join("summary.json").exists(), "`{what}`: no output file for a run that never started");
    }
}
