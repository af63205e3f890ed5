//! This process's resident memory, as the kernel counts it, for the summary's peak RSS.

pub(crate) use loadhost_engine::memory::status_bytes;

/// The most resident memory this process has held so far, in bytes.
pub(crate) fn peak_bytes() -> Option<u64> {
    status_bytes("VmHWM").into_iter().chain(status_bytes("VmRSS")).max()
}
