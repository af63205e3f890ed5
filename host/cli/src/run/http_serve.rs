//! The accept loop the control API and the OpenMetrics endpoint share: listeners are bound
//! before any load (so a busy port is a usage error), then served here until the process ends.

use std::convert::Infallible;
use std::future::Future;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

/// Bind `addr` for `flag` without blocking, before any load.
pub fn bind(flag: &str, addr: std::net::SocketAddr) -> anyhow::Result<std::net::TcpListener> {
    use anyhow::Context as _;
    let listener = std::net::TcpListener::bind(addr).with_context(|| format!("--{flag} {addr}: cannot listen"))?;
    listener.set_nonblocking(true).with_context(|| format!("--{flag} {addr}"))?;
    Ok(listener)
}

/// Answer every connection on `listener` with `handler` (HTTP/1.1 or h2c).
pub async fn serve<H, F>(listener: std::net::TcpListener, what: &'static str, handler: H)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send + 'static,
{
    let listener = match TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(err) => {
            tracing::error!("the {what} cannot listen: {err}");
            return;
        }
    };
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let handler = handler.clone();
        tokio::spawn(async move {
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service_fn(handler))
                .await;
        });
    }
}
