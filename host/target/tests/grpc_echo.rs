//! The gRPC echo service on a real target over loopback, driven by a hyper HTTP/2 client: h2c by
//! prior knowledge, and h2 under TLS.

#![allow(clippy::unwrap_used, reason = "a test that cannot set up must fail loudly")]

mod common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf as _, Bytes, BytesMut};
use http::{HeaderMap, Request, Response};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use loadhost_target::grpc::{DELAY_HEADER, MESSAGE_HEADER, STATUS_HEADER, STREAM, UNARY};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::timeout;

use common::{Channel, LIMIT, start, start_with, stats};

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// An HTTP/2 connection to the target over any transport.
async fn h2<T>(io: T) -> SendRequest<Body>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io)).await.unwrap();
    tokio::spawn(conn);
    sender
}

/// h2c by prior knowledge.
async fn h2c(addr: SocketAddr) -> SendRequest<Body> {
    h2(TcpStream::connect(addr).await.unwrap()).await
}

/// `payload` with gRPC's length prefix.
fn framed(payload: &[u8]) -> Bytes {
    let mut out = BytesMut::from(&[0u8][..]);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out.freeze()
}

/// A call to `method` with `metadata`, sending `body`.
async fn call(
    sender: &mut SendRequest<Body>,
    addr: SocketAddr,
    method: &str,
    metadata: &[(&str, &str)],
    body: Body,
) -> Response<Incoming> {
    let mut request = Request::post(format!("http://{addr}{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (name, value) in metadata {
        request = request.header(*name, *value);
    }
    let response = sender.send_request(request.body(body).unwrap()).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/grpc");
    response
}

/// A unary call: the messages in the body (prefixes removed) and the status, from the trailers or,
/// trailers-only, from the headers.
async fn unary(
    sender: &mut SendRequest<Body>,
    addr: SocketAddr,
    method: &str,
    metadata: &[(&str, &str)],
    body: Bytes,
) -> (Vec<Bytes>, HeaderMap) {
    let response = call(sender, addr, method, metadata, Full::new(body).boxed_unsync()).await;
    let headers = response.headers().clone();
    let collected = response.into_body().collect().await.unwrap();
    let trailers = collected.trailers().cloned();
    let mut wire = collected.to_bytes();
    let mut messages = Vec::new();
    while !wire.is_empty() {
        assert_eq!(wire.get_u8(), 0, "uncompressed");
        let len = wire.get_u32() as usize;
        messages.push(wire.split_to(len));
    }
    match trailers {
        Some(trailers) => {
            assert!(!headers.contains_key("grpc-status"), "a status in the headers and the trailers");
            (messages, trailers)
        }
        None => (messages, headers),
    }
}

fn status(headers: &HeaderMap) -> (&str, Option<&str>) {
    let text = |name| headers.get(name).map(|v: &http::HeaderValue| v.to_str().unwrap());
    (text("grpc-status").expect("a grpc-status"), text("grpc-message"))
}

/// One whole message out of the response body, reading frames as they come.
async fn next_message(body: &mut Incoming, buf: &mut BytesMut) -> Bytes {
    loop {
        if buf.len() >= 5 {
            let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
            if buf.len() >= 5 + len {
                let mut message = buf.split_to(5 + len);
                message.advance(5);
                return message.freeze();
            }
        }
        let frame = body.frame().await.expect("the stream is open").unwrap();
        buf.extend_from_slice(&frame.into_data().expect("a message, not trailers"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_and_bidi_calls_echo_exactly_and_the_target_counts_them() {
    timeout(LIMIT, async {
        let addr = start().await;
        let mut sender = h2c(addr).await;

        let (messages, end) = unary(&mut sender, addr, UNARY, &[], framed(b"\x08\x96\x01 hello")).await;
        assert_eq!(messages, [Bytes::from_static(b"\x08\x96\x01 hello")]);
        assert_eq!(status(&end), ("0", None));

        // Bidirectional: each message is echoed before the next is sent, so echoes are not batched.
        let (tx, rx) = mpsc::channel(1);
        let response = call(&mut sender, addr, STREAM, &[], Channel(rx).boxed_unsync()).await;
        let mut body = response.into_body();
        let mut buf = BytesMut::new();
        for i in 0..100u32 {
            let payload = format!("message {i}").repeat(i as usize % 7 + 1);
            tx.send(framed(payload.as_bytes())).await.unwrap();
            assert_eq!(next_message(&mut body, &mut buf).await, payload.as_bytes());
        }
        drop(tx);
        let last = body.frame().await.expect("trailers after the half-close").unwrap();
        let trailers = last.into_trailers().expect("trailers, not more data");
        assert_eq!(status(&trailers), ("0", None));
        assert!(body.frame().await.is_none());

        let stats = stats(addr).await;
        assert_eq!(stats["grpc_calls"], 2, "{stats}");
        assert_eq!(stats["grpc_msgs_received"], 101, "{stats}");
        assert_eq!(stats["grpc_msgs_sent"], 101, "{stats}");
        assert_eq!(stats["grpc_status"], serde_json::json!({"0": 2}), "{stats}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_injects_statuses_and_delays_and_bad_calls_get_grpc_statuses() {
    timeout(LIMIT, async {
        let addr = start().await;
        let mut sender = h2c(addr).await;
        let hello = framed(b"hello");

        let injected = [(STATUS_HEADER, "14"), (MESSAGE_HEADER, "try again later")];
        let (messages, end) = unary(&mut sender, addr, UNARY, &injected, hello.clone()).await;
        assert!(messages.is_empty());
        assert_eq!(status(&end), ("14", Some("try again later")));
        let (_, end) = unary(&mut sender, addr, STREAM, &[(STATUS_HEADER, "14")], hello.clone()).await;
        assert_eq!(status(&end), ("14", Some("injected by the target")));

        let (_, end) = unary(&mut sender, addr, "/loadhost.target.Echo/Nope", &[], hello.clone()).await;
        assert_eq!(status(&end).0, "12");
        // A prefix announcing one byte over the cap is refused before the message is read.
        let over = (loadhost_target::MAX_MESSAGE as u32 + 1).to_be_bytes();
        let prefix = Bytes::from_iter([0, over[0], over[1], over[2], over[3]]);
        let (_, end) = unary(&mut sender, addr, UNARY, &[], prefix).await;
        assert_eq!(status(&end).0, "8");

        let started = Instant::now();
        let (messages, end) = unary(&mut sender, addr, UNARY, &[(DELAY_HEADER, "50")], hello.clone()).await;
        assert!(started.elapsed() >= Duration::from_millis(50), "{:?}", started.elapsed());
        assert_eq!((messages.len(), status(&end)), (1, ("0", None)));

        let stats = stats(addr).await;
        assert_eq!(stats["grpc_calls"], 5, "{stats}");
        // The injected and refused calls read nothing.
        assert_eq!(stats["grpc_msgs_received"], 1, "{stats}");
        assert_eq!(stats["grpc_msgs_sent"], 1, "{stats}");
        assert_eq!(stats["grpc_status"], serde_json::json!({"0": 1, "8": 1, "12": 1, "14": 2}), "{stats}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unary_call_echoes_over_h2_under_tls() {
    timeout(LIMIT, async {
        let cert = loadhost_target::tls::self_signed().unwrap();
        let addr = start_with(Some(cert.config)).await;

        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from_pem_slice(cert.cert_pem.as_bytes()).unwrap()).unwrap();
        let mut config =
            rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec()];
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = TcpStream::connect(addr).await.unwrap();
        let tls = connector.connect("localhost".try_into().unwrap(), tcp).await.unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let mut sender = h2(tls).await;

        let (messages, end) = unary(&mut sender, addr, UNARY, &[], framed(b"over tls")).await;
        assert_eq!(messages, [Bytes::from_static(b"over tls")]);
        assert_eq!(status(&end), ("0", None));
    })
    .await
    .unwrap();
}
