//! `--metrics-addr ADDR`: `GET /metrics` answers the run's series so far, as OpenMetrics text or
//! Prometheus' protobuf as the scrape's `Accept` header asks (`loadhost_export::exposition`;
//! docs/outputs.md lists the series). Loopback only unless a token is given.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use loadhost_config::units::Dur;
use loadhost_engine::Interrupt;
use loadhost_export::Scrape;

/// Bind the endpoint before any load, so a busy or non-loopback address fails fast (exit 2).
pub fn bind(addr: SocketAddr, token: Option<&str>) -> anyhow::Result<std::net::TcpListener> {
    if !addr.ip().is_loopback() && token.is_none() {
        anyhow::bail!("--metrics-addr {addr}: not a loopback address; binding elsewhere needs --metrics-token");
    }
    super::http_serve::bind("metrics-addr", addr)
}

/// Serve `scrape` on `listener` until the process ends; with a `token`, only to scrapes that
/// present it.
pub async fn serve(listener: std::net::TcpListener, scrape: Arc<Scrape>, token: Option<String>) {
    let token: Option<Arc<str>> = token.map(Arc::from);
    super::http_serve::serve(listener, "metrics endpoint", super::http_serve::LIMITS, move |req| {
        answer(req, scrape.clone(), token.clone())
    })
    .await;
}

/// After the run: keep the endpoint up until a scrape has read the final figures (a scraper
/// would otherwise miss the last interval), for at most `limit`; Ctrl-C ends the wait.
pub fn linger(tokio: &tokio::runtime::Runtime, scrape: &Scrape, limit: Duration, interrupt: &Interrupt) {
    if limit.is_zero() || scrape.final_read() {
        return;
    }
    tracing::info!(
        "OpenMetrics: serving the final figures until a scrape reads them, at most {} (--metrics-linger; Ctrl-C \
         ends the wait)",
        Dur(limit)
    );
    let (deadline, asked) = (Instant::now() + limit, interrupt.requests());
    tokio.block_on(async {
        while !scrape.final_read() && Instant::now() < deadline && interrupt.requests() == asked {
            tokio::time::sleep(LINGER_POLL).await;
        }
    });
    if scrape.final_read() {
        tracing::info!("OpenMetrics: a scrape read the final figures");
    } else {
        tracing::warn!("OpenMetrics: no scrape read the final figures; a scraper misses the last interval");
    }
}

/// How often the linger looks for a scrape of the final figures: a scraper's wait is cut short
/// by at most this.
const LINGER_POLL: Duration = Duration::from_millis(20);

async fn answer(
    req: Request<Incoming>,
    scrape: Arc<Scrape>,
    token: Option<Arc<str>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let presented = req.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes());
    let allowed = token.as_deref().is_none_or(|token| super::control_api::authorized(presented, token));
    let text = |body: &'static str| (body.as_bytes().to_vec(), "text/plain");
    let (status, (body, content_type)) = match (req.method(), req.uri().path()) {
        _ if !allowed => (StatusCode::UNAUTHORIZED, text("missing or wrong Authorization: Bearer token\n")),
        (&Method::GET, "/metrics") => {
            let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok());
            let payload = scrape.encode(accept);
            (StatusCode::OK, (payload.body, payload.content_type))
        }
        _ => (StatusCode::NOT_FOUND, text("not found: GET /metrics\n")),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    Ok(response)
}
