//! The built-in HTTP target (`loadhost target`): a small, fast server on loopback so demos, tests
//! and benchmarks have something real to load without installing anything.
//!
//! One port speaks HTTP/1.1 and HTTP/2 (h2c by prior knowledge, or ALPN under TLS). Routes:
//!
//! | route | answer |
//! |---|---|
//! | `/` | `200`, body `ok\n` |
//! | `/delay?ms=N` | `200` after N milliseconds |
//! | `/status?code=N` | status N |
//! | `/bytes?n=N` | `200` with N bytes, streamed 64 KiB at a time (at most 4 GiB) |
//! | `/echo` | `200` with the request's body and content type |
//! | `/redirect?n=N&to=PATH&code=C` | N redirects (status C, default 302), then PATH |
//! | `/cookies/set?k=v`, `/cookies` | `Set-Cookie` for each pair; the request's `Cookie` header echoed |
//! | `/gzip?bytes=N`, `/gzip-bomb?mb=N` | a gzip body of N bytes of text; one that decodes to N MiB |
//! | `/ws/echo?delay=MS` | WebSocket (HTTP/1.1 upgrade): each text or binary message echoed as such, after MS milliseconds (default 0); `426` without an upgrade |
//! | `/ws/flood?size=BYTES&count=N`, `/ws/partial?size=BYTES&sent=BYTES` | hostile WebSocket peers that never answer a ping or a close: N messages of BYTES (default 1 MiB, unlimited), or one frame announced and cut short (see [`ws`]) |
//! | `/loadhost.target.Echo/Unary` | gRPC (`content-type: application/grpc`): the one message echoed, then `grpc-status: 0` |
//! | `/loadhost.target.Echo/Stream` | gRPC, bidirectional: each message echoed as it arrives; `grpc-status: 0` once the client half-closes |
//! | `/stats` | JSON counts of requests and connections served so far, of failed accepts, and of WebSocket and gRPC sessions, messages and statuses |
//!
//! A gRPC call may ask for a failure or a pause in its metadata: `x-loadhost-status: N` ends it
//! with grpc-status N and `x-loadhost-message` (default "injected by the target") as a trailers-only
//! response; `x-loadhost-delay-ms: N` waits N ms before the answer (unary) or each echo (stream).
//! Any other method is `UNIMPLEMENTED` (12); a message over [`MAX_MESSAGE`] is
//! `RESOURCE_EXHAUSTED` (8), and a WebSocket message over it closes the session.
//!
//! # Layout
//! - [`routes`]: what each path answers.
//! - [`ws`]: the WebSocket echo (`/ws/echo`).
//! - [`grpc`]: the gRPC echo service, on any request whose content type is gRPC's.
//! - [`tls`]: a self-signed certificate for `localhost`/`127.0.0.1`/`::1`, for https tests;
//!   optionally refusing clients without a certificate signed by a given CA (mTLS).
//! - [`Target`]: accept loop, connection counting, shutdown. An accept that fails (out of file
//!   descriptors, `EMFILE`) pauses the loop, 10 ms doubling to 1 s ([`next_backoff`]), rather than
//!   spinning on a listener that stays readable; one warning per burst of failures.

#![deny(missing_docs)]

pub mod grpc;
pub mod routes;
pub mod tls;
pub mod ws;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// The largest WebSocket or gRPC message the target takes (16 MiB): it holds a whole message
/// before echoing it, so a client cannot make it hold more.
pub const MAX_MESSAGE: usize = 16 << 20;

/// Requests, connections, sessions and messages the target has served: tests compare them with
/// the client's own counts, so each is counted exactly once, when the thing is complete.
#[derive(Debug, Default)]
pub struct Stats {
    /// Requests answered (every route, `/stats` included).
    pub requests: AtomicU64,
    /// TCP connections accepted.
    pub connections: AtomicU64,
    /// Accepts that failed (such as `EMFILE`, out of file descriptors).
    pub accept_errors: AtomicU64,
    /// WebSocket upgrades completed.
    pub ws_sessions: AtomicU64,
    /// WebSocket text and binary messages received whole.
    pub ws_msgs_received: AtomicU64,
    /// WebSocket text and binary messages sent (written and flushed).
    pub ws_msgs_sent: AtomicU64,
    /// gRPC calls begun (any method, injected failures included).
    pub grpc_calls: AtomicU64,
    /// gRPC messages received whole.
    pub grpc_msgs_received: AtomicU64,
    /// gRPC messages handed to the connection to send.
    pub grpc_msgs_sent: AtomicU64,
    /// gRPC calls by the status they ended with, indexed by code (0 `OK` to 16 `UNAUTHENTICATED`).
    pub grpc_status: [AtomicU64; grpc::CODES],
}

impl Stats {
    /// The counts as JSON; `grpc_status` maps each code seen (as a string) to its count.
    pub fn to_json(&self) -> serde_json::Value {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let grpc_status: serde_json::Map<String, serde_json::Value> = (self.grpc_status.iter().enumerate())
            .filter(|(_, count)| load(count) > 0)
            .map(|(code, count)| (code.to_string(), load(count).into()))
            .collect();
        serde_json::json!({
            "requests": load(&self.requests),
            "connections": load(&self.connections),
            "accept_errors": load(&self.accept_errors),
            "ws_sessions": load(&self.ws_sessions),
            "ws_msgs_received": load(&self.ws_msgs_received),
            "ws_msgs_sent": load(&self.ws_msgs_sent),
            "grpc_calls": load(&self.grpc_calls),
            "grpc_msgs_received": load(&self.grpc_msgs_received),
            "grpc_msgs_sent": load(&self.grpc_msgs_sent),
            "grpc_status": grpc_status,
        })
    }
}

/// The first pause after a failed accept: errors such as `EMFILE` persist while the listener stays
/// readable, so retrying at once would spin a core without serving anyone.
pub const ACCEPT_BACKOFF_FIRST: Duration = Duration::from_millis(10);
/// The longest pause between accepts while they keep failing: a freed descriptor is used within it.
pub const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// The pause after a failed accept, given the previous pause of the same burst (`None`: the first
/// failure after a success): 10 ms, doubling, at most 1 s.
pub fn next_backoff(previous: Option<Duration>) -> Duration {
    previous.map_or(ACCEPT_BACKOFF_FIRST, |last| last.saturating_mul(2).clamp(ACCEPT_BACKOFF_FIRST, ACCEPT_BACKOFF_MAX))
}

/// A burst of failed accepts: the pause so far and how many failed, so it is logged once.
#[derive(Debug, Default)]
struct Burst {
    pause: Option<Duration>,
    failures: u64,
}

impl Burst {
    /// Count a failure, warning on the first of the burst; the pause before the next accept.
    fn failed(&mut self, err: &std::io::Error) -> Duration {
        if self.pause.is_none() {
            tracing::warn!("accept failed: {err}; retrying with a pause of up to {ACCEPT_BACKOFF_MAX:?}");
        }
        self.failures += 1;
        let pause = next_backoff(self.pause);
        self.pause = Some(pause);
        pause
    }

    /// An accept succeeded: end the burst, saying how long it was.
    fn succeeded(&mut self) {
        if self.pause.take().is_some() {
            tracing::info!("accepting again after {} failed accepts", self.failures);
            self.failures = 0;
        }
    }
}

/// A bound target, ready to serve.
pub struct Target {
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    stats: Arc<Stats>,
}

impl Target {
    /// Bind `addr` (port 0 picks a free port); serve TLS when `tls` is given.
    pub async fn bind(addr: SocketAddr, tls: Option<Arc<rustls::ServerConfig>>) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(addr).await.with_context(|| format!("--addr {addr}: cannot listen"))?;
        Ok(Self { listener, tls: tls.map(TlsAcceptor::from), stats: Arc::default() })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// The base URL clients should use.
    pub fn url(&self) -> anyhow::Result<String> {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        Ok(format!("{scheme}://{}", self.local_addr()?))
    }

    /// The counters.
    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// Serve until `shutdown` resolves; connections under way are dropped then.
    pub async fn serve(self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        let mut burst = Burst::default();
        loop {
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                () = &mut shutdown => return,
            };
            let stream = match accepted {
                Ok((stream, _)) => {
                    burst.succeeded();
                    stream
                }
                Err(err) => {
                    self.stats.accept_errors.fetch_add(1, Ordering::Relaxed);
                    let pause = burst.failed(&err);
                    tokio::select! {
                        () = tokio::time::sleep(pause) => continue,
                        () = &mut shutdown => return,
                    }
                }
            };
            self.spawn_connection(stream);
        }
    }

    /// Serve one accepted connection on a task of its own.
    fn spawn_connection(&self, stream: tokio::net::TcpStream) {
        let _ = stream.set_nodelay(true);
        self.stats.connections.fetch_add(1, Ordering::Relaxed);
        let stats = self.stats.clone();
        let tls = self.tls.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| routes::answer(req, stats.clone()));
            let builder = auto::Builder::new(TokioExecutor::new());
            // With upgrades, so `/ws/echo` can take the connection over after its `101`.
            let served = match tls {
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(tls_stream) => builder.serve_connection_with_upgrades(TokioIo::new(tls_stream), service).await,
                    Err(err) => {
                        tracing::debug!("TLS handshake failed: {err}");
                        return;
                    }
                },
                None => builder.serve_connection_with_upgrades(TokioIo::new(stream), service).await,
            };
            if let Err(err) = served {
                tracing::debug!("connection ended: {err}");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_backoff_doubles_from_10_ms_to_1_s() {
        let mut pauses = Vec::new();
        let mut last = None;
        for _ in 0..10 {
            let pause = next_backoff(last);
            pauses.push(pause.as_millis());
            last = Some(pause);
        }
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        // A burst starts over from the first pause; a stray short pause never goes below it.
        assert_eq!(next_backoff(None), ACCEPT_BACKOFF_FIRST);
        assert_eq!(next_backoff(Some(Duration::ZERO)), ACCEPT_BACKOFF_FIRST);
    }

    #[test]
    fn a_burst_ends_on_success_and_starts_over() {
        let err = std::io::Error::from_raw_os_error(24);
        let mut burst = Burst::default();
        assert_eq!(burst.failed(&err), Duration::from_millis(10));
        assert_eq!(burst.failed(&err), Duration::from_millis(20));
        assert_eq!(burst.failures, 2);
        burst.succeeded();
        assert_eq!((burst.pause, burst.failures), (None, 0));
        assert_eq!(burst.failed(&err), Duration::from_millis(10));
    }
}
