//! A hostile async plugin: each task starts `FUTURES` (default 1,000,000) host calls at once —
//! `loadhost_sdk::sleep(SLEEP_MS)` (default 60,000) — and awaits them all. A shared instance's
//! host calls under way must stay bounded (the store's handle table), ending the instance with a
//! trap rather than growing the host without bound.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use loadhost_sdk::config::env_or;
use loadhost_sdk::{AsyncDoer, Task, TaskResult};

struct Flood;

/// Every future polled until it is done (a small `join_all`: no executor crate needed).
struct All(Vec<Option<Pin<Box<dyn Future<Output = ()>>>>>);

impl Future for All {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut pending = false;
        for slot in self.0.iter_mut() {
            if let Some(future) = slot {
                if future.as_mut().poll(cx).is_ready() {
                    *slot = None;
                } else {
                    pending = true;
                }
            }
        }
        if pending { Poll::Pending } else { Poll::Ready(()) }
    }
}

impl AsyncDoer for Flood {
    async fn do_task(_task: Task) -> TaskResult {
        let count: usize = env_or("FUTURES", 1_000_000);
        let pause = Duration::from_millis(env_or("SLEEP_MS", 60_000));
        let all = (0..count).map(|_| Some(Box::pin(loadhost_sdk::sleep(pause)) as Pin<Box<dyn Future<Output = ()>>>));
        All(all.collect()).await;
        Ok(())
    }
}

loadhost_sdk::export_async!(Flood);
