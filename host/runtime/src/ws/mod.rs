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

use std::collections::VecDeque;
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
use crate::budget::{Held, OverBudget};
use crate::ctx::DoerCtx;
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

/// One open (or closed, not yet dropped) WebSocket connection.
pub struct WsConnection {
    /// `None` once the session has ended: only dropping is left.
    socket: Option<WebSocketStream<Socket>>,
    /// Messages that arrived while `ping` waited for its pong, each with what it holds of the
    /// instance's byte budget.
    pending: VecDeque<(wit::Message, Held)>,
    opened: Instant,
    pings: u64,
    /// Where the session's duration goes when it ends unclosed (dropped, or the instance gone).
    metrics: loadhost_engine::MetricsHandle,
}

impl Drop for WsConnection {
    fn drop(&mut self) {
        // A connection still open when the plugin drops it, or when its instance goes at the end
        // of the run, ends its session here.
        if self.socket.take().is_some() {
            self.metrics.trend(names::WS_SESSION_DURATION.into(), ms(self.opened.elapsed()), Vec::new());
        }
    }
}

type WsResult<T> = wasmtime::Result<Result<T, wit::Error>>;

impl wit::Host for DoerCtx {}

impl wit::HostConnection for DoerCtx {
    async fn connect(
        &mut self,
        url: String,
        headers: Vec<(String, Vec<u8>)>,
        timeout_ms: Option<u32>,
    ) -> WsResult<Resource<WsConnection>> {
        if let Err(open) = self.slots.take() {
            return Ok(Err(wit::Error::TooManyConnections(open)));
        }
        let limit = timeout_ms.map_or(CONNECT_TIMEOUT, |ms| Duration::from_millis(u64::from(ms)));
        let started = Instant::now();
        let _entered = self.under_way.enter(format_args!("a WebSocket connection to {url}"));
        let opener = Opener {
            http_client: self.http_client.clone(),
            metrics: self.metrics.clone(),
            byte_budget: self.byte_budget.clone(),
        };
        // The timeout's future is small here: the connection's own futures are polled by its task.
        let opened = match tokio::time::timeout(limit, opener.spawn(url.clone(), headers)).await {
            Ok(opened) => opened,
            Err(_) => Err(wit::Error::Network(format!("{url}: no connection within {limit:?}"))),
        };
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
        let conn = WsConnection {
            socket: Some(socket),
            pending: VecDeque::new(),
            opened: Instant::now(),
            pings: 0,
            metrics: self.metrics.clone(),
        };
        Ok(Ok(self.table_mut().push(conn)?))
    }

    async fn send_text(&mut self, conn: Resource<WsConnection>, text: String) -> WsResult<()> {
        self.ws_send(&conn, Message::text(text)).await
    }

    async fn send_binary(&mut self, conn: Resource<WsConnection>, data: Vec<u8>) -> WsResult<()> {
        self.ws_send(&conn, Message::binary(data)).await
    }

    async fn receive(&mut self, conn: Resource<WsConnection>, timeout_ms: Option<u32>) -> WsResult<wit::Message> {
        if let Some((message, _held)) = self.table_mut().get_mut(&conn)?.pending.pop_front() {
            return Ok(Ok(message));
        }
        let deadline = timeout_ms.map(|ms| Instant::now() + Duration::from_millis(u64::from(ms)));
        let _entered = self.under_way.enter(format_args!("a WebSocket message (receive)"));
        loop {
            match self.ws_next(&conn, deadline, None).await? {
                // What the message held goes as it is handed to the plugin.
                Ok(Next::Message(message, _held)) => return Ok(Ok(message)),
                // Only `ping` waits for a pong; without one asked for, none comes back.
                Ok(Next::Pong) => {}
                Err(err) => return Ok(Err(err)),
            }
        }
    }

    async fn ping(&mut self, conn: Resource<WsConnection>, timeout_ms: Option<u32>) -> WsResult<f64> {
        let payload = {
            let c = self.table_mut().get_mut(&conn)?;
            c.pings += 1;
            c.pings.to_be_bytes().to_vec()
        };
        let started = Instant::now();
        if let Err(err) = self.ws_send_raw(&conn, Message::Ping(payload.clone().into())).await? {
            return Ok(Err(err));
        }
        let limit = timeout_ms.map_or(PING_TIMEOUT, |ms| Duration::from_millis(u64::from(ms)));
        let _entered = self.under_way.enter(format_args!("a WebSocket pong (ping)"));
        loop {
            match self.ws_next(&conn, Some(started + limit), Some(&payload)).await? {
                Ok(Next::Pong) => break,
                // Kept for `receive`, still counted: a peer that never answers fills the budget,
                // not the host.
                Ok(Next::Message(message, held)) => {
                    self.table_mut().get_mut(&conn)?.pending.push_back((message, held));
                }
                Err(err) => return Ok(Err(err)),
            }
        }
        let round_trip = ms(started.elapsed());
        self.metrics.trend(names::WS_PING.into(), round_trip, Vec::new());
        Ok(Ok(round_trip))
    }

    async fn close(&mut self, conn: Resource<WsConnection>, code: u16, reason: String) -> WsResult<()> {
        let Some(mut socket) = self.table_mut().get_mut(&conn)?.socket.take() else {
            return Ok(Err(wit::Error::Closed));
        };
        let frame = CloseFrame { code: code.into(), reason: reason.into() };
        // A peer that reads nothing could leave the frame unsent for ever.
        let sent = match tokio::time::timeout(CLOSE_WAIT, socket.send(Message::Close(Some(frame)))).await {
            Ok(sent) => sent.map_err(|err| network("close", &err)),
            Err(_) => Err(wit::Error::Network(format!("close: the peer took no close frame within {CLOSE_WAIT:?}"))),
        };
        self.http_client.drain_wire(&self.metrics);
        let opened = self.table_mut().get(&conn)?.opened;
        self.ws_ended(opened);
        if sent.is_ok() {
            // The peer's answer is awaited on the side, so a plugin closing many connections waits
            // for none of them, and they all end within `CLOSE_WAIT`.
            tokio::spawn(closing(socket));
        }
        Ok(sent)
    }

    async fn drop(&mut self, conn: Resource<WsConnection>) -> wasmtime::Result<()> {
        let conn = self.table_mut().delete(conn)?;
        if conn.socket.is_some() {
            // Its duration is recorded as it drops.
            self.slots.give_back();
        }
        Ok(())
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

impl DoerCtx {
    /// Send a data message, counted in `ws_msgs_sent`.
    async fn ws_send(&mut self, conn: &Resource<WsConnection>, message: Message) -> WsResult<()> {
        let sent = self.ws_send_raw(conn, message).await?;
        if sent.is_ok() {
            self.metrics.counter(names::WS_MSGS_SENT.into(), 1, Vec::new());
        }
        Ok(sent)
    }

    async fn ws_send_raw(&mut self, conn: &Resource<WsConnection>, message: Message) -> WsResult<()> {
        let max = self.http_client.max_body();
        if message.len() as u64 > max {
            return Ok(Err(wit::Error::TooLarge(max)));
        }
        let Some(socket) = self.table_mut().get_mut(conn)?.socket.as_mut() else {
            return Ok(Err(wit::Error::Closed));
        };
        let sent = socket.send(message).await;
        self.http_client.drain_wire(&self.metrics);
        match sent {
            Ok(()) => Ok(Ok(())),
            Err(err) => Ok(Err(self.ws_failed(conn, "send", &err)?)),
        }
    }

    /// The next data message, or the pong whose payload is `pong`, before `deadline`.
    async fn ws_next(
        &mut self,
        conn: &Resource<WsConnection>,
        deadline: Option<Instant>,
        pong: Option<&[u8]>,
    ) -> WsResult<Next> {
        loop {
            let Some(socket) = self.table_mut().get_mut(conn)?.socket.as_mut() else {
                return Ok(Err(wit::Error::Closed));
            };
            let read = match deadline {
                Some(deadline) => match tokio::time::timeout_at(deadline, socket.next()).await {
                    Ok(read) => read,
                    Err(_) => return Ok(Err(wit::Error::Timeout)),
                },
                None => socket.next().await,
            };
            self.http_client.drain_wire(&self.metrics);
            let message = match read {
                Some(Ok(message)) => message,
                Some(Err(err)) => return Ok(Err(self.ws_failed(conn, "receive", &err)?)),
                None => return Ok(Err(self.ws_failed(conn, "receive", &tungstenite::Error::ConnectionClosed)?)),
            };
            let held = match message {
                Message::Text(_) | Message::Binary(_) => self.ws_handed_over(conn)?,
                _ => self.byte_budget.none(),
            };
            let data = match message {
                Message::Text(text) => wit::Message::Text(text.as_str().to_owned()),
                Message::Binary(data) => wit::Message::Binary(data.to_vec()),
                Message::Close(frame) => {
                    let (code, reason) = frame.map_or((1005, String::new()), |f| (f.code.into(), f.reason.to_string()));
                    let socket = self.table_mut().get_mut(conn)?.socket.take();
                    if let Some(mut socket) = socket {
                        // Answering the close handshake is tungstenite's, on the next flush.
                        let _ = tokio::time::timeout(CLOSE_WAIT, socket.flush()).await;
                    }
                    let opened = self.table_mut().get(conn)?.opened;
                    self.ws_ended(opened);
                    return Ok(Ok(Next::Message(wit::Message::Close(wit::CloseFrame { code, reason }), held)));
                }
                Message::Pong(payload) if pong.is_some_and(|p| p == payload.as_ref()) => return Ok(Ok(Next::Pong)),
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
            };
            self.metrics.counter(names::WS_MSGS_RECEIVED.into(), 1, Vec::new());
            return Ok(Ok(Next::Message(data, held)));
        }
    }

    /// What the data message the connection's socket just handed over holds of the byte budget.
    fn ws_handed_over(&mut self, conn: &Resource<WsConnection>) -> wasmtime::Result<Held> {
        let none = self.byte_budget.none();
        Ok(self.table_mut().get_mut(conn)?.socket.as_mut().map_or(none, |s| s.get_mut().frames.handed_over()))
    }

    /// A failed send or receive ends the session: the connection is unusable.
    fn ws_failed(
        &mut self,
        conn: &Resource<WsConnection>,
        what: &str,
        err: &tungstenite::Error,
    ) -> wasmtime::Result<wit::Error> {
        let error = match err {
            tungstenite::Error::Capacity(_) => wit::Error::TooLarge(self.http_client.max_body()),
            _ => network(what, err),
        };
        let c = self.table_mut().get_mut(conn)?;
        if c.socket.take().is_some() {
            let opened = c.opened;
            self.ws_ended(opened);
        }
        Ok(error)
    }

    /// A session ended (closed, failed or dropped): its duration, and its slot back.
    fn ws_ended(&mut self, opened: Instant) {
        self.metrics.trend(names::WS_SESSION_DURATION.into(), ms(opened.elapsed()), Vec::new());
        self.slots.give_back();
    }
}
