//! Hostile HTTP peers on 127.0.0.1, for the tests of what loadhost reads from anything remote
//! (issue 41): a receiver that answers every push with a redirect, one that answers with an
//! error and a body that never ends, and a plain one that records what reaches it. Each is a
//! `std::net` listener on a thread of its own, a thread per connection; everything it does is
//! bounded in time and bytes, and it stops when dropped.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a rogue peer answers every request with.
#[derive(Clone)]
pub enum Answer {
    /// `307 Temporary Redirect` to this URL.
    Redirect(String),
    /// `500` with a chunked body of `x` that goes on until the client leaves (or
    /// [`ENDLESS_LIMIT`] bytes, so the test itself is bounded).
    Endless500,
    /// `204 No Content`.
    NoContent,
}

/// The most an "endless" body sends on one connection: far past any cap, yet bounded.
pub const ENDLESS_LIMIT: u64 = 512 << 20;

/// The longest a connection is served: the tests' runs are a few seconds.
const CONNECTION_LIMIT: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Seen {
    connections: AtomicU64,
    /// Each request's head, as text.
    heads: Mutex<Vec<String>>,
    /// Body bytes written on each connection that answered [`Answer::Endless500`].
    sent: Mutex<Vec<u64>>,
}

/// A rogue peer, stopped when dropped.
pub struct Rogue {
    pub addr: SocketAddr,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Rogue {
    pub fn start(answer: Answer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        listener.set_nonblocking(true).expect("a nonblocking listener");
        let addr = listener.local_addr().expect("its address");
        let (seen, stop) = (Arc::new(Seen::default()), Arc::new(AtomicBool::new(false)));
        let accept = {
            let (seen, stop) = (seen.clone(), stop.clone());
            std::thread::spawn(move || accept_loop(&listener, &answer, &seen, &stop))
        };
        Self { addr, seen, stop, accept: Some(accept) }
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Connections it accepted.
    pub fn connections(&self) -> u64 {
        self.seen.connections.load(Ordering::SeqCst)
    }

    /// The request heads it got.
    pub fn heads(&self) -> Vec<String> {
        self.seen.heads.lock().unwrap().clone()
    }

    /// Body bytes of the endless answer written on each connection.
    pub fn sent(&self) -> Vec<u64> {
        self.seen.sent.lock().unwrap().clone()
    }
}

impl Drop for Rogue {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, answer: &Answer, seen: &Arc<Seen>, stop: &Arc<AtomicBool>) {
    let mut served = Vec::new();
    // At most 10 minutes or 10,000 connections, whatever the test does.
    let deadline = Instant::now() + Duration::from_secs(600);
    while !stop.load(Ordering::SeqCst) && Instant::now() < deadline && served.len() < 10_000 {
        match listener.accept() {
            Ok((stream, _)) => {
                seen.connections.fetch_add(1, Ordering::SeqCst);
                let (answer, seen, stop) = (answer.clone(), seen.clone(), stop.clone());
                served.push(std::thread::spawn(move || serve(stream, &answer, &seen, &stop)));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    stop.store(true, Ordering::SeqCst);
    for thread in served {
        let _ = thread.join();
    }
}

/// Serve one connection: requests one after another (keep-alive), each answered with `answer`.
fn serve(mut stream: TcpStream, answer: &Answer, seen: &Seen, stop: &AtomicBool) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
    let until = Instant::now() + CONNECTION_LIMIT;
    let mut buf = Vec::new();
    while !stop.load(Ordering::SeqCst) && Instant::now() < until {
        let Some(head) = read_head(&mut stream, &mut buf, stop, until) else { return };
        let length = content_length(&head);
        seen.heads.lock().unwrap().push(head);
        if !skip(&mut stream, &mut buf, length, stop, until) {
            return;
        }
        match answer {
            Answer::Redirect(to) => {
                let reply = format!("HTTP/1.1 307 Temporary Redirect\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n");
                if stream.write_all(reply.as_bytes()).is_err() {
                    return;
                }
            }
            Answer::NoContent => {
                if stream.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").is_err() {
                    return;
                }
            }
            Answer::Endless500 => {
                let sent = endless(&mut stream, stop, until);
                seen.sent.lock().unwrap().push(sent);
                return;
            }
        }
    }
}

/// Read up to the end of a request head (at most 1 MiB); `None` when the client left.
fn read_head(stream: &mut TcpStream, buf: &mut Vec<u8>, stop: &AtomicBool, until: Instant) -> Option<String> {
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.drain(..end + 4);
            return Some(head);
        }
        if buf.len() > 1 << 20 || stop.load(Ordering::SeqCst) || Instant::now() >= until {
            return None;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return None,
        }
    }
}

fn content_length(head: &str) -> u64 {
    head.lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0)
}

/// Read and drop `length` bytes of body (some may be in `buf` already); false if the client left.
fn skip(stream: &mut TcpStream, buf: &mut Vec<u8>, length: u64, stop: &AtomicBool, until: Instant) -> bool {
    let from_buf = (length as usize).min(buf.len());
    buf.drain(..from_buf);
    let mut left = length - from_buf as u64;
    let mut chunk = [0u8; 65536];
    while left > 0 {
        if stop.load(Ordering::SeqCst) || Instant::now() >= until {
            return false;
        }
        match stream.read(&mut chunk[..(left as usize).min(65536)]) {
            Ok(0) => return false,
            Ok(n) => left -= n as u64,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return false,
        }
    }
    true
}

/// A 500 whose chunked body goes on until the client leaves: the body bytes written.
fn endless(stream: &mut TcpStream, stop: &AtomicBool, until: Instant) -> u64 {
    let head = "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n";
    if stream.write_all(head.as_bytes()).is_err() {
        return 0;
    }
    let data = vec![b'x'; 64 << 10];
    let chunk = [format!("{:x}\r\n", data.len()).into_bytes(), data, b"\r\n".to_vec()].concat();
    let mut sent = 0;
    // A write that times out (the client stopped reading but is still there) is tried again,
    // until the client leaves, the limit, or the connection's time is up.
    let mut at = 0;
    while sent < ENDLESS_LIMIT && !stop.load(Ordering::SeqCst) && Instant::now() < until {
        match stream.write(&chunk[at..]) {
            Ok(0) => break,
            Ok(n) => {
                at += n;
                if at == chunk.len() {
                    at = 0;
                    sent += 64 << 10;
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    sent
}
