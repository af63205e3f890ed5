//! What each worker's `Store` holds: a sandboxed WASI context, wasi:http state, and its handle on
//! the run's metrics.

use loadhost_engine::MetricsHandle;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::worker::PluginEnv;

/// Per-worker store data.
pub(crate) struct DoerCtx {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    table: ResourceTable,
    hooks: DenyAllHttp,
    pub(crate) metrics: MetricsHandle,
}

impl DoerCtx {
    /// A context that grants nothing but the environment the user passed with `-e`: no
    /// directories, no network, stdin closed, stdout and stderr discarded.
    pub(crate) fn new(env: &PluginEnv, metrics: MetricsHandle) -> Self {
        let wasi = WasiCtx::builder().envs(&env.vars).build();
        Self {
            wasi,
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
            hooks: DenyAllHttp,
            metrics,
        }
    }
}

impl WasiView for DoerCtx {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for DoerCtx {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

/// Outgoing HTTP is denied: a plugin reaches nothing unless the user allows it.
struct DenyAllHttp;

type ResponseFuture = Box<
    dyn std::future::Future<
            Output = Result<
                (
                    http::Response<wasmtime_wasi_http::WasiBody>,
                    Box<dyn std::future::Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
                ),
                wasmtime_wasi_http::Error,
            >,
        > + Send,
>;

impl wasmtime_wasi_http::WasiHttpHooks for DenyAllHttp {
    fn send_request(
        &mut self,
        request: http::Request<wasmtime_wasi_http::WasiBody>,
        _options: Option<wasmtime_wasi_http::RequestOptions>,
        _fut: Box<dyn std::future::Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> ResponseFuture {
        tracing::debug!("denied an HTTP request to {}", request.uri());
        Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) })
    }
}
