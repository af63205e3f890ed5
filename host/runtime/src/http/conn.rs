//! A worker's own connections for the one-call `loadhost:plugin/http` path.
//!
//! hyper's connection-level client (`hyper::client::conn`), with each HTTP/1.1 connection driven
//! inside the call that sends on it: a request is then one task's work, with no pool shared between
//! tasks and no connection task to wake (a pooled client runs every connection as a task of its
//! own, so each request costs at least two task switches and, on a multi-threaded runtime, wake-ups
//! across threads). HTTP/2 (ALPN on https, or `--h2c`) multiplexes, so its connection runs as a
//! task on the worker's own event loop.
//!
//! Each worker keeps its own HTTP/1.1 connections (one per target, as a wrk connection or a k6 VU
//! does). HTTP/2 sessions are shared by the workers of one event loop, per target. A host under
//! `--max-connections-per-host` is the exception: its connections are the run's, handed from one
//! request to the next (whichever event loop sends it), so no more than the cap of them are open.
//!
//! A kept-alive connection the server closed meanwhile is replaced, and the request sent again,
//! only when hyper says it was not sent; anything else is the request's error.

use std::sync::{Arc, Mutex, MutexGuard};

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::client::conn::{TrySendError, http1, http2};
use hyper_util::client::legacy::connect::Connection as _;
use hyper_util::rt::TokioExecutor;
use loadhost_metrics::phases::ConnectTimes;
use tower_service::Service as _;

use super::WorkerHttp;
use super::connect_failure::ConnectFailure;
use super::connector::CountedConn;
use super::decode::{DecodeError, Decoder, Encoding};

type Io = hyper_rustls::MaybeHttpsStream<CountedConn>;
type RequestBody = Full<Bytes>;

/// Where a request goes: one connection (or HTTP/2 session) per target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) https: bool,
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl Target {
    fn uri(&self) -> Result<http::Uri, String> {
        let scheme = if self.https { "https" } else { "http" };
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        format!("{scheme}://{host}:{}/", self.port).parse().map_err(|err| format!("{err}"))
    }
}

enum Conn {
    H1 { send: http1::SendRequest<RequestBody>, driver: Pin<Box<http1::Connection<Io, RequestBody>>> },
    H2 { send: http2::SendRequest<RequestBody> },
}

/// Why an exchange got no response.
pub(crate) enum ExchangeError {
    /// The destination is refused: it is one of the host's own listeners.
    Denied(String),
    /// Connecting, sending or receiving failed.
    Failed(String),
}

impl From<String> for ExchangeError {
    fn from(why: String) -> Self {
        ExchangeError::Failed(why)
    }
}

/// The instants of an exchange that got a response (see `loadhost_metrics::phases`): the rest
/// of a request's clock, which the caller started and ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamps {
    /// What opening the connection took, when this request opened one.
    pub(crate) connect: Option<ConnectTimes>,
    /// A connection was ready for the request.
    pub(crate) ready: Instant,
    /// The request was written (see `exchange_h1` and `exchange_h2`).
    pub(crate) sent: Instant,
    /// The response head came.
    pub(crate) head: Instant,
}

/// How one attempt on a connection failed.
enum Failed {
    /// The request never left: the connection was closed first. Safe to send again.
    NotSent(Box<http::Request<RequestBody>>),
    /// Anything else.
    Error(String),
    /// The request went out (or may have) and no response head came back: the connection closed
    /// or broke first.
    NoResponse(String),
}

/// The most targets one worker (or event loop, for HTTP/2) keeps a connection to; past it the
/// oldest is closed.
const MAX_TARGETS: usize = 16;

/// Event-loop slots for HTTP/2 sessions (a loop's index is taken modulo this).
const LOOP_SLOTS: usize = 64;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Connections the workers of one run share: per event loop, what each target speaks (and its
/// HTTP/2 session); and the idle connections to hosts under a per-host cap.
pub(crate) struct RunConnections {
    loops: Box<[LoopConnections]>,
    capped: Mutex<Vec<(Target, Conn)>>,
}

#[derive(Default)]
struct LoopConnections {
    /// Targets whose protocol is known, and the HTTP/2 session when it is HTTP/2.
    known: Mutex<Vec<(Target, Option<http2::SendRequest<RequestBody>>)>>,
    /// Held while a first connection to a target whose protocol is unknown is made, so the
    /// workers of a loop open one HTTP/2 session, not one each.
    first: tokio::sync::Mutex<()>,
}

impl LoopConnections {
    /// What `target` is known to speak: `None` unknown, `Some(None)` HTTP/1.1, else its session.
    fn known(&self, target: &Target) -> Option<Option<http2::SendRequest<RequestBody>>> {
        let mut known = lock(&self.known);
        known.retain(|(_, session)| session.as_ref().is_none_or(|s| !s.is_closed()));
        known.iter().find(|(t, _)| t == target).map(|(_, session)| session.clone())
    }

    fn learn(&self, target: &Target, conn: &Conn) {
        let mut known = lock(&self.known);
        if known.iter().any(|(t, _)| t == target) {
            return;
        }
        if known.len() >= MAX_TARGETS {
            known.remove(0);
        }
        let session = match conn {
            Conn::H2 { send } => Some(send.clone()),
            Conn::H1 { .. } => None,
        };
        known.push((target.clone(), session));
    }
}

impl RunConnections {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            loops: (0..LOOP_SLOTS).map(|_| LoopConnections::default()).collect(),
            capped: Mutex::default(),
        })
    }
}

/// One worker's connections, at most one per target, kept alive between tasks.
pub(crate) struct Connections {
    open: Vec<(Target, Conn)>,
    run: Arc<RunConnections>,
    event_loop: usize,
    /// What the running task waited at the gate, until its first request takes it as blocked time.
    queued: Duration,
}

impl Connections {
    /// The connections of a worker on `event_loop`, in run `run`.
    pub(crate) fn new(run: Arc<RunConnections>, event_loop: u32) -> Self {
        Self { open: Vec::new(), run, event_loop: event_loop as usize % LOOP_SLOTS, queued: Duration::ZERO }
    }

    /// All of them, to be driven off the fiber (see `off_fiber`); none are left here until they
    /// are put back.
    pub(crate) fn lend(&mut self) -> Self {
        let empty = self.none_yet();
        std::mem::replace(self, empty)
    }

    /// Another set of the same worker's (or shared instance's), with no connection yet.
    pub(crate) fn none_yet(&self) -> Self {
        Self { open: Vec::new(), run: self.run.clone(), event_loop: self.event_loop, queued: Duration::ZERO }
    }

    /// A task starts after waiting `gate` at the gate (`--max-in-flight`): its first request counts
    /// that wait as blocked, as a request waiting for a connection would.
    pub(crate) fn task_started(&mut self, gate: Duration) {
        self.queued = gate;
    }

    /// The gate wait not yet counted (zero once a request took it).
    pub(crate) fn take_queued(&mut self) -> Duration {
        std::mem::take(&mut self.queued)
    }

    /// Send `request` (absolute URI) to `target` and read the whole response, with the instants
    /// its phases are made of. `capped`: the target is under a per-host cap and the caller holds
    /// one of its slots, so the connection is the run's (taken from its idle ones, or opened) and
    /// goes back to them before the slot is released.
    pub(crate) async fn exchange(
        &mut self,
        http: &WorkerHttp,
        target: &Target,
        capped: bool,
        mut request: http::Request<RequestBody>,
        decompress: bool,
    ) -> Result<(http::response::Parts, Bytes, Stamps), ExchangeError> {
        let mut fresh = false;
        let mut opened = None;
        loop {
            // A forward proxy may close a kept-alive connection without saying so (tinyproxy
            // does): an idempotent request that got no response on a reused one is sent again on
            // a fresh one, as browsers do (RFC 9110 9.2.2). Only then is the request copied.
            let mut resend = None;
            let conn = match self.take(target, capped) {
                Some(conn) => conn,
                None => {
                    fresh = true;
                    // Boxed: connecting (TLS, an HTTP/2 handshake) is a large future that would
                    // otherwise size, and be copied with, every request's future.
                    let (conn, times) = Box::pin(self.connect(http, target)).await?;
                    opened = times.or(opened);
                    conn
                }
            };
            let ready = Instant::now();
            if !fresh && request.method().is_idempotent() && http.shared.net.forwarded(request.uri()) {
                resend = Some(copy(&request));
            }
            let exchanged = match conn {
                Conn::H1 { send, driver } => exchange_h1(http, send, driver, request, decompress).await,
                Conn::H2 { send } => Box::pin(exchange_h2(http, send, request, decompress)).await,
            };
            match exchanged {
                Ok((parts, body, conn, (sent, head))) => {
                    if let Some(conn) = conn {
                        self.keep(target.clone(), conn, capped);
                    }
                    return Ok((parts, body, Stamps { connect: opened, ready, sent, head }));
                }
                Err(Failed::NotSent(again)) if !fresh => request = *again,
                Err(Failed::NotSent(_)) => {
                    return Err(ExchangeError::Failed("connection closed before the request was sent".into()));
                }
                Err(Failed::NoResponse(why)) => match resend {
                    Some(again) => request = again,
                    None => return Err(ExchangeError::Failed(why)),
                },
                Err(Failed::Error(why)) => return Err(ExchangeError::Failed(why)),
            }
        }
    }

    fn loop_connections(&self) -> &LoopConnections {
        &self.run.loops[self.event_loop]
    }

    /// A connection to `target`: the event loop's HTTP/2 session, or an HTTP/1.1 connection (the
    /// worker's own, or the run's under a cap).
    fn take(&mut self, target: &Target, capped: bool) -> Option<Conn> {
        if let Some(Some(send)) = self.loop_connections().known(target) {
            return Some(Conn::H2 { send });
        }
        if capped {
            let mut idle = lock(&self.run.capped);
            let at = idle.iter().position(|(t, _)| t == target)?;
            return Some(idle.swap_remove(at).1);
        }
        let at = self.open.iter().position(|(t, _)| t == target)?;
        Some(self.open.swap_remove(at).1)
    }

    /// A new connection to `target`, and what opening it took (`None`: another worker's HTTP/2
    /// session). The first one of an event loop to a target learns what it speaks; until then the
    /// loop's workers wait for it, and an HTTP/2 session it opens serves them all.
    async fn connect(&self, http: &WorkerHttp, target: &Target) -> Result<(Conn, Option<ConnectTimes>), ExchangeError> {
        let shared = self.loop_connections();
        if shared.known(target).is_some() {
            return connect(http, target).await.map(|(conn, times)| (conn, Some(times)));
        }
        let _first = shared.first.lock().await;
        match shared.known(target) {
            Some(Some(send)) => Ok((Conn::H2 { send }, None)),
            _ => {
                let (conn, times) = connect(http, target).await?;
                shared.learn(target, &conn);
                Ok((conn, Some(times)))
            }
        }
    }

    fn keep(&mut self, target: Target, conn: Conn, capped: bool) {
        match conn {
            // Its session is already shared by the event loop.
            Conn::H2 { .. } => {}
            conn if capped => lock(&self.run.capped).push((target, conn)),
            conn => {
                if self.open.len() >= MAX_TARGETS {
                    self.open.remove(0);
                }
                self.open.push((target, conn));
            }
        }
    }
}

/// Open a connection to `target` (TLS and ALPN through the worker's connector), and what its TCP
/// connect and TLS handshake took (an HTTP/2 handshake after them is not timed apart: it counts as
/// blocked).
async fn connect(http: &WorkerHttp, target: &Target) -> Result<(Conn, ConnectTimes), ExchangeError> {
    let uri = target.uri()?;
    let io = http.connector.clone().call(uri).await.map_err(|err| connect_error(err.as_ref()))?;
    let times = connect_times(&io, Instant::now());
    Ok((handshake(http, io).await?, times))
}

/// What the connection `io`, done at `done`, took to open: TCP connect, then TLS (to `done`).
fn connect_times(io: &Io, done: Instant) -> ConnectTimes {
    let (tcp, tls) = match io {
        Io::Http(tcp) => (tcp, false),
        Io::Https(tls) => (tls.inner().get_ref().0.inner(), true),
    };
    let (dialed, connected) = tcp.connect_instants();
    ConnectTimes {
        connecting: connected.saturating_duration_since(dialed),
        tls: tls.then(|| done.saturating_duration_since(connected)),
    }
}

/// HTTP/2 (ALPN or `--h2c`) or HTTP/1.1 over a connection just opened.
async fn handshake(http: &WorkerHttp, io: Io) -> Result<Conn, ExchangeError> {
    if http.shared.h2c || io.connected().is_negotiated_h2() {
        let (send, connection) =
            http2::handshake(TokioExecutor::new(), io).await.map_err(|err| format!("HTTP/2 handshake: {err}"))?;
        // HTTP/2 multiplexes: its connection runs on the worker's own event loop.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        return Ok(Conn::H2 { send });
    }
    let (send, driver) = http1::handshake(io).await.map_err(|err| format!("HTTP/1.1 handshake: {err}"))?;
    Ok(Conn::H1 { send, driver: Box::pin(driver) })
}

/// A response, whole, the connection when it can carry another, and when the request was sent
/// and the response head came.
type Exchanged = Result<(http::response::Parts, Bytes, Option<Conn>, (Instant, Instant)), Failed>;

/// One request on an HTTP/1.1 connection, driving it; it comes back when it can carry another.
async fn exchange_h1(
    http: &WorkerHttp,
    mut send: http1::SendRequest<RequestBody>,
    mut driver: Pin<Box<http1::Connection<Io, RequestBody>>>,
    request: http::Request<RequestBody>,
    decompress: bool,
) -> Exchanged {
    let request = http1_form(http, request);
    if !matches!(drive(driver.as_mut(), pin!(send.ready()), None).await, Some(Ok(()))) {
        return Err(Failed::NotSent(Box::new(request)));
    }
    let mut sending = pin!(send.try_send_request(request));
    // The connection writes the request the first time it is driven (all of it, unless the socket
    // takes less at once): that instant ends `http_req_sending`.
    let mut sent = None;
    let response = match drive(driver.as_mut(), sending.as_mut(), Some(&mut sent)).await {
        Some(response) => response.map_err(not_sent)?,
        None => {
            // The connection ended (the server closed it while idle) before taking the request:
            // dropping it hands the request back, to be sent on a fresh one.
            drop(driver);
            return Err(sending.await.map_or_else(not_sent, |_| Failed::NoResponse(CLOSED.to_owned())));
        }
    };
    let head = Instant::now();
    let (mut parts, body) = response.into_parts();
    let decoding = decoding(&mut parts, decompress);
    let body = drive(driver.as_mut(), pin!(read(body, http, decoding)), None)
        .await
        .unwrap_or_else(|| Err(Failed::Error(CLOSED.to_owned())))?;
    let reusable = !send.is_closed();
    Ok((parts, body, reusable.then_some(Conn::H1 { send, driver }), (sent.unwrap_or(head), head)))
}

/// One request on the event loop's HTTP/2 session.
async fn exchange_h2(
    http: &WorkerHttp,
    mut send: http2::SendRequest<RequestBody>,
    request: http::Request<RequestBody>,
    decompress: bool,
) -> Exchanged {
    if send.ready().await.is_err() {
        return Err(Failed::NotSent(Box::new(request)));
    }
    // The session's own task writes the stream: sending ends when the session takes it.
    let responding = send.try_send_request(request);
    let sent = Instant::now();
    let response = responding.await.map_err(not_sent)?;
    let head = Instant::now();
    let (mut parts, body) = response.into_parts();
    let decoding = decoding(&mut parts, decompress);
    let body = read(body, http, decoding).await?;
    let reusable = !send.is_closed();
    Ok((parts, body, reusable.then_some(Conn::H2 { send }), (sent, head)))
}

/// The request as HTTP/1.1 sends it: to a forward proxy in absolute form (the whole URL, without
/// any userinfo) with the proxy's credentials, else in origin form; a `Host` header either way.
fn http1_form(http: &WorkerHttp, request: http::Request<RequestBody>) -> http::Request<RequestBody> {
    let mut request = with_host(request);
    if http.shared.net.forwarded(request.uri()) {
        http.shared.net.authorize(&mut request);
        // The URL's host, which the allow-list judged, never a `Host` header the plugin set.
        let uri = request.uri();
        let host = uri.authority().map_or("", |a| a.as_str().rsplit_once('@').map_or(a.as_str(), |(_, h)| h));
        let path = uri.path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
        if let Ok(absolute) = format!("{}://{host}{path}", uri.scheme_str().unwrap_or("http")).parse() {
            *request.uri_mut() = absolute;
        }
        return request;
    }
    if request.uri().scheme().is_some() {
        let path = request.uri().path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
        if let Ok(origin) = path.parse() {
            *request.uri_mut() = origin;
        }
    }
    request
}

/// HTTP/1.1 names the host in a `Host` header (the URL's, without userinfo) unless the request has
/// one.
fn with_host(mut request: http::Request<RequestBody>) -> http::Request<RequestBody> {
    if let Some(authority) = request.uri().authority()
        && !request.headers().contains_key(http::header::HOST)
    {
        let host = authority.as_str().rsplit_once('@').map_or(authority.as_str(), |(_, host)| host);
        if let Ok(value) = http::HeaderValue::from_str(host) {
            request.headers_mut().insert(http::header::HOST, value);
        }
    }
    request
}

/// With `decompress`, the encoding of a body the host decodes; its response then loses the
/// `content-encoding` and `content-length` that no longer describe what the plugin gets.
fn decoding(parts: &mut http::response::Parts, decompress: bool) -> Option<Encoding> {
    if !decompress {
        return None;
    }
    let encoding = Encoding::from_header(parts.headers.get(http::header::CONTENT_ENCODING)?)?;
    parts.headers.remove(http::header::CONTENT_ENCODING);
    parts.headers.remove(http::header::CONTENT_LENGTH);
    Some(encoding)
}

/// Read and decode a whole body: the cap and the byte budget apply to the decoded bytes, and the
/// wire bytes are never held whole (each frame is decoded as it comes).
async fn read_decoded(mut body: Incoming, http: &WorkerHttp, encoding: Encoding) -> Result<Bytes, Failed> {
    let limit = usize::try_from(http.shared.max_body).unwrap_or(usize::MAX);
    let mut decoder = Decoder::new(encoding, limit, http.budget.none());
    let announced = http_body::Body::size_hint(&body).exact();
    let mut read = 0;
    let failed = |err: DecodeError| match err {
        DecodeError::TooLarge => Failed::Error(http.shared.body_too_large()),
        DecodeError::OverBudget(over) => Failed::Error(over.to_string()),
        DecodeError::Invalid(why) => Failed::Error(format!("decoding the response body: {why}")),
    };
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|err| body_error(&err, read, announced))?;
        if let Ok(data) = frame.into_data() {
            read += data.len();
            decoder.push(&data).map_err(failed)?;
        }
    }
    decoder.finish().map_err(failed)
}

/// Read a whole body, but never more than `http`'s `--max-response-body`, nor past the instance's
/// byte budget: past either the request fails and what was read is let go, so a huge body costs
/// the host at most the cap. What is read counts against the budget until the whole body has come.
async fn read(mut body: Incoming, http: &WorkerHttp, decoding: Option<Encoding>) -> Result<Bytes, Failed> {
    if let Some(encoding) = decoding {
        return Box::pin(read_decoded(body, http, encoding)).await;
    }
    let limit = usize::try_from(http.shared.max_body).unwrap_or(usize::MAX);
    // A body that says it is too large fails before any of it is read.
    if usize::try_from(http_body::Body::size_hint(&body).lower()).unwrap_or(usize::MAX) > limit {
        return Err(Failed::Error(http.shared.body_too_large()));
    }
    let mut whole: Vec<u8> = Vec::new();
    let mut only: Option<Bytes> = None;
    let mut held = http.budget.none();
    let announced = http_body::Body::size_hint(&body).exact();
    while let Some(frame) = body.frame().await {
        let so_far = whole.len() + only.as_ref().map_or(0, Bytes::len);
        let frame = frame.map_err(|err| body_error(&err, so_far, announced))?;
        let Ok(data) = frame.into_data() else { continue };
        let read = so_far + data.len();
        if read > limit {
            return Err(Failed::Error(http.shared.body_too_large()));
        }
        held.grow(data.len()).map_err(|over| Failed::Error(over.to_string()))?;
        // One frame (the usual small response) is kept as it came; more are joined, growing the
        // buffer by doubling but never past the cap.
        match only.take() {
            None if whole.is_empty() => only = Some(data),
            first => {
                if read > whole.capacity() {
                    let want = whole.capacity().saturating_mul(2).max(read).min(limit);
                    whole.reserve_exact(want - whole.len());
                }
                whole.extend_from_slice(&first.unwrap_or_default());
                whole.extend_from_slice(&data);
            }
        }
    }
    Ok(only.unwrap_or_else(|| Bytes::from(whole)))
}

fn not_sent(mut err: TrySendError<http::Request<RequestBody>>) -> Failed {
    match err.take_message() {
        Some(request) => Failed::NotSent(Box::new(request)),
        // The response head never came: whatever broke, there is no response.
        None => Failed::NoResponse(hyper_error(err.error())),
    }
}

/// Poll `work` while also driving the HTTP/1.1 connection it needs. Should the connection end
/// first, `work` is polled once more; `None` if it still cannot finish (a request queued on a
/// connection that ended is handed back only once the connection is dropped: see `exchange_h1`).
/// `driven`, when given, is set to the instant the connection was first driven.
async fn drive<W: Future>(
    mut driver: Pin<&mut http1::Connection<Io, RequestBody>>,
    mut work: Pin<&mut W>,
    mut driven: Option<&mut Option<Instant>>,
) -> Option<W::Output> {
    let mut ended = false;
    poll_fn(|cx| {
        if let Poll::Ready(out) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        let done = !ended && driver.as_mut().poll(cx).is_ready();
        if let Some(at) = driven.as_deref_mut().filter(|at| at.is_none()) {
            *at = Some(Instant::now());
        }
        if done {
            ended = true;
            return Poll::Ready(match work.as_mut().poll(cx) {
                Poll::Ready(out) => Some(out),
                Poll::Pending => None,
            });
        }
        Poll::Pending
    })
    .await
}

/// A copy of a request, to send again.
fn copy(request: &http::Request<RequestBody>) -> http::Request<RequestBody> {
    let mut again = http::Request::new(request.body().clone());
    *again.method_mut() = request.method().clone();
    *again.uri_mut() = request.uri().clone();
    *again.version_mut() = request.version();
    *again.headers_mut() = request.headers().clone();
    again
}

/// A connection error as the plugin sees it, in the stable short words of docs/http.md (those of
/// [`ConnectFailure`], "tls: …", "connect failed: …"), and a refusal when the destination is one
/// of the host's own listeners.
fn connect_error(err: &(dyn std::error::Error + 'static)) -> ExchangeError {
    let mut source = Some(err);
    while let Some(cause) = source {
        if let Some(own) = cause.downcast_ref::<super::connector::OwnListener>() {
            return ExchangeError::Denied(own.to_string());
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if let Some(own) = io.get_ref().and_then(|inner| inner.downcast_ref::<super::connector::OwnListener>()) {
                return ExchangeError::Denied(own.to_string());
            }
            if let Some(proxy) = io.get_ref().and_then(|inner| inner.downcast_ref::<super::connector::ProxyFailed>()) {
                return ExchangeError::Failed(proxy.to_string());
            }
            if let Some(tls) = io.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
                return ExchangeError::Failed(format!("tls: {tls}"));
            }
            return ExchangeError::Failed(match ConnectFailure::of(io.kind()) {
                Some(failure) => failure.words().to_owned(),
                None => format!("connect failed: {io}"),
            });
        }
        source = cause.source();
    }
    ExchangeError::Failed(format!("connect failed: {err}"))
}

/// What a plugin is told when the connection closed before the whole response came.
const CLOSED: &str = "response incomplete: the connection closed";

/// A body that broke off after `read` of its (`announced`) bytes, in the words of docs/http.md:
/// one the connection ended before its end is `response incomplete`, anything else a
/// `protocol error`.
fn body_error(err: &hyper::Error, read: usize, announced: Option<u64>) -> Failed {
    if super::cut_short(err) {
        let of = announced.map_or(String::new(), |len| format!(" of {len}"));
        return Failed::Error(format!("{CLOSED} after {read}{of} bytes of the body"));
    }
    let cause = std::error::Error::source(err).map_or(String::new(), |cause| format!(": {cause}"));
    Failed::Error(format!("protocol error: reading the response body: {err}{cause}"))
}

fn hyper_error(err: &hyper::Error) -> String {
    if err.is_incomplete_message() || err.is_closed() || err.is_canceled() {
        CLOSED.to_owned()
    } else {
        format!("protocol error: {err}")
    }
}
