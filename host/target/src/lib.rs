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
//! | `/stats` | JSON counts of requests and connections served so far |
//!
//! # Layout
//! - [`routes`]: what each path answers.
//! - [`tls`]: a self-signed certificate for `localhost`/`127.0.0.1`/`::1`, for https tests.
//! - [`Target`]: accept loop, connection counting, shutdown.

#![deny(missing_docs)]

pub mod routes;
pub mod tls;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
}

impl Stats {
    /// The counts as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "requests": self.requests.load(Ordering::Relaxed),
            "connections": self.connections.load(Ordering::Relaxed),
        })
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
        loop {
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                () = &mut shutdown => return,
            };
            let (stream, _) = match accepted {
                Ok(conn) => conn,
                Err(err) => {
                    tracing::warn!("accept failed: {err}");
                    continue;
                }
            };
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
}
