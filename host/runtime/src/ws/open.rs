//! Opening a WebSocket connection: the allow-list, the host's TCP (and TLS), the handshake — run as
//! a task of the event loop's runtime, off the instance's fiber.
//!
//! Why off the fiber: the connector's and the handshake's futures are large and moved by value as
//! they are polled (`Timeout::poll` 24 KiB of stack, the host call's closure 16, tungstenite's
//! handshake 9 + 9 + 4.5, …), so polling them on the fiber touched 80 KiB of its stack per session
//! for good; boxed and polled by the loop's own task, the fiber touches 24 KiB (measured in
//! docs/runtime.md, "Bytes per in-flight task": −55 KiB of RSS per session). The task is aborted
//! when the future awaiting it goes (a connect timeout, a task timeout, a stop, a trap), so no
//! connection outlives the call that asked for it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::off_loop::AbortOnDrop;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::frames::Counted;
use super::{Socket, network, wit};
use crate::budget::ByteBudget;
use crate::http::WorkerHttp;
use crate::http::connector::Alpn;
use crate::protocol_metrics as names;

/// The read buffer a connection starts with. tungstenite zero-fills its read buffer up to its
/// capacity before every read, so each connection touches all of it: its default 128 KiB cost 125
/// KiB of RSS per session (docs/runtime.md). It still grows, to the message, for a larger one.
const READ_BUFFER: usize = 4 << 10;

/// What opening a connection needs of the instance's context, owned, so that it can run as a task.
pub(super) struct Opener {
    pub(super) http_client: Arc<WorkerHttp>,
    pub(super) metrics: loadhost_engine::MetricsHandle,
    pub(super) byte_budget: ByteBudget,
}

impl Opener {
    /// Open `url` on a task of the current (the event loop's) runtime; the returned future is that
    /// task's result, and dropping it aborts the task.
    pub(super) fn spawn(self, url: String, headers: Vec<(String, Vec<u8>)>) -> Opening {
        // Boxed: spawning the unboxed future moves it through the fiber's stack as well.
        let opening: Pin<Box<dyn Future<Output = _> + Send>> = Box::pin(async move { self.open(&url, headers).await });
        Opening(AbortOnDrop(tokio::spawn(opening)))
    }

    /// Judge `url` by the allow-list, connect and shake hands.
    async fn open(&self, url: &str, headers: Vec<(String, Vec<u8>)>) -> Result<WebSocketStream<Socket>, wit::Error> {
        let invalid = |why: String| wit::Error::InvalidRequest(format!("{url}: {why}"));
        let uri: http::Uri = url.parse().map_err(|err| invalid(format!("{err}")))?;
        let tls = match uri.scheme_str() {
            Some("ws") => false,
            Some("wss") => true,
            _ => return Err(invalid("expected a ws:// or wss:// URL".into())),
        };
        let host = uri.host().ok_or_else(|| invalid("no host".into()))?.to_owned();
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        if !self.http_client.allows(&host, port) {
            self.metrics.counter(names::WS_DENIED.into(), 1, Vec::new());
            return Err(wit::Error::Denied(self.http_client.denied(&host, port)));
        }
        let mut request = url.into_client_request().map_err(|err| invalid(format!("{err}")))?;
        for (name, value) in headers {
            let name =
                http::HeaderName::from_bytes(name.as_bytes()).map_err(|err| invalid(format!("{name}: {err}")))?;
            let value = http::HeaderValue::from_bytes(&value).map_err(|err| invalid(format!("{name}: {err}")))?;
            request.headers_mut().append(name, value);
        }
        let authority = uri.authority().map_or(String::new(), |a| a.to_string());
        let tcp_uri: http::Uri = format!("{}://{authority}/", if tls { "https" } else { "http" })
            .parse()
            .map_err(|err| invalid(format!("{err}")))?;
        let mut connector = self.http_client.direct_connector(Alpn::Http1);
        let stream = tower_service::Service::call(&mut connector, tcp_uri).await.map_err(|err| {
            match crate::http::own_listener_in(err.as_ref()) {
                Some(own) => {
                    self.metrics.counter(names::WS_DENIED.into(), 1, Vec::new());
                    wit::Error::Denied(format!("{url}: {own}"))
                }
                None => wit::Error::Network(format!("{url}: {err}")),
            }
        })?;
        let config = config(self.http_client.max_body());
        let counted = Counted::new(TokioIo::new(stream), self.byte_budget.clone(), self.http_client.max_body());
        let (socket, _response) = tokio_tungstenite::client_async_with_config(request, counted, Some(config))
            .await
            .map_err(|err| network(&format!("{url}: handshake"), &err))?;
        Ok(socket)
    }
}

/// A connection's settings: messages and frames up to `max_body` bytes, read into a buffer that
/// starts small.
fn config(max_body: u64) -> WebSocketConfig {
    let max = usize::try_from(max_body).unwrap_or(usize::MAX);
    WebSocketConfig::default().read_buffer_size(READ_BUFFER).max_message_size(Some(max)).max_frame_size(Some(max))
}

/// A connection being opened on its own task: its outcome, as [`Opener::open`] gives it.
pub(super) struct Opening(AbortOnDrop<Result<WebSocketStream<Socket>, wit::Error>>);

impl Future for Opening {
    type Output = Result<WebSocketStream<Socket>, wit::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0.0).poll(cx).map(|joined| match joined {
            Ok(opened) => opened,
            // As if it had panicked where it used to run, on the fiber.
            Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
            // Only the guard aborts the task, and then nothing awaits it any more.
            Err(err) => Err(wit::Error::Network(format!("the connection was given up: {err}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_dropped_guard_aborts_its_task() {
        let (held, mut gone) = tokio::sync::oneshot::channel::<()>();
        let guard = AbortOnDrop(tokio::spawn(async move {
            let _held = held;
            std::future::pending::<()>().await;
        }));
        tokio::task::yield_now().await;
        assert_eq!(gone.try_recv(), Err(tokio::sync::oneshot::error::TryRecvError::Empty));
        drop(guard);
        // The sender goes only with the task: once the runtime has run the abort, the channel is
        // closed; a task left pending would keep it empty.
        for _ in 0..100 {
            if gone.try_recv() != Err(tokio::sync::oneshot::error::TryRecvError::Empty) {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(
            gone.try_recv(),
            Err(tokio::sync::oneshot::error::TryRecvError::Closed),
            "the task outlived its guard"
        );
    }

    #[tokio::test]
    async fn a_message_larger_than_the_read_buffer_arrives_whole() {
        use futures_util::{SinkExt as _, StreamExt as _};
        use tokio_tungstenite::tungstenite::Message;

        let sent = Message::binary((0..1u32 << 20).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
        assert!(sent.len() > 64 * READ_BUFFER);
        let (near, far) = tokio::io::duplex(64 << 10);
        let server = tokio::spawn(async move {
            let mut peer = tokio_tungstenite::accept_async(far).await.expect("the server's handshake");
            let message = peer.next().await.expect("a message").expect("a message read");
            peer.send(message).await.expect("the echo sent");
            peer
        });
        let request = "ws://peer/echo".into_client_request().expect("a request");
        let (mut client, _) = tokio_tungstenite::client_async_with_config(request, near, Some(config(64 << 20)))
            .await
            .expect("the client's handshake");
        client.send(sent.clone()).await.expect("the message sent");
        let echoed = client.next().await.expect("an echo").expect("an echo read");
        assert_eq!(echoed, sent, "the 1 MiB message came back whole");
        drop(server.await.expect("the server"));
    }

    #[tokio::test]
    async fn a_kept_guard_leaves_its_task_running() {
        let mut guard = AbortOnDrop(tokio::spawn(async { 7 }));
        assert_eq!((&mut guard.0).await.ok(), Some(7));
    }
}
