//! Workers made of plugin instances: one `Store` + instance per worker, instantiated from the
//! plugin's `InstancePre`, called once per task.

use std::sync::Arc;

use loadhost_engine::{MetricsHandle, Task, TaskOutcome, Worker, WorkerContext, WorkerError, WorkerFactory};
use wasmtime::Store;
use wasmtime::component::Instance;

use crate::bindings::{self, Workload, WorkloadPre};
use crate::ctx::DoerCtx;
use crate::grants::Grants;
use crate::http::RunConnections;
use crate::limits::LimitError;
use crate::plugin::{LifecycleExports, Plugin, one_line};

/// Makes [`WasmWorker`]s from a loaded plugin, and runs its lifecycle.
#[derive(Clone)]
pub struct WasmWorkerFactory {
    engine: wasmtime::Engine,
    max_memory: usize,
    pre: WorkloadPre<DoerCtx>,
    grants: Arc<Grants>,
    /// The connections this run's workers share (a factory serves one run).
    connections: Arc<RunConnections>,
    lifecycle: Option<LifecycleExports>,
    setup_options: Arc<str>,
}

impl WasmWorkerFactory {
    /// What the plugin's `setup` is given (the run's configuration as JSON; empty by default).
    pub fn with_setup_options(mut self, options: impl Into<Arc<str>>) -> Self {
        self.setup_options = options.into();
        self
    }

    /// A store and a bare instance of the plugin, for a worker on `event_loop`.
    async fn instance(
        &self,
        metrics: MetricsHandle,
        event_loop: u32,
    ) -> Result<(Store<DoerCtx>, Instance), WorkerError> {
        let ctx = DoerCtx::new(&self.grants, &self.connections, event_loop, metrics, self.max_memory)
            .map_err(|err| WorkerError::new(format!("granting the plugin's directories: {err:#}")))?;
        let mut store = Store::new(&self.engine, ctx);
        store.limiter(|ctx| &mut ctx.limits);
        // Wasm yields at every epoch tick (see `limits`), so a timeout can always stop it.
        store.epoch_deadline_async_yield_and_update(1);
        store.set_epoch_deadline(1);
        let instance = self
            .pre
            .instance_pre()
            .instantiate_async(&mut store)
            .await
            .map_err(|err| WorkerError::new(format!("instantiating the plugin: {}", one_line(&err))))?;
        Ok((store, instance))
    }
}

/// Setup and teardown run outside the event loops, on the run's own runtime.
const LIFECYCLE_LOOP: u32 = u32::MAX;

/// A lifecycle call's error, as one line: the plugin's own message, or the trap.
fn lifecycle_error(call: &str, result: wasmtime::Result<Result<(), String>>) -> Result<(), WorkerError> {
    match result {
        Ok(Ok(())) => Ok(()),
        Ok(Err(message)) => Err(WorkerError::refused(format!("{call} returned an error: {message}"))),
        Err(trap) => Err(WorkerError::refused(format!("{call} trapped: {}", describe_trap(&trap)))),
    }
}

impl Plugin {
    /// A factory for workers of this plugin, granted `grants`.
    pub fn factory(&self, grants: Grants) -> WasmWorkerFactory {
        WasmWorkerFactory {
            engine: self.runtime.engine.clone(),
            max_memory: self.runtime.max_memory,
            pre: self.pre.clone(),
            grants: Arc::new(grants),
            connections: RunConnections::new(),
            lifecycle: self.lifecycle,
            setup_options: Arc::from(""),
        }
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
        let (mut store, raw) = self.instance(ctx.metrics, ctx.event_loop).await?;
        if let Some(lifecycle) = &self.lifecycle {
            let init = raw
                .get_typed_func::<(u32, &str), (Result<(), String>,)>(&mut store, lifecycle.init)
                .map_err(|err| WorkerError::new(one_line(&err)))?;
            let setup_data = ctx.setup_data.as_deref().unwrap_or_default();
            lifecycle_error("init", init.call_async(&mut store, (ctx.id, setup_data)).await.map(|(r,)| r))?;
        }
        let instance = Workload::new(&mut store, &raw).map_err(|err| WorkerError::new(one_line(&err)))?;
        let task = bindings::Task {
            scenario: ctx.scenario.to_string(),
            worker_id: ctx.id,
            iteration: 0,
            attempt: 0,
            input: Vec::new(),
        };
        Ok(WasmWorker { store, instance, task })
    }

    async fn setup(&self, metrics: MetricsHandle) -> Result<Option<String>, WorkerError> {
        self.run_setup(metrics).await
    }

    async fn teardown(&self, setup_data: &str, metrics: MetricsHandle) -> Result<(), WorkerError> {
        self.run_teardown(setup_data, metrics).await
    }
}

impl WasmWorkerFactory {
    async fn run_setup(&self, metrics: MetricsHandle) -> Result<Option<String>, WorkerError> {
        let Some(lifecycle) = &self.lifecycle else { return Ok(None) };
        let (mut store, raw) = self.instance(metrics, LIFECYCLE_LOOP).await?;
        let setup = raw
            .get_typed_func::<(&str,), (Result<String, String>,)>(&mut store, lifecycle.setup)
            .map_err(|err| WorkerError::new(one_line(&err)))?;
        match setup.call_async(&mut store, (&self.setup_options,)).await {
            Ok((Ok(data),)) => Ok(Some(data)),
            Ok((Err(message),)) => Err(WorkerError::refused(format!("setup returned an error: {message}"))),
            Err(trap) => Err(WorkerError::refused(format!("setup trapped: {}", describe_trap(&trap)))),
        }
    }

    async fn run_teardown(&self, setup_data: &str, metrics: MetricsHandle) -> Result<(), WorkerError> {
        let Some(lifecycle) = &self.lifecycle else { return Ok(()) };
        let (mut store, raw) = self.instance(metrics, LIFECYCLE_LOOP).await?;
        let teardown = raw
            .get_typed_func::<(&str,), (Result<(), String>,)>(&mut store, lifecycle.teardown)
            .map_err(|err| WorkerError::new(one_line(&err)))?;
        lifecycle_error("teardown", teardown.call_async(&mut store, (setup_data,)).await.map(|(r,)| r))
    }
}

impl Worker for WasmWorker {
    async fn run(&mut self, task: Task<'_>) -> TaskOutcome {
        self.task.iteration = task.iteration;
        self.task.attempt = task.attempt;
        self.task.input.clear();
        self.task.input.extend_from_slice(task.input);
        // Counted from now, so a worker that sat idle does not yield at once.
        self.store.set_epoch_deadline(1);
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
    // A limit's own words come first: the rest of the chain is a wasm backtrace.
    let what = match (err.downcast_ref::<LimitError>(), err.downcast_ref::<wasmtime::Trap>()) {
        (Some(limit), _) => limit.to_string(),
        (None, Some(trap)) => trap.to_string(),
        (None, None) => one_line(err),
    };
    let place = err
        .downcast_ref::<wasmtime::WasmBacktrace>()
        .and_then(|bt| bt.frames().first().and_then(|f| f.func_name().map(str::to_owned)));
    match place {
        Some(func) => format!("{what} (in {func})"),
        None => what,
    }
}
