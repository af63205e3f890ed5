//! Memory, as the kernel counts it: this process's resident set, and what is left for it to use
//! (its cgroup's limit, v2 or v1, else the machine's available memory). Linux only, as the rest
//! of the engine (its timer is a `timerfd`).
//!
//! The crew uses them to keep the open model's default ceiling within memory: a worker's
//! footprint is measured as the first workers start (a Rust plugin's is KiBs, a Python one's
//! MiBs), and the ceiling is what the available memory holds of them.

/// Where the memory a run may still use was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Available {
    /// Bytes the process may still take.
    pub bytes: u64,
    /// `the cgroup's memory limit` or `the machine's available memory`.
    pub source: &'static str,
}

/// A line of `/proc/self/status` (`VmRSS`, `VmHWM`), in bytes.
pub fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    kib_line(&status, field)
}

/// `FIELD:   123 kB` in `text`, in bytes.
pub(crate) fn kib_line(text: &str, field: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    let kib: u64 = line[field.len() + 1..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// This process's resident memory now, in bytes.
pub fn resident_bytes() -> Option<u64> {
    status_bytes("VmRSS")
}

/// What this process may still take: the smaller of its cgroup's room (limit − usage) and the
/// machine's available memory.
pub fn available() -> Option<Available> {
    let machine = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| kib_line(&m, "MemAvailable"));
    let machine = machine.map(|bytes| Available { bytes, source: "the machine's available memory" });
    let cgroup = cgroup_room().map(|bytes| Available { bytes, source: "its cgroup's memory limit" });
    match (cgroup, machine) {
        (Some(c), Some(m)) => Some(if c.bytes < m.bytes { c } else { m }),
        (c, m) => c.or(m),
    }
}

/// Limits at or above this mean "no limit" (cgroup v1 writes a page-rounded i64::MAX).
const NO_LIMIT: u64 = 1 << 60;

/// The room left under this process's cgroup memory limit, when it has one.
fn cgroup_room() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (limit, usage) = if controllers.is_empty() {
            let dir = format!("/sys/fs/cgroup{path}");
            (read_number(&format!("{dir}/memory.max")), read_number(&format!("{dir}/memory.current")))
        } else if controllers.split(',').any(|c| c == "memory") {
            let dir = format!("/sys/fs/cgroup/memory{path}");
            (read_number(&format!("{dir}/memory.limit_in_bytes")), read_number(&format!("{dir}/memory.usage_in_bytes")))
        } else {
            continue;
        };
        if let (Some(limit), Some(usage)) = (limit, usage)
            && limit < NO_LIMIT
        {
            return Some(limit.saturating_sub(usage));
        }
    }
    None
}

/// A file holding one number (`max` is none).
fn read_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// `bytes` as MiB or GiB, for the log lines.
pub fn human(bytes: u64) -> String {
    let mib = bytes as f64 / f64::from(1 << 20);
    if mib >= 1024.0 { format!("{:.1} GiB", mib / 1024.0) } else { format!("{mib:.1} MiB") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kib_lines_are_read_by_their_exact_field() {
        let text = "VmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nMemAvailable:   10 kB\n";
        assert_eq!(kib_line(text, "VmRSS"), Some(1 << 20));
        assert_eq!(kib_line(text, "VmHWM"), Some(2 << 20));
        assert_eq!(kib_line(text, "Vm"), None);
    }

    #[test]
    fn this_process_has_memory_and_some_is_available() {
        assert!(resident_bytes().is_some_and(|b| b > 0));
        assert!(available().is_some_and(|a| a.bytes > 0));
    }
}
