//! What one plugin instance may use: memory and table sizes (a `ResourceLimiter` per store), and
//! how runaway wasm is interrupted (epochs).
//!
//! Time limits belong to the engine (`--task-timeout`, the lifecycle timeout): it drops a task's
//! future when its time is up. A future is only dropped when it yields, and wasm that spins never
//! would, so every store yields to the async runtime at each epoch tick. That also keeps a spinning
//! plugin from holding a runtime thread that other workers, the timers and the pacer's hand-off
//! need.

use std::time::Duration;

use thiserror::Error;
use wasmtime::ResourceLimiter;

/// How often the epoch advances, so how often running wasm yields and how late a timeout can be.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The deepest wasm stack an instance may use (wasmtime's default, made explicit): deep recursion
/// traps with "call stack exhausted" instead of overflowing the host's fiber stack.
pub const MAX_WASM_STACK: usize = 512 << 10;

/// Elements a table may grow to: a compiled guest has hundreds, an interpreter a few thousand;
/// the pooling allocator reserves this many per table slot.
pub const MAX_TABLE_ELEMENTS: usize = 20_000;

/// A plugin went past a limit; the call traps with this error.
#[derive(Debug, Error)]
pub enum LimitError {
    /// Linear memory past `--max-memory`.
    #[error("memory limit: the plugin asked for {} of linear memory, --max-memory is {}", mib(*.wanted), mib(*.limit))]
    Memory {
        /// Bytes the instance would have had.
        wanted: usize,
        /// The cap.
        limit: usize,
    },
    /// A table past [`MAX_TABLE_ELEMENTS`].
    #[error("table limit: the plugin asked for {wanted} table elements, the most is {MAX_TABLE_ELEMENTS}")]
    Table {
        /// Elements the table would have had.
        wanted: usize,
    },
}

/// `bytes` in MiB, one decimal: "128.0 MiB".
pub(crate) fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

/// One store's limiter: all of an instance's memories together stay under the cap.
#[derive(Debug)]
pub(crate) struct InstanceLimits {
    max_memory: usize,
    used: usize,
}

impl InstanceLimits {
    pub(crate) fn new(max_memory: usize) -> Self {
        Self { max_memory, used: 0 }
    }
}

impl ResourceLimiter for InstanceLimits {
    fn memory_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        let wanted = self.used.saturating_sub(current).saturating_add(desired);
        if wanted > self.max_memory {
            // An error, not a refused grow: most guests abort on a failed grow with a message that
            // no longer says why, and the user should read "memory limit".
            return Err(LimitError::Memory { wanted, limit: self.max_memory }.into());
        }
        self.used = wanted;
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > MAX_TABLE_ELEMENTS {
            return Err(LimitError::Table { wanted: desired }.into());
        }
        Ok(true)
    }
}

/// Advance `engine`'s epoch every [`EPOCH_TICK`] on a thread of its own, for as long as the engine
/// lives.
pub(crate) fn start_epoch_ticker(engine: &wasmtime::Engine) -> std::io::Result<()> {
    let weak = engine.weak();
    std::thread::Builder::new().name("loadhost-epoch".into()).spawn(move || {
        loop {
            std::thread::sleep(EPOCH_TICK);
            match weak.upgrade() {
                Some(engine) => engine.increment_epoch(),
                None => break,
            }
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memories_of_one_instance_share_the_cap() {
        let mut limits = InstanceLimits::new(10 << 20);
        assert!(limits.memory_growing(0, 4 << 20, None).unwrap());
        assert!(limits.memory_growing(0, 4 << 20, None).unwrap(), "a second memory: 8 MiB in all");
        let err = limits.memory_growing(4 << 20, 8 << 20, None).unwrap_err();
        assert!(err.to_string().contains("12.0 MiB"), "{err}");
        assert!(limits.memory_growing(4 << 20, 6 << 20, None).unwrap(), "10 MiB is the cap, allowed");
        assert!(limits.table_growing(0, MAX_TABLE_ELEMENTS, None).unwrap());
        assert!(limits.table_growing(0, MAX_TABLE_ELEMENTS + 1, None).is_err());
    }
}
