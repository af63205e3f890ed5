//! Built-in HTTP metrics, recorded by the host for every request a plugin makes, with k6's names
//! (see [`crate::catalogue::names`]). They are typed fields rather than generic series so that recording a request
//! costs one lock and no allocation.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::count::Tally;
use crate::endpoint::EndpointMap;
pub use crate::endpoint::{Endpoint, EndpointStats, endpoint_name};
use crate::histogram::LatencyHistogram;
use crate::phases::{PhaseHistograms, PhaseTimes, RequestClock};

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
    /// Whether it counts in `http_req_failed`: no response came, or a status the request did not
    /// expect ([`ExpectedStatuses`]).
    pub failed: bool,
    /// Where its time went, when the host saw every instant (the one-call path, with a response).
    pub phases: Option<PhaseTimes>,
}

impl HttpSample {
    /// A finished request judged by the default rule (k6's): failed when no response came or
    /// its status is 400 or more.
    pub fn new(status: Option<u16>, duration: Duration, body_bytes: u64, endpoint: Option<Endpoint>) -> Self {
        let failed = ExpectedStatuses::default().failed(status);
        Self { status, duration, body_bytes, endpoint, failed, phases: None }
    }

    /// A request with a response whose instants the host read: its phases, and its duration from
    /// the same instants (sending + waiting + receiving).
    pub fn timed(status: u16, clock: &RequestClock, body_bytes: u64, endpoint: Option<Endpoint>) -> Self {
        let phases = clock.phases();
        Self { phases: Some(phases), ..Self::new(Some(status), phases.duration(), body_bytes, endpoint) }
    }

    /// The same request judged by the statuses it expected instead (`None`: the default rule).
    pub fn expecting(mut self, expected: Option<&ExpectedStatuses>) -> Self {
        if let Some(expected) = expected {
            self.failed = expected.failed(self.status);
        }
        self
    }
}

/// The response statuses a request expects (k6's `expectedStatuses`): a response with one of
/// them does not count in `http_req_failed`; any other status does, and so does a request with no
/// response. The default is k6's rule, every status below 400. A set of the statuses 0–1023 (a
/// status is three digits), 128 bytes, copied rather than shared so that judging a request takes
/// no lock.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ExpectedStatuses {
    bits: [u64; 16],
}

impl ExpectedStatuses {
    /// The statuses in the inclusive ranges `(from, to)`; no range at all is the default (below
    /// 400), and a range whose `from` is above its `to` holds nothing.
    pub fn from_ranges(ranges: &[(u16, u16)]) -> Self {
        if ranges.is_empty() {
            return Self::default();
        }
        let mut set = Self { bits: [0; 16] };
        for &(from, to) in ranges {
            for status in from..=to.min(1023) {
                set.bits[usize::from(status / 64)] |= 1 << (status % 64);
            }
        }
        set
    }

    /// Whether a response with `status` is expected.
    pub fn expects(&self, status: u16) -> bool {
        let word = self.bits.get(usize::from(status / 64)).copied().unwrap_or(0);
        word & (1 << (status % 64)) != 0
    }

    /// Whether a request that got `status` (`None`: no response) failed.
    pub fn failed(&self, status: Option<u16>) -> bool {
        status.is_none_or(|s| !self.expects(s))
    }
}

impl Default for ExpectedStatuses {
    /// k6's rule: every status below 400.
    fn default() -> Self {
        let mut bits = [0; 16];
        // 400 = 6 × 64 + 16: six whole words, and the 16 low bits of the seventh.
        bits[..6].fill(u64::MAX);
        bits[6] = (1 << 16) - 1;
        Self { bits }
    }
}

impl std::fmt::Debug for ExpectedStatuses {
    /// As ranges: `ExpectedStatuses[0-399]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut ranges = Vec::new();
        let mut status = 0u16;
        while status < 1024 {
            if self.expects(status) {
                let from = status;
                while status < 1023 && self.expects(status + 1) {
                    status += 1;
                }
                ranges.push(if from == status { from.to_string() } else { format!("{from}-{status}") });
            }
            status += 1;
        }
        write!(f, "ExpectedStatuses[{}]", ranges.join(","))
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
    /// Where requests' time went (absent from results files written before phases existed).
    #[serde(default, skip_serializing_if = "PhaseHistograms::is_empty")]
    pub phases: PhaseHistograms,
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
        let failed = sample.failed;
        self.requests += 1;
        if failed {
            self.failed += 1;
        }
        *self.by_status.entry(sample.status.unwrap_or(0)).or_default() += 1;
        self.duration.record(sample.duration);
        if let Some(phases) = &sample.phases {
            self.phases.record(phases);
        }
        self.body_bytes += sample.body_bytes;
        if let Some(endpoint) = sample.endpoint {
            // The sample owns its key (an `Arc`), so even a new endpoint costs no key allocation.
            let stats = self.endpoints.entry(endpoint).or_default();
            stats.requests += 1;
            stats.failed += u64::from(failed);
            stats.duration.record(sample.duration);
            if let Some(phases) = &sample.phases {
                stats.phases.record(phases);
            }
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
        self.phases.add_to(&other.phases, t);
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
        let mut phases = std::mem::take(&mut self.phases);
        phases.reset();
        // Endpoints are dropped, not zeroed: a window lists only the endpoints it saw.
        *self = HttpStats { duration, phases, ..HttpStats::default() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_follow_k6s_rule_and_statuses_are_counted() {
        let mut stats = HttpStats::default();
        for status in [Some(200), Some(204), Some(399), Some(400), Some(503), None] {
            stats.record(HttpSample::new(status, Duration::from_millis(2), 10, None));
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

    #[test]
    fn expected_statuses_decide_what_failed() {
        let default = ExpectedStatuses::default();
        assert_eq!(format!("{default:?}"), "ExpectedStatuses[0-399]");
        assert!(default.expects(399) && !default.expects(400) && default.failed(None));
        let expected = ExpectedStatuses::from_ranges(&[(200, 299), (404, 404)]);
        assert_eq!(format!("{expected:?}"), "ExpectedStatuses[200-299,404]");
        for (status, failed) in
            [(Some(200), false), (Some(404), false), (Some(302), true), (Some(500), true), (None, true)]
        {
            assert_eq!(expected.failed(status), failed, "{status:?}");
        }
        assert_eq!(ExpectedStatuses::from_ranges(&[]), default, "no range: the default");
        assert_eq!(format!("{:?}", ExpectedStatuses::from_ranges(&[(500, 400)])), "ExpectedStatuses[]");
        assert!(ExpectedStatuses::from_ranges(&[(1000, u16::MAX)]).expects(1023), "capped, not overflowing");
        assert!(!ExpectedStatuses::from_ranges(&[(0, u16::MAX)]).expects(u16::MAX));

        let mut stats = HttpStats::default();
        for status in [200, 404, 404, 500] {
            let sample = HttpSample::new(Some(status), Duration::from_millis(1), 0, None);
            stats.record(sample.expecting(Some(&expected)));
        }
        stats.record(HttpSample::new(Some(404), Duration::from_millis(1), 0, None).expecting(None));
        assert_eq!((stats.requests, stats.failed), (5, 2), "the 500, and the 404 judged by the default rule");
    }

    fn sample(method: &str, name: &str, status: u16, ms: u64) -> HttpSample {
        let endpoint = Some(Endpoint::new(method, name));
        HttpSample::new(Some(status), Duration::from_millis(ms), 0, endpoint)
    }

    #[test]
    fn endpoints_have_their_own_counts_and_distributions() {
        let mut stats = HttpStats::default();
        for i in 0..10 {
            stats.record(sample("GET", "GET /", 200, 1));
            stats.record(sample("GET", "GET /delay", if i == 0 { 503 } else { 200 }, 20 + i));
        }
        stats.record(HttpSample::new(None, Duration::from_millis(1), 0, None));
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

    /// A timed request records its phases in the totals and its endpoint's, and its duration is
    /// the phases' sending + waiting + receiving; results files carry them and read old ones.
    #[test]
    fn timed_requests_record_phases_whose_sum_is_the_duration() {
        let called = std::time::Instant::now();
        let at = |us: u64| called + Duration::from_micros(us);
        let clock = RequestClock {
            called,
            queued: Duration::ZERO,
            connect: None,
            ready: at(40),
            sent: at(55),
            head: at(50_055),
            end: at(50_090),
        };
        let sample = HttpSample::timed(200, &clock, 3, Some(Endpoint::new("GET", "GET /delay")));
        assert_eq!(sample.duration, Duration::from_micros(50_050), "ready to body end");
        let phases = sample.phases.expect("timed");
        assert_eq!(sample.duration, phases.sending + phases.waiting + phases.receiving);
        let mut stats = HttpStats::default();
        stats.record(sample);
        stats.record(HttpSample::new(None, Duration::from_millis(1), 0, None));
        assert_eq!((stats.duration.count(), stats.phases.waiting.count(), stats.phases.connecting.count()), (2, 1, 0));
        let e = stats.endpoint_matching(Some("GET /delay"), None);
        assert_eq!(e.phases.waiting.quantile_micros(0.5), stats.phases.waiting.quantile_micros(0.5));
        let back: HttpStats = serde_json::from_str(&serde_json::to_string(&stats).unwrap()).unwrap();
        assert_eq!(back.phases.blocked.count(), 1);
        assert_eq!(back.endpoint_matching(Some("GET /delay"), None).phases.receiving.count(), 1);
        let mut total = HttpStats::default();
        total.merge(&back);
        total.merge(&back);
        assert_eq!(total.phases.sending.count(), 2);
        total.reset();
        assert!(total.phases.is_empty());
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
