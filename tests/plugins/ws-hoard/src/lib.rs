//! A hostile plugin: each task opens WebSocket connections (`MODE=ws`, to `TARGET_URL`) or gRPC
//! streams (`MODE=grpc`, to `TARGET`) in a loop and keeps every one, never closing any, until
//! the host refuses one; the refusal fails the task. The host must stay within its bound per
//! instance, with flat memory, whatever the loop does.

use std::cell::RefCell;

use loadhost_sdk::config::env_or;
use loadhost_sdk::{Doer, Task, TaskResult, failed, grpc, ws};

struct Hoard;

/// At most this many opens per task, so the loop ends even if the host never refused.
const MOST: usize = 10_000;

thread_local! {
    static KEPT: RefCell<(Vec<ws::Connection>, Vec<grpc::Stream>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

impl Doer for Hoard {
    fn do_task(_task: Task) -> TaskResult {
        let grpc_mode = env_or("MODE", "ws".to_owned()) == "grpc";
        KEPT.with_borrow_mut(|(conns, streams)| {
            for _ in 0..MOST {
                let opened = if grpc_mode {
                    let target = env_or("TARGET", "http://127.0.0.1:8080".to_owned());
                    grpc::stream(&target, "/loadhost.target.Echo/Stream")
                        .open()
                        .map(|s| streams.push(s))
                        .map_err(|e| e.to_string())
                } else {
                    let url = env_or("TARGET_URL", "ws://127.0.0.1:8080/ws/echo".to_owned());
                    ws::connect(&url).map(|c| conns.push(c)).map_err(|e| e.to_string())
                };
                if let Err(why) = opened {
                    return Err(failed(format!("kept {} open, then: {why}", conns.len() + streams.len())));
                }
            }
            Err(failed(format!("the host let {MOST} connections open")))
        })
    }
}

loadhost_sdk::export!(Hoard);
