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
//! | `/stats` | JSON counts of requests and connections served so far, and of failed accepts |
//!
//! # Layout
//! - [`routes`]: what each path answers.
//! - [`tls`]: a self-signed certificate for `localhost`/`127.0.0.1`/`::1`, for https tests;
//!   optionally refusing clients without a certificate signed by a given CA (mTLS).
//! - [`Target`]: accept loop, connection counting, shutdown. An accept that fails (out of file
//!   descriptors, `EMFILE`) pauses the loop, 10 ms doubling to 1 s ([`next_backoff`]), rather than
//!   spinning on a listener that stays readable; one warning per burst of failures.

#![deny(missing_docs)]

pub mod routes;
pub mod tls;

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

/// Requests and connections the target has served.
#[derive(Debug, Default)]
pub struct Stats {
    /// Requests answered (every route, `/stats` included).
    pub requests: AtomicU64,
    /// TCP connections accepted.
    pub connections: AtomicU64,
    /// Accepts that failed (such as `EMFILE`, out of file descriptors).
    pub accept_errors: AtomicU64,
}

impl Stats {
    /// The counts as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "requests": self.requests.load(Ordering::Relaxed),
            "connections": self.connections.load(Ordering::Relaxed),
            "accept_errors": self.accept_errors.load(Ordering::Relaxed),
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
            let served = match tls {
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(tls_stream) => builder.serve_connection(TokioIo::new(tls_stream), service).await,
                    Err(err) => {
                        tracing::debug!("TLS handshake failed: {err}");
                        return;
                    }
                },
                None => builder.serve_connection(TokioIo::new(stream), service).await,
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
