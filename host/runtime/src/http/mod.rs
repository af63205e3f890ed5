//! Outgoing HTTP for plugins: `wasi:http/outgoing-handler` requests go through the host's own
//! pooled client instead of wasmtime's default of one new connection per request.
//!
//! - [`allow`]: the allow-list; a denied request never opens a connection.
//! - [`connector`]: TCP connections, counted with the bytes they move.
//! - [`proxy`]: forward proxies (`--proxy`, `HTTP_PROXY`/`HTTPS_PROXY`/`NO_PROXY`).
//! - [`tls`]: system roots, `--ca-cert`, `--insecure`, client certificates.
//! - `body`: times each request until its response body is done.
//! - `conn`: the one-call path's own connections, which the worker drives inline, and the instants
//!   of each exchange that make its phases (`http_req_blocked` … `http_req_receiving`).
//! - `connect_failure`: the one table of how a connection failed (refused, timed out, reset):
//!   the words a plugin reads and the `wasi:http` code; and the connects the generator's own
//!   exhausted ports or file descriptors failed, counted for its health.
//! - `follow`, `decode`: the one-call path's request options (`send-opts`): redirects, the
//!   worker's cookie jar, decoding compressed bodies.
//!
//! One [`HttpClient`] holds a process's network settings (allow-list, TLS, per-host caps); each
//! worker sends through a [`WorkerHttp`] of its own, whose connections live on the worker's event
//! loop: the one-call path keeps its own HTTP/1.1 connections and drives them inline (see `conn`),
//! wasi:http goes through a keep-alive pool of the worker's. A request and its connection are then
//! driven by the thread that runs the worker, with no wake-up crossing threads, and a worker keeps
//! its connections across tasks the way a wrk connection or a k6 VU does. HTTP/1.1 by default;
//! HTTP/2 by ALPN on https, or for every request with `h2c` (prior knowledge on cleartext).

pub mod allow;
mod body;
mod conn;
mod connect_failure;
pub mod connector;
mod decode;
mod follow;
pub mod proxy;
pub mod tls;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use loadhost_engine::MetricsHandle;
use loadhost_metrics::http::Endpoint;
use loadhost_metrics::phases::RequestClock;
use loadhost_metrics::{ExpectedStatuses, HttpSample};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody};

use self::allow::{AllowList, AllowRule, Ports};
use self::body::{Pending, TimedBody};
use self::connect_failure::ConnectFailure;
use self::connector::{Connector, Network, WireCounters};
use self::proxy::ProxyOptions;
use self::tls::TlsOptions;
use crate::budget::ByteBudget;
use crate::plugin_text::PluginText;

/// How plugins may use the network.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Hosts a plugin may reach (HTTP and sockets); empty: nothing.
    pub allow: Vec<AllowRule>,
    /// Trust for https.
    pub tls: TlsOptions,
    /// Use HTTP/2 for every request (prior knowledge on cleartext).
    pub h2c: bool,
    /// At most this many requests in flight (so connections, over HTTP/1.1) per host:port.
    pub max_connections_per_host: Option<u32>,
    /// The largest response body the host reads for a plugin (`--max-response-body`).
    pub max_response_body: u64,
    /// Forward proxies (`--proxy`, `HTTP_PROXY`…).
    pub proxy: ProxyOptions,
    /// Each worker keeps a cookie jar for `send-opts` (off with `--no-cookies`).
    pub cookies: bool,
    /// The run's secrets, kept out of endpoint names (see `plugin_text`).
    pub text: Arc<PluginText>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            allow: Vec::new(),
            tls: TlsOptions::default(),
            h2c: false,
            max_connections_per_host: None,
            max_response_body: 64 << 20,
            proxy: ProxyOptions::default(),
            cookies: true,
            text: Arc::default(),
        }
    }
}

type Pooled = Client<Connector, WasiBody>;

/// A process's network settings and what its workers share: the allow-list, TLS, the per-host caps.
pub struct HttpClient {
    net: Network,
    h2c: bool,
    allow: Arc<AllowList>,
    per_host: Option<u32>,
    slots: Mutex<HashMap<String, Arc<Semaphore>>>,
    denial_logged: AtomicBool,
    max_body: u64,
    cookies: bool,
    text: Arc<PluginText>,
}

/// The most hosts the per-host caps keep a count for; past it, idle ones are forgotten.
const MAX_CAPPED_HOSTS: usize = 4096;

/// The most wasi:http requests one instance may have under way at once.
pub const MAX_REQUESTS_PER_INSTANCE: usize = 64;

/// One worker's HTTP: its connector, its keep-alive pool for wasi:http and its wire counters,
/// under the process's settings.
pub struct WorkerHttp {
    client: Pooled,
    connector: Connector,
    wire: Arc<WireCounters>,
    shared: Arc<HttpClient>,
    /// The instance's byte budget, which a body read whole counts against.
    budget: ByteBudget,
}

use conn::ExchangeError;
pub(crate) use conn::{Connections, RunConnections};
pub(crate) use follow::{DEFAULT_REDIRECTS, FetchOptions, Followed, Outgoing, add_cookie, cookies_for};

type SendResult =
    Result<(http::Response<WasiBody>, Box<dyn std::future::Future<Output = Result<(), HttpError>> + Send>), HttpError>;

/// Idle keep-alive connections are closed after this long, as browsers and k6 do.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

impl HttpClient {
    /// Build the client (TLS configuration errors name the flag).
    pub fn new(options: &HttpOptions) -> anyhow::Result<Arc<Self>> {
        Ok(Arc::new(Self {
            net: Network::new(&options.tls, &options.proxy, options.h2c)?,
            h2c: options.h2c,
            allow: Arc::new(AllowList::new(options.allow.clone())),
            per_host: options.max_connections_per_host,
            slots: Mutex::default(),
            denial_logged: AtomicBool::new(false),
            max_body: options.max_response_body,
            cookies: options.cookies,
            text: options.text.clone(),
        }))
    }

    /// An endpoint name as outputs may show it: the run's secrets redacted.
    fn tidy(&self, name: String) -> String {
        self.text.redact_owned(name)
    }

    /// A connector (TLS, ALPN) whose connections count into `wire`.
    fn connector(&self, wire: &Arc<WireCounters>) -> Connector {
        self.net.connector(wire, self.allow.own_listeners())
    }

    /// A keep-alive pool whose connections run as tasks of the runtime that opens them.
    fn pooled(&self, connector: Connector) -> Pooled {
        Client::builder(TokioExecutor::new())
            .pool_idle_timeout(IDLE_TIMEOUT)
            .pool_timer(TokioTimer::new())
            .http2_only(self.h2c)
            .build(connector)
    }

    /// One worker's HTTP, for an instance whose byte budget is `budget`. Its connections are
    /// driven on the runtime that sends the requests (the worker's event loop), and close when the
    /// worker is dropped.
    pub(crate) fn for_worker(self: &Arc<Self>, budget: &ByteBudget) -> Arc<WorkerHttp> {
        let wire = Arc::new(WireCounters::default());
        let connector = self.connector(&wire);
        let client = self.pooled(connector.clone());
        Arc::new(WorkerHttp { client, connector, wire, shared: self.clone(), budget: budget.clone() })
    }

    /// Whether workers keep a cookie jar (not with `--no-cookies`).
    pub fn cookies(&self) -> bool {
        self.cookies
    }

    /// The allow-list (also used for wasi:sockets).
    pub fn allow_list(&self) -> &Arc<AllowList> {
        &self.allow
    }

    /// Refuse plugins the host's own listener on `addr` (opened for `flag`), whatever the
    /// allow-list says: call it for every listener before the load starts.
    pub fn refuse_listener(&self, addr: SocketAddr, flag: &'static str) {
        self.allow.own_listeners().add(addr, flag);
    }

    /// Whether a request to `host:port` may go out; logs the first denial with the flag to use.
    pub(crate) fn permits(&self, host: &str, port: u16, metrics: &MetricsHandle) -> bool {
        if self.allow.allows(host, port) {
            return true;
        }
        let why = match self.own_listener_at(host, port) {
            Some(own) => format!("the plugin tried to reach {own}"),
            None => {
                let rule = rule_for(host, port);
                format!(
                    "the plugin tried to reach {rule}, which is not allowed: pass --allow-host {rule} to allow it (a \
                     bare --allow-host HOST allows ports 80 and 443 only, HOST:* every port)"
                )
            }
        };
        self.deny(metrics, &why);
        false
    }

    /// The host's own listener `host:port` names, when that can be told without a lookup: no
    /// `--allow-host` could grant it, so a refusal says so instead of suggesting one.
    fn own_listener_at(&self, host: &str, port: u16) -> Option<connector::OwnListener> {
        let (addr, flag) = self.allow.own_listeners().reached_from(host, port)?;
        Some(connector::OwnListener { addr, flag })
    }

    /// Count a refused request; log why the first time.
    pub(crate) fn deny(&self, metrics: &MetricsHandle, why: &str) {
        metrics.http_denied();
        if !self.denial_logged.swap(true, Ordering::Relaxed) {
            tracing::warn!("{why} (later denials are only counted, as http_denied)");
        }
    }

    /// A slot under the per-host cap for `host:port` (normalised: `h`, `H:80` and `user@h` are
    /// one host), when there is a cap.
    async fn slot(&self, host: &str, port: u16) -> Option<OwnedSemaphorePermit> {
        let cap = self.per_host?;
        let key = format!("{}:{port}", host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase());
        let semaphore = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            if slots.len() >= MAX_CAPPED_HOSTS && !slots.contains_key(&key) {
                // Forget hosts with nothing under way: the map stays bounded whatever a plugin tries.
                slots.retain(|_, s| s.available_permits() < cap as usize);
            }
            slots.entry(key).or_insert_with(|| Arc::new(Semaphore::new(cap as usize))).clone()
        };
        semaphore.acquire_owned().await.ok()
    }

    /// Why a body over the cap failed, for the plugin.
    pub(crate) fn body_too_large(&self) -> String {
        format!(
            "body too large: over --max-response-body {:.1}MiB, so the host stopped reading it \
             (raise the flag to read it whole)",
            self.max_body as f64 / f64::from(1 << 20)
        )
    }
}

impl WorkerHttp {
    /// Record a finished request, with the connections and bytes counted since the last one.
    pub(crate) fn record(&self, metrics: &MetricsHandle, sample: HttpSample) {
        metrics.http_request(sample);
        drain_wire(&self.wire, metrics);
    }

    /// Send an allowed request through the pool; its response is judged by `expected` (the
    /// instance's expected statuses).
    pub(crate) async fn send(
        self: Arc<Self>,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        metrics: MetricsHandle,
        under_way: OwnedSemaphorePermit,
        expected: ExpectedStatuses,
    ) -> SendResult {
        let authority = request.uri().authority().map(|a| a.as_str().to_owned()).unwrap_or_default();
        let host = request.uri().host().unwrap_or_default().to_owned();
        let port =
            request.uri().port_u16().unwrap_or(if request.uri().scheme_str() == Some("https") { 443 } else { 80 });
        let permit = self.shared.slot(&host, port).await;
        let endpoint = Endpoint::default_for(request.method().as_str(), request.uri().path(), |n| self.shared.tidy(n));
        let started = Instant::now();
        self.shared.net.authorize(&mut request);
        let sent = self.client.request(request);
        let response = match options.and_then(|o| o.first_byte_timeout.or(o.connect_timeout)) {
            Some(limit) => match tokio::time::timeout(limit, sent).await {
                Ok(result) => result,
                Err(_) => {
                    let sample = HttpSample::new(None, started.elapsed(), 0, Some(endpoint));
                    self.record(&metrics, sample);
                    return Err(HttpError::ConnectionReadTimeout);
                }
            },
            None => sent.await,
        };
        match response {
            Ok(response) => {
                let (parts, body) = response.into_parts();
                let pending = Pending {
                    started,
                    status: parts.status.as_u16(),
                    expected,
                    endpoint,
                    metrics,
                    client: self.clone(),
                    _permit: permit,
                    _under_way: under_way,
                };
                let body = TimedBody::new(body, pending, self.shared.max_body).boxed_unsync();
                let io: Box<dyn std::future::Future<Output = Result<(), HttpError>> + Send> =
                    Box::new(async { Ok(()) });
                Ok((http::Response::from_parts(parts, body), io))
            }
            Err(err) => match client_error(&err) {
                HttpError::HttpRequestDenied => {
                    self.shared
                        .deny(&metrics, &format!("the plugin tried to reach {authority}: {}", own_listener(&err)));
                    Err(HttpError::HttpRequestDenied)
                }
                other => {
                    let sample = HttpSample::new(None, started.elapsed(), 0, Some(endpoint));
                    self.record(&metrics, sample);
                    Err(other)
                }
            },
        }
    }
}

/// What one request of the one-call path does beyond sending (`send` and `send-with`: nothing).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Hop<'a> {
    /// Ask for and decode a compressed body.
    pub(crate) decompress: bool,
    /// The endpoint's name in the per-endpoint metrics (else the default from the URL).
    pub(crate) name: Option<&'a str>,
    /// The statuses the request expects, which decide whether it failed (else the default rule).
    pub(crate) expected: Option<&'a ExpectedStatuses>,
}

/// A whole response, for the one-call `loadhost:plugin/http` interface.
pub(crate) struct WholeResponse {
    pub(crate) status: u16,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: bytes::Bytes,
    /// Its phases, as recorded in the run's metrics (a plugin reads them with `last-timings`).
    pub(crate) phases: Option<loadhost_metrics::phases::PhaseTimes>,
}

/// Why a one-call request got no response.
pub(crate) enum FetchError {
    Invalid(String),
    Denied(String),
    Network(String),
}

impl WorkerHttp {
    /// Whether a request to `host:port` may go out (the process's allow-list).
    pub(crate) fn permits(&self, host: &str, port: u16, metrics: &MetricsHandle) -> bool {
        self.shared.permits(host, port, metrics)
    }

    /// Send a whole request and read the whole response: the one-call path, with the same
    /// allow-list and metrics as wasi:http, on the worker's own connections (`conns`), in one host
    /// call instead of a dozen or more.
    #[allow(clippy::too_many_arguments, reason = "one request's parts, as the WIT record carries them")]
    pub(crate) async fn fetch(
        &self,
        conns: &mut Connections,
        method: &str,
        url: &str,
        headers: Vec<(String, Vec<u8>)>,
        body: Bytes,
        timeout: Option<Duration>,
        metrics: &MetricsHandle,
        hop: Hop<'_>,
    ) -> Result<WholeResponse, FetchError> {
        // The plugin's call: `http_req_blocked` starts here.
        let called = Instant::now();
        let invalid = |why: String| FetchError::Invalid(format!("{method} {url}: {why}"));
        let uri: http::Uri = url.parse().map_err(|err| invalid(format!("{err}")))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(invalid("expected an http:// or https:// URL".into())),
        };
        let host = uri.host().ok_or_else(|| invalid("no host".into()))?;
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        if !self.permits(host, port, metrics) {
            return Err(FetchError::Denied(url.to_owned()));
        }
        let target = conn::Target { https, host: host.trim_start_matches('[').trim_end_matches(']').to_owned(), port };
        let method = http::Method::from_bytes(method.as_bytes()).map_err(|err| invalid(format!("{err}")))?;
        let mut builder = http::Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        let mut request = builder.body(Full::new(body)).map_err(|err| invalid(format!("{err}")))?;
        if hop.decompress && !request.headers().contains_key(http::header::ACCEPT_ENCODING) {
            // A static value: asking for compressed bodies costs no allocation.
            let accept = http::HeaderValue::from_static(decode::ACCEPT);
            request.headers_mut().insert(http::header::ACCEPT_ENCODING, accept);
        }

        let permit = self.shared.slot(&target.host, port).await;
        // The plugin's name for the endpoint (`send-opts`), else the default from the URL.
        let endpoint = Some(match hop.name {
            Some(name) => Endpoint::named(request.method().as_str(), name, |n| self.shared.tidy(n)),
            None => Endpoint::default_for(request.method().as_str(), url, |n| self.shared.tidy(n)),
        });
        // A failed request's duration starts once it may go (no clock read without a cap: no wait).
        let started = if permit.is_some() { Instant::now() } else { called };
        let queued = conns.take_queued();
        let exchange = conns.exchange(self, &target, permit.is_some(), request, hop.decompress);
        let result = match timeout {
            Some(limit) => tokio::time::timeout(limit, exchange)
                .await
                .unwrap_or_else(|_| Err(ExchangeError::Failed(format!("timed out: no response within {limit:?}")))),
            None => exchange.await,
        };
        match result {
            Ok((parts, body, stamps)) => {
                let status = parts.status.as_u16();
                let clock = RequestClock {
                    called: called.into_std(),
                    queued,
                    connect: stamps.connect,
                    ready: stamps.ready,
                    sent: stamps.sent,
                    head: stamps.head,
                    end: std::time::Instant::now(),
                };
                let sample = HttpSample::timed(status, &clock, body.len() as u64, endpoint).expecting(hop.expected);
                // The sample's phases, computed once for the metrics and the plugin alike.
                let phases = sample.phases;
                self.record(metrics, sample);
                Ok(WholeResponse { status, headers: parts.headers, body, phases })
            }
            Err(ExchangeError::Denied(why)) => {
                self.shared.deny(metrics, &format!("the plugin tried to reach {url}: {why}"));
                Err(FetchError::Denied(format!("{url}: {why}")))
            }
            Err(ExchangeError::Failed(why)) => {
                self.record(metrics, HttpSample::new(None, started.elapsed(), 0, endpoint));
                Err(FetchError::Network(format!("{url}: {why}")))
            }
        }
    }
}

/// What the host's WebSocket and gRPC clients use of a worker's HTTP.
impl WorkerHttp {
    /// Whether `host:port` is on the allow-list (the caller counts a denial in its own metric).
    pub(crate) fn allows(&self, host: &str, port: u16) -> bool {
        self.shared.allow.allows(host, port)
    }

    /// Why `host:port` was refused, with the flag that would allow it (or that none would: it is one
    /// of loadhost's own listeners); logged the first time.
    pub(crate) fn denied(&self, host: &str, port: u16) -> String {
        let rule = rule_for(host, port);
        let why = match self.shared.own_listener_at(host, port) {
            Some(own) => own.to_string(),
            None => format!("{rule} is not allowed: pass --allow-host {rule} to allow it"),
        };
        if !self.shared.denial_logged.swap(true, Ordering::Relaxed) {
            tracing::warn!("the plugin tried to reach {why} (later denials are only counted)");
        }
        why
    }

    /// A connector offering `alpn`, with the worker's wire counters and the run's TLS.
    pub(crate) fn direct_connector(&self, alpn: connector::Alpn) -> connector::Connector<connector::Direct> {
        self.shared.net.direct_connector(&self.wire, self.shared.allow.own_listeners(), alpn)
    }

    /// The largest body (or message) the host reads for a plugin (`--max-response-body`).
    pub(crate) fn max_body(&self) -> u64 {
        self.shared.max_body
    }

    /// Move the connections and bytes counted since the last time into `metrics`.
    pub(crate) fn drain_wire(&self, metrics: &MetricsHandle) {
        drain_wire(&self.wire, metrics);
    }
}

/// The host's own listener an error's chain says a connection would have reached, if any.
pub(crate) fn own_listener_in(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cause = Some(err);
    while let Some(err) = cause {
        if let Some(own) = err.downcast_ref::<connector::OwnListener>() {
            return Some(own.to_string());
        }
        if let Some(own) =
            err.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()?.downcast_ref::<connector::OwnListener>())
        {
            return Some(own.to_string());
        }
        cause = err.source();
    }
    None
}

/// Whether a response body broke off because the connection (or stream) ended before its end:
/// hyper says "error reading a body from connection", with the cause beneath.
pub(crate) fn cut_short(err: &hyper::Error) -> bool {
    use std::error::Error as _;
    if err.is_incomplete_message() || err.is_closed() {
        return true;
    }
    let mut cause = err.source();
    while let Some(err) = cause {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
            return matches!(io.kind(), UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe);
        }
        cause = err.source();
    }
    false
}

/// The `--allow-host` rule that would allow exactly `host:port` (brackets off an IPv6 literal).
fn rule_for(host: &str, port: u16) -> AllowRule {
    AllowRule { host: host.trim_start_matches('[').trim_end_matches(']').to_owned(), ports: Ports::One(port) }
}

/// Move the connections and bytes counted in `wire` into the worker's metrics.
fn drain_wire(wire: &WireCounters, metrics: &MetricsHandle) {
    metrics.http_wire(
        wire.connections.swap(0, Ordering::Relaxed),
        wire.sent.swap(0, Ordering::Relaxed),
        wire.received.swap(0, Ordering::Relaxed),
    );
}

/// Why a pooled-client request was refused: the host's own listener it would have reached.
fn own_listener(err: &hyper_util::client::legacy::Error) -> String {
    use std::error::Error as _;
    let mut source = err.source();
    while let Some(cause) = source {
        if let Some(own) =
            cause.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()?.downcast_ref::<connector::OwnListener>())
        {
            return own.to_string();
        }
        source = cause.source();
    }
    err.to_string()
}

/// Map a pooled-client error to the wasi:http error code the plugin sees.
fn client_error(err: &hyper_util::client::legacy::Error) -> HttpError {
    use std::error::Error as _;
    let mut source = err.source();
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if io.get_ref().is_some_and(|inner| inner.is::<connector::OwnListener>()) {
                return HttpError::HttpRequestDenied;
            }
            return ConnectFailure::of(io.kind())
                .map_or_else(|| HttpError::InternalError(Some(io.to_string())), ConnectFailure::code);
        }
        if let Some(hyper) = cause.downcast_ref::<hyper::Error>() {
            if hyper.is_incomplete_message() || hyper.is_closed() {
                return HttpError::HttpResponseIncomplete;
            }
            return HttpError::HttpProtocolError;
        }
        source = cause.source();
    }
    if err.is_connect() { HttpError::DestinationUnavailable } else { HttpError::InternalError(Some(err.to_string())) }
}
