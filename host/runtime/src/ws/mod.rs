//! The `loadhost:plugin/websocket` import: WebSocket connections (RFC 6455) the host owns, on
//! tokio-tungstenite over the host's own TCP and TLS (the allow-list and the host's own ports are
//! judged before any connection). A connection lives in the instance's resource table, so it may
//! serve many tasks of its worker and goes with the instance when that is replaced.
//!
//! What a connection holds of what it reads (frames being read, messages kept for `receive`)
//! counts against the instance's byte budget (`frames`). A connection is opened on a task of its
//! own, off the instance's fiber (`open`).

mod frames;
mod open;

mod concurrent;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::{self, Message};
use wasmtime::component::Resource;

use self::frames::Counted;
use self::open::Opener;
use crate::bindings::loadhost::plugin::websocket as wit;
use crate::budget::{ByteBudget, Held, OverBudget};
use crate::ctx::DoerCtx;
use crate::http::WorkerHttp;
use crate::protocol_metrics as names;

/// A connection's socket: the host's counted TCP, TLS when `wss://`, and the frames read from it
/// counted against the instance's byte budget.
type Socket = Counted<hyper_util::rt::TokioIo<hyper_rustls::MaybeHttpsStream<crate::http::connector::CountedConn>>>;

/// How long a connect waits when the plugin gives no timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a close frame may take to go out, and how long the peer's answer is then awaited (on
/// the side) before the connection is dropped.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// How long `ping` waits for its pong when the plugin gives no timeout: a live peer answers in
/// milliseconds, and a task should not wait for its `--task-timeout` on one that never will.
const PING_TIMEOUT: Duration = Duration::from_secs(10);

/// One open (or closed, not yet dropped) WebSocket connection, as the instance's resource table
/// holds it.
pub struct WsConnection {
    /// `None` while a call has it: a call takes the session out of the table for as long as it
    /// waits (see [`DoerCtx::ws_lend`]), so that an async task's call holds no borrow of the
    /// store and many tasks' calls wait at once.
    session: Option<Session>,
}

/// What a connection is: its socket and what the instance's calls on it need, owned.
struct Session {
    /// `None` once the session has ended: only dropping is left.
    socket: Option<WebSocketStream<Socket>>,
    /// Messages that arrived while `ping` waited for its pong, each with what it holds of the
    /// instance's byte budget.
    pending: VecDeque<(wit::Message, Held)>,
    opened: Instant,
    pings: u64,
    /// Where its metrics go, and the instance's HTTP (the wire counters, the body cap).
    metrics: loadhost_engine::MetricsHandle,
    http_client: Arc<WorkerHttp>,
    byte_budget: ByteBudget,
}

impl Drop for Session {
    fn drop(&mut self) {
        // A connection still open when the plugin drops it, or when its instance goes at the end
        // of the run, ends its session here.
        if self.socket.take().is_some() {
            self.metrics.trend(names::WS_SESSION_DURATION.into(), ms(self.opened.elapsed()), Vec::new());
        }
    }
}

/// A session taken out of the table for one call, and whether it was open then.
struct Lent {
    session: Session,
    was_open: bool,
}

impl std::ops::Deref for Lent {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

impl std::ops::DerefMut for Lent {
    fn deref_mut(&mut self) -> &mut Session {
        &mut self.session
    }
}

type WsResult<T> = wasmtime::Result<Result<T, wit::Error>>;

/// A call on a connection another task's call has taken (only async tasks can get here).
fn in_use() -> wit::Error {
    wit::Error::Network("the connection is in use by another task's call: one call at a time per connection".into())
}

impl DoerCtx {
    /// Take a slot and what opening a connection needs, or say why not.
    fn ws_opener(&mut self) -> Result<Opener, wit::Error> {
        self.slots.take().map_err(wit::Error::TooManyConnections)?;
        Ok(Opener {
            http_client: self.http_client.clone(),
            metrics: self.metrics.clone(),
            byte_budget: self.byte_budget.clone(),
        })
    }

    /// What [`ws_open`] returned, as the plugin's new connection (or its slot back).
    fn ws_opened(
        &mut self,
        opened: Result<WebSocketStream<Socket>, wit::Error>,
        started: Instant,
    ) -> WsResult<Resource<WsConnection>> {
        self.http_client.drain_wire(&self.metrics);
        let socket = match opened {
            Ok(socket) => socket,
            Err(err) => {
                self.slots.give_back();
                return Ok(Err(err));
            }
        };
        self.metrics.trend(names::WS_CONNECTING.into(), ms(started.elapsed()), Vec::new());
        self.metrics.counter(names::WS_SESSIONS.into(), 1, Vec::new());
        let session = Session {
            socket: Some(socket),
            pending: VecDeque::new(),
            opened: Instant::now(),
            pings: 0,
            metrics: self.metrics.clone(),
            http_client: self.http_client.clone(),
            byte_budget: self.byte_budget.clone(),
        };
        Ok(Ok(self.table_mut().push(WsConnection { session: Some(session) })?))
    }

    /// Take `conn`'s session out of the table for a call.
    fn ws_lend(&mut self, conn: &Resource<WsConnection>) -> WsResult<Lent> {
        let Some(session) = self.table_mut().get_mut(conn)?.session.take() else { return Ok(Err(in_use())) };
        let was_open = session.socket.is_some();
        Ok(Ok(Lent { session, was_open }))
    }

    /// Put a lent session back; a session the call ended gives its slot back.
    fn ws_give_back(&mut self, conn: &Resource<WsConnection>, lent: Lent) -> wasmtime::Result<()> {
        if lent.was_open && lent.session.socket.is_none() {
            self.slots.give_back();
        }
        self.table_mut().get_mut(conn)?.session = Some(lent.session);
        Ok(())
    }

    /// The plugin dropped `conn`: an open session ends, and gives its slot back.
    fn ws_drop(&mut self, conn: Resource<WsConnection>) -> wasmtime::Result<()> {
        let conn = self.table_mut().delete(conn)?;
        // A session lost with a call cut short was open as far as the slots know.
        if conn.session.as_ref().is_none_or(|s| s.socket.is_some()) {
            // Its duration is recorded as it drops.
            self.slots.give_back();
        }
        Ok(())
    }
}

/// Open `url` with `opener`, within `timeout_ms` (default [`CONNECT_TIMEOUT`]).
async fn ws_open(
    opener: Opener,
    url: String,
    headers: Vec<(String, Vec<u8>)>,
    timeout_ms: Option<u32>,
) -> Result<WebSocketStream<Socket>, wit::Error> {
    let limit = timeout_ms.map_or(CONNECT_TIMEOUT, |ms| Duration::from_millis(u64::from(ms)));
    // The timeout's future is small here: the connection's own futures are polled by its task.
    match tokio::time::timeout(limit, opener.spawn(url.clone(), headers)).await {
        Ok(opened) => opened,
        Err(_) => Err(wit::Error::Network(format!("{url}: no connection within {limit:?}"))),
    }
}

/// Run `call` on `conn`'s session, lent for the call (see [`DoerCtx::ws_lend`]); a call that waits
/// for the peer says so (`under_way`) while it does.
macro_rules! lent {
    ($ctx:expr, $conn:expr, $waiting:expr, |$lent:ident| $call:expr) => {{
        let mut $lent = match $ctx.ws_lend(&$conn)? {
            Ok(lent) => lent,
            Err(err) => return Ok(Err(err)),
        };
        let waiting: Option<&str> = $waiting;
        let entered = waiting.map(|what| $ctx.under_way.enter(format_args!("{what}")));
        let result = $call.await;
        drop(entered);
        $ctx.ws_give_back(&$conn, $lent)?;
        Ok(result)
    }};
}

impl wit::Host for DoerCtx {}

impl wit::HostConnection for DoerCtx {
    async fn connect(
        &mut self,
        url: String,
        headers: Vec<(String, Vec<u8>)>,
        timeout_ms: Option<u32>,
    ) -> WsResult<Resource<WsConnection>> {
        let opener = match self.ws_opener() {
            Ok(opener) => opener,
            Err(err) => return Ok(Err(err)),
        };
        let started = Instant::now();
        let _entered = self.under_way.enter(format_args!("a WebSocket connection to {url}"));
        let opened = ws_open(opener, url, headers, timeout_ms).await;
        self.ws_opened(opened, started)
    }

    async fn send_text(&mut self, conn: Resource<WsConnection>, text: String) -> WsResult<()> {
        lent!(self, conn, None, |lent| lent.send(Message::text(text)))
    }

    async fn send_binary(&mut self, conn: Resource<WsConnection>, data: Vec<u8>) -> WsResult<()> {
        lent!(self, conn, None, |lent| lent.send(Message::binary(data)))
    }

    async fn receive(&mut self, conn: Resource<WsConnection>, timeout_ms: Option<u32>) -> WsResult<wit::Message> {
        lent!(self, conn, Some("a WebSocket message (receive)"), |lent| lent.receive(timeout_ms))
    }

    async fn ping(&mut self, conn: Resource<WsConnection>, timeout_ms: Option<u32>) -> WsResult<f64> {
        lent!(self, conn, Some("a WebSocket pong (ping)"), |lent| lent.ping(timeout_ms))
    }

    async fn close(&mut self, conn: Resource<WsConnection>, code: u16, reason: String) -> WsResult<()> {
        lent!(self, conn, None, |lent| lent.close(code, reason))
    }

    async fn drop(&mut self, conn: Resource<WsConnection>) -> wasmtime::Result<()> {
        self.ws_drop(conn)
    }
}

/// Wait briefly for the peer's close frame (tungstenite answers the handshake as it reads), letting
/// go of whatever data the peer still sends; then the connection goes, answered or not. Until
/// then, what it holds still counts against the instance's byte budget.
async fn closing(mut socket: WebSocketStream<Socket>) {
    let _ = tokio::time::timeout(CLOSE_WAIT, async {
        while let Some(Ok(message)) = socket.next().await {
            if message.is_text() || message.is_binary() {
                socket.get_mut().frames.handed_over();
            }
        }
    })
    .await;
}

/// What `ws_next` read: a message for the plugin (with what it holds of the byte budget), or a
/// ping's pong.
enum Next {
    Message(wit::Message, Held),
    Pong,
}

fn ms(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1000.0
}

/// The byte budget a read went past, when that is why it failed.
fn over_budget(err: &tungstenite::Error) -> Option<&OverBudget> {
    match err {
        tungstenite::Error::Io(io) => io.get_ref()?.downcast_ref::<OverBudget>(),
        _ => None,
    }
}

/// A failure as the plugin sees it: the connection closed, or a network error saying why (the
/// byte budget in its own words).
fn network(what: &str, err: &tungstenite::Error) -> wit::Error {
    match (err, over_budget(err)) {
        (tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed, _) => wit::Error::Closed,
        (_, Some(over)) => {
            tracing::debug!("a WebSocket connection failed: {over}");
            wit::Error::Network(format!("{what}: {over}"))
        }
        _ => wit::Error::Network(format!("{what}: {err}")),
    }
}

impl Session {
    /// Send a data message, counted in `ws_msgs_sent`.
    async fn send(&mut self, message: Message) -> Result<(), wit::Error> {
        self.send_raw(message).await?;
        self.metrics.counter(names::WS_MSGS_SENT.into(), 1, Vec::new());
        Ok(())
    }

    async fn send_raw(&mut self, message: Message) -> Result<(), wit::Error> {
        let max = self.http_client.max_body();
        if message.len() as u64 > max {
            return Err(wit::Error::TooLarge(max));
        }
        let Some(socket) = self.socket.as_mut() else { return Err(wit::Error::Closed) };
        let sent = socket.send(message).await;
        self.http_client.drain_wire(&self.metrics);
        sent.map_err(|err| self.failed("send", &err))
    }

    /// The next message, waiting at most `timeout_ms` (none: until one comes or the session ends).
    async fn receive(&mut self, timeout_ms: Option<u32>) -> Result<wit::Message, wit::Error> {
        if let Some((message, _held)) = self.pending.pop_front() {
            return Ok(message);
        }
        let deadline = timeout_ms.map(|ms| Instant::now() + Duration::from_millis(u64::from(ms)));
        loop {
            match self.next(deadline, None).await? {
                // What the message held goes as it is handed to the plugin.
                Next::Message(message, _held) => return Ok(message),
                // Only `ping` waits for a pong; without one asked for, none comes back.
                Next::Pong => {}
            }
        }
    }

    /// Send a ping and wait for its pong, at most `timeout_ms` (none: [`PING_TIMEOUT`]): the round
    /// trip in milliseconds, also recorded as `ws_ping`.
    async fn ping(&mut self, timeout_ms: Option<u32>) -> Result<f64, wit::Error> {
        self.pings += 1;
        let payload = self.pings.to_be_bytes().to_vec();
        let started = Instant::now();
        self.send_raw(Message::Ping(payload.clone().into())).await?;
        let limit = timeout_ms.map_or(PING_TIMEOUT, |ms| Duration::from_millis(u64::from(ms)));
        loop {
            match self.next(Some(started + limit), Some(&payload)).await? {
                Next::Pong => break,
                // Kept for `receive`, still counted: a peer that never answers fills the budget,
                // not the host.
                Next::Message(message, held) => self.pending.push_back((message, held)),
            }
        }
        let round_trip = ms(started.elapsed());
        self.metrics.trend(names::WS_PING.into(), round_trip, Vec::new());
        Ok(round_trip)
    }

    /// Start the close handshake; the peer's answer is awaited on the side.
    async fn close(&mut self, code: u16, reason: String) -> Result<(), wit::Error> {
        let Some(mut socket) = self.socket.take() else { return Err(wit::Error::Closed) };
        let frame = CloseFrame { code: code.into(), reason: reason.into() };
        // A peer that reads nothing could leave the frame unsent for ever.
        let sent = match tokio::time::timeout(CLOSE_WAIT, socket.send(Message::Close(Some(frame)))).await {
            Ok(sent) => sent.map_err(|err| network("close", &err)),
            Err(_) => Err(wit::Error::Network(format!("close: the peer took no close frame within {CLOSE_WAIT:?}"))),
        };
        self.http_client.drain_wire(&self.metrics);
        self.ended();
        if sent.is_ok() {
            // The peer's answer is awaited on the side, so a plugin closing many connections waits
            // for none of them, and they all end within `CLOSE_WAIT`.
            tokio::spawn(closing(socket));
        }
        sent
    }

    /// The next data message, or the pong whose payload is `pong`, before `deadline`.
    async fn next(&mut self, deadline: Option<Instant>, pong: Option<&[u8]>) -> Result<Next, wit::Error> {
        loop {
            let Some(socket) = self.socket.as_mut() else { return Err(wit::Error::Closed) };
            let read = match deadline {
                Some(deadline) => match tokio::time::timeout_at(deadline, socket.next()).await {
                    Ok(read) => read,
                    Err(_) => return Err(wit::Error::Timeout),
                },
                None => socket.next().await,
            };
            self.http_client.drain_wire(&self.metrics);
            let message = match read {
                Some(Ok(message)) => message,
                Some(Err(err)) => return Err(self.failed("receive", &err)),
                None => return Err(self.failed("receive", &tungstenite::Error::ConnectionClosed)),
            };
            let held = match message {
                Message::Text(_) | Message::Binary(_) => self.handed_over(),
                _ => self.byte_budget.none(),
            };
            let data = match message {
                Message::Text(text) => wit::Message::Text(text.as_str().to_owned()),
                Message::Binary(data) => wit::Message::Binary(data.to_vec()),
                Message::Close(frame) => {
                    let (code, reason) = frame.map_or((1005, String::new()), |f| (f.code.into(), f.reason.to_string()));
                    if let Some(mut socket) = self.socket.take() {
                        // Answering the close handshake is tungstenite's, on the next flush.
                        let _ = tokio::time::timeout(CLOSE_WAIT, socket.flush()).await;
                    }
                    self.ended();
                    return Ok(Next::Message(wit::Message::Close(wit::CloseFrame { code, reason }), held));
                }
                Message::Pong(payload) if pong.is_some_and(|p| p == payload.as_ref()) => return Ok(Next::Pong),
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
            };
            self.metrics.counter(names::WS_MSGS_RECEIVED.into(), 1, Vec::new());
            return Ok(Next::Message(data, held));
        }
    }

    /// What the data message the socket just handed over holds of the byte budget.
    fn handed_over(&mut self) -> Held {
        match self.socket.as_mut() {
            Some(socket) => socket.get_mut().frames.handed_over(),
            None => self.byte_budget.none(),
        }
    }

    /// A failed send or receive ends the session: the connection is unusable.
    fn failed(&mut self, what: &str, err: &tungstenite::Error) -> wit::Error {
        let error = match err {
            tungstenite::Error::Capacity(_) => wit::Error::TooLarge(self.http_client.max_body()),
            _ => network(what, err),
        };
        if self.socket.take().is_some() {
            self.ended();
        }
        error
    }

    /// The session ended (closed or failed): its duration. (Its slot goes back as the call
    /// returns it: see [`DoerCtx::ws_give_back`].)
    fn ended(&mut self) {
        self.metrics.trend(names::WS_SESSION_DURATION.into(), ms(self.opened.elapsed()), Vec::new());
    }
}
