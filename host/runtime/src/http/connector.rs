//! The connectors under every HTTP connection.
//!
//! - [`Direct`]: TCP. It resolves the name, refuses the host's own listeners (whatever name leads
//!   there), and counts connections opened and the bytes that cross each socket (TLS included),
//!   which is what `http_connections_opened`, `data_sent` and `data_received` report; and the
//!   connects that failed for want of a local port or a file descriptor (the generator's health).
//! - [`CountingConnector`]: [`Direct`], or through a forward proxy (see [`super::proxy`]): to the
//!   proxy itself for an http target, or a `CONNECT` tunnel for an https one.
//! - [`Connector`]: TLS and ALPN over that, with the client certificate of the target's host
//!   (`--client-cert HOST=…`) when it has one of its own.
//! - [`Network`]: what a run's connectors are built from.

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use http::Uri;
use hyper_rustls::builderstates::WantsProtocols1;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::allow::OwnListeners;
use super::connect_failure::ConnectFailure;
use super::proxy::{Proxies, ProxyOptions, Route};
use super::tls::{ClientTls, TlsOptions};

/// Connections and wire bytes of a run, shared by every worker.
#[derive(Debug, Default)]
pub struct WireCounters {
    /// TCP connections opened.
    pub connections: AtomicU64,
    /// Bytes written to sockets.
    pub sent: AtomicU64,
    /// Bytes read from sockets.
    pub received: AtomicU64,
}

/// What a run's connectors are built from: TLS (per host, for client certificates), the proxies,
/// and whether every request is HTTP/2.
pub struct Network {
    tls: ClientTls,
    proxies: Arc<Proxies>,
    h2c: bool,
}

impl Network {
    /// Load the TLS settings (certificate files) and check the proxies; errors name the flag or
    /// variable, and the file.
    pub fn new(tls: &TlsOptions, proxy: &ProxyOptions, h2c: bool) -> anyhow::Result<Self> {
        Ok(Self { tls: super::tls::client_tls(tls)?, proxies: Arc::new(Proxies::new(proxy, h2c)?), h2c })
    }

    /// A connector whose connections count into `wire` and never reach `own`.
    pub fn connector(&self, wire: &Arc<WireCounters>, own: &OwnListeners) -> Connector {
        let tcp = CountingConnector {
            direct: Direct { counters: wire.clone(), own: own.clone() },
            proxies: self.proxies.clone(),
        };
        self.tls_over(|builder| {
            if self.h2c { builder.enable_http2() } else { builder.enable_all_versions() }.wrap_connector(tcp.clone())
        })
    }

    /// A connector for the host's WebSocket (`alpn` HTTP/1.1) and gRPC (HTTP/2) clients: TLS as
    /// for HTTP, straight to the target (the proxies are for HTTP requests).
    pub(crate) fn direct_connector(
        &self,
        wire: &Arc<WireCounters>,
        own: &OwnListeners,
        alpn: Alpn,
    ) -> Connector<Direct> {
        let tcp = Direct { counters: wire.clone(), own: own.clone() };
        self.tls_over(|builder| match alpn {
            Alpn::Http1 => builder.enable_http1().wrap_connector(tcp.clone()),
            Alpn::Http2 => builder.enable_http2().wrap_connector(tcp.clone()),
        })
    }

    /// TLS with each host's client certificate, the protocols (ALPN) and the TCP under it by `wrap`.
    fn tls_over<C>(&self, wrap: impl Fn(HttpsConnectorBuilder<WantsProtocols1>) -> HttpsConnector<C>) -> Connector<C> {
        let https = |config: &rustls::ClientConfig| {
            wrap(HttpsConnectorBuilder::new().with_tls_config(config.clone()).https_or_http())
        };
        Connector {
            default: https(&self.tls.default),
            per_host: self.tls.per_host.iter().map(|(host, config)| (host.clone(), https(config))).collect(),
        }
    }

    /// Name the proxy's credentials on a request that is forwarded to it (`Proxy-Authorization`),
    /// for a pool that sends absolute-form requests on its own; other requests are left alone.
    pub fn authorize<B>(&self, request: &mut http::Request<B>) {
        if let Some(auth) = self.proxies.forward_auth(request.uri()) {
            request.headers_mut().insert(http::header::PROXY_AUTHORIZATION, auth);
        }
    }

    /// Whether a request to `dst` is forwarded to a proxy (so it goes in absolute form).
    pub(crate) fn forwarded(&self, dst: &Uri) -> bool {
        self.proxies.any() && matches!(self.proxies.route(dst), Route::Forward(_))
    }
}

/// The protocol a WebSocket or gRPC connection offers by ALPN.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Alpn {
    /// WebSocket's upgrade is HTTP/1.1.
    Http1,
    /// gRPC is HTTP/2 only.
    Http2,
}

/// TLS and ALPN over a [`CountingConnector`] (or [`Direct`]), with the client certificate of the
/// target's host.
#[derive(Clone)]
pub struct Connector<C = CountingConnector> {
    default: HttpsConnector<C>,
    per_host: Vec<(String, HttpsConnector<C>)>,
}

impl<C> tower_service::Service<Uri> for Connector<C>
where
    HttpsConnector<C>: tower_service::Service<Uri>,
{
    type Response = <HttpsConnector<C> as tower_service::Service<Uri>>::Response;
    type Error = <HttpsConnector<C> as tower_service::Service<Uri>>::Error;
    type Future = <HttpsConnector<C> as tower_service::Service<Uri>>::Future;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let host = uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
        match self.per_host.iter_mut().find(|(h, _)| h.eq_ignore_ascii_case(host)) {
            Some((_, connector)) => connector.call(uri),
            None => self.default.call(uri),
        }
    }
}

/// A connection refused because it would reach one of the host's own listeners.
#[derive(Debug, thiserror::Error)]
#[error(
    "{addr} is loadhost's own {flag} listener: loadhost's own ports are never granted to a plugin, whatever --allow-host says"
)]
pub struct OwnListener {
    /// Where the name led.
    pub addr: SocketAddr,
    /// The flag that opened the listener.
    pub flag: &'static str,
}

/// A connection through a proxy that failed: the proxy could not be reached, or would not open
/// the tunnel.
#[derive(Debug, thiserror::Error)]
#[error("proxy {proxy}: {why}")]
pub struct ProxyFailed {
    /// The proxy's host:port.
    pub proxy: String,
    /// What went wrong.
    pub why: String,
}

/// The addresses `host:port` resolves to, minus the host's own listeners; refused outright when
/// every one of them is the host's.
async fn destinations(host: &str, port: u16, own: &OwnListeners) -> io::Result<Vec<SocketAddr>> {
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host, port)).await?.collect();
    let mut refused = None;
    let allowed: Vec<SocketAddr> = resolved
        .into_iter()
        .filter(|addr| match own.reached_by(*addr) {
            Some(flag) => {
                refused.get_or_insert(OwnListener { addr: *addr, flag });
                false
            }
            None => true,
        })
        .collect();
    match (allowed.is_empty(), refused) {
        (true, Some(own)) => Err(io::Error::new(io::ErrorKind::PermissionDenied, own)),
        _ => Ok(allowed),
    }
}

/// The host and port of an absolute URI (brackets off an IPv6 literal; the scheme's port).
fn host_port(uri: &Uri) -> io::Result<(String, u16)> {
    let host = uri.host().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no host in the URI"))?;
    let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
    Ok((host.trim_start_matches('[').trim_end_matches(']').to_owned(), port))
}

/// Refuse a proxied target that is plainly one of the host's own listeners (an IP literal or
/// `localhost`): the proxy would reach it for the plugin. Other names are the proxy's to resolve.
fn refuse_own_origin(uri: &Uri, own: &OwnListeners) -> io::Result<()> {
    let (host, port) = host_port(uri)?;
    let ips: Vec<IpAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) if host.eq_ignore_ascii_case("localhost") => {
            vec![Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()]
        }
        Err(_) => Vec::new(),
    };
    for addr in ips.into_iter().map(|ip| SocketAddr::new(ip, port)) {
        if let Some(flag) = own.reached_by(addr) {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, OwnListener { addr, flag }));
        }
    }
    Ok(())
}

/// Opens TCP connections, counting them.
#[derive(Debug, Clone)]
pub struct Direct {
    counters: Arc<WireCounters>,
    own: OwnListeners,
}

impl Direct {
    async fn connect(self, uri: Uri) -> io::Result<CountedConn> {
        let (host, port) = host_port(&uri)?;
        let addrs = destinations(&host, port, &self.own).await?;
        // Name resolution is done: `http_req_connecting` is the TCP connect alone (as k6's).
        let dialed = Instant::now();
        let stream = TcpStream::connect(&addrs[..]).await.map_err(super::connect_failure::count_exhausted)?;
        let connected = Instant::now();
        // Requests are small and latency-bound: never wait to coalesce writes.
        stream.set_nodelay(true)?;
        self.counters.connections.fetch_add(1, Ordering::Relaxed);
        let io = TokioIo::new(Counted { stream, counters: self.counters });
        Ok(CountedConn { io, proxied: false, dialed, connected })
    }
}

impl tower_service::Service<Uri> for Direct {
    type Response = CountedConn;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<CountedConn>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        Box::pin(self.clone().connect(uri))
    }
}

/// [`Direct`], or through the run's proxy when one applies to the target.
#[derive(Debug, Clone)]
pub struct CountingConnector {
    direct: Direct,
    proxies: Arc<Proxies>,
}

impl tower_service::Service<Uri> for CountingConnector {
    type Response = CountedConn;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<CountedConn>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let direct = self.direct.clone();
        match self.proxies.route(&uri) {
            Route::Direct => Box::pin(direct.connect(uri)),
            Route::Forward(proxy) => Box::pin(async move {
                refuse_own_origin(&uri, &direct.own)?;
                let name = proxy_name(proxy.uri());
                let mut conn = direct.connect(proxy.uri().clone()).await.map_err(|err| proxy_failed(&name, err))?;
                conn.proxied = true;
                Ok(conn)
            }),
            Route::Tunnel(proxy) => Box::pin(async move {
                refuse_own_origin(&uri, &direct.own)?;
                let name = proxy_name(proxy.uri());
                let target = uri.authority().map_or_else(String::new, |a| a.to_string());
                let conn = direct.connect(proxy.uri().clone()).await.map_err(|err| proxy_failed(&name, err))?;
                let mut tunnel = Tunnel::new(proxy.uri().clone(), ProxyConn(Some(conn)));
                if let Some(auth) = proxy.basic_auth() {
                    tunnel = tunnel.with_auth(auth.clone());
                }
                tower_service::Service::call(&mut tunnel, uri).await.map_err(|err| tunnel_failed(&name, &target, &err))
            }),
        }
    }
}

/// A connection already made to the proxy, for hyper-util's [`Tunnel`] to send its `CONNECT` on:
/// connecting is ours, so its errors are told as the direct ones are.
struct ProxyConn(Option<CountedConn>);

impl tower_service::Service<Uri> for ProxyConn {
    type Response = CountedConn;
    type Error = io::Error;
    type Future = std::future::Ready<io::Result<CountedConn>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _proxy: Uri) -> Self::Future {
        std::future::ready(self.0.take().ok_or_else(|| io::Error::other("the proxy connection was used already")))
    }
}

/// A proxy's host:port, for messages (never its credentials).
fn proxy_name(uri: &Uri) -> String {
    let (host, port) = host_port(uri).unwrap_or_default();
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}

/// Connecting to the proxy failed: the same kind of error (so a refused connection is still
/// `connection refused`), saying it was the proxy. A refusal of the host's own listener stays one.
fn proxy_failed(proxy: &str, err: io::Error) -> io::Error {
    if err.get_ref().is_some_and(|inner| inner.is::<OwnListener>()) {
        return err;
    }
    let why = ConnectFailure::of(err.kind()).map_or_else(|| err.to_string(), |failure| failure.words().to_owned());
    io::Error::new(err.kind(), ProxyFailed { proxy: proxy.to_owned(), why })
}

/// Why the `CONNECT` tunnel to `target` failed once connected to `proxy`: it refused (a status
/// other than 200; 407 is "proxy authorization required"), or the connection failed meanwhile.
fn tunnel_failed(proxy: &str, target: &str, err: &(dyn std::error::Error + 'static)) -> io::Error {
    let io = err.source().and_then(|s| s.downcast_ref::<io::Error>());
    let why = match io {
        Some(io) => format!("the CONNECT tunnel to {target} failed: {err}: {io}"),
        None => format!("the CONNECT tunnel to {target} failed: {err}"),
    };
    io::Error::new(io.map_or(io::ErrorKind::Other, io::Error::kind), ProxyFailed { proxy: proxy.to_owned(), why })
}

/// A TCP stream that counts the bytes it moves.
#[derive(Debug)]
pub struct Counted {
    stream: TcpStream,
    counters: Arc<WireCounters>,
}

impl AsyncRead for Counted {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        if read > 0 {
            self.counters.received.fetch_add(read as u64, Ordering::Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Counted {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = polled {
            self.counters.sent.fetch_add(n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = polled {
            self.counters.sent.fetch_add(n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The connection type the client pools (its own type, so it can implement hyper's `Connection`).
#[derive(Debug)]
pub struct CountedConn {
    io: TokioIo<Counted>,
    /// Connected to a forward proxy (an http target's): requests go in absolute form.
    proxied: bool,
    /// When the TCP connect began (the name resolved) and ended: `http_req_connecting`.
    dialed: Instant,
    connected: Instant,
}

impl CountedConn {
    /// When its TCP connect began and ended (through a proxy: the connect to the proxy).
    pub(crate) fn connect_instants(&self) -> (Instant, Instant) {
        (self.dialed, self.connected)
    }
}

impl Connection for CountedConn {
    fn connected(&self) -> Connected {
        // A proxied connection makes hyper's pool send absolute-form requests.
        Connected::new().proxy(self.proxied)
    }
}

impl hyper::rt::Read for CountedConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for CountedConn {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
