//! Real metric receivers on loopback, for the tests of the push outputs (`--out prometheus-rw=URL`,
//! `--out otlp=URL`, `--out influxdb=URL`) and of the scrape endpoint: each starts the real program
//! (installed by `cargo xtask setup`) on a free 127.0.0.1 port with its state in a temporary folder,
//! waits until it answers, and is killed on drop. The tests here show each one works.
//!
//! # Layout
//! - `tools`: where the installed programs are, and what a test does when one is missing.
//! - `process`: a receiver's child process: its stderr kept, a bounded wait until ready, killed on drop.
//! - `http`: a plain HTTP/1.1 client over `TcpStream` (the suite has no HTTP client crate).
//! - `prometheus`: `Prometheus`, with the remote-write receiver and native histograms on.
//! - `influx`: `Influx`, InfluxDB 1.x (`influxd`).
//! - `otlp`: `OtlpReceiver` (OTLP/HTTP protobuf, each request recorded as JSON) and `SlowReceiver`
//!   (any request, answered late), both served by `otlp_receiver.py` in the tools venv's python.

mod http;
mod influx;
mod otlp;
mod process;
mod prometheus;
pub(crate) mod tools;

use std::net::{SocketAddr, TcpListener};

pub use tools::venv_python;
#[allow(
    unused_imports,
    reason = "what the push outputs' tests start, one line each; the tests here reach them by their modules"
)]
pub use {
    influx::Influx,
    otlp::{OtlpReceiver, SlowReceiver},
    prometheus::Prometheus,
};

/// A free port on 127.0.0.1, as the operating system hands one out (free when this returns; the
/// program it is for binds it at once).
fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free loopback port")
}

/// A loopback address nothing listens on: the receiver that is down (connecting is refused).
pub fn closed_port() -> SocketAddr {
    free_port()
}

#[test]
fn nothing_answers_on_the_closed_port() {
    let addr = closed_port();
    let refused = std::net::TcpStream::connect(addr).expect_err("nothing listens on the closed port");
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused, "{addr}: {refused}");
}
