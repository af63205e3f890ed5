//! The `loadhost:plugin/websocket-async` import: the same connections as `websocket`, for tasks of
//! a `doer-async` plugin. Each call takes its session out of the store (`ws_lend`), waits with no
//! borrow of it, and puts it back, so the calls of many tasks of one instance wait at once.

use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use wasmtime::component::{Accessor, HasSelf, Resource};

use super::{Lent, WsConnection, ws_open};
use crate::bindings::loadhost::plugin::websocket as wit;
use crate::bindings_async::loadhost::plugin::websocket_async as api;
use crate::ctx::DoerCtx;

type WsResult<T> = wasmtime::Result<Result<T, wit::Error>>;
type Ctx<T> = Accessor<T, HasSelf<DoerCtx>>;

impl api::Host for DoerCtx {}

impl api::HostConnection for DoerCtx {
    fn drop(&mut self, conn: Resource<WsConnection>) -> wasmtime::Result<()> {
        self.ws_drop(conn)
    }
}

/// Take `conn`'s session for a call, counting the call as the instance's progress.
fn lend<T>(store: &Ctx<T>, conn: &Resource<WsConnection>) -> WsResult<Lent> {
    store.with(|mut access| {
        let ctx = access.get();
        ctx.progressed();
        ctx.ws_lend(conn)
    })
}

/// Put the session back as the call returns.
fn give_back<T>(store: &Ctx<T>, conn: &Resource<WsConnection>, lent: Lent) -> wasmtime::Result<()> {
    store.with(|mut access| {
        let ctx = access.get();
        ctx.progressed();
        ctx.ws_give_back(conn, lent)
    })
}

/// Run `call` on `conn`'s session, lent for the call.
macro_rules! on_session {
    ($store:expr, $conn:expr, |$lent:ident| $call:expr) => {{
        let mut $lent = match lend($store, &$conn)? {
            Ok(lent) => lent,
            Err(err) => return Ok(Err(err)),
        };
        let result = $call.await;
        give_back($store, &$conn, $lent)?;
        Ok(result)
    }};
}

impl<T: Send> api::HostConnectionWithStore<T> for HasSelf<DoerCtx> {
    async fn connect(
        store: &Ctx<T>,
        url: String,
        headers: Vec<(String, Vec<u8>)>,
        timeout_ms: Option<u32>,
    ) -> WsResult<Resource<WsConnection>> {
        let opener = store.with(|mut access| {
            let ctx = access.get();
            ctx.progressed();
            ctx.ws_opener()
        });
        let opener = match opener {
            Ok(opener) => opener,
            Err(err) => return Ok(Err(err)),
        };
        let started = Instant::now();
        let opened = ws_open(opener, url, headers, timeout_ms).await;
        store.with(|mut access| {
            let ctx = access.get();
            ctx.progressed();
            ctx.ws_opened(opened, started)
        })
    }

    async fn send_text(store: &Ctx<T>, conn: Resource<WsConnection>, text: String) -> WsResult<()> {
        on_session!(store, conn, |lent| lent.send(Message::text(text)))
    }

    async fn send_binary(store: &Ctx<T>, conn: Resource<WsConnection>, data: Vec<u8>) -> WsResult<()> {
        on_session!(store, conn, |lent| lent.send(Message::binary(data)))
    }

    async fn receive(store: &Ctx<T>, conn: Resource<WsConnection>, timeout_ms: Option<u32>) -> WsResult<wit::Message> {
        on_session!(store, conn, |lent| lent.receive(timeout_ms))
    }

    async fn ping(store: &Ctx<T>, conn: Resource<WsConnection>, timeout_ms: Option<u32>) -> WsResult<f64> {
        on_session!(store, conn, |lent| lent.ping(timeout_ms))
    }

    async fn close(store: &Ctx<T>, conn: Resource<WsConnection>, code: u16, reason: String) -> WsResult<()> {
        on_session!(store, conn, |lent| lent.close(code, reason))
    }
}
