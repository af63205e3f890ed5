//! The WebSocket routes. `/ws/echo?delay=MS`: an echo. The HTTP/1.1 upgrade is answered here with
//! `101`; the session then runs on a task of its own over the connection hyper hands back, echoing
//! each text message as text and each binary one as binary, MS milliseconds after it arrived.
//! tungstenite answers pings and completes the close handshake as the session keeps reading.
//!
//! Two hostile peers, for the client's robustness tests, write raw frames and never answer a ping
//! or a close (they read only to notice that the client has gone, and discard what they read):
//! `/ws/flood?size=BYTES&count=N` sends N binary messages of BYTES each (default 1 MiB, at most
//! [`MAX_MESSAGE`]; N unlimited by default, 0 for a peer that says nothing);
//! `/ws/partial?size=BYTES&sent=BYTES` announces one binary frame of `size` bytes (at most
//! [`MAX_BYTES`]) and sends only the first `sent` of them, then waits.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, Version, header};
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use crate::routes::{self, Body, MAX_BYTES, MAX_DELAY};
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

/// The read buffer an echo session starts with. tungstenite zero-fills its read buffer up to its
/// capacity before every read, so each session touched all of its default 128 KiB: 139 KiB of the
/// target's RSS per session at 2,000, against which the client's own figures are read
/// (bench/sessions.sh). It still grows, to the message, for a larger one.
const READ_BUFFER: usize = 4 << 10;

/// Answer `/ws/echo`: `101` and an echo session on its own task, or why the request cannot be one.
pub fn echo(req: Request<Incoming>, stats: Arc<Stats>) -> Response<Body> {
    let delay = Duration::from_millis(routes::query_number(&req, "delay").unwrap_or(0)).min(MAX_DELAY);
    upgrade(req, stats, move |io, stats| async move {
        let config = WebSocketConfig::default()
            .read_buffer_size(READ_BUFFER)
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let ws = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await;
        session(ws, delay, &stats).await
    })
}

/// The default size of a `/ws/flood` message.
pub const FLOOD_SIZE: u64 = 1 << 20;

/// Answer `/ws/flood?size=BYTES&count=N`: binary messages as fast as the client takes them, no
/// pong, no close.
pub fn flood(req: Request<Incoming>, stats: Arc<Stats>) -> Response<Body> {
    let size = routes::query_number(&req, "size").unwrap_or(FLOOD_SIZE).min(MAX_MESSAGE as u64);
    let count = routes::query_number(&req, "count").unwrap_or(u64::MAX);
    upgrade(req, stats, move |mut io, stats| async move {
        for _ in 0..count {
            write_payload(&mut io, size, size).await?;
            stats.ws_msgs_sent.fetch_add(1, Ordering::Relaxed);
        }
        until_gone(io).await
    })
}

/// Answer `/ws/partial?size=BYTES&sent=BYTES`: one frame announced and cut short, then silence.
pub fn partial(req: Request<Incoming>, stats: Arc<Stats>) -> Response<Body> {
    let size = routes::query_number(&req, "size").unwrap_or(FLOOD_SIZE).min(MAX_BYTES);
    let sent = routes::query_number(&req, "sent").unwrap_or(size / 2).min(size);
    upgrade(req, stats, move |mut io, _| async move {
        write_payload(&mut io, size, sent).await?;
        until_gone(io).await
    })
}

/// The header of an unmasked binary frame of `size` bytes, then `sent` bytes of its payload.
async fn write_payload<S: tokio::io::AsyncWrite + Unpin>(io: &mut S, size: u64, sent: u64) -> std::io::Result<()> {
    static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
    // The length in its shortest form (RFC 6455 5.2).
    let mut header = vec![0x82];
    match size {
        0..126 => header.push(size as u8),
        126..65_536 => {
            header.push(126);
            header.extend_from_slice(&(size as u16).to_be_bytes());
        }
        _ => {
            header.push(127);
            header.extend_from_slice(&size.to_be_bytes());
        }
    }
    io.write_all(&header).await?;
    let mut left = sent;
    while left > 0 {
        let n = left.min(ZEROS.len() as u64) as usize;
        io.write_all(&ZEROS[..n]).await?;
        left -= n as u64;
    }
    io.flush().await
}

/// Read and discard until the client goes: a ping or a close is never answered.
async fn until_gone<S: tokio::io::AsyncRead + Unpin>(mut io: S) -> anyhow::Result<()> {
    let mut sink = vec![0; 16 << 10];
    while io.read(&mut sink).await? > 0 {}
    Ok(())
}

/// Answer a WebSocket upgrade with `101` and run `session` on the upgraded connection on a task of
/// its own, or say why the request cannot be one.
fn upgrade<F, Fut>(req: Request<Incoming>, stats: Arc<Stats>, session: F) -> Response<Body>
where
    F: FnOnce(TokioIo<hyper::upgrade::Upgraded>, Arc<Stats>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
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

    tokio::spawn(async move {
        match hyper::upgrade::on(req).await {
            Ok(upgraded) => {
                stats.ws_sessions.fetch_add(1, Ordering::Relaxed);
                if let Err(err) = session(TokioIo::new(upgraded), stats).await {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

    use super::*;
    use crate::Target;

    #[tokio::test]
    async fn an_echo_larger_than_the_read_buffer_comes_back_whole() {
        let target = Target::bind("127.0.0.1:0".parse().unwrap(), None).await.unwrap();
        let addr = target.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(target.serve(async move { drop(stopped.await) }));
        let request = format!("ws://{addr}/ws/echo").into_client_request().unwrap();
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut client, _) = tokio_tungstenite::client_async(request, stream).await.unwrap();
        let sent = Message::binary((0..1u32 << 20).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
        assert!(sent.len() > 64 * READ_BUFFER);
        client.send(sent.clone()).await.unwrap();
        assert_eq!(client.next().await.unwrap().unwrap(), sent, "the 1 MiB message came back whole");
        stop.send(()).unwrap();
        served.await.unwrap();
    }
}
