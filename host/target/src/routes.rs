//! What each path answers.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;

use crate::Stats;

/// The largest body `/bytes` sends: it is streamed (the target holds 64 KiB of it at a time), so
/// a test can send a body far larger than any plugin should read.
pub const MAX_BYTES: u64 = 4 << 30;

/// What every route answers with: a whole body, or `/bytes`'s stream.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// `n` bytes of `x`, 64 KiB at a time.
struct Stream {
    left: u64,
}

/// The piece `Stream` sends over and over.
static CHUNK: [u8; 64 << 10] = [b'x'; 64 << 10];

impl http_body::Body for Stream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        if self.left == 0 {
            return std::task::Poll::Ready(None);
        }
        let n = self.left.min(CHUNK.len() as u64) as usize;
        self.left -= n as u64;
        std::task::Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from_static(&CHUNK[..n])))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.left)
    }
}

/// The longest `/delay` waits.
pub const MAX_DELAY: Duration = Duration::from_secs(60);

fn query_number(req: &Request<Incoming>, key: &str) -> Option<u64> {
    req.uri()
        .query()?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.parse().ok())
}

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain"));
    response
}

/// Answer one request.
pub async fn answer(req: Request<Incoming>, stats: Arc<Stats>) -> Result<Response<Body>, Infallible> {
    stats.requests.fetch_add(1, Ordering::Relaxed);
    let response = match req.uri().path() {
        "/" => text(StatusCode::OK, "ok\n"),
        "/delay" => {
            let ms = query_number(&req, "ms").unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms).min(MAX_DELAY)).await;
            text(StatusCode::OK, "ok\n")
        }
        "/status" => {
            let code = query_number(&req, "code").and_then(|c| u16::try_from(c).ok());
            match code.and_then(|c| StatusCode::from_u16(c).ok()) {
                Some(status) => text(status, format!("status {}\n", status.as_u16())),
                None => text(StatusCode::BAD_REQUEST, "expected /status?code=N with N in 100..=999\n"),
            }
        }
        "/bytes" => {
            let n = query_number(&req, "n").unwrap_or(0).min(MAX_BYTES);
            let mut response = text(StatusCode::OK, Bytes::new());
            *response.body_mut() = Stream { left: n }.boxed_unsync();
            response
        }
        "/echo" => {
            let content_type = req.headers().get(header::CONTENT_TYPE).cloned();
            match req.into_body().collect().await {
                Ok(body) => {
                    let mut response = text(StatusCode::OK, body.to_bytes());
                    if let Some(ct) = content_type {
                        response.headers_mut().insert(header::CONTENT_TYPE, ct);
                    }
                    response
                }
                Err(err) => text(StatusCode::BAD_REQUEST, format!("could not read the body: {err}\n")),
            }
        }
        "/stats" => {
            let mut response = text(StatusCode::OK, stats.to_json().to_string());
            response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
            response
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    };
    Ok(response)
}
