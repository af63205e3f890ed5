//! The built-in WebSocket and gRPC metrics (`loadhost:plugin/websocket` and `grpc`), with k6's
//! names ([`crate::catalogue::names`]`::WS_*`, `GRPC_*`). The host records them as plugin series
//! (so every output and merge carries them, tags and all); the catalogue knows them as built in.

/// The tag of `grpc_reqs` that carries the status code.
pub const STATUS_TAG: &str = "status";
