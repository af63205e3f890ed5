//! The `loadhost:plugin/timers` import: an async task's sleep, awaited with no borrow of the store
//! (a blocking sleep would hold every task of the instance).

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
