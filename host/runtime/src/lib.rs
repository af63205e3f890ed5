//! loadhost's wasmtime embedding: it turns a plugin file into workers the engine can drive, and
//! knows nothing of rates or schedules.
//!
//! ```text
//! Runtime::new(options)      a wasmtime Engine: pooling allocator, no component-model concurrency
//!                            (and, for async plugins, a second one with it, made on first use)
//!   .load(path)              read, check the header, compile (or take the cached artifact),
//!                            check the `doer` (or `doer-async`) export and every import
//!   -> Plugin::factory(env)  a WorkerFactory: one Store + instance per worker, from an InstancePre
//!                            (an async plugin's workers share instances: `shared`)
//! ```
//!
//! # Layout
//! - [`bindings`]: the host `bindgen!` of the `workload` world, and [`bindings_async`] of
//!   `workload-async` (async plugins), which reuses the first's shared interfaces.
//! - `wasmtime_engine`: the Engine's configuration and why.
//! - [`cache`]: compiled artifacts on disk, keyed by the plugin's sha256 and the wasmtime version.
//! - [`plugin`]: loading and rejecting plugins ([`PluginError`] says exactly why).
//! - `ctx`: the per-worker store data: sandboxed WASI and the host's wasi:http hooks.
//! - [`http`]: workers' connections, the allow-list, TLS, and the built-in HTTP metrics.
//! - [`output`]: what plugins print, split into lines for the run's `LineSink`, and the last
//!   stderr line a trap report quotes.
//! - `name_lookup`: wasi:sockets name lookups limited to the allow-list's names.
//! - [`grants`]: what the user grants a plugin (environment, directories, network).
//! - `metrics_host`: the `loadhost:plugin/metrics` import.
//! - `http_host`: the one-call `loadhost:plugin/http` import.
//! - `ws`: the `loadhost:plugin/websocket` import: connections the host owns, and its async twin
//!   `websocket-async` (`ws::concurrent`).
//! - `grpc`: the `loadhost:plugin/grpc` import: unary and streaming calls with raw protobuf bytes.
//! - [`protocol_metrics`]: the WebSocket and gRPC metrics, and how many connections an instance holds.
//! - `under_way`: the host call a worker's task is in, for a task cut short to say where it was.
//! - [`limits`]: memory and table caps per instance, the stack limit, epoch interruption.
//! - `budget`: the byte budget of what the host holds on an instance's behalf (messages, streams,
//!   bodies read whole).
//! - [`worker`]: the engine's `WorkerFactory`/`Worker` implemented with instances.
//! - `shared`: an async plugin's workers, sharing instances whose tasks run together
//!   (`run_concurrent`), and their shared fate.
//! - `timers_host`: the `loadhost:plugin/timers` and `pause` imports (an async and a synchronous task's sleep).
//! - [`runners`]: the Python and JavaScript runners the binary carries, which run scripts.
//! - [`plugin_text`]: what a plugin says, redacted and bounded on its way to an output.

#![deny(missing_docs)]

pub mod bindings;
pub mod bindings_async;
mod budget;
pub mod cache;
mod ctx;
pub mod grants;
mod grpc;
pub mod http;
mod http_host;
pub mod limits;
mod metrics_host;
mod name_lookup;
mod off_fiber;
mod off_loop;
pub mod output;
pub mod plugin;
pub mod plugin_text;
pub mod protocol_metrics;
pub mod runners;
mod shared;
mod timers_host;
mod under_way;
mod wasmtime_engine;
pub mod worker;
mod ws;

pub use cache::{CacheOutcome, CompileCache};
pub use grants::Grants;
pub use http::{HttpClient, HttpOptions, WorkerHttp};
pub use output::{HttpDebug, LineSink, PluginLine, Stream};
pub use plugin::{Plugin, PluginError, ScriptComponent, script_component};
pub use wasmtime_engine::{CapacityError, Runtime, RuntimeOptions, check_capacity};
pub use worker::{WasmWorker, WasmWorkerFactory};
