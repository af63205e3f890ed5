//! The one wasmtime `Engine` of a process, configured for many small, short calls.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::cache::CompileCache;
use crate::limits::{MAX_TABLE_ELEMENTS, MAX_WASM_STACK, start_epoch_ticker};

/// How the runtime is set up.
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// The most instances alive at once: the crew's ceiling plus room for replacements.
    pub max_instances: u32,
    /// Where compiled plugins are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// The most bytes the compile cache may hold (least recently used entries go first); 0
    /// disables it.
    pub cache_max: u64,
    /// The most linear memory one instance may use, in bytes.
    pub max_memory: u64,
    /// The largest plugin file read, and how to raise it (`--max-plugin-size`).
    pub plugin_cap: loadhost_input::Cap,
}

/// A wasmtime engine plus the compile cache: load plugins with [`Runtime::load`].
#[derive(Clone)]
pub struct Runtime {
    pub(crate) engine: Engine,
    pub(crate) cache: Arc<CompileCache>,
    /// Each instance's memory cap, in bytes.
    pub(crate) max_memory: usize,
    /// The largest plugin file read.
    pub(crate) plugin_cap: loadhost_input::Cap,
}

/// Memories, tables and core instances a component may use, per component instance. A Rust
/// component has one memory and a few core instances (the module plus adapter shims); interpreter
/// guests (Python, JavaScript) use a few more, so the pool leaves room for them.
const MEMORIES_PER_INSTANCE: u32 = 2;
const TABLES_PER_INSTANCE: u32 = 4;
const CORE_INSTANCES_PER_INSTANCE: u32 = 16;

/// Memory mappings a live pooled instance holds (measured: 1,000 live instances add 5,982), and
/// what the process needs besides. Linux refuses new mappings past `vm.max_map_count`.
pub const MAPS_PER_INSTANCE: u64 = 6;
const BASE_MAPS: u64 = 500;

/// A crew ceiling the machine cannot hold.
#[derive(Debug, thiserror::Error)]
#[error(
    "{instances} workers need about {needed} memory mappings ({MAPS_PER_INSTANCE} per instance) but vm.max_map_count is \
     {limit}: use at most {fits} workers, or raise the limit (sysctl -w vm.max_map_count=N)"
)]
pub struct CapacityError {
    /// Instances asked for.
    pub instances: u32,
    /// Mappings they need.
    pub needed: u64,
    /// The system's limit.
    pub limit: u64,
    /// The most instances that fit.
    pub fits: u64,
}

/// Check that `instances` live instances fit under `vm.max_map_count` (when the system has one).
pub fn check_capacity(instances: u32) -> Result<(), CapacityError> {
    let limit = std::fs::read_to_string("/proc/sys/vm/max_map_count").ok().and_then(|t| t.trim().parse::<u64>().ok());
    let Some(limit) = limit else { return Ok(()) };
    let needed = u64::from(instances.saturating_add(POOL_SLACK)) * MAPS_PER_INSTANCE + BASE_MAPS;
    if needed <= limit {
        return Ok(());
    }
    let fits = (limit.saturating_sub(BASE_MAPS) / MAPS_PER_INSTANCE).saturating_sub(u64::from(POOL_SLACK));
    Err(CapacityError { instances, needed, limit, fits })
}

/// Extra pool slots beyond the crew: a trapped worker's replacement is made after its instance is
/// dropped, but instantiation can overlap teardown, so keep a little slack.
const POOL_SLACK: u32 = 8;

impl Runtime {
    /// Build the engine.
    pub fn new(options: RuntimeOptions) -> anyhow::Result<Self> {
        let slots = options.max_instances.saturating_add(POOL_SLACK);
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(slots)
            .total_memories(slots.saturating_mul(MEMORIES_PER_INSTANCE))
            .total_tables(slots.saturating_mul(TABLES_PER_INSTANCE))
            .total_core_instances(slots.saturating_mul(CORE_INSTANCES_PER_INSTANCE))
            .total_stacks(slots)
            .max_memories_per_component(MEMORIES_PER_INSTANCE)
            .max_tables_per_component(TABLES_PER_INSTANCE)
            .max_core_instances_per_component(CORE_INSTANCES_PER_INSTANCE)
            .table_elements(MAX_TABLE_ELEMENTS)
            // The store's limiter gives the clear error; the pool's own bound is the backstop.
            .max_memory_size(usize::try_from(options.max_memory).unwrap_or(usize::MAX));

        let mut config = Config::new();
        // Component-model concurrency (WASIp3, async-lifted exports) makes every call 3-4x more
        // expensive and no plugin needs it: plugins are synchronous functions the host awaits.
        config.concurrency_support(false);
        // Instantiation from a pool is about twice as fast as on-demand, and a trapped worker is
        // replaced by a fresh instance mid-run.
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        // Runaway wasm yields at every epoch tick so the engine's timeouts can stop it; measured
        // cost on a tight loop under 1%.
        config.epoch_interruption(true);
        config.max_wasm_stack(MAX_WASM_STACK);
        let engine = Engine::new(&config).map_err(anyhow::Error::from).context("configuring the WebAssembly engine")?;
        start_epoch_ticker(&engine).context("starting the epoch ticker thread")?;
        let cache = Arc::new(CompileCache::new(options.cache_dir, options.cache_max));
        let max_memory = usize::try_from(options.max_memory).unwrap_or(usize::MAX);
        Ok(Self { engine, cache, max_memory, plugin_cap: options.plugin_cap })
    }

    /// The underlying engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }
}
