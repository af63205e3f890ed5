//! Probes the sandbox from inside: a task fails (naming what leaked) when the plugin can see an
//! environment variable other than those passed with `-e` (`PROBE_*` names), read a host file, or
//! list the working directory; it passes when the sandbox holds.

use loadhost_sdk::{Doer, Task, TaskResult, failed};

struct Probe;

impl Doer for Probe {
    fn do_task(_task: Task) -> TaskResult {
        if let Some((key, _)) = std::env::vars().find(|(k, _)| !k.starts_with("PROBE_")) {
            return Err(failed(format!("environment leaked: {key}")));
        }
        if std::env::var("PROBE_EXPECTED").as_deref() != Ok("yes") {
            return Err(failed("PROBE_EXPECTED=yes was passed with -e but is not visible"));
        }
        if std::fs::read("/etc/hostname").is_ok() || std::fs::read("/etc/passwd").is_ok() {
            return Err(failed("a host file was readable"));
        }
        if std::fs::read_dir(".").is_ok() {
            return Err(failed("the working directory was listable"));
        }
        Ok(())
    }
}

loadhost_sdk::export!(Probe);
