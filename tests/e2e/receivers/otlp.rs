//! The OTLP/HTTP receiver and the slow receiver: `otlp_receiver.py` (beside this file) in the
//! tools venv's python, which picks its own free port and writes it to a file once it listens.

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::process::Process;
use super::tools;

/// A running `otlp_receiver.py`, killed on drop.
struct Server {
    _process: Process,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Server {
    /// Start it in OTLP mode, or with `--slow`; it sleeps `delay` before each answer.
    fn start(delay: Duration, slow: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = crate::common::root().join("tests/e2e/receivers/otlp_receiver.py");
        let mut command = Command::new(tools::venv_python());
        command.arg(script).arg("--dir").arg(dir.path()).arg("--delay").arg(delay.as_secs_f64().to_string());
        if slow {
            command.arg("--slow");
        }
        let mut process = Process::spawn(command, dir.path());
        let port_file = dir.path().join("port");
        let mut addr = None;
        process.wait_until("the port it picks", || {
            addr = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|port| port.parse().ok())
                .map(|port: u16| SocketAddr::from(([127, 0, 0, 1], port)));
            addr.is_some_and(|addr| std::net::TcpStream::connect(addr).is_ok())
        });
        let addr = addr.expect("the wait returns once the port is known");
        Self { _process: process, addr, dir }
    }

    /// The JSON lines of `name` in its folder.
    fn lines(&self, name: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{name}: {e}: {line}"))).collect()
    }
}

/// An OTLP/HTTP metrics receiver (protobuf) that records each request.
pub struct OtlpReceiver(Server);

impl OtlpReceiver {
    /// Whether a test can start one: the tools venv has `opentelemetry-proto` (see
    /// `tools::usable`).
    pub fn available() -> bool {
        tools::usable("opentelemetry-proto (in the tools venv)", tools::venv_has_module("opentelemetry.proto"))
    }

    /// Start one that sleeps `delay` before each answer (`Duration::ZERO`: answers at once).
    pub fn start(delay: Duration) -> Self {
        Self(Server::start(delay, false))
    }

    /// Where OTLP/HTTP metrics are posted: `http://127.0.0.1:PORT/v1/metrics`.
    pub fn url(&self) -> String {
        format!("http://{}/v1/metrics", self.0.addr)
    }

    /// Each request received so far, in order, recorded on arrival: the `ExportMetricsServiceRequest`
    /// as protobuf's `MessageToDict` makes it (camelCase names, 64-bit integers as strings, absent
    /// zero values), or `{"undecodable": ERROR, "bytes": N}` for a body that did not decode (answered
    /// 400), or `{"unsupported_content_type": TYPE}` for one not sent as `application/x-protobuf`
    /// (answered 415).
    pub fn requests(&self) -> Vec<Value> {
        self.0.lines("requests.jsonl")
    }
}

/// A receiver that answers any request with 204 only after sleeping its delay: the push target
/// that must not slow a run.
pub struct SlowReceiver(Server);

impl SlowReceiver {
    /// Whether a test can start one: the tools venv's python is there (see `tools::usable`).
    pub fn available() -> bool {
        tools::usable("the tools venv's python", tools::venv_python_path().exists())
    }

    pub fn start(delay: Duration) -> Self {
        Self(Server::start(delay, true))
    }

    /// `http://127.0.0.1:PORT`: any path under it answers.
    pub fn url(&self) -> String {
        format!("http://{}", self.0.addr)
    }

    /// How many requests have arrived (answered or still waiting out the delay).
    pub fn hits(&self) -> usize {
        self.0.lines("hits").len()
    }
}

/// An `ExportMetricsServiceRequest` with an exponential histogram and a sum, built by the
/// opentelemetry-proto messages and posted twice with urllib to `URL` (plain, then gzipped and
/// chunked): it prints each answer's status and content type once its body decodes as an
/// `ExportMetricsServiceResponse`.
#[cfg(test)]
const POST_A_REQUEST: &str = r#"
import gzip, sys, urllib.request
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as service
from opentelemetry.proto.metrics.v1 import metrics_pb2 as metrics

request = service.ExportMetricsServiceRequest()
scope = request.resource_metrics.add().scope_metrics.add()
scope.scope.name = "loadhost"
latency = scope.metrics.add(name="probe_latency", unit="ms")
latency.exponential_histogram.aggregation_temporality = metrics.AGGREGATION_TEMPORALITY_CUMULATIVE
point = latency.exponential_histogram.data_points.add(count=3, sum=12.5, scale=5, zero_count=0)
point.positive.offset = 70
point.positive.bucket_counts.extend([1, 2])
point.attributes.add(key="scenario").value.string_value = "default"
done = scope.metrics.add(name="probe_requests")
done.sum.is_monotonic = True
done.sum.aggregation_temporality = metrics.AGGREGATION_TEMPORALITY_CUMULATIVE
done.sum.data_points.add(as_int=7)

body = request.SerializeToString()
# Then again gzipped, in chunks (an iterable body: urllib sends it chunked), as exporters may.
for data, headers in [(body, {}), (iter([gzip.compress(body)]), {"Content-Encoding": "gzip"})]:
    post = urllib.request.Request(sys.argv[1], data=data, method="POST",
                                  headers={"Content-Type": "application/x-protobuf", **headers})
    with urllib.request.urlopen(post, timeout=30) as answer:
        service.ExportMetricsServiceResponse.FromString(answer.read())
        print(answer.status, answer.headers["Content-Type"])
"#;

#[test]
fn the_otlp_receiver_records_what_a_real_client_exports() {
    if !OtlpReceiver::available() {
        return;
    }
    let receiver = OtlpReceiver::start(Duration::ZERO);
    let out = Command::new(tools::venv_python()).arg("-c").arg(POST_A_REQUEST).arg(receiver.url()).output().unwrap();
    assert!(out.status.success(), "the client: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200 application/x-protobuf\n".repeat(2));

    let requests = receiver.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0], requests[1], "gzipped and chunked, the same request");
    let scope = &requests[0]["resourceMetrics"][0]["scopeMetrics"][0];
    assert_eq!(scope["scope"]["name"], "loadhost");
    let latency = &scope["metrics"][0];
    assert_eq!(latency["name"], "probe_latency");
    let point = &latency["exponentialHistogram"]["dataPoints"][0];
    assert_eq!(point["count"], "3");
    assert_eq!(point["sum"], 12.5);
    assert_eq!(point["scale"], 5);
    assert_eq!(point["positive"], serde_json::json!({"offset": 70, "bucketCounts": ["1", "2"]}));
    assert_eq!(point["attributes"][0]["value"]["stringValue"], "default");
    let requests_sum = &scope["metrics"][1];
    assert_eq!(requests_sum["name"], "probe_requests");
    assert_eq!(requests_sum["sum"]["isMonotonic"], true);
    assert_eq!(requests_sum["sum"]["dataPoints"][0]["asInt"], "7");
}

#[test]
fn a_slow_otlp_receiver_answers_late_and_refuses_what_does_not_decode() {
    if !OtlpReceiver::available() {
        return;
    }
    let delay = Duration::from_millis(400);
    let receiver = OtlpReceiver::start(delay);
    let addr = receiver.0.addr;
    let began = std::time::Instant::now();
    let refused = super::http::post(addr, "/v1/metrics", "application/x-protobuf", b"\xff not protobuf").unwrap();
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(refused.header("content-type"), Some("text/plain"));
    // A lower bound: the receiver slept before answering.
    assert!(began.elapsed() >= delay, "answered after {:?}", began.elapsed());
    let wrong_type = super::http::post(addr, "/v1/metrics", "application/json", b"{}").unwrap();
    assert_eq!(wrong_type.status, 415);
    let requests = receiver.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(requests[0]["undecodable"].is_string(), "{requests:?}");
    assert_eq!(requests[1]["unsupported_content_type"], "application/json");
}

#[test]
fn the_slow_receiver_counts_requests_it_answers_late() {
    if !SlowReceiver::available() {
        return;
    }
    let delay = Duration::from_millis(500);
    let receiver = SlowReceiver::start(delay);
    let addr = receiver.0.addr;
    assert!(receiver.url().ends_with(&addr.to_string()));
    let began = std::time::Instant::now();
    // Two at once: each waits out the delay on its own thread of the receiver.
    let posts: Vec<_> = ["/api/v1/write", "/write?db=x"]
        .into_iter()
        .map(|path| std::thread::spawn(move || super::http::post(addr, path, "text/plain", b"x=1").unwrap().status))
        .collect();
    for post in posts {
        assert_eq!(post.join().unwrap(), 204);
    }
    assert!(began.elapsed() >= delay, "answered after {:?}", began.elapsed());
    assert_eq!(receiver.hits(), 2);
}
