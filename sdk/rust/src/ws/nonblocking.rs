//! The WebSocket connections of [`ws`](super) awaited, for async tasks
//! (`loadhost:plugin/websocket-async`): the same host connections, limits and built-in metrics,
//! the same [`Message`] and [`WsError`]. While a call waits, the instance runs its other tasks, and
//! the waiting task holds only its own state (the goal: a few tens of KiB per open session).
//!
//! A connection serves one call at a time (the methods take `&mut self`); keep one per worker in a
//! map keyed by [`Task::worker_id`](crate::Task::worker_id), take it out for the task and put it
//! back after, as `plugins/ws-echo-async` does.
//!
//! ```ignore
//! use loadhost_sdk::ws::{Message, nonblocking};
//!
//! let mut conn = nonblocking::connect("ws://127.0.0.1:8080/ws/echo").await?;
//! conn.send_text("hello").await?;
//! assert_eq!(conn.receive(None).await?, Message::Text("hello".into()));
//! conn.close(1000, "done").await?;
//! ```

use std::time::Duration;

use super::{Message, WsError, from_host, from_host_message, host_headers, round_trip};
use crate::async_bindings::loadhost::plugin::websocket_async as host;

/// An open connection; dropping it ends the session.
#[derive(Debug)]
pub struct Connection(host::Connection);

/// Connect to `url` (`ws://` or `wss://`) with the host's defaults.
pub async fn connect(url: &str) -> Result<Connection, WsError> {
    connect_with(url, &[], None).await
}

/// Connect to `url`, sending `headers` with the handshake; give up after `timeout`.
pub async fn connect_with(
    url: &str,
    headers: &[(&str, &str)],
    timeout: Option<Duration>,
) -> Result<Connection, WsError> {
    host::Connection::connect(url.to_owned(), host_headers(headers), crate::millis(timeout))
        .await
        .map(Connection)
        .map_err(from_host)
}

impl Connection {
    /// Send a text message.
    pub async fn send_text(&mut self, text: &str) -> Result<(), WsError> {
        self.0.send_text(text.to_owned()).await.map_err(from_host)
    }

    /// Send a binary message.
    pub async fn send_binary(&mut self, data: &[u8]) -> Result<(), WsError> {
        self.0.send_binary(data.to_vec()).await.map_err(from_host)
    }

    /// The next message, waiting at most `timeout` (`None`: until one comes).
    pub async fn receive(&mut self, timeout: Option<Duration>) -> Result<Message, WsError> {
        self.0.receive(crate::millis(timeout)).await.map(from_host_message).map_err(from_host)
    }

    /// Send a ping and wait for its pong, at most `timeout` (`None`: the host's 10 s): the round
    /// trip (also recorded as `ws_ping`). Messages that arrive meanwhile are kept for `receive`.
    pub async fn ping(&mut self, timeout: Option<Duration>) -> Result<Duration, WsError> {
        self.0.ping(crate::millis(timeout)).await.map(round_trip).map_err(from_host)
    }

    /// Close with `code` (1000: normal) and `reason`; the host awaits the peer's close on the side
    /// (at most 1 s).
    pub async fn close(self, code: u16, reason: &str) -> Result<(), WsError> {
        self.0.close(code, reason.to_owned()).await.map_err(from_host)
    }
}
