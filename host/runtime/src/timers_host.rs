//! The host's sleeps: `loadhost:plugin/timers`, an async task's, awaited with no borrow of the
//! store (a blocking sleep would hold every task of the instance); and `loadhost:plugin/pause`, a
//! synchronous task's (k6's `sleep`), which holds only its own worker's instance.

use std::time::Duration;

use wasmtime::component::{Accessor, HasSelf};

use crate::bindings_async::loadhost::plugin::timers as api;
use crate::ctx::DoerCtx;

impl api::Host for DoerCtx {}

impl<T: Send> api::HostWithStore<T> for HasSelf<DoerCtx> {
    async fn sleep(store: &Accessor<T, Self>, ms: u32) -> wasmtime::Result<()> {
        store.with(|mut access| access.get().progressed());
        tokio::time::sleep(Duration::from_millis(u64::from(ms))).await;
        store.with(|mut access| access.get().progressed());
        Ok(())
    }
}

impl crate::bindings::loadhost::plugin::pause::Host for DoerCtx {
    async fn sleep(&mut self, ms: u32) {
        tokio::time::sleep(Duration::from_millis(u64::from(ms))).await;
    }
}
