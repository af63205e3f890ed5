//! Workers made of plugin instances: one `Store` + instance per worker, instantiated from the
//! plugin's `InstancePre`, called once per task.

use std::sync::Arc;

use loadhost_engine::{Task, TaskOutcome, Worker, WorkerContext, WorkerError, WorkerFactory};
use wasmtime::Store;

use crate::bindings::{self, Workload, WorkloadPre};
use crate::ctx::DoerCtx;
use crate::http::{HttpClient, HttpOptions};
use crate::plugin::{Plugin, one_line};

/// What the user grants a plugin: its whole environment (`-e`), and the network through the
/// run's HTTP client and its allow-list (`--allow-host`).
#[derive(Clone)]
pub struct Grants {
    /// `KEY=VALUE` pairs.
    pub env: Vec<(String, String)>,
    /// The run's HTTP client; its allow-list also governs wasi:sockets.
    pub http: Arc<HttpClient>,
}

impl Grants {
    /// No environment and no network.
    pub fn none() -> anyhow::Result<Self> {
        Ok(Self { env: Vec::new(), http: HttpClient::new(&HttpOptions::default())? })
    }
}

/// Makes [`WasmWorker`]s from a loaded plugin.
#[derive(Clone)]
pub struct WasmWorkerFactory {
    engine: wasmtime::Engine,
    pre: WorkloadPre<DoerCtx>,
    grants: Arc<Grants>,
}

impl Plugin {
    /// A factory for workers of this plugin, granted `grants`.
    pub fn factory(&self, grants: Grants) -> WasmWorkerFactory {
        WasmWorkerFactory { engine: self.runtime.engine.clone(), pre: self.pre.clone(), grants: Arc::new(grants) }
    }
}

/// One plugin instance in its own store.
pub struct WasmWorker {
    store: Store<DoerCtx>,
    instance: Workload,
    /// Reused for every call: only the per-task fields change.
    task: bindings::Task,
}

impl WorkerFactory for WasmWorkerFactory {
    type Worker = WasmWorker;

    async fn new_worker(&self, ctx: WorkerContext) -> Result<WasmWorker, WorkerError> {
        let mut store = Store::new(&self.engine, DoerCtx::new(&self.grants, ctx.metrics));
        let instance = self
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|err| WorkerError::new(format!("instantiating the plugin: {}", one_line(&err))))?;
        let task = bindings::Task {
            scenario: ctx.scenario.to_string(),
            worker_id: ctx.id,
            iteration: 0,
            attempt: 0,
            input: Vec::new(),
        };
        Ok(WasmWorker { store, instance, task })
    }
}

impl Worker for WasmWorker {
    async fn run(&mut self, task: Task<'_>) -> TaskOutcome {
        self.task.iteration = task.iteration;
        self.task.attempt = task.attempt;
        self.task.input.clear();
        self.task.input.extend_from_slice(task.input);
        let doer = self.instance.loadhost_plugin_doer();
        match doer.call_do_task(&mut self.store, &self.task).await {
            Ok(Ok(())) => TaskOutcome::Passed,
            Ok(Err(bindings::TaskError::Retryable(msg))) => TaskOutcome::Retryable(msg),
            Ok(Err(bindings::TaskError::Failed(msg))) => TaskOutcome::Failed(msg),
            Ok(Err(bindings::TaskError::Abort(msg))) => TaskOutcome::Abort(msg),
            Err(err) => TaskOutcome::Trapped(describe_trap(&err)),
        }
    }
}

/// The trap's kind and, when known, the wasm function it happened in.
fn describe_trap(err: &wasmtime::Error) -> String {
    let what = match err.downcast_ref::<wasmtime::Trap>() {
        Some(trap) => format!("wasm trap: {trap}"),
        None => one_line(err),
    };
    let place = err
        .downcast_ref::<wasmtime::WasmBacktrace>()
        .and_then(|bt| bt.frames().first().and_then(|f| f.func_name().map(str::to_owned)));
    match place {
        Some(func) => format!("{what} (in {func})"),
        None => what,
    }
}
