//! Built-in HTTP metrics, recorded by the host for every request a plugin makes, with k6's names
//! (see [`names`]). They are typed fields rather than generic series so that recording a request
//! costs one lock and no allocation.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::histogram::LatencyHistogram;

/// Metric names, as they appear in the summary JSON and in threshold expressions.
pub mod names {
    /// Requests sent (counter, tagged `status`).
    pub const HTTP_REQS: &str = "http_reqs";
    /// Request duration from sending to the end of the response body (trend, ms).
    pub const HTTP_REQ_DURATION: &str = "http_req_duration";
    /// Share of requests that failed: no response, or a status of 400 or more (rate).
    pub const HTTP_REQ_FAILED: &str = "http_req_failed";
    /// Requests refused by the allow-list without a connection (counter).
    pub const HTTP_DENIED: &str = "http_denied";
    /// TCP connections opened by the pooled client (counter).
    pub const HTTP_CONNECTIONS_OPENED: &str = "http_connections_opened";
    /// Response counts by status code (0: no response).
    pub const HTTP_STATUS: &str = "http_status";
    /// Bytes written to sockets, TLS included (counter).
    pub const DATA_SENT: &str = "data_sent";
    /// Bytes read from sockets, TLS included (counter).
    pub const DATA_RECEIVED: &str = "data_received";
    /// Response body bytes delivered to plugins (counter).
    pub const HTTP_RESPONSE_BYTES: &str = "http_response_bytes";
}

/// One finished request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpSample {
    /// The response status, or `None` when no response came.
    pub status: Option<u16>,
    /// From sending to the end of the response body (or the error).
    pub duration: Duration,
    /// Response body bytes read.
    pub body_bytes: u64,
}

impl HttpSample {
    /// k6's rule: a request failed when no response came or its status is 400 or more.
    pub fn failed(&self) -> bool {
        self.status.is_none_or(|s| s >= 400)
    }
}

/// HTTP figures over some span of the run.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct HttpStats {
    /// Requests that got a response or failed trying (denied ones excluded).
    pub requests: u64,
    /// Of those, failed ones.
    pub failed: u64,
    /// Requests refused by the allow-list.
    pub denied: u64,
    /// Responses by status (0: no response).
    pub by_status: BTreeMap<u16, u64>,
    /// Request durations.
    pub duration: LatencyHistogram,
    /// Connections opened.
    pub connections_opened: u64,
    /// Wire bytes written.
    pub bytes_sent: u64,
    /// Wire bytes read.
    pub bytes_received: u64,
    /// Response body bytes delivered.
    pub body_bytes: u64,
}

impl HttpStats {
    /// Count one finished request.
    pub fn record(&mut self, sample: HttpSample) {
        self.requests += 1;
        if sample.failed() {
            self.failed += 1;
        }
        *self.by_status.entry(sample.status.unwrap_or(0)).or_default() += 1;
        self.duration.record(sample.duration);
        self.body_bytes += sample.body_bytes;
    }

    /// Whether nothing HTTP happened.
    pub fn is_empty(&self) -> bool {
        self.requests == 0 && self.denied == 0 && self.connections_opened == 0
    }

    /// Fold `other` into this.
    pub fn merge(&mut self, other: &HttpStats) {
        self.requests += other.requests;
        self.failed += other.failed;
        self.denied += other.denied;
        for (status, n) in &other.by_status {
            *self.by_status.entry(*status).or_default() += n;
        }
        self.duration.merge(&other.duration);
        self.connections_opened += other.connections_opened;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.body_bytes += other.body_bytes;
    }

    /// Empty it, keeping allocations.
    pub fn reset(&mut self) {
        let mut duration = std::mem::take(&mut self.duration);
        duration.reset();
        *self = HttpStats { duration, ..HttpStats::default() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_follow_k6s_rule_and_statuses_are_counted() {
        let mut stats = HttpStats::default();
        for status in [Some(200), Some(204), Some(399), Some(400), Some(503), None] {
            stats.record(HttpSample { status, duration: Duration::from_millis(2), body_bytes: 10 });
        }
        assert_eq!((stats.requests, stats.failed, stats.body_bytes), (6, 3, 60));
        assert_eq!(stats.by_status.get(&0), Some(&1));
        assert_eq!(stats.by_status.get(&200), Some(&1));
        let mut total = HttpStats::default();
        total.merge(&stats);
        total.merge(&stats);
        assert_eq!((total.requests, total.failed, total.duration.count()), (12, 6, 12));
        total.reset();
        assert!(total.is_empty());
    }
}
