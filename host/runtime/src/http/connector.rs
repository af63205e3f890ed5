//! The TCP connector under every HTTP connection: it resolves the name, refuses the host's own
//! listeners (whatever name leads there), and counts connections opened and the bytes that cross
//! each socket (TLS included), which is what `http_connections_opened`, `data_sent` and
//! `data_received` report.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use http::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::allow::OwnListeners;

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

/// Opens TCP connections, counting them.
#[derive(Debug, Clone)]
pub struct CountingConnector {
    counters: Arc<WireCounters>,
    own: OwnListeners,
}

impl CountingConnector {
    /// A connector adding to `counters` that never connects to `own`.
    pub fn new(counters: Arc<WireCounters>, own: OwnListeners) -> Self {
        Self { counters, own }
    }
}

/// A connection refused because it would reach one of the host's own listeners.
#[derive(Debug, thiserror::Error)]
#[error("{addr} is loadhost's own {flag} listener: a plugin may never reach the host's own ports")]
pub struct OwnListener {
    /// Where the name led.
    pub addr: SocketAddr,
    /// The flag that opened the listener.
    pub flag: &'static str,
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

impl tower_service::Service<Uri> for CountingConnector {
    type Response = CountedConn;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<CountedConn>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let counters = self.counters.clone();
        let own = self.own.clone();
        Box::pin(async move {
            let host = uri.host().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no host in the URI"))?;
            let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
            let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
            let stream = TcpStream::connect(&destinations(&host, port, &own).await?[..]).await?;
            // Requests are small and latency-bound: never wait to coalesce writes.
            stream.set_nodelay(true)?;
            counters.connections.fetch_add(1, Ordering::Relaxed);
            Ok(CountedConn(TokioIo::new(Counted { stream, counters })))
        })
    }
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

/// The connection type the client pools (a newtype, so it can implement hyper's `Connection`).
#[derive(Debug)]
pub struct CountedConn(TokioIo<Counted>);

impl Connection for CountedConn {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl hyper::rt::Read for CountedConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for CountedConn {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
