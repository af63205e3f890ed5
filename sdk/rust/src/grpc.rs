//! gRPC calls the host owns (`loadhost:plugin/grpc`): HTTP/2 connections (h2c on `http://`, TLS
//! on `https://`), framing, deadlines, status and trailers. Messages are protobuf bytes that the
//! plugin encodes and decodes itself (prost, for instance), so the host needs no schema. The host
//! records `grpc_reqs{status:CODE}`, `grpc_req_duration`, `grpc_streams` and the stream message
//! counts by itself.
//!
//! ```ignore
//! use loadhost_sdk::grpc;
//!
//! let reply = grpc::call("http://127.0.0.1:8080", "/loadhost.target.Echo/Unary", &request_bytes).send()?;
//! let mut stream = grpc::stream("http://127.0.0.1:8080", "/loadhost.target.Echo/Stream").open()?;
//! stream.send(&request_bytes)?;
//! let echoed = stream.receive(None)?;
//! ```

use std::time::Duration;

use crate::bindings::loadhost::plugin::grpc as host;

/// gRPC status codes a plugin commonly branches on.
pub mod code {
    /// The call ended well.
    pub const OK: u32 = 0;
    /// The deadline passed.
    pub const DEADLINE_EXCEEDED: u32 = 4;
    /// The server (or the connection) is unavailable: worth retrying.
    pub const UNAVAILABLE: u32 = 14;
}

/// How a call ended when it did not end well.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The gRPC status code.
    pub code: u32,
    /// Its message.
    pub message: String,
    /// The trailers.
    pub trailers: Vec<(String, Vec<u8>)>,
}

/// Why a call gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrpcError {
    /// The target, method or metadata could not be used.
    InvalidRequest(String),
    /// The host is not on the allow-list (`--allow-host`): no connection was made.
    Denied(String),
    /// The connection failed (the host counts it as status 14, UNAVAILABLE).
    Network(String),
    /// The worker already has this many streams (and WebSocket connections) open.
    TooManyConnections(u32),
    /// Nothing arrived within a `receive`'s timeout; the stream is still open.
    Timeout,
    /// The call ended with a status other than OK.
    Status(Status),
    /// A message over the host's cap (`--max-response-body`, in bytes).
    TooLarge(u64),
}

impl GrpcError {
    /// The gRPC status code this error stands for (14 for a network failure).
    pub fn code(&self) -> Option<u32> {
        match self {
            Self::Status(status) => Some(status.code),
            Self::Network(_) => Some(code::UNAVAILABLE),
            Self::Timeout => Some(code::DEADLINE_EXCEEDED),
            _ => None,
        }
    }
}

impl std::fmt::Display for GrpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InvalidRequest(why) => write!(f, "invalid gRPC call: {why}"),
            Self::Denied(why) => write!(f, "denied: {why}"),
            Self::Network(why) => write!(f, "gRPC: {why}"),
            Self::TooManyConnections(open) => write!(f, "too many streams: {open} open in this worker"),
            Self::Timeout => write!(f, "no gRPC message within the timeout"),
            Self::Status(s) => write!(f, "gRPC status {}: {}", s.code, s.message),
            Self::TooLarge(max) => write!(f, "a gRPC message over the host's cap of {max} bytes"),
        }
    }
}

impl std::error::Error for GrpcError {}

fn from_host(err: host::Error) -> GrpcError {
    match err {
        host::Error::InvalidRequest(why) => GrpcError::InvalidRequest(why),
        host::Error::Denied(why) => GrpcError::Denied(why),
        host::Error::Network(why) => GrpcError::Network(why),
        host::Error::TooManyConnections(open) => GrpcError::TooManyConnections(open),
        host::Error::Timeout => GrpcError::Timeout,
        host::Error::Status(s) => GrpcError::Status(Status { code: s.code, message: s.message, trailers: s.trailers }),
        host::Error::TooLarge(max) => GrpcError::TooLarge(max),
    }
}

/// A unary call's answer.
#[derive(Debug, Clone)]
pub struct Response {
    /// The response message (protobuf bytes).
    pub message: Vec<u8>,
    /// The response headers.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The trailers.
    pub trailers: Vec<(String, Vec<u8>)>,
}

/// A call being built: metadata and a deadline, then [`Call::send`] or [`Call::open`].
#[derive(Debug, Clone)]
pub struct Call {
    target: String,
    method: String,
    message: Vec<u8>,
    metadata: Vec<(String, Vec<u8>)>,
    timeout: Option<Duration>,
}

/// A unary call of `method` (`/package.Service/Method`) at `target` (`http://host:port`).
pub fn call(target: &str, method: &str, message: &[u8]) -> Call {
    Call {
        target: target.to_owned(),
        method: method.to_owned(),
        message: message.to_vec(),
        metadata: Vec::new(),
        timeout: None,
    }
}

/// A streaming call of `method` at `target`, to [`Call::open`].
pub fn stream(target: &str, method: &str) -> Call {
    call(target, method, &[])
}

impl Call {
    /// Add a metadata entry (a name ending in `-bin` carries raw bytes).
    pub fn metadata(mut self, name: &str, value: impl Into<Vec<u8>>) -> Self {
        self.metadata.push((name.to_owned(), value.into()));
        self
    }

    /// The call's deadline (sent as `grpc-timeout`, enforced by the host).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Make the unary call.
    pub fn send(self) -> Result<Response, GrpcError> {
        let response =
            host::call(&self.target, &self.method, &self.metadata, &self.message, crate::millis(self.timeout))
                .map_err(from_host)?;
        Ok(Response { message: response.message, headers: response.headers, trailers: response.trailers })
    }

    /// Start a streaming call.
    pub fn open(self) -> Result<Stream, GrpcError> {
        host::StreamingCall::open(&self.target, &self.method, &self.metadata, crate::millis(self.timeout))
            .map(Stream)
            .map_err(from_host)
    }
}

/// An open streaming call; dropping it before its end cancels it.
#[derive(Debug)]
pub struct Stream(host::StreamingCall);

impl Stream {
    /// Send one message.
    pub fn send(&mut self, message: &[u8]) -> Result<(), GrpcError> {
        self.0.send(message).map_err(from_host)
    }

    /// Say no more messages will be sent.
    pub fn close_send(&mut self) -> Result<(), GrpcError> {
        self.0.close_send().map_err(from_host)
    }

    /// The next message, waiting at most `timeout`; `None` once the server ended the call with OK.
    pub fn receive(&mut self, timeout: Option<Duration>) -> Result<Option<Vec<u8>>, GrpcError> {
        self.0.receive(crate::millis(timeout)).map_err(from_host)
    }

    /// The trailers, once [`Stream::receive`] has returned `None`.
    pub fn trailers(&self) -> Vec<(String, Vec<u8>)> {
        self.0.trailers()
    }
}
