//! A hostile plugin that makes the host hold things for it; the host must stay within its bounds
//! per instance, with flat memory, whatever it does. `MODE`:
//!
//! - `ws` (the default) or `grpc`: each task opens WebSocket connections or gRPC streams (to
//!   `TARGET_URL`, a `ws://` or an `http://` one) in a loop and keeps every one, never closing
//!   any, until the host refuses one; the refusal fails the task.
//! - `ping`: each task pings the worker's one connection to `TARGET_URL` with no timeout. Against
//!   the target's `/ws/flood`, which never answers a ping, the host keeps every message that
//!   arrives meanwhile for `receive`; a failed ping fails the task.
//! - `partial`: each task opens `CONNECTIONS` (default 64) connections to `TARGET_URL` and waits
//!   `RECEIVE_MS` (default 200) on each for a message, keeping them all. Against the target's
//!   `/ws/partial`, which sends only part of a large frame, each connection holds a message half
//!   read. Any error other than the expected timeout fails the task. With `CLOSE=1` the task then
//!   closes every connection it kept (against a peer that never answers a close).
//! - `grpc-send`: each task opens `STREAMS` (default 8) bidirectional streams to the echo at
//!   `TARGET_URL` and sends `MESSAGES` (default 8) messages of `SIZE` bytes (default 4 MiB) on
//!   each, never receiving an echo, keeping them all. A failed send fails the task with the stream's status.

use std::cell::RefCell;
use std::time::Duration;

use loadhost_sdk::config::env_or;
use loadhost_sdk::{Doer, Task, TaskResult, failed, grpc, ws};

struct Hoard;

/// At most this many opens per task, so the loop ends even if the host never refused.
const MOST: usize = 10_000;

thread_local! {
    static KEPT: RefCell<(Vec<ws::Connection>, Vec<grpc::Stream>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

fn target_url() -> String {
    env_or("TARGET_URL", "ws://127.0.0.1:8080/ws/echo".to_owned())
}

/// The gRPC modes' server: the same option, an `http://` URL.
fn grpc_target() -> String {
    env_or("TARGET_URL", "http://127.0.0.1:8080".to_owned())
}

/// `ws` and `grpc`: open until refused.
fn hoard(grpc_mode: bool) -> TaskResult {
    KEPT.with_borrow_mut(|(conns, streams)| {
        for _ in 0..MOST {
            let opened = if grpc_mode {
                grpc::stream(&grpc_target(), "/loadhost.target.Echo/Stream")
                    .open()
                    .map(|s| streams.push(s))
                    .map_err(|e| e.to_string())
            } else {
                ws::connect(&target_url()).map(|c| conns.push(c)).map_err(|e| e.to_string())
            };
            if let Err(why) = opened {
                return Err(failed(format!("kept {} open, then: {why}", conns.len() + streams.len())));
            }
        }
        Err(failed(format!("the host let {MOST} connections open")))
    })
}

/// `ping`: one ping without a timeout on the worker's connection.
fn ping() -> TaskResult {
    KEPT.with_borrow_mut(|(conns, _)| {
        if conns.is_empty() {
            conns.push(ws::connect(&target_url()).map_err(|e| failed(e.to_string()))?);
        }
        let pinged = conns[0].ping(None);
        pinged.map(|_| ()).map_err(|e| {
            // A connection that failed is forgotten, so the next task connects again.
            if e.is_fatal() {
                conns.clear();
            }
            failed(format!("ping: {e}"))
        })
    })
}

/// `grpc-send`: streams whose echoes are never read.
fn grpc_send() -> TaskResult {
    let target = grpc_target();
    let (count, messages): (usize, usize) = (env_or("STREAMS", 8), env_or("MESSAGES", 8));
    let message = vec![7u8; env_or("SIZE", 4 << 20)];
    KEPT.with_borrow_mut(|(_, streams)| {
        for _ in 0..count {
            let mut stream = grpc::stream(&target, "/loadhost.target.Echo/Stream")
                .open()
                .map_err(|e| failed(format!("after {} streams: {e}", streams.len())))?;
            for sent in 0..messages {
                if let Err(e) = stream.send(&message) {
                    // The status, after the echoes that came before it, says why the call ended.
                    let status = (0..1000)
                        .find_map(|_| match stream.receive(Some(Duration::from_secs(5))) {
                            Ok(Some(_)) => None,
                            Ok(None) => Some(e.clone()),
                            Err(status) => Some(status),
                        })
                        .unwrap_or(e);
                    return Err(failed(format!("after {} streams and {sent} messages: {status}", streams.len())));
                }
            }
            streams.push(stream);
        }
        Ok(())
    })
}

/// `partial`: many connections, each left holding what arrived of a message.
fn partial() -> TaskResult {
    let count: usize = env_or("CONNECTIONS", 64);
    let wait = Duration::from_millis(env_or("RECEIVE_MS", 200));
    KEPT.with_borrow_mut(|(conns, _)| {
        for _ in 0..count {
            let mut conn = ws::connect(&target_url()).map_err(|e| failed(format!("after {}: {e}", conns.len())))?;
            match conn.receive(Some(wait)) {
                Err(ws::WsError::Timeout) => conns.push(conn),
                Err(e) => return Err(failed(format!("after {} partly read: {e}", conns.len()))),
                Ok(_) => return Err(failed("a whole message came, which this peer should never send")),
            }
        }
        if env_or("CLOSE", false) {
            for (n, conn) in conns.drain(..).enumerate() {
                conn.close(1000, "done").map_err(|e| failed(format!("closing connection {n}: {e}")))?;
            }
        }
        Ok(())
    })
}

impl Doer for Hoard {
    fn do_task(_task: Task) -> TaskResult {
        match env_or("MODE", "ws".to_owned()).as_str() {
            "grpc" => hoard(true),
            "ping" => ping(),
            "grpc-send" => grpc_send(),
            "partial" => partial(),
            _ => hoard(false),
        }
    }
}

loadhost_sdk::export!(Hoard);
