//! The `loadhost:plugin/http-async` import: `http`'s one-call requests for tasks of a `doer-async`
//! plugin. A request takes a set of the instance's kept-alive connections (`DoerCtx::spare`, or a
//! new empty one), waits with no borrow of the store, and gives the set back: the instance keeps as
//! many connections per target as it had requests under way at once. Each request under way holds
//! one of the instance's connection slots (as a WebSocket connection does), so their number is
//! bounded; there is no cookie jar (a shared instance's tasks belong to many workers).

use loadhost_metrics::ExpectedStatuses;
use wasmtime::component::{Accessor, HasSelf};

use super::{Ready, fetch_options, response_info, to_wit, wit_error};
use crate::bindings::loadhost::plugin::http;
use crate::bindings_async::loadhost::plugin::http_async as api;
use crate::ctx::DoerCtx;
use crate::http::Connections;

type Ctx<T> = Accessor<T, HasSelf<DoerCtx>>;
type Sent<R> = wasmtime::Result<Result<R, http::Error>>;

impl api::Host for DoerCtx {}

/// A request made ready, with a set of connections and one of the instance's slots; or why not.
fn begin<T>(store: &Ctx<T>, request: &http::Request) -> Result<(Ready, Connections, ExpectedStatuses), http::Error> {
    store.with(|mut access| {
        let ctx = access.get();
        ctx.progressed();
        if let Err(open) = ctx.slots.take() {
            return Err(http::Error::Network(format!(
                "the instance has {open} requests and connections under way, its cap: one must end first"
            )));
        }
        let connections = match ctx.spare.pop() {
            Some(connections) => connections,
            None => ctx.connections.none_yet(),
        };
        let ready = ctx.ready(&request.method, &request.url, &request.headers, &request.body);
        Ok((ready, connections, ctx.expected_statuses()))
    })
}

/// The request is over: its connections and its slot go back.
fn end(ctx: &mut DoerCtx, connections: Connections) {
    ctx.progressed();
    ctx.spare.push(connections);
    ctx.slots.give_back();
}

/// `send` and `send-with`.
async fn send_parts<T>(store: &Ctx<T>, request: http::Request, parts: http::ResponseParts) -> Sent<http::Response> {
    let (ready, mut connections, expected) = match begin(store, &request) {
        Ok(begun) => begun,
        Err(err) => return Ok(Err(err)),
    };
    let (fetched, url) = ready.fetch(&mut connections, request, expected).await;
    store.with(|mut access| {
        let ctx = access.get();
        end(ctx, connections);
        ctx.answered(&ready, &url, fetched.as_ref());
    });
    Ok(fetched.map(|response| to_wit(response, parts)).map_err(wit_error))
}

/// `send-opts` and `send-expecting` (`expected`: the instance's statuses when `None`).
async fn send_options<T>(
    store: &Ctx<T>,
    request: http::Request,
    options: http::RequestOptions,
    expected: Option<ExpectedStatuses>,
) -> Sent<http::ResponseInfo> {
    let (ready, mut connections, instance_expected) = match begin(store, &request) {
        Ok(begun) => begun,
        Err(err) => return Ok(Err(err)),
    };
    let (options, parts, _cookies) = fetch_options(options, expected.unwrap_or(instance_expected));
    let asked = request.url.clone();
    let fetched = ready.fetch_following(&mut connections, None, request, &options).await;
    Ok(store.with(|mut access| {
        let ctx = access.get();
        end(ctx, connections);
        response_info(ctx, &ready, &asked, fetched, parts)
    }))
}

impl<T: Send> api::HostWithStore<T> for HasSelf<DoerCtx> {
    async fn send(store: &Ctx<T>, request: http::Request) -> Sent<http::Response> {
        send_parts(store, request, http::ResponseParts { headers: true, body: true }).await
    }

    async fn send_with(store: &Ctx<T>, request: http::Request, parts: http::ResponseParts) -> Sent<http::Response> {
        send_parts(store, request, parts).await
    }

    async fn send_opts(
        store: &Ctx<T>,
        request: http::Request,
        options: http::RequestOptions,
    ) -> Sent<http::ResponseInfo> {
        send_options(store, request, options, None).await
    }

    async fn send_expecting(
        store: &Ctx<T>,
        request: http::Request,
        options: http::RequestOptions,
        statuses: http::StatusRanges,
    ) -> Sent<http::ResponseInfo> {
        send_options(store, request, options, Some(ExpectedStatuses::from_ranges(&statuses))).await
    }
}
