//! Running the binary and reading what it wrote.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

pub use crate::guests::{Example, Fixture};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn built(dir: &str, name: &str) -> PathBuf {
    let path = root().join("target").join(dir).join(format!("{name}.wasm"));
    assert!(
        path.is_file(),
        "{} is missing: build the plugins first with `cargo xtask plugins` (or run `cargo xtask test`)",
        path.display()
    );
    path
}

/// An example plugin from `plugins/`.
pub fn plugin(example: Example) -> PathBuf {
    built("plugins", example.name())
}

/// A test fixture from `tests/plugins/`.
pub fn fixture(fixture: Fixture) -> PathBuf {
    built("test-plugins", fixture.name())
}

/// `example`, written in `lang` (a twin of `plugins/BASE`: `plugins/BASE-LANG`, or BASE itself in
/// Rust), or None (with a note) when that language's toolchain is absent.
pub fn twin(lang: &str, example: Example) -> Option<PathBuf> {
    if lang == "rust" {
        return Some(plugin(example));
    }
    let check = Command::new(root().join("sdk").join(lang).join("toolchain.sh")).arg("check").output();
    if !check.is_ok_and(|out| out.status.success()) {
        let name = example.name();
        eprintln!("skipped {name}: the {lang} toolchain is absent (cargo xtask setup installs it)");
        return None;
    }
    Some(plugin(example))
}

/// What one run of the binary did.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// The folder the run wrote into (its working directory).
    pub dir: TempDir,
}

impl Run {
    /// The summary JSON the run wrote to `summary.json`.
    pub fn summary(&self) -> Value {
        let path = self.dir.path().join("summary.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}\nstderr: {}", path.display(), self.stderr));
        serde_json::from_str(&text).expect("summary.json is JSON")
    }

    pub fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

/// A command line for the binary, run in a fresh temporary folder.
pub struct Loadhost {
    cmd: Command,
    dir: TempDir,
}

impl Loadhost {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_loadhost"));
        cmd.current_dir(dir.path()).env("LOADHOST_CACHE_DIR", root().join("target").join("test-cache"));
        Self { cmd, dir }
    }

    /// The same folder and environment, running `program` instead (a wrapper that runs the binary).
    pub fn program(mut self, program: &str) -> Self {
        let mut cmd = Command::new(program);
        cmd.current_dir(self.dir.path()).env("LOADHOST_CACHE_DIR", root().join("target").join("test-cache"));
        self.cmd = cmd;
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// Run the command inside the cgroup whose `cgroup.procs` file is `procs` (a shell puts itself
    /// there, then becomes loadhost).
    pub fn in_cgroup(self, procs: &Path) -> Self {
        self.through_shell("echo $$ > \"$1\" && shift && exec \"$@\"", procs.as_os_str())
    }

    /// Run the command with a soft limit of `n` open files (a shell lowers its own, then becomes
    /// loadhost): the limit a default shell gives, so a test can show what runs out first.
    pub fn open_files(self, n: u32) -> Self {
        self.through_shell("ulimit -S -n \"$1\" && shift && exec \"$@\"", n.to_string().as_ref())
    }

    /// Run the command through `sh -c SCRIPT sh ARG PROGRAM ARGS…`, its environment kept: the
    /// script does its part with `$1`, then `shift && exec "$@"` becomes the command.
    fn through_shell(mut self, script: &str, arg: &std::ffi::OsStr) -> Self {
        let mut wrapped = Command::new("sh");
        wrapped
            .args(["-c", script, "sh"])
            .arg(arg)
            .arg(self.cmd.get_program())
            .args(self.cmd.get_args())
            .current_dir(self.dir.path());
        for (key, value) in self.cmd.get_envs() {
            if let Some(value) = value {
                wrapped.env(key, value);
            }
        }
        self.cmd = wrapped;
        self
    }

    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }

    /// `loadhost run PLUGIN ARGS… --summary-json summary.json`
    pub fn run_plugin(plugin: &Path, args: &[&str]) -> Run {
        Self::new().arg_run(plugin, args).run()
    }

    pub fn arg_run(self, plugin: &Path, args: &[&str]) -> Self {
        self.args(["run".as_ref(), plugin.as_os_str()]).args(args).args(["--summary-json", "summary.json"])
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Start the command with its stdout and stderr piped to the test.
    fn start(&mut self) -> std::process::Child {
        self.cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("loadhost starts")
    }

    /// Start the command without waiting for it.
    pub fn spawn(mut self) -> Running {
        let mut child = self.start();
        let stdout = drain(child.stdout.take().expect("a piped stdout"));
        let stderr = drain(child.stderr.take().expect("a piped stderr"));
        Running { child, stdout, stderr, dir: self.dir }
    }

    /// Run the command with its stdout closed before it writes (a reader such as `head` that has
    /// gone away): returns the exit code and stderr.
    pub fn run_with_stdout_closed(mut self) -> (i32, String) {
        let mut child = self.start();
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("loadhost ends");
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
    }

    pub fn run(self) -> Run {
        self.spawn().finish()
    }
}

/// `summary.tasks.<key>` as a number.
pub fn task_count(summary: &Value, key: &str) -> u64 {
    summary["tasks"][key].as_u64().unwrap_or_else(|| panic!("tasks.{key} missing in {summary}"))
}

/// Every scheduled task ended in exactly one terminal state.
pub fn assert_identity(summary: &Value) {
    let ended: u64 = ["passed", "failed", "aborted", "dropped", "timed_out", "trapped", "interrupted"]
        .iter()
        .map(|k| task_count(summary, k))
        .sum();
    assert_eq!(task_count(summary, "scheduled"), ended, "identity broken: {}", summary["tasks"]);
    assert_eq!(summary["identity_holds"], Value::Bool(true));
}

/// The run ended with every task failed on purpose: loadhost failed it closed (exit 98) and said why.
#[track_caller]
pub fn assert_none_passed(run: &Run) {
    assert_eq!(run.code, 98, "exit code {}\nstderr: {}\nstdout: {}", run.code, run.stderr, run.stdout);
    assert!(run.stderr.contains("no task passed"), "{}", run.stderr);
}

#[track_caller]
pub fn assert_ok(run: &Run) {
    assert_eq!(run.code, 0, "exit code {}\nstderr: {}\nstdout: {}", run.code, run.stderr, run.stdout);
}

/// Read `pipe` to its end on a thread of its own, so the child never blocks writing to it: a pipe
/// holds 64 KiB, and a child that logs more than that while nobody reads would wait forever.
fn drain(mut pipe: impl std::io::Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        // A read error ends the output early; what was read is still returned for the assertions.
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// How long [`Running::finish`] waits before it calls the child hung: far beyond any run of the
/// suite on a busy machine, so only a run that never ends reaches it, and it fails instead of
/// hanging the suite.
pub const HUNG_AFTER: Duration = Duration::from_secs(600);

/// A run under way (see [`Loadhost::spawn`]).
pub struct Running {
    child: std::process::Child,
    /// The child's stdout and stderr, read as it writes them.
    stdout: JoinHandle<Vec<u8>>,
    stderr: JoinHandle<Vec<u8>>,
    dir: TempDir,
}

impl Running {
    /// The process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send `signal` (such as `libc::SIGINT`) to the process.
    pub fn signal(&self, signal: i32) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid");
        // SAFETY: kill(2) with a child's pid and a valid signal number has no memory effects.
        let sent = unsafe { libc::kill(pid, signal) };
        assert_eq!(sent, 0, "kill({pid}, {signal})");
    }

    /// Wait until `ready` holds for the file `name` in the run's folder. The limit (60 s) only
    /// catches a run that never gets there: a busy machine may take seconds to start one.
    pub fn wait_for_file(&mut self, name: &str, ready: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if std::fs::read_to_string(self.dir.path().join(name)).is_ok_and(|text| ready(&text)) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("loadhost ended ({status}) before {name} got ready");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("{name} never got ready");
    }

    /// Wait for the process to end (a run still going after [`HUNG_AFTER`] is killed and fails
    /// the test, with what it printed).
    pub fn finish(self) -> Run {
        self.finish_within(HUNG_AFTER)
    }

    /// [`Running::finish`], calling the process hung after `limit`.
    pub fn finish_within(mut self, limit: Duration) -> Run {
        let deadline = Instant::now() + limit;
        let status = loop {
            match self.child.try_wait().expect("waiting for loadhost") {
                Some(status) => break Some(status),
                None if Instant::now() >= deadline => break None,
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        if status.is_none() {
            // Killing it closes its pipes, so the readers below end.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let text = |reader: JoinHandle<Vec<u8>>| {
            String::from_utf8_lossy(&reader.join().expect("the pipe reader ends")).into_owned()
        };
        let (stdout, stderr) = (text(self.stdout), text(self.stderr));
        let Some(status) = status else {
            panic!("loadhost was still running after {limit:?}: killed\nstderr: {stderr}\nstdout: {stdout}");
        };
        Run { code: status.code().unwrap_or(-1), stdout, stderr, dir: self.dir }
    }
}
