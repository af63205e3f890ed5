//! One worker's gRPC calls: an HTTP/2 client over the host's connector (h2c by prior knowledge on
//! `http://`, ALPN `h2` on `https://`), a unary call, and a streaming call's task that turns the
//! response into messages and a final status.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::Frame;
use http_body_util::BodyExt as _;
use http_body_util::combinators::BoxBody;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::wire::{self, Deframer, Metadata, code};
use crate::budget::{ByteBudget, HeldBytes};
use crate::http::WorkerHttp;
use crate::http::connector::{Alpn, Connector, Direct};

/// A request body: one message, or a stream's channel. Each message counts against the instance's
/// byte budget until HTTP/2 has written it out (and drops it).
pub(crate) type GrpcBody = BoxBody<HeldBytes, Infallible>;

/// A worker's HTTP/2 connections for gRPC, kept across calls and tasks.
pub(crate) type Pool = Client<Connector<Direct>, GrpcBody>;

/// Idle connections close after this long, as HTTP's do.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// How a call ended, as the plugin and `grpc_reqs` see it.
#[derive(Debug, Clone)]
pub(crate) struct Ended {
    pub(crate) code: u32,
    pub(crate) message: String,
    pub(crate) trailers: Metadata,
}

impl Ended {
    fn with(code: u32, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), trailers: Vec::new() }
    }
}

/// Why a call could not be made or finished.
#[derive(Debug)]
pub(crate) enum CallError {
    /// The request could not be built.
    Invalid(String),
    /// The target is the host's own listener.
    Denied(String),
    /// The connection failed (status 14 in `grpc_reqs`).
    Network(String),
}

/// The pool for a worker, built on first use.
pub(crate) fn pool(http: &WorkerHttp) -> Pool {
    Client::builder(TokioExecutor::new())
        .http2_only(true)
        .pool_idle_timeout(IDLE_TIMEOUT)
        .pool_timer(TokioTimer::new())
        .timer(TokioTimer::new())
        .build(http.direct_connector(Alpn::Http2))
}

/// The request for `method` at `target` (`http://host:port`), its metadata and deadline.
pub(crate) fn request(
    target: &str,
    method: &str,
    metadata: &Metadata,
    timeout_ms: Option<u32>,
    body: GrpcBody,
) -> Result<http::Request<GrpcBody>, CallError> {
    let invalid = |why: String| CallError::Invalid(format!("{target}{method}: {why}"));
    if !method.starts_with('/') || method[1..].split('/').count() != 2 {
        return Err(invalid("expected the method as /package.Service/Method".into()));
    }
    let uri: http::Uri =
        format!("{}{method}", target.trim_end_matches('/')).parse().map_err(|err| invalid(format!("{err}")))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
        return Err(invalid("expected the target as http://host:port (h2c) or https://host:port".into()));
    }
    let mut request = http::Request::post(uri).body(body).map_err(|err| invalid(format!("{err}")))?;
    let headers = request.headers_mut();
    wire::to_headers(metadata, headers).map_err(invalid)?;
    headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/grpc"));
    headers.insert(http::header::TE, http::HeaderValue::from_static("trailers"));
    if let Some(ms) = timeout_ms {
        headers.insert("grpc-timeout", wire::timeout_header(ms));
    }
    Ok(request)
}

/// What a response says, piece by piece.
pub(crate) enum Event {
    /// A whole message, counted against the byte budget until the plugin has it.
    Message(HeldBytes),
    /// The call ended.
    End(Result<Ended, CallError>),
}

/// Where a call's response goes, piece by piece: a streaming call's channel to the plugin, or a
/// unary call's own collector.
pub(crate) trait Events {
    /// The response headers arrived.
    fn headers(&mut self, headers: Metadata) -> impl Future<Output = ()> + Send;
    /// A whole message; `false` when no one takes messages any more (the plugin dropped the call).
    fn message(&mut self, message: HeldBytes) -> impl Future<Output = bool> + Send;
}

impl Events for mpsc::Sender<Event> {
    /// A streaming call's headers are not handed to the plugin (its `receive` gives messages and
    /// the status).
    async fn headers(&mut self, _headers: Metadata) {}

    async fn message(&mut self, message: HeldBytes) -> bool {
        self.send(Event::Message(message)).await.is_ok()
    }
}

/// A unary call's response as it comes: its headers, the first message (any more are only
/// counted: a unary call has one).
#[derive(Default)]
pub(crate) struct Unary {
    pub(crate) headers: Metadata,
    pub(crate) first: Option<HeldBytes>,
    pub(crate) messages: usize,
}

impl Events for Unary {
    async fn headers(&mut self, headers: Metadata) {
        self.headers = headers;
    }

    async fn message(&mut self, message: HeldBytes) -> bool {
        self.messages += 1;
        self.first.get_or_insert(message);
        true
    }
}

/// What a call's response may use: the largest message (`--max-response-body`) and the
/// instance's byte budget.
#[derive(Debug, Clone)]
pub(crate) struct Bounds {
    pub(crate) max: u64,
    pub(crate) budget: ByteBudget,
}

/// Send `request` and feed what comes back to `events` until the call ends or `deadline`
/// passes; ends with exactly one `Event::End`.
pub(crate) async fn drive(
    pool: Pool,
    request: http::Request<GrpcBody>,
    deadline: Option<Instant>,
    bounds: Bounds,
    mut events: mpsc::Sender<Event>,
) {
    let ended = call(&pool, request, deadline, bounds, &mut events).await;
    let _ = events.send(Event::End(ended)).await;
}

/// Make a call on `pool`, handing what comes back to `events`, until it ends or `deadline`
/// passes. A unary call runs it inline, in the host call, with no task or channel in between.
pub(crate) async fn call(
    pool: &Pool,
    request: http::Request<GrpcBody>,
    deadline: Option<Instant>,
    bounds: Bounds,
    events: &mut impl Events,
) -> Result<Ended, CallError> {
    let exchange = exchange(pool, request, bounds, events);
    match deadline {
        Some(deadline) => match tokio::time::timeout_at(deadline, exchange).await {
            Ok(ended) => ended,
            Err(_) => Ok(Ended::with(code::DEADLINE_EXCEEDED, "deadline exceeded (timeout-ms)")),
        },
        None => exchange.await,
    }
}

async fn exchange(
    pool: &Pool,
    request: http::Request<GrpcBody>,
    bounds: Bounds,
    events: &mut impl Events,
) -> Result<Ended, CallError> {
    let response = pool.request(request).await.map_err(|err| match crate::http::own_listener_in(&err) {
        Some(own) => CallError::Denied(own),
        None => CallError::Network(format!("{err}{}", source_of(&err))),
    })?;
    let (parts, mut body) = response.into_parts();
    if let Some((code, message)) = wire::status_in(&parts.headers) {
        // Trailers-only: the status came in the headers and no message follows.
        return Ok(Ended { code, message, trailers: wire::from_headers(&parts.headers) });
    }
    if parts.status != http::StatusCode::OK {
        return Ok(Ended::with(wire::status_of_http(parts.status), format!("HTTP status {}", parts.status)));
    }
    events.headers(wire::from_headers(&parts.headers)).await;
    let mut deframer = Deframer::new(bounds.max, &bounds.budget);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|err| CallError::Network(format!("reading the response: {err}")))?;
        let frame = match frame.into_data() {
            Ok(data) => match deliver(&mut deframer, &data, events).await {
                Some(ended) => return Ok(ended),
                None => continue,
            },
            Err(frame) => frame,
        };
        if let Ok(trailers) = frame.into_trailers() {
            let (code, message) = match (wire::status_in(&trailers), deframer.partial()) {
                // Whatever status follows, the last message never came whole: the call failed.
                (_, Some(partial)) => (code::INTERNAL, wire::truncated(partial)),
                (Some(status), None) => status,
                (None, None) => (code::INTERNAL, "trailers without grpc-status".into()),
            };
            return Ok(Ended { code, message, trailers: wire::from_headers(&trailers) });
        }
    }
    let why = match deframer.partial() {
        Some(partial) => wire::truncated(partial),
        None => "the response ended without a status".to_owned(),
    };
    Ok(Ended::with(code::INTERNAL, why))
}

/// Hand on every whole message `data` completes; how the call ended when it cannot go on (the
/// plugin dropped it, a message is over the cap or compressed, or the byte budget is spent).
async fn deliver(deframer: &mut Deframer, data: &[u8], events: &mut impl Events) -> Option<Ended> {
    if let Err(over) = deframer.push(data) {
        tracing::debug!("a gRPC call failed: {over}");
        return Some(Ended::with(code::RESOURCE_EXHAUSTED, over.to_string()));
    }
    loop {
        match deframer.next_message() {
            Ok(Some(message)) => {
                if !events.message(message).await {
                    return Some(Ended::with(code::CANCELLED, "the plugin dropped the call"));
                }
            }
            Ok(None) => return None,
            Err(wire::DeframeError::TooLarge(len)) => {
                let why = format!("a {len}-byte message is over --max-response-body ({} bytes)", deframer.max());
                return Some(Ended::with(code::RESOURCE_EXHAUSTED, why));
            }
            Err(wire::DeframeError::Compressed) => {
                return Some(Ended::with(code::INTERNAL, "a compressed message, which the host did not ask for"));
            }
        }
    }
}

fn source_of(err: &dyn std::error::Error) -> String {
    err.source().map(|s| format!(": {s}{}", source_of(s))).unwrap_or_default()
}

/// A request body fed message by message from a channel; it ends when the sender is dropped.
pub(crate) struct ChannelBody(pub(crate) mpsc::Receiver<HeldBytes>);

impl http_body::Body for ChannelBody {
    type Data = HeldBytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<HeldBytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|next| next.map(|data| Ok(Frame::data(data))))
    }
}
