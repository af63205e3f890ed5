//! The push task: every encoded snapshot delivered to its receiver from a thread of its own, so a
//! receiver that is down or slow never delays the run.
//!
//! The outputs' thread encodes each snapshot (per interval, a few milliseconds at most) and hands
//! the body to a bounded queue per receiver ([`QUEUE`] bodies): it never waits. The push thread
//! runs one task per receiver on a runtime of its own: it POSTs the oldest body, retries a failed
//! one with backoff ([`ATTEMPTS`] tries), and when the queue is full the oldest body is dropped
//! and counted. At the run's end, the final snapshot is queued (for a receiver of cumulative
//! series, in place of any older body still waiting: it carries their totals, and Prometheus
//! refuses samples older than one it has), and the run waits for the queues to empty for at most
//! the flush limit; what is still queued then is dropped and counted. The summary says what each
//! receiver got.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use crate::payload::Payload;
use crate::reply;
use crate::series::Snapshot;

/// Bodies waiting for one receiver before the oldest is dropped.
pub const QUEUE: usize = 30;

/// Tries per body before it is given up (counted as dropped).
pub const ATTEMPTS: u32 = 4;

/// The longest one request may take, its answer's body included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The pause before retry `n` (1-based): 250 ms, 500 ms, 1 s, … at most 4 s.
fn backoff(n: u32) -> Duration {
    Duration::from_millis(250u64 << n.saturating_sub(1).min(4))
}

/// How a receiver's snapshots are made into bodies.
pub trait Encode: Send {
    /// Whether the receiver takes cumulative series (each body supersedes the ones before it), or
    /// the intervals' (every body counts).
    fn cumulative(&self) -> bool;
    /// The body for `snapshot`; `None` when it has nothing for this receiver.
    fn encode(&self, snapshot: &Snapshot) -> Option<Payload>;
    /// Several bodies as one, for a push that covers several intervals (`None`: only the latest
    /// is sent).
    fn join(&self, _earlier: Payload, _later: Payload) -> Option<Payload> {
        None
    }
}

/// One receiver: where, and how its bodies are made.
pub struct Receiver {
    /// As the user wrote it (`prometheus-rw=http://…`), credentials left out: for logs and the
    /// summary.
    pub name: String,
    /// The URL POSTed to.
    pub url: String,
    /// The encoder.
    pub encode: Box<dyn Encode>,
}

/// What one receiver got, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivery {
    /// The receiver as the user named it (credentials left out).
    pub name: String,
    /// Bodies the receiver accepted.
    pub sent: u64,
    /// Bodies dropped: the queue was full, every try failed, or the final flush ran out of time.
    pub dropped: u64,
    /// Bodies of cumulative series still waiting when the final one came, which carries their
    /// totals: replaced by it, not lost.
    pub superseded: u64,
    /// Whether the final snapshot reached it.
    pub final_delivered: bool,
    /// The last error it answered, if any.
    pub last_error: Option<String>,
}

#[derive(Default)]
struct QueueState {
    bodies: VecDeque<(Payload, bool)>,
    closed: bool,
    delivery: Delivery,
    busy: bool,
    /// The final snapshot had nothing new for this receiver of intervals: its final figures are
    /// the bodies before, delivered only if none of them was dropped.
    nothing_final: bool,
}

impl QueueState {
    /// What the receiver got, once the run stops waiting: what is still waiting (or being sent)
    /// will not be sent, and is dropped.
    fn settle(&mut self) -> Delivery {
        self.delivery.dropped += self.bodies.len() as u64 + u64::from(self.busy);
        self.bodies.clear();
        if self.nothing_final {
            // Delivered only if every body reached it (a 2xx from the URL named), not merely
            // because the last interval had nothing to add to bodies it refused.
            self.delivery.final_delivered = self.delivery.dropped == 0;
        }
        self.delivery.clone()
    }
}

/// One receiver's queue, shared by the outputs' thread and its push task.
#[derive(Default)]
struct Queue {
    state: Mutex<QueueState>,
    ready: Notify,
    idle: Notify,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue a body, dropping the oldest when full. `supersede`: drop every body still waiting
    /// (a cumulative receiver's final snapshot carries their totals).
    fn put(&self, body: Payload, last: bool, supersede: bool) {
        let mut state = self.lock();
        if supersede {
            state.delivery.superseded += state.bodies.len() as u64;
            state.bodies.clear();
        }
        if state.bodies.len() >= QUEUE {
            state.bodies.pop_front();
            state.delivery.dropped += 1;
        }
        state.bodies.push_back((body, last));
        drop(state);
        self.ready.notify_one();
    }

    fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }

    async fn next(&self) -> Option<(Payload, bool)> {
        loop {
            let notified = self.ready.notified();
            {
                let mut state = self.lock();
                if let Some(body) = state.bodies.pop_front() {
                    state.busy = true;
                    return Some(body);
                }
                state.busy = false;
                if state.closed {
                    drop(state);
                    self.idle.notify_waiters();
                    return None;
                }
            }
            self.idle.notify_waiters();
            notified.await;
        }
    }
}

/// One receiver as the outputs' thread sees it.
struct Outlet {
    receiver_name: String,
    encode: Box<dyn Encode>,
    queue: Arc<Queue>,
    /// Bodies of the intervals since the last push (a receiver of intervals, every few snapshots).
    pending: Option<Payload>,
}

/// The push thread and the receivers' queues.
pub struct Pusher {
    outlets: Vec<Outlet>,
    /// Snapshots per push (`--out-interval` ÷ the reporting interval).
    every: u64,
    seen: u64,
    runtime: tokio::runtime::Runtime,
}

impl Pusher {
    /// Start pushing to `receivers`, one push per `every` snapshots, with `token` as a bearer
    /// token when given.
    pub fn start(receivers: Vec<Receiver>, every: u64, token: Option<String>) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("loadhost-push")
            .enable_all()
            .build()?;
        let client = client().map_err(std::io::Error::other)?;
        let token: Option<Arc<str>> = token.map(Arc::from);
        let mut outlets = Vec::new();
        for receiver in receivers {
            let queue = Arc::new(Queue::default());
            queue.lock().delivery.name = receiver.name.clone();
            runtime.spawn(deliver(client.clone(), receiver.url, token.clone(), queue.clone()));
            outlets.push(Outlet { receiver_name: receiver.name, encode: receiver.encode, queue, pending: None });
        }
        Ok(Self { outlets, every: every.max(1), seen: 0, runtime })
    }

    /// An interval's snapshot: queued for each receiver when a push is due.
    pub fn offer(&mut self, snapshot: &Snapshot) {
        self.seen += 1;
        let due = self.seen.is_multiple_of(self.every);
        for outlet in &mut self.outlets {
            outlet.offer(snapshot, due);
        }
    }

    /// The run's last snapshot: queued for every receiver, then wait until each queue is empty,
    /// for at most `limit`. Says what each receiver got, and logs it.
    pub fn finish(self, last: &Snapshot, limit: Duration) -> Vec<Delivery> {
        let Self { mut outlets, runtime, .. } = self;
        for outlet in &mut outlets {
            outlet.offer(last, true);
            outlet.queue.close();
        }
        let queues: Vec<Arc<Queue>> = outlets.iter().map(|o| o.queue.clone()).collect();
        let drained = runtime.block_on(async {
            tokio::time::timeout(limit, async {
                for queue in &queues {
                    loop {
                        let idle = queue.idle.notified();
                        {
                            let state = queue.lock();
                            if state.bodies.is_empty() && !state.busy {
                                break;
                            }
                        }
                        idle.await;
                    }
                }
            })
            .await
            .is_ok()
        });
        let deliveries: Vec<Delivery> = outlets.iter().map(|outlet| outlet.queue.lock().settle()).collect();
        // The tasks still retrying are abandoned with the runtime.
        runtime.shutdown_background();
        for (outlet, d) in outlets.iter().zip(&deliveries) {
            log(&outlet.receiver_name, d, drained, limit);
        }
        deliveries
    }
}

/// The push client. It never follows a redirect: a receiver answering 307 to another host had
/// the body, and an InfluxDB `p=` password in the `Referer` reqwest adds on a redirect, sent
/// there, and that host's answer counted as delivered. A push is delivered by a 2xx from the URL
/// named, and no `Referer` is ever sent.
fn client() -> reqwest::Result<reqwest::Client> {
    // reqwest is built without a default crypto provider: use ring, as the rest of the host.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .connect_timeout(Duration::from_secs(3))
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .build()
}

fn log(name: &str, d: &Delivery, drained: bool, limit: Duration) {
    if d.final_delivered && d.dropped == 0 {
        tracing::info!("{name}: the final push was delivered ({} pushes, none dropped)", d.sent);
        return;
    }
    let why = d.last_error.as_deref().unwrap_or("no answer");
    let end = if d.final_delivered {
        "the final push was delivered".to_owned()
    } else if drained {
        format!("the final push failed ({why})")
    } else {
        format!("the final push did not complete within {limit:?} ({why})")
    };
    tracing::warn!("{name}: {end}; {} pushes delivered, {} dropped", d.sent, d.dropped);
}

impl Outlet {
    fn offer(&mut self, snapshot: &Snapshot, due: bool) {
        let cumulative = self.encode.cumulative();
        if !cumulative {
            if let Some(body) = self.encode.encode(snapshot) {
                self.pending = Some(match self.pending.take() {
                    Some(earlier) => self.encode.join(earlier, body.clone()).unwrap_or(body),
                    None => body,
                });
            }
            if due {
                match self.pending.take() {
                    Some(body) => self.queue.put(body, snapshot.last, false),
                    // Nothing in the intervals: the final figures are the bodies before.
                    None if snapshot.last => self.queue.lock().nothing_final = true,
                    None => {}
                }
            }
            return;
        }
        if due && let Some(body) = self.encode.encode(snapshot) {
            self.queue.put(body, snapshot.last, snapshot.last);
        }
    }
}

/// One receiver's task: POST each queued body, retrying with backoff.
async fn deliver(client: reqwest::Client, url: String, token: Option<Arc<str>>, queue: Arc<Queue>) {
    while let Some((body, last)) = queue.next().await {
        let mut tries = 0;
        loop {
            tries += 1;
            match post(&client, &url, token.as_deref(), &body).await {
                Ok(()) => {
                    let mut state = queue.lock();
                    state.delivery.sent += 1;
                    state.delivery.final_delivered |= last;
                    break;
                }
                Err(err) => {
                    tracing::debug!("push to {url} failed (try {tries}): {err}");
                    let mut state = queue.lock();
                    state.delivery.last_error = Some(err);
                    if tries >= ATTEMPTS {
                        state.delivery.dropped += 1;
                        break;
                    }
                }
            }
            tokio::time::sleep(backoff(tries)).await;
        }
    }
}

async fn post(client: &reqwest::Client, url: &str, token: Option<&str>, body: &Payload) -> Result<(), String> {
    let mut request = client.post(url).header("Content-Type", body.content_type).body(body.body.clone());
    for (name, value) in &body.headers {
        request = request.header(*name, *value);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    // `REQUEST_TIMEOUT` bounds the whole exchange, the body read included.
    let response = request.send().await.map_err(|err| one_line(&err))?;
    let status = response.status();
    if status.is_success() {
        // Its body is not read: dropped unread, at worst the connection is closed.
        return Ok(());
    }
    if status.is_redirection() {
        let location = response.headers().get(reqwest::header::LOCATION).map(|l| String::from_utf8_lossy(l.as_bytes()));
        return Err(reply::redirect(status, location.as_deref()));
    }
    let body = reply::error_body(response).await;
    Err(reply::error(status, &body))
}

/// An error with its sources on one line (reqwest hides "connection refused" in a source).
fn one_line(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(n: u8) -> Payload {
        Payload { content_type: "text/plain", headers: Vec::new(), body: vec![n] }
    }

    fn waiting(queue: &Queue) -> Vec<u8> {
        queue.lock().bodies.iter().map(|(p, _)| p.body[0]).collect()
    }

    #[test]
    fn a_full_queue_drops_its_oldest_body_and_counts_it() {
        let queue = Queue::default();
        for n in 0..(QUEUE as u8 + 3) {
            queue.put(body(n), false, false);
        }
        let bodies = waiting(&queue);
        assert_eq!(bodies.len(), QUEUE);
        assert_eq!(bodies[0], 3, "the three oldest went");
        assert_eq!(queue.lock().delivery.dropped, 3);
    }

    #[test]
    fn a_cumulative_final_body_replaces_what_still_waits() {
        let queue = Queue::default();
        for n in 0..5 {
            queue.put(body(n), false, false);
        }
        queue.put(body(9), true, true);
        assert_eq!(waiting(&queue), [9]);
        let delivery = queue.lock().delivery.clone();
        assert_eq!((delivery.superseded, delivery.dropped), (5, 0), "replaced, not lost");
    }

    /// A loopback server for one connection: reads the request head, answers `head`, then
    /// `chunk` over and over (a chunked body) until `limit` bytes or the client goes; returns
    /// the bytes of body it got out.
    fn answer_once(head: String, chunk: &'static [u8], limit: usize) -> (String, std::thread::JoinHandle<usize>) {
        use std::io::{Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/write?db=x&u=u&p=hunter2", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") && seen.len() < 1 << 20 {
                let n = stream.read(&mut buf).unwrap();
                assert!(n > 0, "the request head");
                seen.extend_from_slice(&buf[..n]);
            }
            stream.write_all(head.as_bytes()).unwrap();
            let mut sent = 0;
            let framed = [format!("{:x}\r\n", chunk.len()).as_bytes(), chunk, b"\r\n"].concat();
            while !chunk.is_empty() && sent < limit && stream.write_all(&framed).is_ok() {
                sent += chunk.len();
            }
            sent
        });
        (url, server)
    }

    fn post_once(url: &str) -> Result<(), String> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(post(&client().unwrap(), url, None, &body(1)))
    }

    #[test]
    fn an_endless_error_body_is_read_up_to_its_cap_then_dropped() {
        static CHUNK: [u8; 16 << 10] = [b'x'; 16 << 10];
        let head = "HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n".to_owned();
        let (url, server) = answer_once(head, &CHUNK, 1 << 30);
        let started = std::time::Instant::now();
        let err = post_once(&url).unwrap_err();
        let sent = server.join().unwrap();
        assert!(err.starts_with("HTTP 500 Internal Server Error: xxx") && err.ends_with("…"), "{err}");
        assert!(err.len() < 300, "one short line: {} bytes", err.len());
        // What the server got out before the dropped connection stopped it: the socket buffers,
        // never the 1 GiB it offered (before: all of it, read into memory).
        assert!(sent < 64 << 20, "{sent} bytes were taken from the server");
        assert!(started.elapsed() < REQUEST_TIMEOUT, "{:?}", started.elapsed());
    }

    #[test]
    fn a_redirect_is_not_followed_and_the_place_it_names_gets_nothing() {
        let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        elsewhere.set_nonblocking(true).unwrap();
        let to = format!("http://{}/leak", elsewhere.local_addr().unwrap());
        let head = format!("HTTP/1.1 307 Temporary Redirect\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n");
        let (url, server) = answer_once(head, b"", 0);
        let err = post_once(&url).unwrap_err();
        server.join().unwrap();
        assert_eq!(err, format!("answered 307 (a redirect, not followed: Location {to})"));
        let reached = elsewhere.accept();
        assert!(reached.is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock), "the redirect was followed");
    }

    #[test]
    fn a_final_snapshot_with_nothing_new_is_delivered_only_if_every_body_was() {
        let mut state = QueueState { nothing_final: true, ..QueueState::default() };
        state.delivery.sent = 3;
        assert!(state.settle().final_delivered, "every body reached it");
        let mut state = QueueState { nothing_final: true, ..QueueState::default() };
        state.delivery.dropped = 2;
        assert!(!state.settle().final_delivered, "bodies were refused (a 307): not delivered");
        let mut state = QueueState { nothing_final: true, busy: true, ..QueueState::default() };
        let settled = state.settle();
        assert_eq!((settled.final_delivered, settled.dropped), (false, 1), "one still being sent");
    }

    #[test]
    fn retries_back_off_to_a_ceiling() {
        let pauses: Vec<u64> = (1..=7).map(|n| backoff(n).as_millis() as u64).collect();
        assert_eq!(pauses, [250, 500, 1000, 2000, 4000, 4000, 4000]);
    }
}
