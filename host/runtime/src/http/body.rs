//! The response body handed to the plugin: it measures the request when the body ends (or is
//! dropped unread), so `http_req_duration` covers sending, waiting and receiving, as in k6.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use loadhost_engine::MetricsHandle;
use loadhost_metrics::http::Endpoint;
use loadhost_metrics::{ExpectedStatuses, HttpSample};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

use super::WorkerHttp;

/// What is recorded once the body is done.
pub(crate) struct Pending {
    pub(crate) started: Instant,
    pub(crate) status: u16,
    /// The statuses the request expects (the instance's), which decide whether it failed.
    pub(crate) expected: ExpectedStatuses,
    /// The endpoint the request counts under.
    pub(crate) endpoint: Endpoint,
    pub(crate) metrics: MetricsHandle,
    pub(crate) client: Arc<WorkerHttp>,
    /// The per-host connection slot, held until the body is done.
    pub(crate) _permit: Option<OwnedSemaphorePermit>,
    /// The instance's slot for requests under way, held until the body is done.
    pub(crate) _under_way: OwnedSemaphorePermit,
}

/// A response body that records its request when it ends, and fails once it is larger than
/// `--max-response-body` (the plugin reads it in pieces, so the host never holds more than a piece).
pub(crate) struct TimedBody {
    inner: Incoming,
    pending: Option<Pending>,
    bytes: u64,
    limit: u64,
}

impl TimedBody {
    pub(crate) fn new(inner: Incoming, pending: Pending, limit: u64) -> Self {
        Self { inner, pending: Some(pending), bytes: 0, limit }
    }

    fn finish(&mut self, status: Option<u16>) {
        if let Some(p) = self.pending.take() {
            let sample = HttpSample::new(status, p.started.elapsed(), self.bytes, Some(p.endpoint));
            p.client.record(&p.metrics, sample.expecting(Some(&p.expected)));
        }
    }
}

impl Body for TimedBody {
    type Data = Bytes;
    type Error = wasmtime_wasi_http::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.bytes += data.len() as u64;
                    if this.bytes > this.limit {
                        if let Some(p) = &this.pending {
                            tracing::debug!("{}", p.client.shared.body_too_large());
                        }
                        this.finish(None);
                        return Poll::Ready(Some(Err(wasmtime_wasi_http::Error::HttpResponseBodySize(Some(
                            this.limit,
                        )))));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(err))) => {
                // The response broke off: it counts as a request without a (complete) response.
                this.finish(None);
                let err = if super::cut_short(&err) {
                    wasmtime_wasi_http::Error::HttpResponseIncomplete
                } else {
                    wasmtime_wasi_http::Error::Hyper(err)
                };
                Poll::Ready(Some(Err(err)))
            }
            Poll::Ready(None) => {
                let status = this.pending.as_ref().map(|p| p.status);
                this.finish(status);
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for TimedBody {
    fn drop(&mut self) {
        // A plugin may drop a body without reading it: the request still happened.
        let status = self.pending.as_ref().map(|p| p.status);
        self.finish(status);
    }
}
