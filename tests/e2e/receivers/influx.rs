//! InfluxDB 1.x (Debian's `influxd` 1.6) on loopback: its HTTP API on one free port, its RPC
//! service (backups; it cannot be turned off) on another, its meta, data and WAL in a temporary
//! folder, and its logging quiet.

use std::net::SocketAddr;
use std::process::Command;

use serde_json::{Value, json};

use super::process::Process;
use super::{free_port, http, tools};

/// An `influxd run` child on 127.0.0.1, killed on drop.
pub struct Influx {
    process: Process,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Influx {
    /// Whether a test can start one (see `tools::usable`: false only when it is missing and the
    /// tests may skip).
    pub fn available() -> bool {
        tools::usable("influxd", tools::on_path("influxd"))
    }

    /// Start one; ready when `GET /ping` answers 204.
    pub fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (addr, rpc) = (free_port(), free_port());
        let state = dir.path().display();
        let config = format!(
            r#"reporting-disabled = true
bind-address = "{rpc}"

[meta]
  dir = "{state}/meta"
  logging-enabled = false

[data]
  dir = "{state}/data"
  wal-dir = "{state}/wal"
  query-log-enabled = false

[monitor]
  store-enabled = false

[continuous_queries]
  enabled = false

[http]
  enabled = true
  bind-address = "{addr}"
  log-enabled = false

[logging]
  level = "error"
  suppress-logo = true
"#
        );
        let config_file = dir.path().join("influxdb.conf");
        std::fs::write(&config_file, config).unwrap();
        let mut command = Command::new("influxd");
        command.arg("run").arg("-config").arg(&config_file);
        let mut process = Process::spawn(command, dir.path());
        process.wait_until(&addr.to_string(), || http::get(addr, "/ping").is_ok_and(|r| r.status == 204));
        Self { process, addr, _dir: dir }
    }

    /// Where line protocol for database `db` is written to.
    pub fn write_url(&self, db: &str) -> String {
        format!("http://{}/write?db={}", self.addr, http::encode(db))
    }

    pub fn create_db(&self, name: &str) {
        self.statement("", &format!("CREATE DATABASE \"{name}\""));
    }

    /// What `/query` answers for `influxql` on database `db` (`{"results": [{"series": …}]}`),
    /// with times in nanoseconds since the epoch (as line protocol writes them); panics with the
    /// answer when the query or one of its statements fails.
    pub fn query(&self, db: &str, influxql: &str) -> Value {
        self.statement(db, influxql)
    }

    fn statement(&self, db: &str, influxql: &str) -> Value {
        let form = format!("db={}&epoch=ns&q={}", http::encode(db), http::encode(influxql));
        let answer = http::post(self.addr, "/query", "application/x-www-form-urlencoded", form.as_bytes())
            .unwrap_or_else(|e| panic!("{influxql}: {e}; influxd's stderr:\n{}", self.process.stderr()));
        let body = answer.json();
        let failed = body.get("error").is_some()
            || body["results"].as_array().is_none_or(|results| results.iter().any(|r| r.get("error").is_some()));
        assert!(answer.status == 200 && !failed, "{influxql}: {} {}", answer.status, answer.text());
        body
    }
}

#[test]
fn influx_takes_line_protocol_and_answers_influxql_with_it() {
    if !Influx::available() {
        return;
    }
    let influx = Influx::start();
    influx.create_db("probe");
    let lines = "cpu,host=a value=1.5 1000000000\ncpu,host=b value=2.5 2000000000\n";
    let target = influx.write_url("probe").split_once(&influx.addr.to_string()).unwrap().1.to_owned();
    let written = http::post(influx.addr, &target, "text/plain; charset=utf-8", lines.as_bytes()).unwrap();
    assert_eq!(written.status, 204, "{}", written.text());

    let answer = influx.query("probe", "SELECT \"value\", \"host\" FROM \"cpu\" ORDER BY time");
    let series = &answer["results"][0]["series"][0];
    assert_eq!(series["name"], "cpu");
    assert_eq!(series["columns"], json!(["time", "value", "host"]));
    assert_eq!(series["values"], json!([[1_000_000_000_u64, 1.5, "a"], [2_000_000_000_u64, 2.5, "b"]]));
}
