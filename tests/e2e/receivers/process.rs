//! A receiver's child process: its stdout dropped, its stderr kept in a file (shown when it does
//! not come up), a bounded wait until it answers, and killed on drop.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a receiver may take to answer: seconds on a quiet machine, more beside two builds.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A receiver's program, killed on drop.
pub struct Process {
    child: Child,
    /// The program's name, for messages.
    name: String,
    stderr: PathBuf,
}

impl Process {
    /// Start `command` (a program `cargo xtask setup` installs) with its stderr in `dir`.
    pub fn spawn(mut command: Command, dir: &Path) -> Self {
        let name = Path::new(command.get_program()).file_name().unwrap_or_default().to_string_lossy().into_owned();
        let stderr = dir.join(format!("{name}.stderr"));
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&stderr).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e} (cargo xtask setup installs it)"));
        Self { child, name, stderr }
    }

    /// Wait until `ready()` says the program answers at `addr`; panics with its stderr when it
    /// exits first or does not answer within 30 s.
    pub fn wait_until(&mut self, addr: &str, mut ready: impl FnMut() -> bool) {
        let began = Instant::now();
        while began.elapsed() < READY_WITHIN {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("{} exited ({status}) before answering on {addr}; its stderr:\n{}", self.name, self.stderr());
            }
            if ready() {
                eprintln!("{} ready on {addr} after {} ms", self.name, began.elapsed().as_millis());
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{} did not answer on {addr} within {READY_WITHIN:?}; its stderr:\n{}", self.name, self.stderr());
    }

    /// What the program wrote to its stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
