//! What the WebSocket and gRPC tests share: a target on loopback, its `/stats`, and a request body
//! fed through a channel.

#![allow(dead_code, reason = "each test binary uses a part")]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body::Frame;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::rt::TokioIo;
use loadhost_target::Target;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// How long any one test may take: every wait in them is bounded by it.
pub const LIMIT: Duration = Duration::from_secs(60);

/// A plain (h2c-capable) target on a free loopback port, serving until the test ends.
pub async fn start() -> SocketAddr {
    start_with(None).await
}

/// A target on a free loopback port, with TLS when `tls` is given.
pub async fn start_with(tls: Option<std::sync::Arc<rustls::ServerConfig>>) -> SocketAddr {
    let target = Target::bind("127.0.0.1:0".parse().unwrap(), tls).await.unwrap();
    let addr = target.local_addr().unwrap();
    tokio::spawn(target.serve(std::future::pending()));
    addr
}

/// `GET path` over a fresh HTTP/1.1 connection: the status and the body.
pub async fn get(addr: SocketAddr, path: &str) -> (http::StatusCode, Bytes) {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    let request = Request::get(path).header("host", addr.to_string()).body(Empty::<Bytes>::new()).unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status();
    (status, response.into_body().collect().await.unwrap().to_bytes())
}

/// The target's `/stats`.
pub async fn stats(addr: SocketAddr) -> serde_json::Value {
    let (status, body) = get(addr, "/stats").await;
    assert_eq!(status, 200);
    serde_json::from_slice(&body).unwrap()
}

/// A request body sent a piece at a time, ended (half-closed) when the sender is dropped.
pub struct Channel(pub mpsc::Receiver<Bytes>);

impl http_body::Body for Channel {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|piece| piece.map(|bytes| Ok(Frame::data(bytes))))
    }
}
