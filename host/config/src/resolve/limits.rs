//! The limits every run has (memory, body and plugin sizes, timeouts, the compile cache): their
//! defaults filled in, so outputs show what was in force, and checked.

use super::ConfigError;
use crate::options::RunOptions;
use crate::units::{Dur, Size};

pub use loadhost_engine::plan::{
    DEFAULT_GRACE, DEFAULT_GRACEFUL_STOP, DEFAULT_LIFECYCLE_TIMEOUT, DEFAULT_TASK_TIMEOUT,
};
/// Each instance's memory cap when `--max-memory` does not say: ample for compiled guests (a Rust
/// plugin starts at about 1 MiB), and 1,000 workers still cannot take more than 128 GiB.
pub const DEFAULT_MAX_MEMORY: u64 = 128 << 20;

/// How long the OpenMetrics endpoint waits, after the run, for a scrape to read the final
/// figures: 15 s, a common Prometheus scrape interval (its own default is a minute).
pub const DEFAULT_METRICS_LINGER: std::time::Duration = std::time::Duration::from_secs(15);

/// The compile cache's cap when `--cache-max` does not say: room for about 25 interpreter (Python,
/// JS) plugins of ~36 MB or thousands of Rust ones, while a day of rebuilds cannot fill the disk.
pub const DEFAULT_CACHE_MAX: u64 = 1 << 30;
/// The largest plugin file a run reads unless `--max-plugin-size` says otherwise.
pub const DEFAULT_MAX_PLUGIN_SIZE: u64 = loadhost_input::PLUGIN.bytes;

/// The largest response body the host reads for a plugin, unless `--max-memory` is smaller.
pub const DEFAULT_MAX_RESPONSE_BODY: u64 = 64 << 20;
/// The smallest memory cap: one 64 KiB wasm page times the 17 a Rust plugin starts with, rounded up.
const MIN_MAX_MEMORY: u64 = 2 << 20;
/// A plugin's memories are 32-bit.
const MAX_MAX_MEMORY: u64 = 4 << 30;

/// How large a plugin file `options` let a command read (`--max-plugin-size`), as the file
/// reader's cap.
pub fn plugin_cap(options: &RunOptions) -> loadhost_input::Cap {
    let bytes = options.max_plugin_size.map_or(DEFAULT_MAX_PLUGIN_SIZE, |s| s.0);
    loadhost_input::PLUGIN.raised(bytes, "--max-plugin-size raises it")
}

/// The limits every run has: fill in their defaults, so outputs show what was in force, and check
/// them.
pub(super) fn fill_limits(options: &mut RunOptions) -> Result<(), ConfigError> {
    let max_memory = options.max_memory.get_or_insert(Size(DEFAULT_MAX_MEMORY)).0;
    if !(MIN_MAX_MEMORY..=MAX_MAX_MEMORY).contains(&max_memory) {
        return Err(ConfigError::MaxMemory(Size(max_memory)));
    }
    let body = options.max_response_body.get_or_insert(Size(DEFAULT_MAX_RESPONSE_BODY.min(max_memory)));
    if body.0 == 0 {
        return Err(ConfigError::Zero { flag: "max-response-body" });
    }
    if options.max_plugin_size.is_some_and(|s| s.0 == 0) {
        return Err(ConfigError::Zero { flag: "max-plugin-size" });
    }
    if options.task_timeout.get_or_insert(Dur(DEFAULT_TASK_TIMEOUT)).0.is_zero() {
        return Err(ConfigError::ZeroTaskTimeout);
    }
    options.grace.get_or_insert(Dur(DEFAULT_GRACE));
    options.graceful_stop.get_or_insert(Dur(DEFAULT_GRACEFUL_STOP));
    if options.metrics_addr.is_some() {
        options.metrics_linger.get_or_insert(Dur(DEFAULT_METRICS_LINGER));
    }
    Ok(())
}
