//! WebSocket connections the host owns (`loadhost:plugin/websocket`): the handshake, TLS, framing,
//! pings and the close handshake run natively; a plugin sends and receives whole messages. The
//! host records `ws_sessions`, `ws_connecting`, `ws_session_duration`, `ws_msgs_sent`,
//! `ws_msgs_received` and `ws_ping` by itself.
//!
//! A connection may serve many tasks of its worker: keep it in a `thread_local!` (each worker is
//! its own instance) and connect again when an error says it is gone.
//!
//! These calls block the instance while they wait; an async task ([`AsyncDoer`](crate::AsyncDoer))
//! uses [`nonblocking`], the same connections awaited.
//!
//! ```ignore
//! use loadhost_sdk::ws::{self, Message};
//!
//! let mut conn = ws::connect("ws://127.0.0.1:8080/ws/echo")?;
//! conn.send_text("hello")?;
//! assert_eq!(conn.receive(None)?, Message::Text("hello".into()));
//! conn.close(1000, "done")?;
//! ```

use std::time::Duration;

use crate::bindings::loadhost::plugin::websocket as host;

pub mod nonblocking;

/// One whole message from the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A text message.
    Text(String),
    /// A binary message.
    Binary(Vec<u8>),
    /// The peer closed the connection: its code (1005 when none) and reason.
    Close {
        /// The close code.
        code: u16,
        /// The reason given.
        reason: String,
    },
}

/// Why a connection could not be opened or used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WsError {
    /// The URL or a header could not be used.
    InvalidRequest(String),
    /// The host is not on the allow-list (`--allow-host`): no connection was made.
    Denied(String),
    /// Connecting, the handshake, sending or receiving failed; the connection is gone.
    Network(String),
    /// The worker already has this many connections (and gRPC streams) open.
    TooManyConnections(u32),
    /// Nothing arrived within the timeout; the connection is still open.
    Timeout,
    /// The connection is closed.
    Closed,
    /// A message over the host's cap (`--max-response-body`, in bytes).
    TooLarge(u64),
}

impl WsError {
    /// Whether the connection is gone, so the next use should connect again.
    pub fn is_fatal(&self) -> bool {
        !matches!(self, Self::Timeout | Self::TooLarge(_))
    }
}

impl std::fmt::Display for WsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InvalidRequest(why) => write!(f, "invalid WebSocket request: {why}"),
            Self::Denied(why) => write!(f, "denied: {why}"),
            Self::Network(why) => write!(f, "WebSocket: {why}"),
            Self::TooManyConnections(open) => write!(f, "too many connections: {open} open in this worker"),
            Self::Timeout => write!(f, "no WebSocket message within the timeout"),
            Self::Closed => write!(f, "the WebSocket connection is closed"),
            Self::TooLarge(max) => write!(f, "a WebSocket message over the host's cap of {max} bytes"),
        }
    }
}

impl std::error::Error for WsError {}

/// The host's error as the SDK's (the async connections share the host's type, `with`-mapped).
pub(crate) fn from_host(err: host::Error) -> WsError {
    match err {
        host::Error::InvalidRequest(why) => WsError::InvalidRequest(why),
        host::Error::Denied(why) => WsError::Denied(why),
        host::Error::Network(why) => WsError::Network(why),
        host::Error::TooManyConnections(open) => WsError::TooManyConnections(open),
        host::Error::Timeout => WsError::Timeout,
        host::Error::Closed => WsError::Closed,
        host::Error::TooLarge(max) => WsError::TooLarge(max),
    }
}

/// The host's message as the SDK's.
pub(crate) fn from_host_message(message: host::Message) -> Message {
    match message {
        host::Message::Text(text) => Message::Text(text),
        host::Message::Binary(data) => Message::Binary(data),
        host::Message::Close(frame) => Message::Close { code: frame.code, reason: frame.reason },
    }
}

/// Headers as the host takes them.
pub(crate) fn host_headers(headers: &[(&str, &str)]) -> Vec<(String, Vec<u8>)> {
    headers.iter().map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec())).collect()
}

/// A ping's round trip from the host's milliseconds.
pub(crate) fn round_trip(ms: f64) -> Duration {
    // A negative or NaN figure reads as zero, one too large for a Duration as the longest: the host
    // sends neither, and a plugin should not panic if it did.
    Duration::try_from_secs_f64(ms.max(0.0) / 1000.0).unwrap_or(Duration::MAX)
}

/// An open connection; dropping it ends the session.
#[derive(Debug)]
pub struct Connection(host::Connection);

/// Connect to `url` (`ws://` or `wss://`) with the host's defaults.
pub fn connect(url: &str) -> Result<Connection, WsError> {
    connect_with(url, &[], None)
}

/// Connect to `url`, sending `headers` with the handshake; give up after `timeout`.
pub fn connect_with(url: &str, headers: &[(&str, &str)], timeout: Option<Duration>) -> Result<Connection, WsError> {
    host::Connection::connect(url, &host_headers(headers), crate::millis(timeout)).map(Connection).map_err(from_host)
}

impl Connection {
    /// Send a text message.
    pub fn send_text(&mut self, text: &str) -> Result<(), WsError> {
        self.0.send_text(text).map_err(from_host)
    }

    /// Send a binary message.
    pub fn send_binary(&mut self, data: &[u8]) -> Result<(), WsError> {
        self.0.send_binary(data).map_err(from_host)
    }

    /// The next message, waiting at most `timeout` (`None`: until one comes).
    pub fn receive(&mut self, timeout: Option<Duration>) -> Result<Message, WsError> {
        self.0.receive(crate::millis(timeout)).map(from_host_message).map_err(from_host)
    }

    /// Send a ping and wait for its pong, at most `timeout` (`None`: the host's 10 s): the round
    /// trip (also recorded as `ws_ping`). Messages that arrive meanwhile are kept for `receive`.
    pub fn ping(&mut self, timeout: Option<Duration>) -> Result<Duration, WsError> {
        self.0.ping(crate::millis(timeout)).map(round_trip).map_err(from_host)
    }

    /// Close with `code` (1000: normal) and `reason`; the host awaits the peer's close on the side
    /// (at most 1 s).
    pub fn close(self, code: u16, reason: &str) -> Result<(), WsError> {
        self.0.close(code, reason).map_err(from_host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_never_panics() {
        assert_eq!(round_trip(1.5), Duration::from_micros(1500));
        assert_eq!(round_trip(-3.0), Duration::ZERO);
        assert_eq!(round_trip(f64::NAN), Duration::ZERO);
        assert_eq!(round_trip(f64::INFINITY), Duration::MAX);
    }

    #[test]
    fn headers_go_as_bytes() {
        assert_eq!(host_headers(&[("x-a", "1")]), vec![("x-a".to_owned(), b"1".to_vec())]);
    }
}
