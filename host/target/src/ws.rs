//! `/ws/echo?delay=MS`: a WebSocket (RFC 6455) echo. The HTTP/1.1 upgrade is answered here with
//! `101`; the session then runs on a task of its own over the connection hyper hands back, echoing
//! each text message as text and each binary one as binary, MS milliseconds after it arrived.
//! tungstenite answers pings and completes the close handshake as the session keeps reading.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, Version, header};
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use crate::routes::{self, Body, MAX_DELAY};
use crate::{MAX_MESSAGE, Stats};

/// Whether the comma-separated header `name` lists `token` (case-insensitively), as `Connection:
/// keep-alive, Upgrade` does.
fn lists(headers: &HeaderMap, name: header::HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|item| item.trim().eq_ignore_ascii_case(token))
}

/// Answer `/ws/echo`: `101` and a session on its own task, or why the request cannot be one.
pub fn echo(req: Request<Incoming>, stats: Arc<Stats>) -> Response<Body> {
    let headers = req.headers();
    // Only HTTP/1.1 upgrades: WebSocket over HTTP/2 (RFC 8441) is not offered.
    let upgrade = req.version() == Version::HTTP_11
        && lists(headers, header::CONNECTION, "upgrade")
        && lists(headers, header::UPGRADE, "websocket");
    if !upgrade {
        let mut response = routes::text(StatusCode::UPGRADE_REQUIRED, "a WebSocket upgrade is required (HTTP/1.1)\n");
        response.headers_mut().insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        return response;
    }
    if headers.get(header::SEC_WEBSOCKET_VERSION).is_none_or(|v| v.as_bytes() != b"13") {
        let mut response = routes::text(StatusCode::UPGRADE_REQUIRED, "only WebSocket version 13 is spoken\n");
        response.headers_mut().insert(header::SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
        return response;
    }
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY) else {
        return routes::text(StatusCode::BAD_REQUEST, "Sec-WebSocket-Key is missing\n");
    };
    let accept = derive_accept_key(key.as_bytes());
    let delay = Duration::from_millis(routes::query_number(&req, "delay").unwrap_or(0)).min(MAX_DELAY);

    tokio::spawn(async move {
        match hyper::upgrade::on(req).await {
            Ok(upgraded) => {
                stats.ws_sessions.fetch_add(1, Ordering::Relaxed);
                let config =
                    WebSocketConfig::default().max_message_size(Some(MAX_MESSAGE)).max_frame_size(Some(MAX_MESSAGE));
                let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config)).await;
                if let Err(err) = session(ws, delay, &stats).await {
                    tracing::debug!("WebSocket session ended: {err}");
                }
            }
            Err(err) => tracing::debug!("WebSocket upgrade failed: {err}"),
        }
    });

    let mut response = Response::new(Empty::new().boxed_unsync());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(value) = HeaderValue::from_str(&accept) {
        headers.insert(header::SEC_WEBSOCKET_ACCEPT, value);
    }
    response
}

/// Echo until the peer closes (the stream ends once tungstenite has sent the close reply) or the
/// connection fails.
async fn session<S>(mut ws: WebSocketStream<S>, delay: Duration, stats: &Stats) -> anyhow::Result<()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    while let Some(message) = ws.next().await {
        let message = message?;
        if !matches!(message, Message::Text(_) | Message::Binary(_)) {
            continue;
        }
        stats.ws_msgs_received.fetch_add(1, Ordering::Relaxed);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        ws.send(message).await?;
        stats.ws_msgs_sent.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}
