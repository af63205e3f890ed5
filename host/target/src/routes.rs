//! What each path answers (the table in the crate docs), and for the HTTP-features tests:
//!
//! | path | answer |
//! |---|---|
//! | `/redirect?n=N&to=PATH&code=C` | C (default `302`) to `/redirect?n=N-1…` N times (default 1), then to PATH (default `/`, may be a URL) |
//! | `/cookies/set?k=v&…` | `200` with `Set-Cookie: k=v; Path=/` for each pair |
//! | `/cookies` | `200` with the request's `Cookie` header as the body |
//! | `/gzip?bytes=N` | `200`, `Content-Encoding: gzip`: N bytes of text (default 1000) compressed |
//! | `/gzip-bomb?mb=N` | `200`, `Content-Encoding: gzip`: a small stream that decodes to N MiB of zeros |
//! | `/bytes?n=N&cut=M` | `200` announcing N bytes, of which only M come before the connection closes |
//!
//! Both gzip routes say the decoded size in `x-decoded-length`.

use std::convert::Infallible;
use std::io::Write as _;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
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

/// `n` bytes of `x`, 64 KiB at a time; with `announced` more than `n`, a body cut short.
struct Stream {
    left: u64,
    /// The length the response announces (`Content-Length`).
    announced: u64,
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
        http_body::SizeHint::with_exact(self.announced)
    }
}

/// The largest body `/gzip` compresses (it is built whole in memory).
pub const MAX_GZIP_BYTES: u64 = 64 << 20;

/// The most `/gzip-bomb` decodes to, in MiB (4 GiB).
pub const MAX_BOMB_MB: u64 = 4096;

/// The most hops `/redirect` makes.
pub const MAX_REDIRECTS: u64 = 1000;

/// A gzip body that decodes to `mib` MiB of zeros, sent from one small precomputed piece: a
/// deflate stream of one MiB of zeros, ended by a full flush so that it can be repeated as is.
struct Bomb {
    /// Pieces still to send: the header, `mib` copies of the MiB, then the trailer.
    left: u64,
    mib: u64,
    sent_header: bool,
}

/// The precomputed pieces of a bomb: a MiB of zeros as deflate blocks, the final empty block,
/// and that MiB's CRC-32.
struct BombParts {
    mib: Bytes,
    last: Bytes,
    crc: flate2::Crc,
}

fn bomb_parts() -> &'static BombParts {
    static PARTS: OnceLock<BombParts> = OnceLock::new();
    PARTS.get_or_init(|| {
        let zeros = vec![0u8; 1 << 20];
        let deflate = |input: &[u8], flush| {
            let mut out = Vec::with_capacity(64 << 10);
            let mut compress = flate2::Compress::new(flate2::Compression::best(), false);
            // Zeros compress about 1000:1, so 64 KiB of output room always takes all of the input.
            let _ = compress.compress_vec(input, &mut out, flush);
            Bytes::from(out)
        };
        let mut crc = flate2::Crc::new();
        crc.update(&zeros);
        BombParts {
            mib: deflate(&zeros, flate2::FlushCompress::Full),
            last: deflate(&[], flate2::FlushCompress::Finish),
            crc,
        }
    })
}

impl http_body::Body for Bomb {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        let parts = bomb_parts();
        let piece = if !self.sent_header {
            self.sent_header = true;
            // The gzip header: magic, deflate, no flags, no time, no extra flags, unknown OS.
            Bytes::from_static(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff])
        } else if self.left > 0 {
            self.left -= 1;
            parts.mib.clone()
        } else if self.mib > 0 {
            let mut crc = flate2::Crc::new();
            for _ in 0..self.mib {
                crc.combine(&parts.crc);
            }
            let mut trailer = parts.last.to_vec();
            trailer.extend_from_slice(&crc.sum().to_le_bytes());
            trailer.extend_from_slice(&((self.mib << 20) as u32).to_le_bytes());
            self.mib = 0;
            Bytes::from(trailer)
        } else {
            return std::task::Poll::Ready(None);
        };
        std::task::Poll::Ready(Some(Ok(http_body::Frame::data(piece))))
    }
}

/// `n` bytes of readable text, gzip-compressed.
fn gzip_text(n: u64) -> Bytes {
    const LINE: &[u8] = b"loadhost sends this line again and again\n";
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut left = n as usize;
    while left > 0 {
        let take = left.min(LINE.len());
        // Writing into a Vec cannot fail.
        let _ = encoder.write_all(&LINE[..take]);
        left -= take;
    }
    Bytes::from(encoder.finish().unwrap_or_default())
}

/// The value of `key` in the query, percent-decoded.
fn query_text(req: &Request<Incoming>, key: &str) -> Option<String> {
    let (_, value) = req.uri().query()?.split('&').filter_map(|pair| pair.split_once('=')).find(|(k, _)| *k == key)?;
    Some(percent_decode(value))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' | b':' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `/redirect?n=N&to=PATH&code=C`: N hops of C (302 by default; the next `/redirect` as a
/// relative reference), then PATH.
fn redirect(req: &Request<Incoming>) -> Response<Body> {
    let n = query_number(req, "n").unwrap_or(1).min(MAX_REDIRECTS);
    let to = query_text(req, "to").unwrap_or_else(|| "/".to_owned());
    let code = match query_number(req, "code").unwrap_or(302) {
        301 => StatusCode::MOVED_PERMANENTLY,
        302 => StatusCode::FOUND,
        303 => StatusCode::SEE_OTHER,
        307 => StatusCode::TEMPORARY_REDIRECT,
        308 => StatusCode::PERMANENT_REDIRECT,
        _ => return text(StatusCode::BAD_REQUEST, "code must be 301, 302, 303, 307 or 308\n"),
    };
    if n == 0 {
        return text(StatusCode::OK, "ok\n");
    }
    let location =
        if n > 1 { format!("/redirect?n={}&code={}&to={}", n - 1, code.as_u16(), percent_encode(&to)) } else { to };
    let mut response = text(code, "");
    match header::HeaderValue::from_str(&location) {
        Ok(value) => {
            response.headers_mut().insert(header::LOCATION, value);
            response
        }
        Err(_) => text(StatusCode::BAD_REQUEST, "'to' is not a header value\n"),
    }
}

/// `/cookies/set?k=v&…`: one `Set-Cookie: k=v; Path=/` per pair.
fn set_cookies(req: &Request<Incoming>) -> Response<Body> {
    let mut response = text(StatusCode::OK, "ok\n");
    let pairs = req.uri().query().unwrap_or_default().split('&').filter_map(|pair| pair.split_once('='));
    for (name, value) in pairs {
        let cookie = format!("{}={}; Path=/", percent_decode(name), percent_decode(value));
        if let Ok(value) = header::HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

/// A compressed body: `/gzip?bytes=N` (N bytes of text) or `/gzip-bomb?mb=N` (N MiB of zeros).
fn gzipped(req: &Request<Incoming>, bomb: bool) -> Response<Body> {
    let mut response = text(StatusCode::OK, Bytes::new());
    let decoded = if bomb {
        let mib = query_number(req, "mb").unwrap_or(1).min(MAX_BOMB_MB);
        *response.body_mut() = Bomb { left: mib, mib, sent_header: false }.boxed_unsync();
        mib << 20
    } else {
        let n = query_number(req, "bytes").unwrap_or(1000).min(MAX_GZIP_BYTES);
        *response.body_mut() = Full::new(gzip_text(n)).boxed_unsync();
        n
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_ENCODING, header::HeaderValue::from_static("gzip"));
    headers.insert("x-decoded-length", header::HeaderValue::from(decoded));
    response
}

/// The longest `/delay` waits.
pub const MAX_DELAY: Duration = Duration::from_secs(60);

/// The number `key` in the query, if it is there and is one.
pub(crate) fn query_number(req: &Request<Incoming>, key: &str) -> Option<u64> {
    req.uri()
        .query()?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.parse().ok())
}

/// `status` with a `text/plain` body.
/// The request's headers as a JSON object, name (lower case) to value (several joined with ", "),
/// so a client's tests can see what it sent (`User-Agent`, `Connection`, …).
fn request_headers<B>(req: &Request<B>) -> Response<Body> {
    let mut all = serde_json::Map::new();
    for (name, value) in req.headers() {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        match all.get_mut(name.as_str()) {
            Some(serde_json::Value::String(seen)) => {
                seen.push_str(", ");
                seen.push_str(&value);
            }
            _ => {
                all.insert(name.as_str().to_owned(), serde_json::Value::String(value));
            }
        }
    }
    let mut response = text(StatusCode::OK, serde_json::Value::Object(all).to_string());
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    response
}

pub(crate) fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain"));
    response
}

/// Answer one request.
pub async fn answer(req: Request<Incoming>, stats: Arc<Stats>) -> Result<Response<Body>, Infallible> {
    stats.requests.fetch_add(1, Ordering::Relaxed);
    // gRPC is told by its content type, whatever the path, so that an unknown method gets gRPC's
    // UNIMPLEMENTED rather than an HTTP 404.
    if crate::grpc::is_grpc(&req) {
        return Ok(crate::grpc::call(req, stats).await);
    }
    let response = match req.uri().path() {
        "/" => text(StatusCode::OK, "ok\n"),
        "/ws/echo" => crate::ws::echo(req, stats),
        "/ws/flood" => crate::ws::flood(req, stats),
        "/ws/partial" => crate::ws::partial(req, stats),
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
            // `cut=M`: the body announces N bytes and ends after M, so the connection closes with
            // the response cut short (hyper cannot finish a message shorter than its length).
            let sent = query_number(&req, "cut").unwrap_or(n).min(n);
            let mut response = text(StatusCode::OK, Bytes::new());
            *response.body_mut() = Stream { left: sent, announced: n }.boxed_unsync();
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
        "/redirect" => redirect(&req),
        "/headers" => request_headers(&req),
        "/cookies/set" => set_cookies(&req),
        "/cookies" => {
            let cookie = req.headers().get(header::COOKIE).map(|v| Bytes::copy_from_slice(v.as_bytes()));
            text(StatusCode::OK, cookie.unwrap_or_default())
        }
        "/gzip" => gzipped(&req, false),
        "/gzip-bomb" => gzipped(&req, true),
        "/stats" => {
            let mut response = text(StatusCode::OK, stats.to_json().to_string());
            response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
            response
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    };
    Ok(response)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::io::Read as _;

    use http_body_util::BodyExt as _;

    use super::*;

    #[tokio::test]
    async fn a_bomb_is_a_valid_gzip_stream_of_zeros() {
        let wire = Bomb { left: 3, mib: 3, sent_header: false }.collect().await.unwrap().to_bytes();
        assert!(wire.len() < 64 << 10, "{} bytes on the wire", wire.len());
        let mut decoded = Vec::new();
        flate2::read::GzDecoder::new(wire.as_ref()).read_to_end(&mut decoded).unwrap();
        assert_eq!(decoded.len(), 3 << 20);
        assert!(decoded.iter().all(|&b| b == 0));
    }

    #[test]
    fn gzip_text_decodes_to_its_size_and_paths_round_trip() {
        let mut decoded = Vec::new();
        flate2::read::GzDecoder::new(gzip_text(12_345).as_ref()).read_to_end(&mut decoded).unwrap();
        assert_eq!(decoded.len(), 12_345);
        assert_eq!(percent_decode(&percent_encode("/gzip?bytes=5&x=y")), "/gzip?bytes=5&x=y");
    }
}
