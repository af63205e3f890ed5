//! The built-in WebSocket and gRPC metrics (`loadhost:plugin/websocket` and `grpc`), with k6's
//! names. The host records them as plugin series (so every output and merge carries them, tags
//! and all); thresholds know them as built in.

use crate::kind::MetricKind;

/// WebSocket sessions started (handshakes completed).
pub const WS_SESSIONS: &str = "ws_sessions";
/// Milliseconds from connect to a completed handshake.
pub const WS_CONNECTING: &str = "ws_connecting";
/// Milliseconds from the handshake to the session's end (closed, failed or dropped).
pub const WS_SESSION_DURATION: &str = "ws_session_duration";
/// Data messages sent.
pub const WS_MSGS_SENT: &str = "ws_msgs_sent";
/// Data messages received.
pub const WS_MSGS_RECEIVED: &str = "ws_msgs_received";
/// Ping round trips, in milliseconds.
pub const WS_PING: &str = "ws_ping";
/// Connections refused by the allow-list (no connection made).
pub const WS_DENIED: &str = "ws_denied";
/// gRPC calls ended (unary and streams), tagged `status` (the gRPC code).
pub const GRPC_REQS: &str = "grpc_reqs";
/// Milliseconds per unary call.
pub const GRPC_REQ_DURATION: &str = "grpc_req_duration";
/// Streaming calls started.
pub const GRPC_STREAMS: &str = "grpc_streams";
/// Messages sent on streams.
pub const GRPC_STREAMS_MSGS_SENT: &str = "grpc_streams_msgs_sent";
/// Messages received on streams.
pub const GRPC_STREAMS_MSGS_RECEIVED: &str = "grpc_streams_msgs_received";
/// Calls refused by the allow-list (no connection made).
pub const GRPC_DENIED: &str = "grpc_denied";
/// The tag of `grpc_reqs` that carries the status code.
pub const STATUS_TAG: &str = "status";

/// Every name above with its kind: thresholds take them as built in, with their tags.
pub const PROTOCOL_METRICS: [(&str, MetricKind); 13] = [
    (WS_SESSIONS, MetricKind::Counter),
    (WS_CONNECTING, MetricKind::Trend),
    (WS_SESSION_DURATION, MetricKind::Trend),
    (WS_MSGS_SENT, MetricKind::Counter),
    (WS_MSGS_RECEIVED, MetricKind::Counter),
    (WS_PING, MetricKind::Trend),
    (WS_DENIED, MetricKind::Counter),
    (GRPC_REQS, MetricKind::Counter),
    (GRPC_REQ_DURATION, MetricKind::Trend),
    (GRPC_STREAMS, MetricKind::Counter),
    (GRPC_STREAMS_MSGS_SENT, MetricKind::Counter),
    (GRPC_STREAMS_MSGS_RECEIVED, MetricKind::Counter),
    (GRPC_DENIED, MetricKind::Counter),
];

/// Whether `name` is one of them.
pub fn is_protocol_metric(name: &str) -> bool {
    PROTOCOL_METRICS.iter().any(|(n, _)| *n == name)
}
