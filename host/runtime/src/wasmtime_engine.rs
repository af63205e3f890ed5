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
    /// The engine of async plugins (`doer-async`), made when the first is loaded.
    concurrent: Arc<std::sync::OnceLock<Engine>>,
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
pub enum CapacityError {
    /// More memory mappings than `vm.max_map_count` allows.
    #[error(
        "{instances} workers need about {needed} memory mappings ({MAPS_PER_INSTANCE} per instance) but \
         vm.max_map_count is {limit}: use at most {fits} workers, or raise the limit (sysctl -w vm.max_map_count=N)"
    )]
    Mappings {
        /// Instances asked for.
        instances: u32,
        /// Mappings they need.
        needed: u64,
        /// The system's limit.
        limit: u64,
        /// The most instances that fit.
        fits: u64,
    },
    /// More address space than a process has, even with reservations cut to the memory cap.
    #[error(
        "{instances} workers with --max-memory {max_memory} bytes need {needed_tib} TiB of address space for their \
         linear memories, more than the {POOL_ADDRESS_SPACE_TIB} TiB loadhost may reserve: use at most {fits} workers or \
         a smaller --max-memory"
    )]
    AddressSpace {
        /// Instances asked for.
        instances: u32,
        /// Each instance's memory cap.
        max_memory: u64,
        /// What their memories would reserve, in TiB.
        needed_tib: u64,
        /// The most instances that fit.
        fits: u64,
    },
}

/// Check that `instances` live instances, each with memories capped at `max_memory`, fit under
/// `vm.max_map_count` (when the system has one) and in the process's address space.
pub fn check_capacity(instances: u32, max_memory: u64) -> Result<(), CapacityError> {
    let slots = u64::from(instances.saturating_add(POOL_SLACK));
    let layout = MemoryLayout::for_pool(instances.saturating_add(POOL_SLACK), max_memory);
    let needed = slots.saturating_mul(layout.per_instance());
    if needed > POOL_ADDRESS_SPACE {
        let fits = (POOL_ADDRESS_SPACE / layout.per_instance().max(1)).saturating_sub(u64::from(POOL_SLACK));
        return Err(CapacityError::AddressSpace { instances, max_memory, needed_tib: needed.div_ceil(1 << 40), fits });
    }
    let limit = std::fs::read_to_string("/proc/sys/vm/max_map_count").ok().and_then(|t| t.trim().parse::<u64>().ok());
    let Some(limit) = limit else { return Ok(()) };
    let needed = slots * MAPS_PER_INSTANCE + BASE_MAPS;
    if needed <= limit {
        return Ok(());
    }
    let fits = (limit.saturating_sub(BASE_MAPS) / MAPS_PER_INSTANCE).saturating_sub(u64::from(POOL_SLACK));
    Err(CapacityError::Mappings { instances, needed, limit, fits })
}

/// The address space the pool's linear memories may take. x86-64 and aarch64 Linux give a process
/// 128 TiB; half stays for the heap, the fiber stacks, the tables and everything else.
const POOL_ADDRESS_SPACE_TIB: u64 = 64;
const POOL_ADDRESS_SPACE: u64 = POOL_ADDRESS_SPACE_TIB << 40;

/// wasmtime's own layout of a 64-bit host's linear memory: 4 GiB reserved (every 32-bit address a
/// wasm load can form lands in it, so the compiled code needs no bounds check) and a 32 MiB guard.
const DEFAULT_RESERVATION: u64 = 4 << 30;
const DEFAULT_GUARD: u64 = 32 << 20;

/// The guard after a linear memory whose reservation is cut to the memory cap: loads and stores
/// then carry explicit bounds checks, and the guard only has to cover a check's constant offset.
const CUT_GUARD: u64 = 2 << 20;

/// How each linear memory slot of the pool is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MemoryLayout {
    /// Address space reserved per linear memory; `None` keeps wasmtime's default.
    reservation: Option<u64>,
    /// The guard after it; `None` keeps wasmtime's default.
    guard: Option<u64>,
}

impl MemoryLayout {
    /// wasmtime's default (no bounds checks) while the pool fits in [`POOL_ADDRESS_SPACE`]: up to
    /// about 8,000 instances. A larger crew gets reservations cut to `max_memory` (rounded up to
    /// wasm pages): 19,000 instances then reserve about 2.5 TiB instead of 150, at the price of a
    /// bounds check on every load and store (docs/runtime.md, "Bytes per in-flight task").
    fn for_pool(slots: u32, max_memory: u64) -> Self {
        let default = Self { reservation: None, guard: None };
        if u64::from(slots).saturating_mul(default.per_instance()) <= POOL_ADDRESS_SPACE {
            return default;
        }
        let page = 64 << 10;
        Self { reservation: Some(max_memory.div_ceil(page).saturating_mul(page)), guard: Some(CUT_GUARD) }
    }

    /// Address space one instance's memories take.
    fn per_instance(self) -> u64 {
        let slot = self.reservation.unwrap_or(DEFAULT_RESERVATION).saturating_add(self.guard.unwrap_or(DEFAULT_GUARD));
        slot.saturating_mul(u64::from(MEMORIES_PER_INSTANCE))
    }
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
        let layout = MemoryLayout::for_pool(slots, options.max_memory);
        if let Some(bytes) = layout.reservation {
            tracing::info!(
                instances = slots,
                reservation = bytes,
                "linear memory reservations cut to the memory cap so that the pool fits in the address space"
            );
            config.memory_reservation(bytes);
        }
        if let Some(bytes) = layout.guard {
            config.memory_guard_size(bytes);
        }
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
        perf_map(&mut config);
        let engine = Engine::new(&config).map_err(anyhow::Error::from).context("configuring the WebAssembly engine")?;
        start_epoch_ticker(&engine).context("starting the epoch ticker thread")?;
        let cache = Arc::new(CompileCache::new(options.cache_dir, options.cache_max));
        let max_memory = usize::try_from(options.max_memory).unwrap_or(usize::MAX);
        Ok(Self { engine, cache, max_memory, plugin_cap: options.plugin_cap, concurrent: Arc::default() })
    }

    /// The engine of async plugins: component-model concurrency on (a task awaiting an async
    /// import holds no fiber), instances allocated on demand (a few instances, each shared by
    /// up to `shared::WORKERS_PER_INSTANCE` workers, need no pool), and the same epoch
    /// interruption and stack limit as the pooled engine.
    pub(crate) fn concurrent_engine(&self) -> anyhow::Result<&Engine> {
        if let Some(engine) = self.concurrent.get() {
            return Ok(engine);
        }
        let mut config = Config::new();
        config.concurrency_support(true);
        config.wasm_component_model_async(true);
        config.epoch_interruption(true);
        config.max_wasm_stack(MAX_WASM_STACK);
        perf_map(&mut config);
        let engine =
            Engine::new(&config).map_err(anyhow::Error::from).context("configuring the engine of async plugins")?;
        start_epoch_ticker(&engine).context("starting the epoch ticker thread")?;
        // Two loads at once would both get here: the first engine set is the one kept.
        let _ = self.concurrent.set(engine);
        self.concurrent.get().context("the engine of async plugins")
    }

    /// The underlying engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }
}

/// With `LOADHOST_PERF_MAP` set, wasm functions are named in `/tmp/perf-PID.map`, so `perf report`
/// shows the plugin's own functions where it would show `[JIT]` addresses (a profiling aid for
/// benches; it costs a write per loaded module, and nothing when unset).
fn perf_map(config: &mut Config) {
    if std::env::var_os("LOADHOST_PERF_MAP").is_some() {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn small_crews_keep_the_default_reservation_and_large_ones_get_theirs_cut_to_the_cap() {
        assert_eq!(MemoryLayout::for_pool(1_000, 64 * MIB), MemoryLayout { reservation: None, guard: None });
        assert_eq!(MemoryLayout::for_pool(8_000, 64 * MIB).reservation, None);
        let cut = MemoryLayout::for_pool(19_008, 64 * MIB);
        assert_eq!(cut, MemoryLayout { reservation: Some(64 * MIB), guard: Some(CUT_GUARD) });
        // A cap that is not a whole number of wasm pages is rounded up, never down.
        assert_eq!(MemoryLayout::for_pool(19_008, 64 * MIB + 1).reservation, Some(64 * MIB + (64 << 10)));
    }

    #[test]
    fn a_crew_whose_memories_cannot_fit_the_address_space_is_refused_with_the_number_that_fits() {
        assert!(matches!(check_capacity(19_000, 64 * MIB), Ok(()) | Err(CapacityError::Mappings { .. })));
        let err = check_capacity(100_000, 1 << 30).expect_err("100,000 × 2 × 1 GiB cannot be reserved");
        let CapacityError::AddressSpace { fits, needed_tib, .. } = err else { panic!("{err}") };
        assert!(needed_tib > POOL_ADDRESS_SPACE_TIB, "{needed_tib}");
        assert!(fits > 30_000 && fits < 33_000, "{fits}");
        assert!(err.to_string().contains("--max-memory"), "{err}");
    }
}
