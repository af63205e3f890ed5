//! Cgroups the tests make (v2 when the unified hierarchy has the controller, else v1), each
//! removed on drop: a memory limit (the crew's ceiling) or a CPU quota (a starved generator). A
//! machine where none can be made (not root, a read-only /sys/fs/cgroup) gets `None`, and the test
//! says it skipped.

use std::path::{Path, PathBuf};

/// A cgroup with one limit set.
pub struct Cgroup {
    dir: PathBuf,
}

/// The CFS period quotas are set against, in microseconds (the kernel's default).
const PERIOD_US: u64 = 100_000;

impl Cgroup {
    /// A memory cgroup of `limit` bytes.
    pub fn memory(limit: u64) -> Option<Self> {
        Self::make("memory", &[("memory.max", limit.to_string())], &[("memory.limit_in_bytes", limit.to_string())])
    }

    /// A CPU cgroup whose processes may use `cores` of a CPU (0.2: 20 ms of every 100 ms).
    pub fn cpu(cores: f64) -> Option<Self> {
        let quota = ((cores * PERIOD_US as f64) as u64).max(1_000).to_string();
        Self::make(
            "cpu",
            &[("cpu.max", format!("{quota} {PERIOD_US}"))],
            &[("cpu.cfs_period_us", PERIOD_US.to_string()), ("cpu.cfs_quota_us", quota)],
        )
    }

    /// The file a process writes its pid to in order to join.
    pub fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    fn make(controller: &str, v2_files: &[(&str, String)], v1_files: &[(&str, String)]) -> Option<Self> {
        let name = format!("loadhost-test-{controller}-{}", std::process::id());
        let v2 = Path::new("/sys/fs/cgroup");
        let controllers = std::fs::read_to_string(v2.join("cgroup.controllers")).unwrap_or_default();
        if controllers.split_whitespace().any(|c| c == controller) {
            let _ = std::fs::write(v2.join("cgroup.subtree_control"), format!("+{controller}"));
            if let Some(made) = Self::with_files(v2.join(&name), v2_files) {
                return Some(made);
            }
        }
        Self::with_files(Path::new("/sys/fs/cgroup").join(controller).join(&name), v1_files)
    }

    fn with_files(dir: PathBuf, files: &[(&str, String)]) -> Option<Self> {
        std::fs::create_dir(&dir).ok()?;
        let made = Self { dir };
        files.iter().all(|(file, value)| std::fs::write(made.dir.join(file), value).is_ok()).then_some(made)
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}
