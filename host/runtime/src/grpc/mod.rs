//! The `loadhost:plugin/grpc` import: unary calls and streaming calls the host owns, with raw
//! protobuf bytes in and out (the plugin encodes; the host needs no schema).
//!
//! - `wire`: framing, metadata and status as HTTP/2 carries them.
//! - `call`: the worker's HTTP/2 connections, and what drives one call.

mod call;
mod wire;

pub(crate) use self::call::Pool;

use std::time::Duration;

use http_body_util::Full;
use http_body_util::combinators::BoxBody;
use tokio::sync::mpsc;
use tokio::time::Instant;
use wasmtime::component::Resource;

use self::call::{Bounds, CallError, ChannelBody, Ended, Event, Unary};
use crate::bindings::loadhost::plugin::grpc as wit;
use crate::budget::{HeldBytes, OverBudget};
use crate::ctx::DoerCtx;
use crate::protocol_metrics as names;

/// Messages a stream may have in flight each way before `send` (or the server) waits.
const STREAM_BUFFER: usize = 16;

/// An open streaming call.
pub struct GrpcStream {
    /// The request body's sender; `None` after `close-send`.
    to_server: Option<mpsc::Sender<HeldBytes>>,
    events: mpsc::Receiver<Event>,
    task: tokio::task::JoinHandle<()>,
    /// How the call ended, once `receive` has seen its end.
    ended: Option<Ended>,
    /// Where a call dropped before its end is counted (by the plugin, or with its instance).
    metrics: loadhost_engine::MetricsHandle,
}

impl Drop for GrpcStream {
    fn drop(&mut self) {
        // Dropping the call resets its HTTP/2 stream; the connection stays for other calls.
        self.task.abort();
        if self.ended.is_none() {
            counted(&self.metrics, wire::code::CANCELLED);
        }
    }
}

/// One call ended with `code`: `grpc_reqs{status:CODE}`.
fn counted(metrics: &loadhost_engine::MetricsHandle, code: u32) {
    metrics.counter(names::GRPC_REQS.into(), 1, vec![(names::STATUS_TAG.to_owned(), code.to_string())]);
}

type GrpcResult<T> = wasmtime::Result<Result<T, wit::Error>>;

fn status(ended: Ended) -> wit::Error {
    wit::Error::Status(wit::Status { code: ended.code, message: ended.message, trailers: ended.trailers })
}

fn deadline(timeout_ms: Option<u32>) -> Option<Instant> {
    timeout_ms.map(|ms| Instant::now() + Duration::from_millis(u64::from(ms)))
}

/// A message to send the byte budget refused: the call ends as a gRPC client ends one that passed
/// a limit of its own, with RESOURCE_EXHAUSTED.
fn refused(over: &OverBudget) -> Ended {
    Ended { code: wire::code::RESOURCE_EXHAUSTED, message: over.to_string(), trailers: Vec::new() }
}

impl wit::Host for DoerCtx {
    async fn call(
        &mut self,
        target: String,
        method: String,
        metadata: wire::Metadata,
        message: Vec<u8>,
        timeout_ms: Option<u32>,
    ) -> GrpcResult<wit::Response> {
        let max = self.http_client.max_body();
        if message.len() as u64 > max {
            return Ok(Err(wit::Error::TooLarge(max)));
        }
        if let Err(denied) = self.grpc_allowed(&target) {
            return Ok(Err(denied));
        }
        let _entered = self.under_way.enter(format_args!("gRPC {target}{method}"));
        let framed = match HeldBytes::hold(&self.byte_budget, wire::frame(&message)) {
            Ok(framed) => framed,
            Err(over) => {
                let ended = refused(&over);
                self.grpc_counted(ended.code);
                return Ok(Err(status(ended)));
            }
        };
        let body = BoxBody::new(Full::new(framed));
        let request = match call::request(&target, &method, &metadata, timeout_ms, body) {
            Ok(request) => request,
            Err(err) => return Ok(Err(self.grpc_failed(err))),
        };
        let started = Instant::now();
        let bounds = Bounds { max, budget: self.byte_budget.clone() };
        let pool = self.grpc_pool();
        let mut unary = Unary::default();
        let ended = call::call(pool, request, deadline(timeout_ms), bounds, &mut unary).await;
        let Unary { headers, first, messages } = unary;
        self.http_client.drain_wire(&self.metrics);
        self.metrics.trend(names::GRPC_REQ_DURATION.into(), started.elapsed().as_secs_f64() * 1000.0, Vec::new());
        let ended = match ended {
            Ok(ended) if ended.code == wire::code::OK && messages != 1 => Ended {
                code: wire::code::INTERNAL,
                message: format!("a unary call answered with {messages} messages, not one"),
                trailers: ended.trailers,
            },
            Ok(ended) => ended,
            Err(err) => return Ok(Err(self.grpc_failed(err))),
        };
        self.grpc_counted(ended.code);
        if ended.code != wire::code::OK {
            return Ok(Err(status(ended)));
        }
        let message = first.map(|m| m.as_bytes().to_vec()).unwrap_or_default();
        Ok(Ok(wit::Response { message, headers, trailers: ended.trailers }))
    }
}

impl wit::HostStreamingCall for DoerCtx {
    async fn open(
        &mut self,
        target: String,
        method: String,
        metadata: wire::Metadata,
        timeout_ms: Option<u32>,
    ) -> GrpcResult<Resource<GrpcStream>> {
        if let Err(denied) = self.grpc_allowed(&target) {
            return Ok(Err(denied));
        }
        let (to_server, body) = mpsc::channel(STREAM_BUFFER);
        let request = match call::request(&target, &method, &metadata, timeout_ms, BoxBody::new(ChannelBody(body))) {
            Ok(request) => request,
            Err(err) => return Ok(Err(self.grpc_failed(err))),
        };
        if let Err(open) = self.slots.take() {
            return Ok(Err(wit::Error::TooManyConnections(open)));
        }
        let (events, from_call) = mpsc::channel(STREAM_BUFFER);
        let bounds = Bounds { max: self.http_client.max_body(), budget: self.byte_budget.clone() };
        let drive = call::drive(self.grpc_pool().clone(), request, deadline(timeout_ms), bounds, events);
        let task = tokio::spawn(drive);
        self.metrics.counter(names::GRPC_STREAMS.into(), 1, Vec::new());
        let stream = GrpcStream {
            to_server: Some(to_server),
            events: from_call,
            task,
            ended: None,
            metrics: self.metrics.clone(),
        };
        Ok(Ok(self.table_mut().push(stream)?))
    }

    async fn send(&mut self, stream: Resource<GrpcStream>, message: Vec<u8>) -> GrpcResult<()> {
        let max = self.http_client.max_body();
        if message.len() as u64 > max {
            return Ok(Err(wit::Error::TooLarge(max)));
        }
        let call = self.table_mut().get_mut(&stream)?;
        if let Some(ended) = &call.ended {
            return Ok(Err(status(ended.clone())));
        }
        let Some(to_server) = call.to_server.clone() else {
            return Ok(Err(wit::Error::InvalidRequest("send after close-send".into())));
        };
        let framed = match HeldBytes::hold(&self.byte_budget, wire::frame(&message)) {
            Ok(framed) => framed,
            Err(over) => return Ok(Err(self.grpc_cut(&stream, &over)?)),
        };
        let sent = to_server.send(framed).await;
        self.http_client.drain_wire(&self.metrics);
        if sent.is_err() {
            return Ok(Err(wit::Error::Network("the call has ended: receive gives its status".into())));
        }
        self.metrics.counter(names::GRPC_STREAMS_MSGS_SENT.into(), 1, Vec::new());
        Ok(Ok(()))
    }

    async fn close_send(&mut self, stream: Resource<GrpcStream>) -> GrpcResult<()> {
        self.table_mut().get_mut(&stream)?.to_server = None;
        Ok(Ok(()))
    }

    async fn receive(&mut self, stream: Resource<GrpcStream>, timeout_ms: Option<u32>) -> GrpcResult<Option<Vec<u8>>> {
        let limit = deadline(timeout_ms);
        let _entered = self.under_way.enter(format_args!("a gRPC stream's message (receive)"));
        loop {
            let call = self.table_mut().get_mut(&stream)?;
            match &call.ended {
                Some(ended) if ended.code == wire::code::OK => return Ok(Ok(None)),
                Some(ended) => return Ok(Err(status(ended.clone()))),
                None => {}
            }
            let event = match limit {
                Some(limit) => match tokio::time::timeout_at(limit, call.events.recv()).await {
                    Ok(event) => event,
                    Err(_) => return Ok(Err(wit::Error::Timeout)),
                },
                None => call.events.recv().await,
            };
            self.http_client.drain_wire(&self.metrics);
            match event {
                Some(Event::Message(message)) => {
                    self.metrics.counter(names::GRPC_STREAMS_MSGS_RECEIVED.into(), 1, Vec::new());
                    return Ok(Ok(Some(message.as_bytes().to_vec())));
                }
                Some(Event::End(Ok(ended))) => {
                    self.grpc_counted(ended.code);
                    self.slots.give_back();
                    self.table_mut().get_mut(&stream)?.ended = Some(ended);
                }
                Some(Event::End(Err(err))) => {
                    self.slots.give_back();
                    // Later calls on the stream get the same answer, as a status.
                    let code = if matches!(err, CallError::Denied(_)) {
                        wire::code::PERMISSION_DENIED
                    } else {
                        wire::code::UNAVAILABLE
                    };
                    let error = self.grpc_failed(err);
                    let message = match &error {
                        wit::Error::Network(why) | wit::Error::Denied(why) | wit::Error::InvalidRequest(why) => {
                            why.clone()
                        }
                        _ => String::new(),
                    };
                    self.table_mut().get_mut(&stream)?.ended = Some(Ended { code, message, trailers: Vec::new() });
                    return Ok(Err(error));
                }
                None => return Ok(Err(wit::Error::Network("the call's task ended without a status".into()))),
            }
        }
    }

    async fn trailers(&mut self, stream: Resource<GrpcStream>) -> wasmtime::Result<wire::Metadata> {
        Ok(self.table_mut().get(&stream)?.ended.as_ref().map(|e| e.trailers.clone()).unwrap_or_default())
    }

    async fn drop(&mut self, stream: Resource<GrpcStream>) -> wasmtime::Result<()> {
        let call = self.table_mut().delete(stream)?;
        if call.ended.is_none() {
            // Counted as cancelled as it drops.
            self.slots.give_back();
        }
        Ok(())
    }
}

impl DoerCtx {
    /// The worker's gRPC connections, made on first use.
    fn grpc_pool(&mut self) -> &Pool {
        self.grpc.get_or_insert_with(|| call::pool(&self.http_client))
    }

    /// Whether the target's host is on the allow-list; a refusal counts in `grpc_denied`.
    fn grpc_allowed(&mut self, target: &str) -> Result<(), wit::Error> {
        let Ok(uri) = target.parse::<http::Uri>() else {
            return Ok(());
        };
        let Some(host) = uri.host() else {
            return Ok(());
        };
        let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
        if self.http_client.allows(host, port) {
            return Ok(());
        }
        self.metrics.counter(names::GRPC_DENIED.into(), 1, Vec::new());
        Err(wit::Error::Denied(self.http_client.denied(host, port)))
    }

    /// A call failed before its status: counted (a network failure as status 14), told.
    fn grpc_failed(&mut self, err: CallError) -> wit::Error {
        match err {
            CallError::Invalid(why) => wit::Error::InvalidRequest(why),
            CallError::Denied(why) => {
                self.metrics.counter(names::GRPC_DENIED.into(), 1, Vec::new());
                wit::Error::Denied(why)
            }
            CallError::Network(why) => {
                self.grpc_counted(wire::code::UNAVAILABLE);
                wit::Error::Network(why)
            }
        }
    }

    /// One call ended with `code`.
    fn grpc_counted(&mut self, code: u32) {
        counted(&self.metrics, code);
    }

    /// End a stream the byte budget refused a message of: its call is cancelled (what it holds is
    /// let go), counted with RESOURCE_EXHAUSTED, and later calls on it get the same status.
    fn grpc_cut(&mut self, stream: &Resource<GrpcStream>, over: &OverBudget) -> wasmtime::Result<wit::Error> {
        tracing::debug!("a gRPC stream failed: {over}");
        let ended = refused(over);
        self.grpc_counted(ended.code);
        self.slots.give_back();
        let call = self.table_mut().get_mut(stream)?;
        call.task.abort();
        call.to_server = None;
        call.ended = Some(ended.clone());
        // Messages already in are let go with the call.
        call.events.close();
        while call.events.try_recv().is_ok() {}
        Ok(status(ended))
    }
}
