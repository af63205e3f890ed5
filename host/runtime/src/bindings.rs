//! Host bindings generated from `wit/plugin.wit`: exports are called asynchronously (a task may
//! wait on I/O while other workers run); imports are plain synchronous functions (recording a
//! metric never waits), except `http.send` and its siblings and the WebSocket and gRPC calls,
//! which await the network, and `pause.sleep`, which awaits the host's timer.

#![allow(missing_docs)]

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "workload",
    imports: {
        "loadhost:plugin/http.send": async,
        "loadhost:plugin/http.send-with": async,
        "loadhost:plugin/http.send-opts": async,
        "loadhost:plugin/http.send-expecting": async,
        "loadhost:plugin/pause.sleep": async,
        "loadhost:plugin/websocket": async | trappable,
        "loadhost:plugin/grpc": async | trappable,
    },
    with: {
        "loadhost:plugin/websocket.connection": crate::ws::WsConnection,
        "loadhost:plugin/grpc.streaming-call": crate::grpc::GrpcStream,
    },
    exports: { default: async },
});

pub use loadhost::plugin::types::{Task, TaskError};
