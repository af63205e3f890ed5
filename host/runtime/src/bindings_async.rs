//! Host bindings of the `workload-async` world: a plugin exporting `doer-async`, whose tasks are
//! async functions running many at a time in one instance (component-model async). The imports it
//! shares with `workload` are the ones `bindings` generated (the same host code serves both);
//! `timers` and `websocket-async` are async functions given the store through an `Accessor`.

#![allow(missing_docs)]

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "workload-async",
    imports: {
        "loadhost:plugin/websocket-async": trappable,
        "loadhost:plugin/timers": trappable,
        "loadhost:plugin/http-async": trappable,
    },
    with: {
        "loadhost:plugin/types": crate::bindings::loadhost::plugin::types,
        "loadhost:plugin/metrics": crate::bindings::loadhost::plugin::metrics,
        "loadhost:plugin/http": crate::bindings::loadhost::plugin::http,
        "loadhost:plugin/websocket": crate::bindings::loadhost::plugin::websocket,
        "loadhost:plugin/grpc": crate::bindings::loadhost::plugin::grpc,
        "loadhost:plugin/websocket-async.connection": crate::ws::WsConnection,
    },
    exports: { default: async },
});
