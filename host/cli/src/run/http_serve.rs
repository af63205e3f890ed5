//! The accept loop the control API and the OpenMetrics endpoint share: listeners are bound
//! before any load (so a busy port is a usage error), then served here until the process ends.
//!
//! Every descriptor an endpoint holds is one the run's own connections cannot have: 1,100 idle
//! connections to `--metrics-addr` (no token needed on loopback) used to leave a run under a
//! 1,024-descriptor limit with 773 of its 1,500 tasks failed. So each endpoint serves at most
//! [`Limits::connections`] at once, a connection that starts no request for [`Limits::idle`] is
//! closed, request heads must arrive within [`Limits::header_read`] and fit in [`HEAD_BUFFER`],
//! and an accept that fails (out of descriptors) waits before the next instead of spinning.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// How many connections an endpoint serves, and for how long.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections served at once.
    pub connections: usize,
    /// A connection that starts no request for this long is closed (an idle keep-alive, or one
    /// that never sends a byte).
    pub idle: Duration,
    /// A request's head must arrive within this.
    pub header_read: Duration,
}

/// The endpoints' limits (docs/outputs.md and docs/engine.md say them): a scraper or a
/// controlling script needs a few connections; 64 leaves the run's descriptors alone even under
/// a 1,024 limit. 30 s of idleness outlasts a keep-alive between scrapes 15 s apart.
pub const LIMITS: Limits =
    Limits { connections: 64, idle: Duration::from_secs(30), header_read: Duration::from_secs(10) };

/// The read buffer of an HTTP/1 connection, which bounds a request's head (past it: 431).
const HEAD_BUFFER: usize = 16 * 1024;

/// The pause after a failed accept: out of descriptors (`EMFILE`), accepting again at once fails
/// again at once, a loop that took a core from the run.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// What a connection past the cap is told, if it can be without waiting.
const BUSY: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 38\r\n\r\ntoo many connections to this endpoint\n";

/// Bind `addr` for `flag` without blocking, before any load.
pub fn bind(flag: &str, addr: std::net::SocketAddr) -> anyhow::Result<std::net::TcpListener> {
    use anyhow::Context as _;
    let listener = std::net::TcpListener::bind(addr).with_context(|| format!("--{flag} {addr}: cannot listen"))?;
    listener.set_nonblocking(true).with_context(|| format!("--{flag} {addr}"))?;
    Ok(listener)
}

/// Answer every connection on `listener` with `handler` (HTTP/1.1 or h2c), within `limits`.
pub async fn serve<H, F>(listener: std::net::TcpListener, what: &'static str, limits: Limits, handler: H)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send + 'static,
{
    let listener = match TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(err) => {
            tracing::error!("the {what} cannot listen: {err}");
            return;
        }
    };
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_read).max_buf_size(HEAD_BUFFER);
    builder.http2().timer(TokioTimer::new()).max_concurrent_streams(16).max_header_list_size(HEAD_BUFFER as u32);
    let builder = Arc::new(builder);
    let slots = Arc::new(Semaphore::new(limits.connections));
    let mut refused: u64 = 0;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(err) => {
                tracing::debug!("the {what} could not accept a connection: {err}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        // Past the cap, accept and close at once rather than stop accepting: the connection
        // costs a descriptor for no longer than the close, the client learns at once (a 503 if
        // it can be written without waiting) instead of hanging in the kernel's backlog behind
        // the connections that filled it, and the backlog never fills with connections that
        // would each be served only after one of the cap's had gone idle.
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            refused += 1;
            if refused.is_power_of_two() {
                tracing::warn!(
                    "the {what} is serving its {} connections: one more refused ({refused} so far)",
                    limits.connections
                );
            }
            let _ = stream.try_write(BUSY);
            continue;
        };
        let (builder, handler) = (builder.clone(), handler.clone());
        tokio::spawn(async move {
            connection(stream, &builder, limits.idle, handler).await;
            drop(slot);
        });
    }
}

/// Serve one connection until it ends, or until it has started no request for `idle`.
async fn connection<H, F>(stream: TcpStream, builder: &auto::Builder<TokioExecutor>, idle: Duration, handler: H)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send + 'static,
{
    let opened = Instant::now();
    // Milliseconds from `opened` to the last request's start.
    let last = Arc::new(AtomicU64::new(0));
    let seen = last.clone();
    let service = service_fn(move |req| {
        seen.store(opened.elapsed().as_millis() as u64, Ordering::Relaxed);
        handler(req)
    });
    let served = builder.serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = served => {}
        () = idle_for(opened, &last, idle) => {}
    }
}

/// Ends once no request has started for `idle` (measured from `opened` and the `last` start):
/// the connection is then dropped, which closes it.
async fn idle_for(opened: Instant, last: &AtomicU64, idle: Duration) {
    loop {
        let deadline = opened + Duration::from_millis(last.load(Ordering::Relaxed)) + idle;
        if Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep_until(deadline).await;
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::net::TcpStream as StdStream;

    use super::*;

    /// An endpoint answering `ok` within `limits` on a thread of its own; its address.
    fn endpoint(limits: Limits) -> std::net::SocketAddr {
        let listener = bind("test", "127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(serve(listener, "test endpoint", limits, |_req| async {
                Ok(Response::new(Full::new(Bytes::from_static(b"ok"))))
            }));
        });
        addr
    }

    /// Whether the peer closed `stream` within `limit` (a read of 0 bytes, or a reset).
    fn closed_within(stream: &mut StdStream, limit: Duration) -> bool {
        stream.set_read_timeout(Some(limit)).unwrap();
        let mut buf = [0u8; 256];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                    return false;
                }
                Err(_) => return true,
            }
        }
    }

    fn get(addr: std::net::SocketAddr) -> String {
        let mut stream = StdStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    }

    #[test]
    fn past_the_cap_a_connection_is_closed_at_once_and_idle_ones_are_timed_out() {
        let limits = Limits { connections: 3, idle: Duration::from_secs(1), header_read: Duration::from_millis(300) };
        let addr = endpoint(limits);
        let mut idle: Vec<StdStream> = (0..3).map(|_| StdStream::connect(addr).unwrap()).collect();
        // The cap's three are held (not closed yet) …
        std::thread::sleep(Duration::from_millis(50));
        let mut extra = StdStream::connect(addr).unwrap();
        // … so the fourth is told and closed at once.
        let mut told = String::new();
        extra.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = extra.read_to_string(&mut told);
        assert!(told.starts_with("HTTP/1.1 503"), "{told:?}");
        // Idle connections (not a byte sent) are closed after the idle limit; generous bounds,
        // for a busy machine.
        for stream in &mut idle {
            assert!(closed_within(stream, Duration::from_secs(10)), "an idle connection was kept");
        }
        assert!(get(addr).ends_with("ok"), "served again once the idle ones went");
    }

    #[test]
    fn a_head_that_never_ends_is_cut_off() {
        let limits = Limits { connections: 3, idle: Duration::from_secs(60), header_read: Duration::from_millis(300) };
        let addr = endpoint(limits);
        // Half a head, then nothing: closed at the header timeout, not the idle one.
        let mut slow = StdStream::connect(addr).unwrap();
        slow.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
        assert!(closed_within(&mut slow, Duration::from_secs(20)), "a slow head was kept");
        // A head past the buffer: refused, whatever it holds.
        let mut big = StdStream::connect(addr).unwrap();
        let head = format!("GET / HTTP/1.1\r\nHost: x\r\nX-Pad: {}\r\n\r\n", "p".repeat(HEAD_BUFFER * 4));
        let _ = big.write_all(head.as_bytes());
        let mut answer = String::new();
        big.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = big.read_to_string(&mut answer);
        assert!(!answer.ends_with("ok"), "a {} byte head was served: {answer:?}", head.len());
    }
}
