//! Built-in HTTP metrics, recorded by the host for every request a plugin makes, with k6's names
//! (see [`names`]). They are typed fields rather than generic series so that recording a request
//! costs one lock and no allocation.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::count::Tally;
use crate::endpoint::EndpointMap;
pub use crate::endpoint::{Endpoint, EndpointStats, endpoint_name};
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSample {
    /// The response status, or `None` when no response came.
    pub status: Option<u16>,
    /// From sending to the end of the response body (or the error).
    pub duration: Duration,
    /// Response body bytes read.
    pub body_bytes: u64,
    /// The endpoint it counts under ([`Endpoint::default_for`] or the plugin's name); `None`
    /// counts it only in the totals.
    pub endpoint: Option<Endpoint>,
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
    /// Per endpoint (absent from results files written before endpoints existed).
    #[serde(default, with = "crate::endpoint::rows", skip_serializing_if = "EndpointMap::is_empty")]
    pub endpoints: EndpointMap,
    /// Requests counted under the overflow endpoint because the endpoint cap was reached.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub endpoints_folded: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The statuses of a redirect response (a hop `send-opts` follows, or hands back with
/// `redirects: 0`): `http_reqs{redirect:true}` counts these.
pub const REDIRECT_STATUSES: [u16; 5] = [301, 302, 303, 307, 308];

/// Responses whose status is a redirect, out of a count by status.
pub fn redirects_of(by_status: &BTreeMap<u16, u64>) -> u64 {
    REDIRECT_STATUSES.iter().filter_map(|s| by_status.get(s)).sum()
}

impl HttpStats {
    /// Count one finished request.
    pub fn record(&mut self, sample: HttpSample) {
        let failed = sample.failed();
        self.requests += 1;
        if failed {
            self.failed += 1;
        }
        *self.by_status.entry(sample.status.unwrap_or(0)).or_default() += 1;
        self.duration.record(sample.duration);
        self.body_bytes += sample.body_bytes;
        if let Some(endpoint) = sample.endpoint {
            // The sample owns its key (an `Arc`), so even a new endpoint costs no key allocation.
            let stats = self.endpoints.entry(endpoint).or_default();
            stats.requests += 1;
            stats.failed += u64::from(failed);
            stats.duration.record(sample.duration);
        }
    }

    /// Whether `endpoint` has figures here already.
    pub fn has_endpoint(&self, endpoint: &Endpoint) -> bool {
        self.endpoints.contains_key(endpoint)
    }

    /// The figures of every endpoint whose name and method match (`None` matches any), merged.
    pub fn endpoint_matching(&self, name: Option<&str>, method: Option<&str>) -> EndpointStats {
        let mut out = EndpointStats::default();
        for (e, stats) in &self.endpoints {
            if name.is_none_or(|n| n == e.name()) && method.is_none_or(|m| m.eq_ignore_ascii_case(e.method())) {
                out.merge(stats);
            }
        }
        out
    }

    /// Whether nothing HTTP happened.
    pub fn is_empty(&self) -> bool {
        self.requests == 0 && self.denied == 0 && self.connections_opened == 0
    }

    /// Fold `other` into this.
    pub fn merge(&mut self, other: &HttpStats) {
        self.add_to(other, &mut Tally::default());
    }

    pub(crate) fn add_to(&mut self, other: &HttpStats, t: &mut Tally) {
        t.add(&mut self.requests, other.requests, "HTTP requests");
        t.add(&mut self.failed, other.failed, "failed HTTP requests");
        t.add(&mut self.denied, other.denied, "denied HTTP requests");
        for (status, n) in &other.by_status {
            t.add(self.by_status.entry(*status).or_default(), *n, format_args!("HTTP responses of status {status}"));
        }
        self.duration.add_to(&other.duration, t, "the HTTP duration histogram's count");
        t.add(&mut self.connections_opened, other.connections_opened, "HTTP connections opened");
        t.add(&mut self.bytes_sent, other.bytes_sent, "bytes sent");
        t.add(&mut self.bytes_received, other.bytes_received, "bytes received");
        t.add(&mut self.body_bytes, other.body_bytes, "response body bytes");
        t.add(&mut self.endpoints_folded, other.endpoints_folded, "requests folded into {overflow}");
        for (endpoint, stats) in &other.endpoints {
            self.merge_endpoint(endpoint, stats, t);
        }
    }

    /// Add one endpoint's figures; past the cap (merging results of several processes can pass
    /// it) a new endpoint folds into the overflow one.
    fn merge_endpoint(&mut self, endpoint: &Endpoint, stats: &EndpointStats, t: &mut Tally) {
        if let Some(mine) = self.endpoints.get_mut(endpoint) {
            return mine.add_to(stats, t);
        }
        let overflow = Endpoint::overflow();
        let own = self.endpoints.len() - usize::from(self.endpoints.contains_key(&overflow));
        if own < crate::cardinality::MAX_SERIES || *endpoint == overflow {
            self.endpoints.entry(endpoint.clone()).or_default().add_to(stats, t);
        } else {
            t.add(&mut self.endpoints_folded, stats.requests, "requests folded into {overflow}");
            self.endpoints.entry(overflow).or_default().add_to(stats, t);
        }
    }

    /// Empty it, keeping allocations.
    pub fn reset(&mut self) {
        let mut duration = std::mem::take(&mut self.duration);
        duration.reset();
        // Endpoints are dropped, not zeroed: a window lists only the endpoints it saw.
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
            stats.record(HttpSample { status, duration: Duration::from_millis(2), body_bytes: 10, endpoint: None });
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
        assert!(total.endpoints.is_empty(), "a reset window lists no endpoint");
    }

    fn sample(method: &str, name: &str, status: u16, ms: u64) -> HttpSample {
        let endpoint = Some(Endpoint::new(method, name));
        HttpSample { status: Some(status), duration: Duration::from_millis(ms), body_bytes: 0, endpoint }
    }

    #[test]
    fn endpoints_have_their_own_counts_and_distributions() {
        let mut stats = HttpStats::default();
        for i in 0..10 {
            stats.record(sample("GET", "GET /", 200, 1));
            stats.record(sample("GET", "GET /delay", if i == 0 { 503 } else { 200 }, 20 + i));
        }
        stats.record(HttpSample { status: None, duration: Duration::from_millis(1), body_bytes: 0, endpoint: None });
        assert_eq!(stats.requests, 21, "a request without an endpoint counts in the totals only");
        let fast = stats.endpoint_matching(Some("GET /"), None);
        let slow = stats.endpoint_matching(Some("GET /delay"), Some("get"));
        assert_eq!((fast.requests, fast.failed, slow.requests, slow.failed), (10, 0, 10, 1));
        assert_eq!(fast.duration.quantile_micros(0.5), 1000);
        assert!(slow.duration.quantile_micros(0.5) >= 20_000);
        let mut total = HttpStats::default();
        total.merge(&stats);
        total.merge(&stats);
        assert_eq!(total.endpoint_matching(Some("GET /delay"), None).duration.count(), 20);
        assert_eq!(total.endpoints.len(), 2);
    }

    #[test]
    fn stats_written_before_endpoints_existed_still_read_and_new_ones_round_trip() {
        let old = r#"{"requests":2,"failed":0,"denied":0,"by_status":{"200":2},"duration":"",
            "connections_opened":1,"bytes_sent":10,"bytes_received":20,"body_bytes":6}"#;
        let stats: HttpStats = serde_json::from_str(old).unwrap();
        assert_eq!((stats.requests, stats.endpoints.len(), stats.endpoints_folded), (2, 0, 0));
        let mut stats = HttpStats::default();
        stats.record(sample("POST", "login", 401, 3));
        let text = serde_json::to_string(&stats).unwrap();
        let back: HttpStats = serde_json::from_str(&text).unwrap();
        let login = &back.endpoints[&Endpoint::new("POST", "login")];
        assert_eq!((login.requests, login.failed, login.duration.count()), (1, 1, 1));
    }

    #[test]
    fn merging_past_the_cap_folds_new_endpoints_into_the_overflow_one() {
        let mut many = HttpStats::default();
        for i in 0..crate::cardinality::MAX_SERIES + 5 {
            many.record(sample("GET", &format!("GET /e{i}"), 200, 1));
        }
        let mut total = HttpStats::default();
        total.merge(&many);
        assert_eq!(total.endpoints.len(), crate::cardinality::MAX_SERIES + 1);
        assert_eq!(total.endpoints_folded, 5);
        assert_eq!(total.endpoints[&Endpoint::overflow()].requests, 5);
        // Known endpoints still add up past the cap.
        total.merge(&many);
        assert_eq!(total.endpoint_matching(Some("GET /e0"), None).requests, 2);
        assert_eq!(total.endpoints[&Endpoint::overflow()].requests, 10);
    }
}
