//! This process's resident memory, as the kernel counts it, for the summary's peak RSS.

/// A line of this process's `/proc/self/status` (`VmRSS`, `VmHWM`), in bytes.
pub(crate) fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line[field.len()..].trim_start_matches(':').trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// The most resident memory this process has held so far, in bytes.
pub(crate) fn peak_bytes() -> Option<u64> {
    status_bytes("VmHWM").into_iter().chain(status_bytes("VmRSS")).max()
}
