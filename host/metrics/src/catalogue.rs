//! The catalogue of built-in metrics: every metric the host records (or the SDKs record for it),
//! one [`Metric`] each in [`CATALOGUE`] — its name, kind, unit, the tags a selector may put on it,
//! what it measures and where its value is kept ([`Quantity`]). Thresholds, `compare`, `inspect`,
//! declarations and the outputs look a built-in metric up here, and one reader turns a name into
//! a value ([`crate::reading`]), so a metric cannot mean one thing to a threshold and another to
//! `compare`.
//!
//! **Adding a built-in metric**: its name in [`names`], its entry in [`CATALOGUE`], and the line
//! that records it. One recorded as a series (as the WebSocket and gRPC metrics are:
//! [`Quantity::Series`]) needs nothing else: thresholds, `compare` (both inputs), merge, the
//! summary JSON, the terminal, HTML, JSON lines and OpenMetrics carry every series, tags and all.

use std::str::FromStr;

/// Every built-in metric's name, as thresholds, `compare` and the outputs spell it.
pub mod names {
    /// Scheduled time → a task's end (trend, ms): what a user of the target sees.
    pub const LATENCY_MS: &str = "latency_ms";
    /// A task's call → its end (trend, ms).
    pub const SERVICE_MS: &str = "service_ms";
    /// Scheduled time → a task's call (trend, ms): the time it waited for a worker.
    pub const WAIT_MS: &str = "wait_ms";
    /// Time a task waited for a gate permit (`--max-in-flight`) (trend, ms).
    pub const GATE_WAIT_MS: &str = "gate_wait_ms";
    /// Tasks that started executing (counter; compare only): `rate` is the achieved rate.
    pub const TASKS_STARTED: &str = "tasks_started";
    /// The share of ended tasks that did not pass (rate).
    pub const TASKS_NOT_PASSED: &str = "tasks_not_passed";
    /// The share of checks that passed (rate).
    pub const CHECKS: &str = "checks";
    /// The share of judged intervals in which the generator was saturated (rate).
    pub const GENERATOR_SATURATED: &str = "generator_saturated";
    /// The time the SDKs' `group` helpers measure per group (trend, ms; k6's name).
    pub const GROUP_DURATION: &str = "group_duration";
    /// Requests sent (counter, tagged `status`).
    pub const HTTP_REQS: &str = "http_reqs";
    /// Request duration from sending to the end of the response body (trend, ms).
    pub const HTTP_REQ_DURATION: &str = "http_req_duration";
    /// Waiting for a connection: the gate, a per-host cap, the pool, name resolution (trend, ms).
    pub const HTTP_REQ_BLOCKED: &str = "http_req_blocked";
    /// TCP connect, on requests that opened a connection (trend, ms).
    pub const HTTP_REQ_CONNECTING: &str = "http_req_connecting";
    /// TLS handshake, on requests that opened an https connection (trend, ms).
    pub const HTTP_REQ_TLS_HANDSHAKING: &str = "http_req_tls_handshaking";
    /// Writing the request (trend, ms).
    pub const HTTP_REQ_SENDING: &str = "http_req_sending";
    /// Sent to the first byte of the response (trend, ms).
    pub const HTTP_REQ_WAITING: &str = "http_req_waiting";
    /// First byte to the end of the response body (trend, ms).
    pub const HTTP_REQ_RECEIVING: &str = "http_req_receiving";
    /// Share of requests that failed: no response, or a status the request did not expect (by
    /// default, 400 or more; see [`crate::ExpectedStatuses`]) (rate).
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
}

use names::*;

/// What a threshold or rule compares: a statistic of a metric.
#[derive(Debug, Clone, PartialEq)]
pub enum Aggregate {
    /// A percentile, `p(99)` or `p(99.9)`.
    Percentile(f64),
    /// `avg` (or `mean`).
    Avg,
    /// `min`.
    Min,
    /// `max`.
    Max,
    /// `med` (the 50th percentile).
    Med,
    /// `count`.
    Count,
    /// `rate`: per second for counters, the share of true values for rates and checks.
    Rate,
    /// `value` of a gauge.
    Value,
}

/// The tag that picks a scenario's measurements rather than a series.
pub const SCENARIO_TAG: &str = "scenario";

/// The tag selecting redirect responses of `http_reqs` (`{redirect:true}`, or `false` for the rest).
pub const REDIRECT_TAG: &str = "redirect";

/// The tag that picks an HTTP endpoint by name (k6's `name`): `http_req_duration{name:login}`.
pub const ENDPOINT_NAME_TAG: &str = "name";

/// The tag that picks HTTP endpoints by request method: `http_reqs{method:POST}`.
pub const ENDPOINT_METHOD_TAG: &str = "method";

/// A metric's kind, which decides the aggregates a threshold may compare (as in k6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricKind {
    /// Values with a distribution: `p(N)`, `avg`, `min`, `max`, `med`, `count`.
    Trend,
    /// A running total: `count`, `rate` (per second).
    Counter,
    /// A share of true values: `rate`.
    Rate,
    /// The latest value: `value`.
    Gauge,
}

impl MetricKind {
    /// Whether a threshold or rule on a metric of this kind may ask for `aggregate`.
    pub fn allows(self, aggregate: &Aggregate) -> bool {
        match self {
            MetricKind::Trend => !matches!(aggregate, Aggregate::Rate | Aggregate::Value),
            MetricKind::Counter => matches!(aggregate, Aggregate::Count | Aggregate::Rate),
            MetricKind::Rate => matches!(aggregate, Aggregate::Rate),
            MetricKind::Gauge => matches!(aggregate, Aggregate::Value),
        }
    }

    /// The aggregates it allows, as an error message lists them.
    pub fn aggregates(self) -> &'static str {
        match self {
            MetricKind::Trend => "p(N), avg, min, max, med, count",
            MetricKind::Counter => "count, rate",
            MetricKind::Rate => "rate",
            MetricKind::Gauge => "value",
        }
    }

    /// The kind's name: `trend`, `counter`, `rate`, `gauge`.
    pub fn name(self) -> &'static str {
        match self {
            MetricKind::Trend => "trend",
            MetricKind::Counter => "counter",
            MetricKind::Rate => "rate",
            MetricKind::Gauge => "gauge",
        }
    }
}

impl FromStr for MetricKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "trend" => Ok(MetricKind::Trend),
            "counter" => Ok(MetricKind::Counter),
            "rate" | "check" => Ok(MetricKind::Rate),
            "gauge" => Ok(MetricKind::Gauge),
            other => Err(format!("unknown metric kind '{other}' (trend, counter, rate, gauge)")),
        }
    }
}

/// What a metric's values are counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds (durations).
    Millis,
    /// Events (tasks, requests, messages).
    Count,
    /// Bytes.
    Bytes,
    /// A share of 0.0..=1.0.
    Share,
}

/// A task's timing: one histogram each, per interval and per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// Scheduled time → end.
    Latency,
    /// Call → end.
    Service,
    /// Scheduled time → call.
    Wait,
    /// Waiting for a gate permit.
    GateWait,
}

impl Timing {
    /// Every timing, in the order outputs show them.
    pub const ALL: [Timing; 4] = [Timing::Latency, Timing::Service, Timing::Wait, Timing::GateWait];

    /// Its metric's name.
    pub fn name(self) -> &'static str {
        match self {
            Timing::Latency => LATENCY_MS,
            Timing::Service => SERVICE_MS,
            Timing::Wait => WAIT_MS,
            Timing::GateWait => GATE_WAIT_MS,
        }
    }

    /// Its name without the unit (`latency`), as the CSV's columns and the per-interval views
    /// prefix their figures.
    pub fn stem(self) -> &'static str {
        let name = self.name();
        name.strip_suffix("_ms").unwrap_or(name)
    }
}

/// One phase of an HTTP request (k6's names): one histogram each beside `http_req_duration`'s
/// (see [`crate::phases`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Waiting for a connection.
    Blocked,
    /// TCP connect.
    Connecting,
    /// TLS handshake.
    TlsHandshaking,
    /// Writing the request.
    Sending,
    /// Sent to the first byte of the response.
    Waiting,
    /// First byte to the end of the body.
    Receiving,
}

impl Phase {
    /// Every phase, in the order a request goes through them.
    pub const ALL: [Phase; 6] =
        [Phase::Blocked, Phase::Connecting, Phase::TlsHandshaking, Phase::Sending, Phase::Waiting, Phase::Receiving];

    /// Its metric's name.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Blocked => HTTP_REQ_BLOCKED,
            Phase::Connecting => HTTP_REQ_CONNECTING,
            Phase::TlsHandshaking => HTTP_REQ_TLS_HANDSHAKING,
            Phase::Sending => HTTP_REQ_SENDING,
            Phase::Waiting => HTTP_REQ_WAITING,
            Phase::Receiving => HTTP_REQ_RECEIVING,
        }
    }

    /// Its name without `http_req_` (`waiting`), as charts label it.
    pub fn stem(self) -> &'static str {
        let name = self.name();
        name.strip_prefix("http_req_").unwrap_or(name)
    }
}

/// Where a built-in metric's value is kept, so [`crate::reading`] knows what to ask a source for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// One of a task's timings.
    Timing(Timing),
    /// Tasks that started; per second over load-generation time.
    TasksStarted,
    /// Ended tasks that did not pass, as a share of ended tasks.
    TasksNotPassed,
    /// Check results, as a share that passed.
    Checks,
    /// The generator's verdicts, as the share of judged intervals it was saturated in.
    GeneratorSaturated,
    /// HTTP requests.
    HttpReqs,
    /// HTTP request durations.
    HttpReqDuration,
    /// One phase of HTTP requests.
    HttpPhase(Phase),
    /// Failed HTTP requests, as a share of requests.
    HttpReqFailed,
    /// HTTP requests refused by the allow-list.
    HttpDenied,
    /// Bytes written to sockets.
    DataSent,
    /// Bytes read from sockets.
    DataReceived,
    /// Recorded as a series (name and tags) among the plugin's: read like a plugin metric.
    Series,
    /// Shown in the summary's HTTP figures only; no threshold or rule reads it.
    Shown,
}

/// Which tags a selector (`METRIC{key:value}`) may put on a built-in metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tags {
    /// None.
    None,
    /// Any: it is recorded as series with tags (or, for `checks`, picks checks by tag).
    Any,
    /// An endpoint: `name`, `method` or both.
    Endpoint,
    /// An endpoint, or one `status:CODE`, or `redirect:true|false`.
    EndpointOrStatus,
}

/// One built-in metric.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// Its name ([`names`]).
    pub name: &'static str,
    /// Its kind.
    pub kind: MetricKind,
    /// Its unit.
    pub unit: Unit,
    /// Where its value is kept.
    pub quantity: Quantity,
    /// The tags a selector may name.
    pub tags: Tags,
    /// Whether thresholds take it (`tasks_started` is `compare`'s alone: the achieved rate needs
    /// the load-generation time a threshold does not have mid-run).
    pub thresholds: bool,
    /// What it measures, in one line (OpenMetrics' HELP, docs).
    pub help: &'static str,
}

const fn entry(name: &'static str, kind: MetricKind, unit: Unit, quantity: Quantity, help: &'static str) -> Metric {
    let tags = match quantity {
        Quantity::Series | Quantity::Checks => Tags::Any,
        Quantity::HttpReqs => Tags::EndpointOrStatus,
        Quantity::HttpReqDuration | Quantity::HttpReqFailed | Quantity::HttpPhase(_) => Tags::Endpoint,
        _ => Tags::None,
    };
    let thresholds = !matches!(quantity, Quantity::TasksStarted | Quantity::Shown);
    Metric { name, kind, unit, quantity, tags, thresholds, help }
}

use MetricKind::{Counter, Rate, Trend};
use Unit::{Bytes, Count, Millis, Share};

/// Every built-in metric.
pub const CATALOGUE: &[Metric] = &[
    entry(LATENCY_MS, Trend, Millis, Quantity::Timing(Timing::Latency), "Task latency, scheduled time to end"),
    entry(SERVICE_MS, Trend, Millis, Quantity::Timing(Timing::Service), "Task service time, call to end"),
    entry(WAIT_MS, Trend, Millis, Quantity::Timing(Timing::Wait), "Task wait, scheduled time to call"),
    entry(GATE_WAIT_MS, Trend, Millis, Quantity::Timing(Timing::GateWait), "Time tasks waited for a gate permit"),
    entry(TASKS_STARTED, Counter, Count, Quantity::TasksStarted, "Tasks that started executing"),
    entry(TASKS_NOT_PASSED, Rate, Share, Quantity::TasksNotPassed, "Share of ended tasks that did not pass"),
    entry(CHECKS, Rate, Share, Quantity::Checks, "Share of checks that passed"),
    entry(
        GENERATOR_SATURATED,
        Rate,
        Share,
        Quantity::GeneratorSaturated,
        "Share of intervals in which the generator was saturated",
    ),
    entry(GROUP_DURATION, Trend, Millis, Quantity::Series, "Time spent in each group"),
    entry(HTTP_REQS, Counter, Count, Quantity::HttpReqs, "HTTP requests the plugin made"),
    entry(HTTP_REQ_DURATION, Trend, Millis, Quantity::HttpReqDuration, "HTTP request duration, sent to body end"),
    // The phases of a request (k6's), in its order; duration is sending + waiting + receiving.
    entry(
        HTTP_REQ_BLOCKED,
        Trend,
        Millis,
        Quantity::HttpPhase(Phase::Blocked),
        "HTTP request waiting for a connection",
    ),
    entry(
        HTTP_REQ_CONNECTING,
        Trend,
        Millis,
        Quantity::HttpPhase(Phase::Connecting),
        "HTTP TCP connect, on requests that opened a connection",
    ),
    entry(
        HTTP_REQ_TLS_HANDSHAKING,
        Trend,
        Millis,
        Quantity::HttpPhase(Phase::TlsHandshaking),
        "HTTP TLS handshake, on requests that opened a connection",
    ),
    entry(HTTP_REQ_SENDING, Trend, Millis, Quantity::HttpPhase(Phase::Sending), "HTTP request writing the request"),
    entry(HTTP_REQ_WAITING, Trend, Millis, Quantity::HttpPhase(Phase::Waiting), "HTTP request sent to first byte"),
    entry(
        HTTP_REQ_RECEIVING,
        Trend,
        Millis,
        Quantity::HttpPhase(Phase::Receiving),
        "HTTP response first byte to body end",
    ),
    entry(
        HTTP_REQ_FAILED,
        Rate,
        Share,
        Quantity::HttpReqFailed,
        "Share of HTTP requests without a response or with an unexpected status",
    ),
    entry(HTTP_DENIED, Counter, Count, Quantity::HttpDenied, "HTTP requests refused by the allow-list"),
    entry(DATA_SENT, Counter, Bytes, Quantity::DataSent, "Bytes written to sockets, TLS included"),
    entry(DATA_RECEIVED, Counter, Bytes, Quantity::DataReceived, "Bytes read from sockets, TLS included"),
    entry(HTTP_CONNECTIONS_OPENED, Counter, Count, Quantity::Shown, "TCP connections the pooled HTTP client opened"),
    entry(HTTP_STATUS, Counter, Count, Quantity::Shown, "HTTP responses by status code (0: no response)"),
    entry(HTTP_RESPONSE_BYTES, Counter, Bytes, Quantity::Shown, "Response body bytes delivered to the plugin"),
    entry(WS_SESSIONS, Counter, Count, Quantity::Series, "WebSocket sessions started"),
    entry(WS_CONNECTING, Trend, Millis, Quantity::Series, "WebSocket connect to completed handshake"),
    entry(WS_SESSION_DURATION, Trend, Millis, Quantity::Series, "WebSocket handshake to session end"),
    entry(WS_MSGS_SENT, Counter, Count, Quantity::Series, "WebSocket data messages sent"),
    entry(WS_MSGS_RECEIVED, Counter, Count, Quantity::Series, "WebSocket data messages received"),
    entry(WS_PING, Trend, Millis, Quantity::Series, "WebSocket ping round trips"),
    entry(WS_DENIED, Counter, Count, Quantity::Series, "WebSocket connections refused by the allow-list"),
    entry(GRPC_REQS, Counter, Count, Quantity::Series, "gRPC calls ended, by status"),
    entry(GRPC_REQ_DURATION, Trend, Millis, Quantity::Series, "gRPC unary call duration"),
    entry(GRPC_STREAMS, Counter, Count, Quantity::Series, "gRPC streaming calls started"),
    entry(GRPC_STREAMS_MSGS_SENT, Counter, Count, Quantity::Series, "gRPC stream messages sent"),
    entry(GRPC_STREAMS_MSGS_RECEIVED, Counter, Count, Quantity::Series, "gRPC stream messages received"),
    entry(GRPC_DENIED, Counter, Count, Quantity::Series, "gRPC calls refused by the allow-list"),
];

/// A built-in metric that exists only in this crate's own tests: what adding a metric takes is
/// this entry and the line that records it (`reading`'s test `a_new_built_in_metric_is_one_entry`).
#[cfg(test)]
const TEST_ONLY: &[Metric] = &[entry("probe_ms", Trend, Millis, Quantity::Series, "The catalogue's own test metric")];

/// Every built-in metric (in this crate's tests, with [`TEST_ONLY`]'s).
pub fn all() -> impl Iterator<Item = &'static Metric> {
    #[cfg(test)]
    let extra = TEST_ONLY;
    #[cfg(not(test))]
    let extra: &[Metric] = &[];
    CATALOGUE.iter().chain(extra)
}

/// Built-in names that were renamed, (old, new): the old name still parses, as the new one, so
/// existing thresholds keep judging the same quantity. `tasks_failed` was renamed because
/// "failed" is one outcome everywhere else, and this share counts every outcome but `passed`.
pub const RENAMED: [(&str, &str); 1] = [("tasks_failed", TASKS_NOT_PASSED)];

/// The name `name` stands for now (itself, unless it was renamed).
pub fn current_name(name: &str) -> &str {
    RENAMED.iter().find(|(old, _)| *old == name).map_or(name, |(_, new)| *new)
}

/// The built-in metric named `name` (or a name it was renamed from).
pub fn find(name: &str) -> Option<&'static Metric> {
    let name = current_name(name);
    all().find(|m| m.name == name)
}

/// The kind of a built-in metric a threshold can judge (by its name, or a name it was renamed
/// from); its name is reserved: a plugin cannot declare it.
pub fn built_in_kind(name: &str) -> Option<MetricKind> {
    find(name).filter(|m| m.thresholds).map(|m| m.kind)
}

/// The names thresholds take, in catalogue order (an unknown name's error lists them).
pub fn threshold_names() -> impl Iterator<Item = &'static str> {
    all().filter(|m| m.thresholds).map(|m| m.name)
}

/// Whether `name` is a built-in metric recorded as a series (WebSocket, gRPC, groups).
pub fn is_series(name: &str) -> bool {
    find(name).is_some_and(|m| m.quantity == Quantity::Series)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The docs' table of built-in metrics, rendered from the catalogue.
    fn markdown_table() -> String {
        let mut out = String::from("| metric | kind | unit | selectors | what it measures |\n|---|---|---|---|---|\n");
        for m in CATALOGUE {
            let unit = match m.unit {
                Millis => "ms",
                Count => "count",
                Bytes => "bytes",
                Share => "share",
            };
            let tags = match (m.tags, m.quantity) {
                (_, Quantity::Shown) => "summary JSON and terminal only",
                (_, Quantity::TasksStarted) => "compare only",
                (Tags::None, _) => "—",
                (Tags::Any, Quantity::Checks) => "`check:NAME`, the checks' own tags",
                (Tags::Any, _) => "its own tags",
                (Tags::Endpoint, _) => "`name`, `method`",
                (Tags::EndpointOrStatus, _) => "`name`, `method`, `status`, `redirect`",
            };
            out.push_str(&format!("| `{}` | {} | {unit} | {tags} | {} |\n", m.name, m.kind.name(), m.help));
        }
        out
    }

    /// docs/outputs.md lists every built-in metric as the catalogue has it: a metric added here
    /// without its row there fails, and the message is the table to paste.
    #[test]
    fn the_docs_table_is_the_catalogue() {
        let docs = include_str!("../../../docs/outputs.md");
        let table = markdown_table();
        assert!(
            docs.contains(&table),
            "docs/outputs.md's \"Built-in metrics\" table is stale; it should read:\n\n{table}"
        );
    }

    #[test]
    fn every_name_is_catalogued_once_and_every_entry_is_consistent() {
        for (i, m) in CATALOGUE.iter().enumerate() {
            assert!(CATALOGUE[i + 1..].iter().all(|other| other.name != m.name), "{} twice", m.name);
            match m.quantity {
                Quantity::Timing(t) => assert_eq!((t.name(), m.kind, m.unit), (m.name, Trend, Millis)),
                Quantity::TasksNotPassed | Quantity::Checks | Quantity::HttpReqFailed => {
                    assert_eq!((m.kind, m.unit), (Rate, Share), "{}", m.name)
                }
                _ => {}
            }
            assert_eq!(m.unit == Millis, m.kind == Trend, "{}: trends are durations here", m.name);
        }
        for t in Timing::ALL {
            assert!(find(t.name()).is_some(), "{}", t.name());
        }
        for p in Phase::ALL {
            assert_eq!(find(p.name()).map(|m| (m.quantity, m.kind)), Some((Quantity::HttpPhase(p), Trend)));
        }
    }

    #[test]
    fn a_renamed_name_finds_its_new_entry_and_stays_reserved() {
        assert_eq!(find("tasks_failed").map(|m| m.name), Some(TASKS_NOT_PASSED));
        assert_eq!(built_in_kind("tasks_failed"), Some(Rate));
        assert_eq!(built_in_kind(TASKS_STARTED), None, "compare's alone");
        assert!(is_series(WS_PING) && is_series(GROUP_DURATION) && !is_series(HTTP_REQS));
    }
}
