//! `--metrics-addr ADDR`: `GET /metrics` answers the run's live OpenMetrics text (see
//! `loadhost_output::openmetrics` for the names). Loopback only: it has no authentication.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use loadhost_output::openmetrics::{CONTENT_TYPE, Exporter};

/// Bind the endpoint before any load, so a busy or non-loopback address fails fast (exit 2).
pub fn bind(addr: SocketAddr) -> anyhow::Result<std::net::TcpListener> {
    if !addr.ip().is_loopback() {
        anyhow::bail!("--metrics-addr {addr}: not a loopback address; the endpoint has no authentication");
    }
    crate::http_serve::bind("metrics-addr", addr)
}

/// Serve `exporter` on `listener` until the process ends.
pub async fn serve(listener: std::net::TcpListener, exporter: Arc<Exporter>) {
    crate::http_serve::serve(listener, "metrics endpoint", move |req| answer(req, exporter.clone())).await;
}

async fn answer(req: Request<Incoming>, exporter: Arc<Exporter>) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, content_type, body) = match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => (StatusCode::OK, CONTENT_TYPE, exporter.encode()),
        _ => (StatusCode::NOT_FOUND, "text/plain", "not found: GET /metrics\n".to_owned()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    Ok(response)
}
