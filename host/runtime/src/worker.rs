//! Workers made of plugin instances: one `Store` + instance per worker, instantiated from the
//! plugin's `InstancePre`, called once per task.

use std::sync::Arc;

use loadhost_engine::{MetricsHandle, Task, TaskOutcome, Worker, WorkerContext, WorkerError, WorkerFactory};
use loadhost_metrics::ErrorKind;
use wasmtime::Store;
use wasmtime::component::{ComponentExportIndex, ComponentNamedList, ComponentType, Instance, Lift, Lower};

use crate::bindings::{self, Workload, WorkloadPre};
use crate::ctx::DoerCtx;
use crate::grants::Grants;
use crate::http::RunConnections;
use crate::limits::LimitError;
use crate::output::{Capture, HttpDebug, LineSink};
use crate::plugin::{LifecycleExports, Plugin, one_line};
use crate::plugin_text::{PluginText, bounded};

/// Makes [`WasmWorker`]s from a loaded plugin, and runs its lifecycle.
#[derive(Clone)]
pub struct WasmWorkerFactory {
    engine: wasmtime::Engine,
    max_memory: usize,
    pre: Option<WorkloadPre<DoerCtx>>,
    /// An async plugin's (exporting `doer-async`, not `doer`)…
    async_pre: Option<crate::bindings_async::WorkloadAsyncPre<DoerCtx>>,
    /// …and its instances, shared by its workers, made with the first worker.
    shared: Arc<std::sync::OnceLock<Arc<crate::shared::Instances>>>,
    grants: Arc<Grants>,
    /// The connections this run's workers share (a factory serves one run).
    connections: Arc<RunConnections>,
    lifecycle: Option<LifecycleExports>,
    setup_options: Arc<str>,
    /// Where the plugin's printed lines go (`None`: only kept for trap reports).
    output: Option<Arc<dyn LineSink>>,
    /// Whether requests are shown too (`--http-debug`).
    http_debug: Option<HttpDebug>,
}

impl WasmWorkerFactory {
    /// What the plugin's `setup` is given (the run's configuration as JSON; empty by default).
    pub fn with_setup_options(mut self, options: impl Into<Arc<str>>) -> Self {
        self.setup_options = options.into();
        self
    }

    /// Send what the plugin prints to `sink`, and with `http_debug` an account of each request.
    pub fn with_output(mut self, sink: Arc<dyn LineSink>, http_debug: Option<HttpDebug>) -> Self {
        self.output = Some(sink);
        self.http_debug = http_debug;
        self
    }

    /// A worker with an instance of its own, its `init` run (off the event loop, see `off_loop`).
    async fn own_worker(&self, ctx: WorkerContext) -> Result<WasmWorker, WorkerError> {
        let capture = self.capture(ctx.scenario.clone(), Some(ctx.id));
        let (mut store, raw) = self.instance(ctx.metrics, ctx.event_loop, &capture).await?;
        if let Some(lifecycle) = &self.lifecycle {
            let init = raw
                .get_typed_func::<(u32, &str), (Result<(), String>,)>(&mut store, lifecycle.init)
                .map_err(|err| WorkerError::new(one_line(&err)))?;
            let setup_data = ctx.setup_data.as_deref().unwrap_or_default();
            let result = init.call_async(&mut store, (ctx.id, setup_data)).await.map(|(r,)| r);
            lifecycle_error("init", result, &capture, &self.grants.text)?;
        }
        let instance = Workload::new(&mut store, &raw).map_err(|err| WorkerError::new(one_line(&err)))?;
        let task = bindings::Task {
            scenario: ctx.scenario.to_string(),
            worker_id: ctx.id,
            iteration: 0,
            attempt: 0,
            input: Vec::new(),
        };
        let side = store.data().side.clone();
        let own = OwnWorker { store, instance, capture, task, text: self.grants.text.clone(), side };
        Ok(WasmWorker(Kind::Own(Box::new(own))))
    }

    /// A capture of an instance's output, for worker `worker` of `scenario` (`None`: the
    /// lifecycle's own instance).
    fn capture(&self, scenario: Arc<str>, worker: Option<u32>) -> Arc<Capture> {
        Capture::new(self.output.clone(), self.http_debug, scenario, worker, self.grants.text.clone())
    }

    /// A store and a bare instance of the plugin, for a worker on `event_loop`.
    async fn instance(
        &self,
        metrics: MetricsHandle,
        event_loop: u32,
        capture: &Arc<Capture>,
    ) -> Result<(Store<DoerCtx>, Instance), WorkerError> {
        let ctx = DoerCtx::new(&self.grants, capture, &self.connections, event_loop, metrics, self.max_memory)
            .map_err(|err| WorkerError::new(format!("granting the plugin's directories: {err:#}")))?;
        let mut store = Store::new(&self.engine, ctx);
        store.limiter(|ctx| &mut ctx.limits);
        // Wasm yields at every epoch tick (see `limits`), so a timeout can always stop it.
        store.epoch_deadline_async_yield_and_update(1);
        store.set_epoch_deadline(1);
        let instance = self
            .pre
            .as_ref()
            .ok_or_else(|| WorkerError::new("an async plugin has no instance of its own"))?
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
fn lifecycle_error<T>(
    call: &str,
    result: wasmtime::Result<Result<(), T>>,
    capture: &Capture,
    text: &PluginText,
) -> Result<(), WorkerError>
where
    T: Into<String>,
{
    match result {
        Ok(Ok(())) => Ok(()),
        Ok(Err(message)) => {
            Err(WorkerError::refused(format!("{call} returned an error: {}", text.message(message.into()))))
        }
        Err(trap) => Err(WorkerError::refused(format!("{call} trapped: {}", bounded(describe_trap(&trap, capture))))),
    }
}

impl Plugin {
    /// A factory for workers of this plugin, granted `grants`; a script's runner is also granted
    /// the script's files, read-only, and told its entry file.
    pub fn factory(&self, mut grants: Grants) -> WasmWorkerFactory {
        if let Some(script) = &self.script {
            grants.dirs.push((script.dir.path().to_owned(), crate::runners::SCRIPT_DIR.to_owned()));
            grants.env.push((crate::runners::SCRIPT_VAR.to_owned(), script.script.entry.clone()));
        }
        let grants = Arc::new(grants);
        let connections = RunConnections::new();
        let (pre, async_pre) = match &self.exports {
            crate::plugin::Exports::Doer(pre) => (Some(pre.clone()), None),
            crate::plugin::Exports::DoerAsync(pre) => (None, Some(pre.clone())),
        };
        WasmWorkerFactory {
            engine: self.runtime.engine.clone(),
            max_memory: self.runtime.max_memory,
            pre,
            async_pre,
            shared: Arc::default(),
            grants,
            connections,
            lifecycle: self.lifecycle,
            setup_options: Arc::from(""),
            output: None,
            http_debug: None,
        }
    }
}

/// A worker: a plugin instance of its own, or a place in an async plugin's shared instance.
pub struct WasmWorker(Kind);

enum Kind {
    Own(Box<OwnWorker>),
    Shared(crate::shared::SharedWorker),
}

/// One plugin instance in its own store.
struct OwnWorker {
    store: Store<DoerCtx>,
    instance: Workload,
    /// What the instance prints.
    capture: Arc<Capture>,
    /// Reused for every call: only the per-task fields change.
    task: bindings::Task,
    /// The run's secrets, kept out of the task's messages.
    text: Arc<PluginText>,
    /// The store's side slot, which each call drives (see `off_fiber`).
    side: Arc<crate::off_fiber::Side>,
}

impl WorkerFactory for WasmWorkerFactory {
    type Worker = WasmWorker;

    async fn new_worker(&self, ctx: WorkerContext) -> Result<WasmWorker, WorkerError> {
        if let Some(pre) = &self.async_pre {
            let instances = self.shared.get_or_init(|| {
                crate::shared::Instances::new(crate::shared::Maker {
                    engine: pre.instance_pre().component().engine().clone(),
                    pre: pre.clone(),
                    max_memory: self.max_memory,
                    grants: self.grants.clone(),
                    connections: self.connections.clone(),
                    output: self.output.clone(),
                    http_debug: self.http_debug,
                })
            });
            let worker =
                crate::shared::SharedWorker::new(instances.clone(), ctx.event_loop, ctx.scenario, ctx.id, ctx.metrics)
                    .await?;
            return Ok(WasmWorker(Kind::Shared(worker)));
        }
        // Made off the event loop (see `off_loop`), not on it, where tasks would wait.
        let factory = self.clone();
        crate::off_loop::make(async move { factory.own_worker(ctx).await }).await.map_err(WorkerError::new)?
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
        let capture = self.capture(Arc::from("setup"), None);
        let (mut store, raw) = self.instance(metrics, LIFECYCLE_LOOP, &capture).await?;
        let setup = raw
            .get_typed_func::<(&str,), (Result<String, String>,)>(&mut store, lifecycle.setup)
            .map_err(|err| WorkerError::new(one_line(&err)))?;
        let result = match setup.call_async(&mut store, (&self.setup_options,)).await {
            Ok((Ok(data),)) => return Ok(Some(data)),
            Ok((Err(message),)) => Ok(Err(message)),
            Err(trap) => Err(trap),
        };
        lifecycle_error("setup", result, &capture, &self.grants.text).map(|()| None)
    }

    /// Hand the run's summary (`--summary-json`'s text) to the plugin's `summary.handle-summary`,
    /// on an instance of its own, after the run: the files it asks for (path, contents), or `None`
    /// when it exports no such function or has nothing to do with the summary (k6's
    /// `handleSummary` absent). Its metrics go nowhere: the run's are final.
    pub async fn handle_summary(&self, summary: &str) -> Result<Option<Vec<(String, Vec<u8>)>>, WorkerError> {
        let Some(export) = self.lifecycle.as_ref().and_then(|l| l.handle_summary) else { return Ok(None) };
        self.call_alone("handleSummary", export, (summary,)).await
    }

    /// The plan the plugin's own code computes (`plan.options`: k6's `options` as JSON), on an
    /// instance of its own, before the run: `None` when it exports no such function or computes
    /// no plan. Its metrics go nowhere: nothing has run.
    pub async fn plan_options(&self) -> Result<Option<String>, WorkerError> {
        let Some(export) = self.lifecycle.as_ref().and_then(|l| l.plan_options) else { return Ok(None) };
        self.call_alone("options", export, ()).await
    }

    /// Call the optional export `export` (named `call` in errors), which answers `result<option<R>,
    /// string>`, on an instance of its own whose metrics go nowhere: what the plugin answers, or
    /// its error or trap said as a lifecycle call's.
    async fn call_alone<P, R>(
        &self,
        call: &str,
        export: ComponentExportIndex,
        params: P,
    ) -> Result<Option<R>, WorkerError>
    where
        P: ComponentNamedList + Lower + Send + Sync,
        R: ComponentType + Lift + Send + Sync + 'static,
    {
        let metrics = MetricsHandle::new(Arc::new(loadhost_metrics::Recorder::new(1)), 0);
        let capture = self.capture(Arc::from(call), None);
        let (mut store, raw) = self.instance(metrics, LIFECYCLE_LOOP, &capture).await?;
        let func = raw
            .get_typed_func::<P, (Result<Option<R>, String>,)>(&mut store, export)
            .map_err(|err| WorkerError::new(one_line(&err)))?;
        let failed = match func.call_async(&mut store, params).await {
            Ok((Ok(answer),)) => return Ok(answer),
            Ok((Err(message),)) => Ok(Err(message)),
            Err(trap) => Err(trap),
        };
        lifecycle_error(call, failed, &capture, &self.grants.text).map(|()| None)
    }

    async fn run_teardown(&self, setup_data: &str, metrics: MetricsHandle) -> Result<(), WorkerError> {
        let Some(lifecycle) = &self.lifecycle else { return Ok(()) };
        let capture = self.capture(Arc::from("teardown"), None);
        let (mut store, raw) = self.instance(metrics, LIFECYCLE_LOOP, &capture).await?;
        let teardown = raw
            .get_typed_func::<(&str,), (Result<(), String>,)>(&mut store, lifecycle.teardown)
            .map_err(|err| WorkerError::new(one_line(&err)))?;
        let result = teardown.call_async(&mut store, (setup_data,)).await.map(|(r,)| r);
        lifecycle_error("teardown", result, &capture, &self.grants.text)
    }
}

impl Worker for WasmWorker {
    fn whereabouts(&self) -> Option<loadhost_engine::worker::Whereabouts> {
        let Kind::Own(own) = &self.0 else { return None };
        let (under_way, text) = (own.store.data().under_way.clone(), own.text.clone());
        Some(Arc::new(move || under_way.describe(&text)))
    }

    async fn run(&mut self, task: Task<'_>) -> TaskOutcome {
        match &mut self.0 {
            Kind::Own(own) => own.run(task).await,
            Kind::Shared(shared) => shared.run(task).await,
        }
    }
}

impl OwnWorker {
    async fn run(&mut self, task: Task<'_>) -> TaskOutcome {
        self.task.iteration = task.iteration;
        self.task.attempt = task.attempt;
        self.task.input.clear();
        self.task.input.extend_from_slice(task.input);
        // Its first request counts the gate wait as blocked (`http_req_blocked`).
        self.store.data_mut().connections.task_started(task.gate_wait);
        // Counted from now, so a worker that sat idle does not yield at once.
        self.store.set_epoch_deadline(1);
        self.capture.set_task(Some(task.iteration));
        let doer = self.instance.loadhost_plugin_doer();
        let call = doer.call_do_task(&mut self.store, &self.task);
        match crate::off_fiber::drive(&self.side, call).await {
            Ok(returned) => outcome(returned, &self.text),
            Err(err) => TaskOutcome::Error(ErrorKind::Trapped, bounded(describe_trap(&err, &self.capture))),
        }
    }
}

impl Drop for OwnWorker {
    fn drop(&mut self) {
        // A task cut short (a timeout, a stop) may leave half a line: it is still the plugin's.
        self.capture.flush();
    }
}

/// The one translation of the WIT's `task-error` into the host's kinds of failure.
pub(crate) fn outcome(returned: Result<(), bindings::TaskError>, text: &PluginText) -> TaskOutcome {
    let (kind, msg) = match returned {
        Ok(()) => return TaskOutcome::Passed,
        Err(bindings::TaskError::Retryable(msg)) => (ErrorKind::Retryable, text.message(msg)),
        Err(bindings::TaskError::Failed(msg)) => (ErrorKind::Failed, text.message(msg)),
        Err(bindings::TaskError::Abort(msg)) => (ErrorKind::Aborted, text.message(msg)),
    };
    TaskOutcome::Error(kind, msg)
}

/// The trap's kind and, when known, the wasm function it happened in; a panic's own words first
/// when the plugin printed them (the Rust SDK's panic hook writes `panicked at FILE:LINE:COL: …`
/// to stderr just before the trap), else the last stderr line of the task, if any.
pub(crate) fn describe_trap(err: &wasmtime::Error, capture: &Capture) -> String {
    // A limit's own words come first: the rest of the chain is a wasm backtrace.
    let runaway = (err.downcast_ref::<crate::shared::RunawayTask>().map(ToString::to_string))
        .or_else(|| err.downcast_ref::<crate::shared::AbandonedTasks>().map(ToString::to_string));
    let what = match (err.downcast_ref::<LimitError>(), err.downcast_ref::<wasmtime::Trap>()) {
        _ if runaway.is_some() => runaway.unwrap_or_default(),
        (Some(limit), _) => limit.to_string(),
        (None, Some(trap)) => trap.to_string(),
        // An error raised in wasm's name (a component-model limit: "store handle limit exceeded")
        // comes wrapped in its backtrace, which is shown below.
        (None, None) if err.downcast_ref::<wasmtime::WasmBacktrace>().is_some() => err.root_cause().to_string(),
        (None, None) => one_line(err),
    };
    let frames = err.downcast_ref::<wasmtime::WasmBacktrace>().map(user_frames).unwrap_or_default();
    let trap = if frames.is_empty() { what } else { format!("{what} in {}", frames.join(" ← ")) };
    match capture.last_stderr_line() {
        Some(line) if line.starts_with("panicked at ") => format!("{line} ({trap})"),
        Some(line) if !line.trim().is_empty() => format!("{trap} (last stderr line: {line})"),
        _ => trap,
    }
}

/// The frames of a trap's wasm backtrace a plugin author reads (innermost first, at most four),
/// demangled: the panic machinery of Rust's standard library (which every panic passes through
/// on its way to `abort`) is left out.
fn user_frames(backtrace: &wasmtime::WasmBacktrace) -> Vec<String> {
    const MACHINERY: [&str; 4] = ["std::", "__rustc::", "core::panicking::panic_fmt", "rust_begin_unwind"];
    backtrace
        .frames()
        .iter()
        .filter_map(|frame| frame.func_name())
        .map(|name| format!("{:#}", rustc_demangle::demangle(name)))
        .skip_while(|name| name == "abort" || MACHINERY.iter().any(|m| name.starts_with(m)))
        .take(4)
        .collect()
}
