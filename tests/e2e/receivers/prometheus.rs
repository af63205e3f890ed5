//! Prometheus (Debian's 2.42) on loopback, with its remote-write receiver and native histograms
//! on, scraping one address every second when given one.
//!
//! With `--enable-feature=native-histograms`, Prometheus 2.42 asks for the protobuf exposition
//! first when it scrapes (the only format that carries native histograms); the test below checks
//! the header it sends, which is (with `Accept-Encoding: gzip`):
//!
//! ```text
//! Accept: application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1
//! ```
//!
//! Without the flag it asks for OpenMetrics or text only, and its remote-write receiver answers a
//! request carrying a native histogram with 500 `native histograms are disabled`, storing none of
//! its series. The first scrape comes about 5 s after the start (the scrape manager applies new
//! targets at most every 5 s), so a test waits for its first sample (`wait_for_scalar`).

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::process::Process;
use super::{free_port, http, tools};

/// A `prometheus` child on 127.0.0.1 with its TSDB in a temporary folder, killed on drop.
pub struct Prometheus {
    process: Process,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Whether a test can start one (see `tools::usable`: false only when it is missing and the
    /// tests may skip).
    pub fn available() -> bool {
        tools::usable("prometheus", tools::on_path("prometheus"))
    }

    /// Start one, scraping `http://SCRAPE/metrics` every second (job `loadhost`) when given.
    pub fn start(scrape: Option<SocketAddr>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        // The global interval is a second too, so rule-free queries see fresh samples quickly; a
        // scrape may not take longer than its interval.
        let mut config =
            String::from("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n");
        if let Some(target) = scrape {
            config.push_str(&format!(
                "scrape_configs:\n  - job_name: loadhost\n    scrape_interval: 1s\n    metrics_path: /metrics\n    static_configs:\n      - targets: ['{target}']\n"
            ));
        }
        let config_file = dir.path().join("prometheus.yml");
        std::fs::write(&config_file, config).unwrap();
        let addr = free_port();
        let mut command = Command::new("prometheus");
        command
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .args(["--web.enable-remote-write-receiver", "--enable-feature=native-histograms", "--log.level=warn"]);
        let mut process = Process::spawn(command, dir.path());
        process.wait_until(&addr.to_string(), || http::get(addr, "/-/ready").is_ok_and(|r| r.status == 200));
        Self { process, addr, _dir: dir }
    }

    /// Where remote write 1.0 sends to.
    pub fn write_url(&self) -> String {
        format!("http://{}/api/v1/write", self.addr)
    }

    /// An instant query's `data` (`resultType` and `result`); panics with the answer when
    /// Prometheus refuses the query.
    pub fn query(&self, promql: &str) -> Value {
        let form = format!("query={}", http::encode(promql));
        let answer = http::post(self.addr, "/api/v1/query", "application/x-www-form-urlencoded", form.as_bytes())
            .unwrap_or_else(|e| panic!("query {promql}: {e}; prometheus' stderr:\n{}", self.process.stderr()));
        let body = answer.json();
        assert!(
            answer.status == 200 && body["status"] == "success",
            "query {promql}: {} {}",
            answer.status,
            answer.text()
        );
        body["data"].clone()
    }

    /// The value of the query's one sample: None when the result is empty; panics when it has more
    /// than one, or a native histogram (query its `histogram_count`, `histogram_sum`, … instead).
    pub fn query_scalar(&self, promql: &str) -> Option<f64> {
        let data = self.query(promql);
        let sample = match data["resultType"].as_str() {
            Some("scalar") => data["result"].clone(),
            Some("vector") => {
                let result = data["result"].as_array().cloned().unwrap_or_default();
                match result.as_slice() {
                    [] => return None,
                    [one] => one["value"].clone(),
                    _ => panic!("query {promql}: one sample was expected, got {}", data["result"]),
                }
            }
            other => panic!("query {promql}: a scalar or a vector was expected, got {other:?}: {data}"),
        };
        let value = sample[1].as_str().unwrap_or_else(|| panic!("query {promql}: no value in {data}"));
        Some(value.parse().unwrap_or_else(|e| panic!("query {promql}: the value {value:?}: {e}")))
    }

    /// The query's one sample as soon as it has one; panics when it has none after `within`.
    pub fn wait_for_scalar(&self, promql: &str, within: Duration) -> f64 {
        let began = Instant::now();
        loop {
            if let Some(value) = self.query_scalar(promql) {
                eprintln!("query {promql}: a sample after {} ms", began.elapsed().as_millis());
                return value;
            }
            assert!(began.elapsed() < within, "query {promql}: no sample within {within:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// A text exposition on a loopback port, served from a thread of the test, which keeps the
/// `Accept` header of each scrape.
#[cfg(test)]
struct StaticEndpoint {
    addr: SocketAddr,
    accepts: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[cfg(test)]
impl StaticEndpoint {
    fn start(exposition: &'static str) -> Self {
        use std::io::{BufRead as _, Write as _};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let accepts = std::sync::Arc::<std::sync::Mutex<Vec<String>>>::default();
        let stop = std::sync::Arc::<std::sync::atomic::AtomicBool>::default();
        let (kept, stopped) = (std::sync::Arc::clone(&accepts), std::sync::Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(mut stream) = stream else { continue };
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("accept")
                    {
                        kept.lock().unwrap().push(value.trim().to_owned());
                    }
                    line.clear();
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{exposition}",
                    exposition.len()
                );
            }
        });
        Self { addr, accepts, stop, thread: Some(thread) }
    }

    fn accepts(&self) -> Vec<String> {
        self.accepts.lock().unwrap().clone()
    }
}

#[cfg(test)]
impl Drop for StaticEndpoint {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        // The thread waits in accept: a connection wakes it to see the stop.
        let _ = std::net::TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn prometheus_scrapes_a_counter_asking_for_protobuf_first_and_answers_queries_about_it() {
    if !Prometheus::available() {
        return;
    }
    let endpoint =
        StaticEndpoint::start("# TYPE probe_requests_total counter\nprobe_requests_total{kind=\"static\"} 42\n");
    let prometheus = Prometheus::start(Some(endpoint.addr));
    let value = prometheus.wait_for_scalar("probe_requests_total{job=\"loadhost\"}", Duration::from_secs(15));
    assert_eq!(value, 42.0);
    assert_eq!(prometheus.query_scalar("up{job=\"loadhost\"}"), Some(1.0));
    assert_eq!(prometheus.query_scalar("probe_requests_total{kind=\"other\"}"), None);
    assert_eq!(prometheus.query_scalar("scalar(probe_requests_total) * 2"), Some(84.0));
    let accepts = endpoint.accepts();
    let first = accepts.first().expect("a scrape was answered, so its Accept header was kept");
    assert!(
        first
            .starts_with("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,"),
        "with native histograms on, Prometheus asks for protobuf first: {first}"
    );
}

#[test]
fn prometheus_has_its_remote_write_receiver_on() {
    if !Prometheus::available() {
        return;
    }
    let prometheus = Prometheus::start(None);
    let target = prometheus.write_url().split_once(&prometheus.addr.to_string()).unwrap().1.to_owned();
    // Not a snappy-compressed WriteRequest: refused as such (400); with the receiver off, the
    // path answers 404.
    let refused = http::post(prometheus.addr, &target, "application/x-protobuf", b"not snappy").unwrap();
    assert_eq!(refused.status, 400, "{}", refused.text());
}
