//! The gRPC echo service (`loadhost.target.Echo`), on any request whose content type is gRPC's,
//! over h2c or h2 under TLS. Messages are opaque: each length-prefixed message is sent back as it
//! came (same flag, same length, same bytes), so no schema is needed.
//!
//! | method | answer |
//! |---|---|
//! | [`UNARY`] | the one message echoed, then `grpc-status: 0` |
//! | [`STREAM`] | each message echoed as it arrives; `grpc-status: 0` once the client half-closes |
//! | any other | trailers-only `UNIMPLEMENTED` (12) |
//!
//! Metadata a call may carry: [`STATUS_HEADER`] (end with that status, as trailers-only, with
//! [`MESSAGE_HEADER`] or "injected by the target" as grpc-message), [`DELAY_HEADER`] (wait that
//! many ms before the answer, or before each echo) and [`TRUNCATE_HEADER`] (a unary echo cut short:
//! its prefix announces the whole message and only half of it follows, then `grpc-status: 0`).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf as _, Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Incoming;
use tokio::sync::mpsc;

use crate::routes::{Body, MAX_DELAY};
use crate::{MAX_MESSAGE, Stats};

/// How many status codes gRPC defines (0 `OK` to 16 `UNAUTHENTICATED`).
pub const CODES: usize = 17;
/// The unary echo's path.
pub const UNARY: &str = "/loadhost.target.Echo/Unary";
/// The bidirectional streaming echo's path.
pub const STREAM: &str = "/loadhost.target.Echo/Stream";
/// Metadata asking the call to end with this status code (0 to 16), trailers-only.
pub const STATUS_HEADER: &str = "x-loadhost-status";
/// Metadata giving the grpc-message of an injected status.
pub const MESSAGE_HEADER: &str = "x-loadhost-message";
/// Metadata asking for a pause of this many milliseconds before the answer or each echo.
pub const DELAY_HEADER: &str = "x-loadhost-delay-ms";
/// Metadata (any value) asking for a unary echo cut short, for clients' tests of a broken server.
pub const TRUNCATE_HEADER: &str = "x-loadhost-truncate";

const OK: u32 = 0;
const INVALID_ARGUMENT: u32 = 3;
const RESOURCE_EXHAUSTED: u32 = 8;
const UNIMPLEMENTED: u32 = 12;
const INTERNAL: u32 = 13;

/// The length prefix before each message: a compressed flag, then 4 bytes of big-endian length.
const PREFIX: usize = 5;

/// How a call ends.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Status {
    code: u32,
    message: String,
}

impl Status {
    fn new(code: u32, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }

    /// `grpc-status` and, when there is one, `grpc-message` (percent-encoded, as the spec asks).
    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("grpc-status", HeaderValue::from(self.code));
        if !self.message.is_empty()
            && let Ok(value) = HeaderValue::from_str(&percent_encode(&self.message))
        {
            headers.insert("grpc-message", value);
        }
        headers
    }
}

/// gRPC's encoding of grpc-message: printable ASCII but `%` as is, every other byte as `%XX`.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b' '..=b'~' if b != b'%' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Whether the request is a gRPC call: `application/grpc`, or a subtype such as `+proto`.
pub fn is_grpc(req: &Request<Incoming>) -> bool {
    let Some(value) = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let media = value.split(';').next().unwrap_or_default().trim();
    media.eq_ignore_ascii_case("application/grpc")
        || media.get(..17).is_some_and(|start| start.eq_ignore_ascii_case("application/grpc+"))
}

/// What the call's metadata asks for.
#[derive(Debug, Default)]
struct Asked {
    status: Option<Status>,
    delay: Duration,
    truncate: bool,
}

fn asked(headers: &HeaderMap) -> Result<Asked, Status> {
    let number = |name: &str| -> Result<Option<u64>, Status> {
        let Some(value) = headers.get(name) else { return Ok(None) };
        let parsed = value.to_str().ok().and_then(|v| v.trim().parse().ok());
        parsed.map(Some).ok_or_else(|| Status::new(INVALID_ARGUMENT, format!("{name} must be a number")))
    };
    let status = match number(STATUS_HEADER)? {
        Some(code) if code < CODES as u64 => {
            let message = headers.get(MESSAGE_HEADER).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            Some(Status::new(code as u32, message.unwrap_or_else(|| "injected by the target".to_owned())))
        }
        Some(_) => return Err(Status::new(INVALID_ARGUMENT, format!("{STATUS_HEADER} must be a gRPC code, 0 to 16"))),
        None => None,
    };
    let delay = Duration::from_millis(number(DELAY_HEADER)?.unwrap_or(0)).min(MAX_DELAY);
    Ok(Asked { status, delay, truncate: headers.contains_key(TRUNCATE_HEADER) })
}

/// Whole messages out of the request body's bytes, however they were split into frames.
#[derive(Debug, Default)]
struct Decoder {
    buf: BytesMut,
}

impl Decoder {
    fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The next whole message, prefix included; an error for a compressed or oversized one, found
    /// from its prefix alone so that the target never buffers more than [`MAX_MESSAGE`] of it.
    fn next(&mut self) -> Result<Option<Bytes>, Status> {
        let Some(prefix) = self.buf.get(..PREFIX) else { return Ok(None) };
        match prefix[0] {
            0 => {}
            1 => return Err(Status::new(UNIMPLEMENTED, "compressed messages are not supported")),
            flag => return Err(Status::new(INTERNAL, format!("a message's compressed flag is {flag}, not 0 or 1"))),
        }
        let len = (&prefix[1..]).get_u32() as usize;
        if len > MAX_MESSAGE {
            let message = format!("a message of {len} bytes is over the target's limit of {MAX_MESSAGE}");
            return Err(Status::new(RESOURCE_EXHAUSTED, message));
        }
        if self.buf.len() < PREFIX + len {
            self.buf.reserve(PREFIX + len - self.buf.len());
            return Ok(None);
        }
        Ok(Some(self.buf.split_to(PREFIX + len).freeze()))
    }
}

/// Why no further message can be read.
#[derive(Debug)]
enum Unread {
    /// The call must end with this status.
    Status(Status),
    /// The client went away (reset the stream or the connection): there is no one to answer.
    Gone(hyper::Error),
}

/// The request body, read one whole message at a time.
struct Reader {
    body: Incoming,
    decoder: Decoder,
}

impl Reader {
    /// The next message (counted as received), or `None` once the client has half-closed.
    async fn next(&mut self, stats: &Stats) -> Result<Option<Bytes>, Unread> {
        loop {
            if let Some(message) = self.decoder.next().map_err(Unread::Status)? {
                stats.grpc_msgs_received.fetch_add(1, Ordering::Relaxed);
                return Ok(Some(message));
            }
            match self.body.frame().await {
                None if self.decoder.buf.is_empty() => return Ok(None),
                None => return Err(Unread::Status(Status::new(INTERNAL, "the request ended inside a message"))),
                Some(Err(err)) => return Err(Unread::Gone(err)),
                // Request trailers carry nothing the echo uses.
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.decoder.push(&data);
                    }
                }
            }
        }
    }
}

/// What the response body sends next.
#[derive(Debug)]
enum Out {
    Message(Bytes),
    End(Status),
}

/// The response body: messages as the call produces them, then the status as trailers. Counts
/// are taken as each frame is handed to the connection, so a client that has read one has it
/// counted.
struct Outgoing {
    rx: mpsc::Receiver<Out>,
    stats: Arc<Stats>,
}

impl http_body::Body for Outgoing {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let frame = match ready!(self.rx.poll_recv(cx)) {
            Some(Out::Message(message)) => {
                self.stats.grpc_msgs_sent.fetch_add(1, Ordering::Relaxed);
                Frame::data(message)
            }
            Some(Out::End(status)) => {
                ended(&self.stats, status.code);
                // Nothing may follow the trailers.
                self.rx.close();
                Frame::trailers(status.headers())
            }
            None => return Poll::Ready(None),
        };
        Poll::Ready(Some(Ok(frame)))
    }
}

fn ended(stats: &Stats, code: u32) {
    if let Some(count) = stats.grpc_status.get(code as usize) {
        count.fetch_add(1, Ordering::Relaxed);
    }
}

/// `200`, `content-type: application/grpc`, and `body`.
fn grpc_response(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    response
}

/// A response whose body is what `rx` receives.
fn streamed(rx: mpsc::Receiver<Out>, stats: Arc<Stats>) -> Response<Body> {
    grpc_response(Outgoing { rx, stats }.boxed_unsync())
}

/// A trailers-only response (the status in the headers, no body), counted as the call's end.
fn trailers_only(stats: &Stats, status: &Status) -> Response<Body> {
    ended(stats, status.code);
    let mut response = grpc_response(Empty::new().boxed_unsync());
    response.headers_mut().extend(status.headers());
    response
}

/// Answer a gRPC call.
pub async fn call(req: Request<Incoming>, stats: Arc<Stats>) -> Response<Body> {
    stats.grpc_calls.fetch_add(1, Ordering::Relaxed);
    let asked = match asked(req.headers()) {
        Ok(asked) => asked,
        Err(status) => return trailers_only(&stats, &status),
    };
    if let Some(status) = &asked.status {
        pause(asked.delay).await;
        return trailers_only(&stats, status);
    }
    let path = req.uri().path().to_owned();
    let reader = Reader { body: req.into_body(), decoder: Decoder::default() };
    match path.as_str() {
        UNARY => unary(reader, &asked, stats).await,
        STREAM => stream(reader, asked.delay, stats),
        _ => {
            let unknown = Status::new(UNIMPLEMENTED, format!("no method {path} (the target has {UNARY} and {STREAM})"));
            trailers_only(&stats, &unknown)
        }
    }
}

/// Wait `delay`, and not at all without one: even a zero sleep waits for the timer's next
/// millisecond tick, which would add about 1 ms to every call.
async fn pause(delay: Duration) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}

/// The one message once the client has half-closed, echoed after `asked.delay` (cut short when
/// `asked.truncate`).
async fn unary(mut reader: Reader, asked: &Asked, stats: Arc<Stats>) -> Response<Body> {
    let first = reader.next(&stats).await;
    let rest = match &first {
        Ok(Some(_)) => reader.next(&stats).await,
        _ => Ok(None),
    };
    let message = match (first, rest) {
        (Ok(Some(message)), Ok(None)) => message,
        (Ok(None), _) => return trailers_only(&stats, &Status::new(INTERNAL, "a unary call needs a message")),
        (Ok(Some(_)), Ok(Some(_))) => {
            return trailers_only(&stats, &Status::new(INTERNAL, "a unary call takes one message, not more"));
        }
        (Err(Unread::Status(status)), _) | (_, Err(Unread::Status(status))) => return trailers_only(&stats, &status),
        (Err(Unread::Gone(err)), _) | (_, Err(Unread::Gone(err))) => {
            tracing::debug!("gRPC client went away: {err}");
            // No one will read an answer, so none is counted as the call's end.
            return grpc_response(Empty::new().boxed_unsync());
        }
    };
    pause(asked.delay).await;
    let message = if asked.truncate { truncated(message) } else { message };
    let (tx, rx) = mpsc::channel(2);
    // A fresh channel of two has room for both.
    let _ = tx.try_send(Out::Message(message));
    let _ = tx.try_send(Out::End(Status::new(OK, "")));
    streamed(rx, stats)
}

/// `message` (prefix included) cut to its prefix and half of its bytes; an empty one to part of
/// its prefix.
fn truncated(message: Bytes) -> Bytes {
    let len = message.len() - PREFIX;
    message.slice(..if len == 0 { 3 } else { PREFIX + len / 2 })
}

/// How many echoes wait for the connection before the stream stops reading: the bound on what a
/// client that does not read can make the target hold.
const STREAM_BUFFER: usize = 4;

/// Echo each message `delay` after it arrives, on a task of its own, while the response streams.
fn stream(mut reader: Reader, delay: Duration, stats: Arc<Stats>) -> Response<Body> {
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let task_stats = stats.clone();
    tokio::spawn(async move {
        let end = loop {
            match reader.next(&task_stats).await {
                Ok(Some(message)) => {
                    pause(delay).await;
                    if tx.send(Out::Message(message)).await.is_err() {
                        return;
                    }
                }
                Ok(None) => break Status::new(OK, ""),
                Err(Unread::Status(status)) => break status,
                Err(Unread::Gone(err)) => {
                    tracing::debug!("gRPC client went away mid-stream: {err}");
                    return;
                }
            }
        };
        let _ = tx.send(Out::End(end)).await;
    });
    streamed(rx, stats)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn framed(payload: &[u8]) -> Vec<u8> {
        let mut out = vec![0];
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn the_decoder_finds_messages_across_any_split() {
        let wire = [framed(b"hello"), framed(b""), framed(&[7; 300])].concat();
        for split in [1, 2, 5, 6, 64, wire.len()] {
            let mut decoder = Decoder::default();
            let mut found = Vec::new();
            for piece in wire.chunks(split) {
                decoder.push(piece);
                while let Some(message) = decoder.next().unwrap() {
                    found.push(message);
                }
            }
            assert_eq!(found, [framed(b"hello"), framed(b""), framed(&[7; 300])], "pieces of {split}");
            assert!(decoder.buf.is_empty());
        }
    }

    #[test]
    fn the_decoder_refuses_oversized_and_compressed_messages_from_the_prefix() {
        let mut decoder = Decoder::default();
        decoder.push(&[0, 0xff, 0, 0, 0]);
        assert_eq!(decoder.next().unwrap_err().code, RESOURCE_EXHAUSTED);
        let mut decoder = Decoder::default();
        decoder.push(&framed(b"x").iter().enumerate().map(|(i, &b)| if i == 0 { 1 } else { b }).collect::<Vec<_>>());
        assert_eq!(decoder.next().unwrap_err().code, UNIMPLEMENTED);
    }

    #[test]
    fn metadata_asks_for_a_status_and_a_delay() {
        let mut headers = HeaderMap::new();
        assert_eq!(asked(&headers).unwrap().status, None);
        headers.insert(STATUS_HEADER, HeaderValue::from_static("14"));
        headers.insert(DELAY_HEADER, HeaderValue::from_static("25"));
        let got = asked(&headers).unwrap();
        assert_eq!(got.status, Some(Status::new(14, "injected by the target")));
        assert_eq!(got.delay, Duration::from_millis(25));
        assert!(!got.truncate);
        headers.insert(TRUNCATE_HEADER, HeaderValue::from_static("1"));
        assert!(asked(&headers).unwrap().truncate);
        assert_eq!(truncated(Bytes::from(framed(b"abcd"))).as_ref(), &framed(b"abcd")[..7]);
        assert_eq!(truncated(Bytes::from(framed(b""))).len(), 3);
        headers.insert(STATUS_HEADER, HeaderValue::from_static("17"));
        assert_eq!(asked(&headers).unwrap_err().code, INVALID_ARGUMENT);
        assert_eq!(percent_encode("50% done\n"), "50%25 done%0A");
    }
}
