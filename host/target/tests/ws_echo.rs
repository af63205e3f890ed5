//! `/ws/echo` on a real target over loopback, driven by a tokio-tungstenite client.

#![allow(clippy::unwrap_used, reason = "a test that cannot set up must fail loudly")]

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{WebSocketStream, client_async};

use common::{LIMIT, get, start, stats};

type Client = WebSocketStream<TcpStream>;

async fn connect(addr: SocketAddr, path: &str) -> Client {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (ws, response) = client_async(format!("ws://{addr}{path}"), stream).await.unwrap();
    assert_eq!(response.status(), 101);
    ws
}

/// The next message (the session must still be open).
async fn receive(ws: &mut Client) -> Message {
    ws.next().await.expect("the session is open").unwrap()
}

/// Close, and read until the target has answered the close and ended the connection.
async fn close(mut ws: Client) {
    ws.close(None).await.unwrap();
    let reply = ws.next().await.expect("the close is answered").unwrap();
    assert!(matches!(reply, Message::Close(_)), "{reply:?}");
    assert!(ws.next().await.is_none(), "the target ends the connection after the close handshake");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_echoes_exactly_and_the_target_counts_them() {
    timeout(LIMIT, async {
        let addr = start().await;
        let mut ws = connect(addr, "/ws/echo").await;
        for i in 0..100 {
            let text = format!("message {i} ✓");
            ws.send(Message::text(text.clone())).await.unwrap();
            assert_eq!(receive(&mut ws).await, Message::text(text));
        }
        let sizes = [0, 1, 125, 126, 65_535, 65_536, 1 << 20];
        for size in sizes {
            let bytes: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            ws.send(Message::binary(bytes.clone())).await.unwrap();
            assert_eq!(receive(&mut ws).await, Message::binary(bytes), "{size} bytes");
        }
        ws.send(Message::Ping("are you there".into())).await.unwrap();
        assert_eq!(receive(&mut ws).await, Message::Pong("are you there".into()));
        close(ws).await;

        let sent = 100 + sizes.len() as u64;
        let stats = stats(addr).await;
        assert_eq!(stats["ws_sessions"], 1, "{stats}");
        assert_eq!(stats["ws_msgs_received"], sent, "{stats}");
        assert_eq!(stats["ws_msgs_sent"], sent, "{stats}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delay_holds_each_echo_back() {
    timeout(LIMIT, async {
        let addr = start().await;
        let mut ws = connect(addr, "/ws/echo?delay=50").await;
        for _ in 0..3 {
            let started = Instant::now();
            ws.send(Message::text("slow")).await.unwrap();
            assert_eq!(receive(&mut ws).await, Message::text("slow"));
            assert!(started.elapsed() >= Duration::from_millis(50), "{:?}", started.elapsed());
        }
        close(ws).await;
        let stats = stats(addr).await;
        assert_eq!((stats["ws_msgs_received"].as_u64(), stats["ws_msgs_sent"].as_u64()), (Some(3), Some(3)), "{stats}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_an_upgrade_is_told_426_and_an_oversized_message_ends_the_session() {
    timeout(LIMIT, async {
        let addr = start().await;
        let (status, _) = get(addr, "/ws/echo").await;
        assert_eq!(status, 426);

        let mut ws = connect(addr, "/ws/echo").await;
        // The target may stop reading (and close) before the client has written it all.
        let _ = ws.send(Message::binary(vec![0u8; loadhost_target::MAX_MESSAGE + 1])).await;
        let after = ws.next().await;
        assert!(!matches!(after, Some(Ok(Message::Binary(_)))), "an oversized message is not echoed");
        let stats = stats(addr).await;
        assert_eq!(stats["ws_sessions"], 1, "{stats}");
        assert_eq!((stats["ws_msgs_received"].as_u64(), stats["ws_msgs_sent"].as_u64()), (Some(0), Some(0)), "{stats}");
    })
    .await
    .unwrap();
}
