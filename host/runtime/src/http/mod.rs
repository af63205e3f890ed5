//! Outgoing HTTP for plugins: `wasi:http/outgoing-handler` requests go through the host's own
//! pooled client instead of wasmtime's default of one new connection per request.
//!
//! - [`allow`]: the allow-list; a denied request never opens a connection.
//! - [`connector`]: TCP connections, counted with the bytes they move.
//! - [`tls`]: system roots, `--ca-cert`, `--insecure`.
//! - `body`: times each request until its response body is done.
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
pub mod connector;
pub mod tls;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use loadhost_engine::MetricsHandle;
use loadhost_metrics::HttpSample;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody};

use self::allow::{AllowList, AllowRule};
use self::body::{Pending, TimedBody};
use self::connector::{CountingConnector, WireCounters};
use self::tls::TlsOptions;

/// How plugins may use the network.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// Hosts a plugin may reach (HTTP and sockets); empty: nothing.
    pub allow: Vec<AllowRule>,
    /// Trust for https.
    pub tls: TlsOptions,
    /// Use HTTP/2 for every request (prior knowledge on cleartext).
    pub h2c: bool,
    /// At most this many requests in flight (so connections, over HTTP/1.1) per host:port.
    pub max_connections_per_host: Option<u32>,
}

type Pooled = Client<hyper_rustls::HttpsConnector<CountingConnector>, WasiBody>;

/// A process's network settings and what its workers share: the allow-list, TLS, the per-host caps.
pub struct HttpClient {
    tls: rustls::ClientConfig,
    h2c: bool,
    allow: AllowList,
    per_host: Option<u32>,
    slots: Mutex<HashMap<String, Arc<Semaphore>>>,
    denial_logged: AtomicBool,
}

/// One worker's HTTP: its connector, its keep-alive pool for wasi:http and its wire counters,
/// under the process's settings.
pub struct WorkerHttp {
    client: Pooled,
    connector: hyper_rustls::HttpsConnector<CountingConnector>,
    wire: Arc<WireCounters>,
    shared: Arc<HttpClient>,
}

pub(crate) use conn::{Connections, RunConnections};

type SendResult =
    Result<(http::Response<WasiBody>, Box<dyn std::future::Future<Output = Result<(), HttpError>> + Send>), HttpError>;

/// Idle keep-alive connections are closed after this long, as browsers and k6 do.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

impl HttpClient {
    /// Build the client (TLS configuration errors name the flag).
    pub fn new(options: &HttpOptions) -> anyhow::Result<Arc<Self>> {
        Ok(Arc::new(Self {
            tls: tls::client_config(&options.tls)?,
            h2c: options.h2c,
            allow: AllowList::new(options.allow.clone()),
            per_host: options.max_connections_per_host,
            slots: Mutex::default(),
            denial_logged: AtomicBool::new(false),
        }))
    }

    /// A connector (TLS, ALPN) whose connections count into `wire`.
    fn connector(&self, wire: &Arc<WireCounters>) -> hyper_rustls::HttpsConnector<CountingConnector> {
        let builder = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(self.tls.clone()).https_or_http();
        if self.h2c { builder.enable_http2() } else { builder.enable_all_versions() }
            .wrap_connector(CountingConnector::new(wire.clone()))
    }

    /// A keep-alive pool whose connections run as tasks of the runtime that opens them.
    fn pooled(&self, connector: hyper_rustls::HttpsConnector<CountingConnector>) -> Pooled {
        Client::builder(TokioExecutor::new())
            .pool_idle_timeout(IDLE_TIMEOUT)
            .pool_timer(TokioTimer::new())
            .http2_only(self.h2c)
            .build(connector)
    }

    /// One worker's HTTP. Its connections are driven on the runtime that sends the requests (the
    /// worker's event loop), and close when the worker is dropped.
    pub fn for_worker(self: &Arc<Self>) -> Arc<WorkerHttp> {
        let wire = Arc::new(WireCounters::default());
        let connector = self.connector(&wire);
        let client = self.pooled(connector.clone());
        Arc::new(WorkerHttp { client, connector, wire, shared: self.clone() })
    }

    /// The allow-list (also used for wasi:sockets).
    pub fn allow_list(&self) -> &AllowList {
        &self.allow
    }

    /// Whether a request to `host:port` may go out; logs the first denial with the flag to use.
    pub(crate) fn permits(&self, host: &str, port: u16, metrics: &MetricsHandle) -> bool {
        if self.allow.allows(host, port) {
            return true;
        }
        metrics.http_denied();
        if !self.denial_logged.swap(true, Ordering::Relaxed) {
            let rule =
                AllowRule { host: host.trim_start_matches('[').trim_end_matches(']').to_owned(), port: Some(port) };
            tracing::warn!(
                "the plugin tried to reach {rule}, which is not allowed: pass --allow-host {rule} to allow it \
                 (later denials are only counted, as http_denied)"
            );
        }
        false
    }

    async fn slot(&self, authority: &str) -> Option<OwnedSemaphorePermit> {
        let cap = self.per_host?;
        let semaphore = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            slots.entry(authority.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(cap as usize))).clone()
        };
        semaphore.acquire_owned().await.ok()
    }
}

impl WorkerHttp {
    /// Record a finished request, with the connections and bytes counted since the last one.
    pub(crate) fn record(&self, metrics: &MetricsHandle, sample: HttpSample) {
        metrics.http_request(sample);
        drain_wire(&self.wire, metrics);
    }

    /// Send an allowed request through the pool.
    pub(crate) async fn send(
        self: Arc<Self>,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        metrics: MetricsHandle,
    ) -> SendResult {
        let authority = request.uri().authority().map(|a| a.as_str().to_owned()).unwrap_or_default();
        let permit = self.shared.slot(&authority).await;
        let started = Instant::now();
        let sent = self.client.request(request);
        let response = match options.and_then(|o| o.first_byte_timeout.or(o.connect_timeout)) {
            Some(limit) => match tokio::time::timeout(limit, sent).await {
                Ok(result) => result,
                Err(_) => {
                    self.record(&metrics, HttpSample { status: None, duration: started.elapsed(), body_bytes: 0 });
                    return Err(HttpError::ConnectionReadTimeout);
                }
            },
            None => sent.await,
        };
        match response {
            Ok(response) => {
                let (parts, body) = response.into_parts();
                let pending =
                    Pending { started, status: parts.status.as_u16(), metrics, client: self.clone(), _permit: permit };
                let body = TimedBody::new(body, pending).boxed_unsync();
                let io: Box<dyn std::future::Future<Output = Result<(), HttpError>> + Send> =
                    Box::new(async { Ok(()) });
                Ok((http::Response::from_parts(parts, body), io))
            }
            Err(err) => {
                self.record(&metrics, HttpSample { status: None, duration: started.elapsed(), body_bytes: 0 });
                Err(client_error(&err))
            }
        }
    }
}

/// A whole response, for the one-call `loadhost:plugin/http` interface.
pub(crate) struct WholeResponse {
    pub(crate) status: u16,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: bytes::Bytes,
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
        body: Vec<u8>,
        timeout: Option<Duration>,
        metrics: &MetricsHandle,
    ) -> Result<WholeResponse, FetchError> {
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
        let authority = uri.authority().map(|a| a.as_str().to_owned()).unwrap_or_default();
        let method = http::Method::from_bytes(method.as_bytes()).map_err(|err| invalid(format!("{err}")))?;
        let mut builder = http::Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        let request = builder.body(Full::new(Bytes::from(body))).map_err(|err| invalid(format!("{err}")))?;

        let permit = self.shared.slot(&authority).await;
        let started = Instant::now();
        let exchange = conns.exchange(self, &target, permit.is_some(), request);
        let result = match timeout {
            Some(limit) => tokio::time::timeout(limit, exchange).await.unwrap_or_else(|_| Err("timed out".into())),
            None => exchange.await,
        };
        match result {
            Ok((parts, body)) => {
                let status = parts.status.as_u16();
                let sample =
                    HttpSample { status: Some(status), duration: started.elapsed(), body_bytes: body.len() as u64 };
                self.record(metrics, sample);
                Ok(WholeResponse { status, headers: parts.headers, body })
            }
            Err(why) => {
                self.record(metrics, HttpSample { status: None, duration: started.elapsed(), body_bytes: 0 });
                Err(FetchError::Network(format!("{url}: {why}")))
            }
        }
    }
}

/// Move the connections and bytes counted in `wire` into the worker's metrics.
fn drain_wire(wire: &WireCounters, metrics: &MetricsHandle) {
    metrics.http_wire(
        wire.connections.swap(0, Ordering::Relaxed),
        wire.sent.swap(0, Ordering::Relaxed),
        wire.received.swap(0, Ordering::Relaxed),
    );
}

/// Map a pooled-client error to the wasi:http error code the plugin sees.
fn client_error(err: &hyper_util::client::legacy::Error) -> HttpError {
    use std::error::Error as _;
    let mut source = err.source();
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::ConnectionRefused => HttpError::ConnectionRefused,
                std::io::ErrorKind::TimedOut => HttpError::ConnectionTimeout,
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe => HttpError::ConnectionTerminated,
                _ => HttpError::InternalError(Some(io.to_string())),
            };
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
