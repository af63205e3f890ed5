//! What each worker's `Store` holds: a sandboxed WASI context, wasi:http state with the host's
//! hooks, and the worker's handle on the run's metrics.

use std::sync::Arc;

use anyhow::Context as _;
use loadhost_engine::MetricsHandle;
use loadhost_metrics::ExpectedStatuses;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::budget::ByteBudget;
use crate::grants::Grants;
use crate::http::{Connections, RunConnections, WorkerHttp};
use crate::limits::InstanceLimits;
use crate::output::{Capture, Pipe};

/// Per-worker store data.
pub(crate) struct DoerCtx {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    table: ResourceTable,
    hooks: HostHttpHooks,
    pub(crate) metrics: MetricsHandle,
    /// The instance's memory and table caps.
    pub(crate) limits: InstanceLimits,
    /// This worker's HTTP, for the one-call `loadhost:plugin/http` interface…
    pub(crate) http_client: Arc<WorkerHttp>,
    /// …and the connections it keeps for it; a shared instance's tasks each take a set from
    /// `spare` for a request (`http-async`) and give it back after.
    pub(crate) connections: Connections,
    pub(crate) spare: Vec<Connections>,
    /// The worker's cookies for `send-opts` (RFC 6265), `None` under `--no-cookies`. It lives and
    /// dies with the instance: a replaced instance starts with an empty jar.
    pub(crate) cookies: Option<cookie_store::CookieStore>,
    /// The phases of the last response the worker received (`http.last-timings`, k6's
    /// `res.timings`); `None` before the first or after a request that got none.
    pub(crate) last_timings: Option<loadhost_metrics::phases::PhaseTimes>,
    /// What the plugin may reach, for its name lookups.
    allow: Arc<crate::http::allow::AllowList>,
    /// What the instance prints, and where `--http-debug` tells of its requests.
    pub(crate) capture: Arc<Capture>,
    /// Its open WebSocket connections and gRPC streams, bounded.
    pub(crate) slots: crate::protocol_metrics::Slots,
    /// What the host holds on its behalf (messages, streams, bodies read whole), bounded.
    pub(crate) byte_budget: ByteBudget,
    /// Its gRPC connections, made on the first call.
    pub(crate) grpc: Option<crate::grpc::Pool>,
    /// The run's secrets, kept out of metric names and tags.
    pub(crate) text: Arc<crate::plugin_text::PluginText>,
    /// The host call the task is in now, for a task cut short.
    pub(crate) under_way: crate::under_way::UnderWay,
    /// Where host calls leave the work they wait for, polled off the fiber (see `off_fiber`).
    pub(crate) side: Arc<crate::off_fiber::Side>,
    /// Tasks started and ended and async host calls made and returned in this store: a shared
    /// instance whose count stands still while wasm runs has a task that never awaits (see
    /// `shared::Runaway`).
    pub(crate) progress: u64,
}

impl DoerCtx {
    /// A context that grants only what the user passed: the `-e` environment, the `--dir`
    /// directories read-only and, for hosts on the allow-list, HTTP and sockets. Nothing else: stdin
    /// closed, stdout and stderr into `capture` (see `output`).
    pub(crate) fn new(
        grants: &Grants,
        capture: &Arc<Capture>,
        run: &Arc<RunConnections>,
        event_loop: u32,
        metrics: MetricsHandle,
        max_memory: usize,
    ) -> anyhow::Result<Self> {
        let mut wasi = WasiCtx::builder();
        wasi.envs(&grants.env);
        wasi.stdout(capture.stream(Pipe::Stdout)).stderr(capture.stream(Pipe::Stderr));
        for (host, guest) in &grants.dirs {
            wasi.preopened_dir(host, guest, FsPerms::ReadOnly)
                .map_err(anyhow::Error::from)
                .with_context(|| format!("--dir {}", host.display()))?;
        }
        let allow = grants.http.allow_list();
        if !allow.is_empty() {
            let allow = allow.clone();
            wasi.socket_addr_check(move |addr, usage| {
                let allowed = match usage {
                    // The implicit bind before an outgoing connection: any local address, any port.
                    SocketAddrUse::TcpBind | SocketAddrUse::UdpBind => addr.ip().is_unspecified() && addr.port() == 0,
                    SocketAddrUse::TcpConnect | SocketAddrUse::UdpSend | SocketAddrUse::UdpReceive => {
                        allow.allows_addr(addr)
                    }
                    // Listening and accepting are never granted: a plugin reaches out, it never serves.
                    _ => false,
                };
                Box::pin(async move { allowed })
            });
            // Sockets are off unless something is allowed; then every address still goes through
            // the check above.
            wasi.allow_tcp(true).allow_udp(true).allow_ip_name_lookup(true);
        }
        let byte_budget = ByteBudget::new(max_memory);
        let http = grants.http.for_worker(&byte_budget);
        let hooks = HostHttpHooks {
            client: http.clone(),
            metrics: metrics.clone(),
            under_way: Arc::new(tokio::sync::Semaphore::new(crate::http::MAX_REQUESTS_PER_INSTANCE)),
            expected: ExpectedStatuses::default(),
        };
        Ok(Self {
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
            hooks,
            metrics,
            limits: InstanceLimits::new(max_memory),
            http_client: http,
            connections: Connections::new(run.clone(), event_loop),
            spare: Vec::new(),
            cookies: grants.http.cookies().then(cookie_store::CookieStore::new),
            last_timings: None,
            allow: grants.http.allow_list().clone(),
            capture: capture.clone(),
            slots: crate::protocol_metrics::Slots::default(),
            byte_budget,
            grpc: None,
            text: grants.text.clone(),
            under_way: crate::under_way::UnderWay::default(),
            side: Arc::default(),
            progress: 0,
        })
    }

    /// Something happened that a task awaiting in a shared instance waits for (see `progress`).
    pub(crate) fn progressed(&mut self) {
        self.progress = self.progress.wrapping_add(1);
    }
}

impl DoerCtx {
    /// The statuses this instance's requests expect (`set-expected-statuses`; k6's rule until then).
    pub(crate) fn expected_statuses(&self) -> ExpectedStatuses {
        self.hooks.expected
    }

    /// Judge this instance's requests by `expected` from now on, on both paths.
    pub(crate) fn expect_statuses(&mut self, expected: ExpectedStatuses) {
        self.hooks.expected = expected;
    }
}

impl DoerCtx {
    /// The store's sockets behind the allow-list's name filter (see `name_lookup`).
    pub(crate) fn name_lookup(&mut self) -> crate::name_lookup::Filtered<'_> {
        let allow = self.allow.clone();
        crate::name_lookup::Filtered { sockets: wasmtime_wasi::sockets::WasiSocketsView::sockets(self), allow }
    }
}

impl DoerCtx {
    /// The instance's resources (WebSocket connections and gRPC streams among them).
    pub(crate) fn table_mut(&mut self) -> &mut ResourceTable {
        &mut self.table
    }
}

impl WasiView for DoerCtx {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for DoerCtx {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.hooks }
    }
}

/// Sends plugin requests through the run's pooled client, after the allow-list.
struct HostHttpHooks {
    client: Arc<WorkerHttp>,
    metrics: MetricsHandle,
    /// Requests this instance has under way: a plugin may not open them without bound.
    under_way: Arc<tokio::sync::Semaphore>,
    /// The statuses its requests expect (the one-call path reads them here too).
    expected: ExpectedStatuses,
}

type IoFuture = Box<dyn std::future::Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>;
type ResponseFuture = Box<
    dyn std::future::Future<
            Output = Result<(http::Response<wasmtime_wasi_http::WasiBody>, IoFuture), wasmtime_wasi_http::Error>,
        > + Send,
>;

impl wasmtime_wasi_http::WasiHttpHooks for HostHttpHooks {
    fn send_request(
        &mut self,
        request: http::Request<wasmtime_wasi_http::WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        _fut: IoFuture,
    ) -> ResponseFuture {
        let uri = request.uri();
        let host = uri.host().unwrap_or_default();
        let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
        if !self.client.permits(host, port, &self.metrics) {
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        let Ok(under_way) = self.under_way.clone().try_acquire_owned() else {
            tracing::debug!(
                "the plugin has {} wasi:http requests under way: refusing more",
                crate::http::MAX_REQUESTS_PER_INSTANCE
            );
            return Box::new(async { Err(wasmtime_wasi_http::Error::ConnectionLimitReached) });
        };
        Box::new(self.client.clone().send(request, options, self.metrics.clone(), under_way, self.expected))
    }
}
