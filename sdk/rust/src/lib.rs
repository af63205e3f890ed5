//! Write [loadhost](https://example.invalid/loadhost) workload plugins in Rust.
//!
//! A plugin is a WebAssembly component that exports `loadhost:plugin/doer`. The host decides when
//! and how often tasks run; the plugin only says what one task does:
//!
//! ```ignore
//! use loadhost_sdk::{Doer, Task, TaskResult};
//!
//! struct Hello;
//!
//! impl Doer for Hello {
//!     fn do_task(task: Task) -> TaskResult {
//!         loadhost_sdk::metrics::counter("greetings", 1, &[("scenario", &task.scenario)]);
//!         Ok(())
//!     }
//! }
//!
//! loadhost_sdk::export!(Hello);
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2` (crate type `cdylib`) and run it with
//! `loadhost run target/wasm32-wasip2/release/hello.wasm -r 100 -d 10s`.
//!
//! # Layout
//! - [`bindings`]: the raw bindings wit-bindgen generates from `wit/plugin.wit`.
//! - [`Doer`] and [`export!`]: the one trait a plugin implements and the macro that exports it.
//! - [`Lifecycle`] and [`export_with_lifecycle!`]: optional setup, per-worker init and teardown.
//! - [`AsyncDoer`] and [`export_async!`]: a task as an `async fn`, many in flight in one instance
//!   (world `workload-async`, below), with [`sleep`], [`ws::nonblocking`] and
//!   [`http::Request::send_async`] to await the host; [`async_bindings`]: that world's raw
//!   bindings.
//! - [`metrics`]: counters, gauges, trends and checks, aggregated by the host, and
//!   [`declare_metrics!`], which states them in the component for `loadhost inspect` and thresholds.
//! - [`pause::sleep`]: think time in a synchronous task, on the host's timer (k6's `sleep`).
//! - [`group`] and [`Group`] ([`steps`]): a named block of a task, timed as `group_duration` and
//!   nested k6's way (`::checkout::pay`); the checks made inside carry the group's path.
//! - [`http`]: an HTTP client (the host pools connections, follows redirects, decodes bodies and
//!   records HTTP metrics), and [`cookies`]: the worker's cookie jar.
//! - [`ws`]: WebSocket connections, and [`grpc`]: gRPC calls and streams (raw protobuf bytes),
//!   both owned by the host, with built-in metrics.
//! - [`config`]: reading settings the user passed with `loadhost run -e KEY=VALUE`, and
//!   [`options`] with [`declare_options!`]: the settings the plugin declares (type, default or
//!   required, help), for `loadhost inspect` and `loadhost run`'s checks, read typed.
//!
//! # Async tasks
//! A plugin that exports with [`export_async!`] exports `loadhost:plugin/doer-async` instead of
//! `doer`: the host runs many of its tasks at once in one instance, and a task that awaits holds no
//! stack, only its future's state (the aim: tens of KiB per open WebSocket session, not an
//! instance). It has no [`Lifecycle`].
//!
//! ```ignore
//! use loadhost_sdk::ws::{Message, WsError, nonblocking};
//! use loadhost_sdk::{AsyncDoer, Task, TaskError, TaskResult, retryable};
//!
//! struct Chat;
//!
//! fn lost(err: WsError) -> TaskError {
//!     retryable(err.to_string())
//! }
//!
//! impl AsyncDoer for Chat {
//!     async fn do_task(_task: Task) -> TaskResult {
//!         let mut conn = nonblocking::connect("ws://127.0.0.1:8080/ws/echo").await.map_err(lost)?;
//!         conn.send_text("hello").await.map_err(lost)?;
//!         // The instance runs other tasks meanwhile.
//!         loadhost_sdk::sleep(std::time::Duration::from_millis(100)).await;
//!         let echo = conn.receive(None).await.map_err(lost)?;
//!         loadhost_sdk::metrics::check("echo", echo == Message::Text("hello".into()), &[]);
//!         Ok(())
//!     }
//! }
//!
//! loadhost_sdk::export_async!(Chat);
//! ```
//!
//! - **Await, never block.** Only [`sleep`], [`ws::nonblocking`] and
//!   [`send_async`](http::Request::send_async) let the instance's other tasks run while one waits.
//!   A blocking call in an async task — `std::thread::sleep`, [`http`]'s
//!   [`send`](http::Request::send), the sync [`ws`], [`grpc`] — holds the instance, and so every
//!   task in flight in it, until it returns. Metrics, checks and settings ([`declare_options!`],
//!   `OPTIONS.get`) do not wait and work as in a sync task.
//! - **HTTP**: the same [`http`] builder, sent with [`send_async`](http::Request::send_async)
//!   (`loadhost:plugin/http-async`, the host call `send` would make), with one difference: no
//!   cookie jar. The instance serves many workers, so the host neither sends nor keeps cookies
//!   for it; send a `cookie` header yourself. [`cookies`] is the *worker's* jar, which only a sync
//!   plugin's `send` uses, and [`http::set_expected_statuses`] sets the statuses of the whole
//!   instance: give a request its own with [`expected_statuses`](http::Request::expected_statuses).
//!
//!   ```ignore
//!   let response = http::get(url).bare().send_async().await.map_err(|err| retryable(err.to_string()))?;
//!   ```
//! - **State is per instance.** A `static` or `thread_local!` is shared by every task of the
//!   instance, which serves many workers: key per-worker state by [`Task::worker_id`] in a
//!   `thread_local!` `RefCell<BTreeMap<u32, _>>` (a `HashMap` works too, but its random seed
//!   makes the plugin import `wasi:random`), take the value out for the task and put it back after
//!   (`plugins/ws-echo-async`). Never hold a `RefCell` borrow across an `.await`: another task
//!   borrowing it meanwhile panics, which traps the instance.
//! - **Groups** ([`group`], [`Group`]) keep one path per instance: a group open across an
//!   `.await` would tag the checks of the tasks that run meanwhile. Open them around code that does
//!   not await.
//! - **A panic** traps the instance, and every task in flight in it fails with it. A setting that
//!   did not parse aborts the run as in a sync task (reported by the first task to finish after).
//!
//! # When something goes wrong
//! The export macros install a panic hook that writes one line to stderr,
//! `panicked at src/lib.rs:12:9: index out of bounds: the len is 0 but the index is 3`, which the
//! host shows with the trap. `println!` and `eprintln!` go to loadhost's terminal
//! (`loadhost run --plugin-output`).

#![deny(missing_docs)]

pub mod config;
pub mod cookies;
pub mod grpc;
pub mod http;
pub mod metrics;
pub mod options;
mod panic_hook;
pub mod pause;
pub mod steps;
mod timers;
pub mod ws;

/// Raw bindings of the `loadhost:plugin` world, generated by wit-bindgen.
///
/// The SDK binds `workload-with-lifecycle` (which includes `workload`): one set of bindings per
/// crate keeps wit-bindgen's export helpers unique, and [`export!`] gives a plugin without a
/// lifecycle of its own a no-op `setup`, `init` and `teardown`.
#[allow(missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "workload-with-lifecycle",
        pub_export_macro: true,
        export_macro_name: "__export_workload",
        default_bindings_module: "loadhost_sdk::bindings",
    });
}

/// Raw bindings of the `workload-async` world (async tasks), generated by wit-bindgen.
///
/// A second set of bindings, beside [`bindings`], rather than a cargo feature that switches the
/// world: the example plugins build in one workspace, where a feature one plugin turned on would be
/// on for every plugin. The interfaces both worlds share are mapped (`with`) onto [`bindings`], so
/// a `Task`, a metric or a `websocket` error is one type whichever world a plugin exports.
///
/// A plugin carries this world only when it invokes [`export_async!`]: with `pub_export_macro`
/// wit-bindgen embeds the whole world (imports and exports) from the export macro, in the plugin.
/// What it would embed in the SDK itself is the world's imports alone, which wit-component drops
/// when unused; `disable_custom_section_link_helpers` stops it forcing even that section (and a
/// helper function) into every plugin. So a plugin using [`export!`] has exactly the imports and
/// exports it had before this module existed.
#[allow(missing_docs)]
pub mod async_bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "workload-async",
        pub_export_macro: true,
        export_macro_name: "__export_workload_async",
        default_bindings_module: "loadhost_sdk::async_bindings",
        disable_custom_section_link_helpers: true,
        with: {
            "loadhost:plugin/types@0.1.0": crate::bindings::loadhost::plugin::types,
            "loadhost:plugin/metrics@0.1.0": crate::bindings::loadhost::plugin::metrics,
            "loadhost:plugin/http@0.1.0": crate::bindings::loadhost::plugin::http,
            "loadhost:plugin/websocket@0.1.0": crate::bindings::loadhost::plugin::websocket,
            "loadhost:plugin/grpc@0.1.0": crate::bindings::loadhost::plugin::grpc,
        },
    });
}

pub use bindings::loadhost::plugin::types::{Task, TaskError};
pub use steps::{Group, group};
pub use timers::sleep;

/// A timeout as the WIT's optional milliseconds (longer than a u32 holds: the most it holds).
pub(crate) fn millis(timeout: Option<std::time::Duration>) -> Option<u32> {
    timeout.map(|t| u32::try_from(t.as_millis()).unwrap_or(u32::MAX))
}

/// What a task returns: `Ok(())` when it passed, or why it did not.
pub type TaskResult = Result<(), TaskError>;

/// The one thing a plugin implements: what a single task does.
///
/// Each worker is its own instance of the plugin, so a `static` or `thread_local!` holds per-worker
/// state without locking.
pub trait Doer {
    /// Run one task. Return [`TaskError::Retryable`] for a transient failure the host may retry,
    /// [`TaskError::Failed`] for a failure, and [`TaskError::Abort`] to stop the whole run.
    fn do_task(task: Task) -> TaskResult;
}

/// What an async plugin implements: what a single task does, as a future ([`export_async!`]).
///
/// One instance runs many tasks at once: while a task awaits [`sleep`], a [`ws::nonblocking`]
/// call or [`http::Request::send_async`], the instance runs others, and the waiting task holds
/// only its future's state. Write the method as `async fn do_task(task: Task) -> TaskResult` in
/// the `impl`.
///
/// A `static` or `thread_local!` is per *instance*, shared by every task in flight in it: keep
/// per-worker state in a map keyed by [`Task::worker_id`], and never hold a `RefCell` borrow (or a
/// [`Group`]) across an `.await`. A call that blocks (`std::thread::sleep`,
/// [`http::Request::send`], [`ws`], [`grpc`]) stops every task of the instance until it returns.
pub trait AsyncDoer {
    /// Run one task; the errors mean what they mean for [`Doer::do_task`].
    fn do_task(task: Task) -> impl Future<Output = TaskResult>;
}

/// Optional per-run and per-worker state, exported with [`export_with_lifecycle!`].
///
/// `setup` runs once before any load (its result goes to every `init` and to `teardown`), `init`
/// once in each new worker before its first task, `teardown` once after the load. An `Err` from
/// `setup`, or from `init` in a worker started before the load, stops the run before any load is
/// sent (exit code 4).
pub trait Lifecycle {
    /// Once per run, in an instance of its own. `options` is the run's configuration as JSON.
    fn setup(options: String) -> Result<String, String> {
        let _ = options;
        Ok(String::new())
    }

    /// Once per worker, before its first task.
    fn init(worker_id: u32, setup_data: String) -> Result<(), String> {
        let _ = (worker_id, setup_data);
        Ok(())
    }

    /// Once per run, after the load, in an instance of its own.
    fn teardown(setup_data: String) -> Result<(), String> {
        let _ = setup_data;
        Ok(())
    }
}

/// A transient failure the host may retry (see `loadhost run --retries`).
pub fn retryable(message: impl Into<String>) -> TaskError {
    TaskError::Retryable(message.into())
}

/// A failure that must not be retried.
pub fn failed(message: impl Into<String>) -> TaskError {
    TaskError::Failed(message.into())
}

/// Stop the whole run (the host exits with code 4).
pub fn abort(message: impl Into<String>) -> TaskError {
    TaskError::Abort(message.into())
}

/// Export a type implementing [`Doer`] as the plugin's `loadhost:plugin/doer` interface (with a
/// no-op lifecycle).
///
/// ```ignore
/// struct Noop;
/// impl loadhost_sdk::Doer for Noop {
///     fn do_task(_: loadhost_sdk::Task) -> loadhost_sdk::TaskResult { Ok(()) }
/// }
/// loadhost_sdk::export!(Noop);
/// ```
#[macro_export]
macro_rules! export {
    ($plugin:ty) => {
        const _: () = {
            struct __LoadhostPlugin;
            struct __NoLifecycle;
            impl $crate::Lifecycle for __NoLifecycle {}
            $crate::__export_plugin!(__LoadhostPlugin, $plugin, __NoLifecycle);
        };
    };
}

/// Export a type implementing [`Doer`] and [`Lifecycle`]: the `doer` and `lifecycle` interfaces.
///
/// ```ignore
/// struct Plugin;
/// impl loadhost_sdk::Doer for Plugin {
///     fn do_task(_: loadhost_sdk::Task) -> loadhost_sdk::TaskResult { Ok(()) }
/// }
/// impl loadhost_sdk::Lifecycle for Plugin {
///     fn setup(_options: String) -> Result<String, String> { Ok("token".into()) }
/// }
/// loadhost_sdk::export_with_lifecycle!(Plugin);
/// ```
#[macro_export]
macro_rules! export_with_lifecycle {
    ($plugin:ty) => {
        const _: () = {
            struct __LoadhostPlugin;
            $crate::__export_plugin!(__LoadhostPlugin, $plugin, $plugin);
        };
    };
}

/// Export a type implementing [`AsyncDoer`] as the plugin's `loadhost:plugin/doer-async`
/// interface (world `workload-async`, which has no lifecycle): the host runs many of its tasks in
/// one instance.
///
/// ```ignore
/// struct Nap;
/// impl loadhost_sdk::AsyncDoer for Nap {
///     async fn do_task(_: loadhost_sdk::Task) -> loadhost_sdk::TaskResult {
///         loadhost_sdk::sleep(std::time::Duration::from_millis(10)).await;
///         Ok(())
///     }
/// }
/// loadhost_sdk::export_async!(Nap);
/// ```
#[macro_export]
macro_rules! export_async {
    ($plugin:ty) => {
        const _: () = {
            struct __LoadhostAsyncPlugin;

            impl $crate::async_bindings::exports::loadhost::plugin::doer_async::Guest for __LoadhostAsyncPlugin {
                async fn do_task(task: $crate::Task) -> $crate::TaskResult {
                    // As the sync export: the panic hook before any plugin code, and a setting
                    // that did not parse turns the result into an abort.
                    $crate::__private::enter();
                    $crate::__private::finish_task(<$plugin as $crate::AsyncDoer>::do_task(task).await)
                }
            }

            $crate::async_bindings::__export_workload_async!(
                __LoadhostAsyncPlugin with_types_in $crate::async_bindings
            );
        };
    };
}

/// What the export macros call around the plugin's code; not for plugins.
#[doc(hidden)]
pub mod __private {
    use crate::{TaskError, TaskResult};

    /// Before the plugin's code runs in an export call.
    pub fn enter() {
        crate::panic_hook::install();
    }

    /// A task's result, unless a setting did not parse during it: then the run is aborted.
    pub fn finish_task(result: TaskResult) -> TaskResult {
        match crate::config::take_bad_setting() {
            Some(message) => Err(TaskError::Abort(message)),
            None => result,
        }
    }

    /// A lifecycle step's result, unless a setting did not parse during it: then the step fails
    /// (which stops the run).
    pub fn finish_step<T>(result: Result<T, String>) -> Result<T, String> {
        match crate::config::take_bad_setting() {
            Some(message) => Err(message),
            None => result,
        }
    }
}

/// The exports for `$export`: `doer` from `$doer`, `lifecycle` from `$lifecycle`.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_plugin {
    ($export:ident, $doer:ty, $lifecycle:ty) => {
        impl $crate::bindings::exports::loadhost::plugin::doer::Guest for $export {
            fn do_task(task: $crate::Task) -> $crate::TaskResult {
                $crate::__private::enter();
                $crate::__private::finish_task(<$doer as $crate::Doer>::do_task(task))
            }
        }

        impl $crate::bindings::exports::loadhost::plugin::lifecycle::Guest for $export {
            fn setup(options: ::std::string::String) -> ::core::result::Result<::std::string::String, ::std::string::String> {
                $crate::__private::enter();
                $crate::__private::finish_step(<$lifecycle as $crate::Lifecycle>::setup(options))
            }
            fn init(
                worker_id: u32,
                setup_data: ::std::string::String,
            ) -> ::core::result::Result<(), ::std::string::String> {
                $crate::__private::enter();
                $crate::__private::finish_step(<$lifecycle as $crate::Lifecycle>::init(worker_id, setup_data))
            }
            fn teardown(setup_data: ::std::string::String) -> ::core::result::Result<(), ::std::string::String> {
                $crate::__private::enter();
                $crate::__private::finish_step(<$lifecycle as $crate::Lifecycle>::teardown(setup_data))
            }
        }

        $crate::bindings::__export_workload!($export with_types_in $crate::bindings);
    };
}
