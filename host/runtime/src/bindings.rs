//! Host bindings generated from `wit/plugin.wit`: exports are called asynchronously (a task may
//! wait on I/O while other workers run); imports are plain synchronous functions (recording a
//! metric never waits), except `http.send` and its siblings, which await the network.

#![allow(missing_docs)]

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "workload",
    imports: {
        "loadhost:plugin/http.send": async,
        "loadhost:plugin/http.send-with": async,
        "loadhost:plugin/http.send-opts": async,
    },
    exports: { default: async },
});

pub use loadhost::plugin::types::{Task, TaskError};
