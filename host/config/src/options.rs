//! The options of `loadhost run`. One struct is both the clap flags and the TOML schema, so the
//! names cannot drift apart: a TOML key is the flag's long name (`max-workers = 50`).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::criteria::{MetricDecl, OutSpec, ThresholdSpec};
use crate::distributed::{SegmentArg, StartAt};
use crate::units::{DirGrant, Dur, EnvPair, Percent, REDACTED, Rate, Size, Stage, Tag};

/// What a due task does when no worker is free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OverloadArg {
    /// Count it as dropped.
    Drop,
    /// Let it wait for a worker.
    Queue,
}

/// What happens when the data feed runs out of rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataModeArg {
    /// Each row once; the run ends when they run out.
    Once,
    /// Wrap around to the first row.
    Loop,
}

/// One `[[scenario]]` block of a TOML config: a load of its own that runs alongside the others.
///
/// Its model (`rate`, `workers`, `stage`) is its own; what it leaves unset of the bounds and
/// policies (`duration`, `iterations`, `max-workers`, `overload`, `max-in-flight`) comes from the
/// top level. Everything else (the plugin's environment, network, retries, data, outputs) is shared.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ScenarioOptions {
    /// The name plugins see in `task.scenario` and outputs group by.
    pub name: String,
    /// Start this long after the run starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_after: Option<Dur>,
    /// Open model: tasks per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Workers (closed model without `rate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<u32>,
    /// Open model: the crew's ceiling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_workers: Option<u32>,
    /// How long the scenario generates load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<Dur>,
    /// Stop after this many tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    /// Ramps, as `--stage`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stage: Vec<Stage>,
    /// Open model: drop or queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overload: Option<OverloadArg>,
    /// The scenario's own gate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<u32>,
}

/// Flags of `loadhost run` that may also come from a TOML file (`-c`). Flags win over the file.
#[derive(Debug, Clone, Default, PartialEq, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RunOptions {
    /// Open model: task starts per second (N, N/s, N/m or N/h).
    #[arg(short = 'r', long, value_name = "RATE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,

    /// Workers (plugin instances). Without --rate: a closed model of N looping workers.
    #[arg(short = 'w', long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<u32>,

    /// Open model: the most workers the crew may have.
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_workers: Option<u32>,

    /// How long to generate load (500ms, 10s, 5m, 1h, 1m30s).
    #[arg(short = 'd', long, value_name = "DURATION")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<Dur>,

    /// Stop after N tasks are scheduled.
    #[arg(short = 'n', long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,

    /// A ramp: the rate moves linearly to RATE over DURATION (repeatable, in order).
    #[arg(long = "stage", value_name = "DURATION:RATE")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stage: Vec<Stage>,

    /// The gate: at most N tasks execute at once, whatever the number of workers.
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<u32>,

    /// Event loops: threads that each run their share of the workers with their own pacer and
    /// connections (default: one per CPU, fewer when the rate needs fewer; never more than the
    /// workers).
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,

    /// Retry a task that fails with a retryable error up to N more times.
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,

    /// The base of the exponential retry backoff: retry n waits a random time below base · 2ⁿ⁻¹.
    #[arg(long, value_name = "DURATION")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_backoff: Option<Dur>,

    /// Open model: retries may take at most PCT% of the rate's slots.
    #[arg(long, value_name = "PCT")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_budget: Option<Percent>,

    /// The most retries waiting at once; beyond it a retryable failure ends as failed.
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_queue: Option<u32>,

    /// After the schedule ends, keep running pending retries for at most this long.
    #[arg(long, value_name = "DURATION")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flush_retries_timeout: Option<Dur>,

    /// Open model: what a due task does when every worker is busy.
    #[arg(long, value_enum, value_name = "POLICY")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overload: Option<OverloadArg>,

    /// An environment variable for the plugin (repeatable): KEY=VALUE, or KEY to pass loadhost's own
    /// value of KEY; the plugin sees nothing else. Values are never written to an output.
    #[arg(short = 'e', long = "env", value_name = "KEY[=VALUE]")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvPair>,

    /// Environment variables for the plugin from FILE: KEY=VALUE lines, `#` comments and blank
    /// lines (repeatable; -e wins over a file for the same KEY).
    #[arg(long, value_name = "FILE")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_file: Vec<PathBuf>,

    /// A label of the run, written to every output (repeatable; team, build, commit, …). Unlike -e
    /// values, tags are meant to be read.
    #[arg(long, value_name = "KEY=VALUE")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tag: Vec<Tag>,

    /// Let the plugin read a host directory: DIR, or DIR::GUEST_PATH to mount it elsewhere
    /// (repeatable, read-only). Without it a plugin sees no files.
    #[arg(long = "dir", value_name = "DIR[::GUEST]")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dir: Vec<DirGrant>,

    /// The longest one task may run; past it the task ends as timed_out and its instance is
    /// replaced (default 60s).
    #[arg(long, value_name = "DURATION")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_timeout: Option<Dur>,

    /// The most linear memory one plugin instance may use (default 128MiB).
    #[arg(long, value_name = "SIZE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_memory: Option<Size>,

    /// The largest response body the host reads for a plugin (default 64MiB or --max-memory,
    /// whichever is smaller): past it the request fails, naming this flag, and nothing more is kept.
    #[arg(long, value_name = "SIZE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_response_body: Option<Size>,

    /// After a stop (Ctrl-C, SIGTERM, the control API, an abort), how long tasks under way may
    /// finish before they end as interrupted (default 5s).
    #[arg(long, value_name = "DURATION")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace: Option<Dur>,

    /// Let the plugin reach HOST (any port) or HOST:PORT over HTTP and sockets (repeatable). Without
    /// it a plugin reaches nothing.
    #[arg(long = "allow-host", value_name = "HOST[:PORT]")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_host: Vec<String>,

    /// Trust the certificates in this PEM file for https, besides the system's (repeatable).
    #[arg(long = "ca-cert", value_name = "FILE")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ca_cert: Vec<PathBuf>,

    /// Accept any https certificate (self-signed test targets only).
    #[arg(long)]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,

    /// Send every HTTP request over HTTP/2 (prior knowledge on cleartext: h2c).
    #[arg(long)]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub h2c: bool,

    /// At most N requests in flight (so N connections over HTTP/1.1) to each host:port.
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_connections_per_host: Option<u32>,

    /// A data feed: one row per task as its input (JSON lines, or CSV with a header).
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<PathBuf>,

    /// When the rows run out: end the run (once) or wrap around (loop, the default).
    #[arg(long, value_enum, value_name = "MODE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_mode: Option<DataModeArg>,

    /// The longest each of the plugin's setup, per-worker init and teardown may take.
    #[arg(long, value_name = "DURATION")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle_timeout: Option<Dur>,

    /// Serve the live control API on ADDR (GET/PATCH /v1/status, POST /v1/stop).
    #[arg(long, value_name = "ADDR")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control: Option<std::net::SocketAddr>,

    /// Require `Authorization: Bearer TOKEN` on the control API (needed to bind off loopback). Also
    /// from $LOADHOST_CONTROL_TOKEN or --control-token-file, which keep it off the command line.
    #[arg(long, value_name = "TOKEN", env = "LOADHOST_CONTROL_TOKEN", hide_env_values = true)]
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "redacted")]
    pub control_token: Option<String>,

    /// Read the control API's token from FILE (its first line).
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_token_file: Option<PathBuf>,

    /// Write the end-of-run summary as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_json: Option<PathBuf>,

    /// Scenarios run together (TOML `[[scenario]]` blocks only).
    #[arg(skip)]
    #[serde(default, rename = "scenario", skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<ScenarioOptions>,

    /// Write one CSV row per interval to FILE.
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csv: Option<PathBuf>,

    /// A pass/fail criterion in k6's syntax, such as 'latency_ms:p(99)<200' (repeatable); a failure
    /// exits 99. Append ';abort_on_fail' to stop the run when it fails, ';delay=10s' to wait first.
    #[arg(long = "threshold", value_name = "EXPR")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threshold: Vec<ThresholdSpec>,

    /// Declare a metric the plugin records, NAME:KIND (trend, counter, rate, gauge), so thresholds
    /// on it are checked before any load (repeatable).
    #[arg(long = "metric", value_name = "NAME:KIND")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metric: Vec<MetricDecl>,

    /// A streaming output: json=FILE writes a JSON line per interval and per plugin-metric batch.
    #[arg(long = "out", value_name = "json=FILE")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out: Vec<OutSpec>,

    /// Serve OpenMetrics text for Prometheus on ADDR (GET /metrics) while the run goes.
    #[arg(long, value_name = "ADDR")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_addr: Option<std::net::SocketAddr>,

    /// Write a self-contained HTML report (charts and tables) to FILE.
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub html: Option<PathBuf>,

    /// Run segment I (0-based) of N of the plan: its share of the rate, iterations, data rows and
    /// workers, so N processes together run the whole plan exactly.
    #[arg(long, value_name = "I/N", env = "LOADHOST_SEGMENT")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<SegmentArg>,

    /// Split the plan into N segments and run the one $JOB_COMPLETION_INDEX names (a Kubernetes
    /// Indexed Job).
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<u32>,

    /// Start the load at this time (RFC 3339), so every segment starts together.
    #[arg(long, value_name = "TIMESTAMP")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_at: Option<StartAt>,

    /// Write a results file that `loadhost merge` combines with other segments' exactly.
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub results: Option<PathBuf>,
}

/// A secret, written out: only that there is one.
fn redacted<S: serde::Serializer>(secret: &Option<String>, out: S) -> Result<S::Ok, S::Error> {
    match secret {
        Some(_) => out.serialize_str(REDACTED),
        None => out.serialize_none(),
    }
}

impl RunOptions {
    /// These options (the flags) with anything they leave unset taken from `file`.
    pub fn or(self, file: RunOptions) -> RunOptions {
        fn list<T>(flags: Vec<T>, file: Vec<T>) -> Vec<T> {
            if flags.is_empty() { file } else { flags }
        }
        RunOptions {
            rate: self.rate.or(file.rate),
            workers: self.workers.or(file.workers),
            max_workers: self.max_workers.or(file.max_workers),
            duration: self.duration.or(file.duration),
            iterations: self.iterations.or(file.iterations),
            stage: list(self.stage, file.stage),
            max_in_flight: self.max_in_flight.or(file.max_in_flight),
            threads: self.threads.or(file.threads),
            retries: self.retries.or(file.retries),
            retry_backoff: self.retry_backoff.or(file.retry_backoff),
            retry_budget: self.retry_budget.or(file.retry_budget),
            retry_queue: self.retry_queue.or(file.retry_queue),
            flush_retries_timeout: self.flush_retries_timeout.or(file.flush_retries_timeout),
            overload: self.overload.or(file.overload),
            env: list(self.env, file.env),
            env_file: list(self.env_file, file.env_file),
            tag: list(self.tag, file.tag),
            dir: list(self.dir, file.dir),
            task_timeout: self.task_timeout.or(file.task_timeout),
            max_memory: self.max_memory.or(file.max_memory),
            max_response_body: self.max_response_body.or(file.max_response_body),
            grace: self.grace.or(file.grace),
            allow_host: list(self.allow_host, file.allow_host),
            ca_cert: list(self.ca_cert, file.ca_cert),
            insecure: self.insecure || file.insecure,
            h2c: self.h2c || file.h2c,
            max_connections_per_host: self.max_connections_per_host.or(file.max_connections_per_host),
            data: self.data.or(file.data),
            control: self.control.or(file.control),
            control_token: self.control_token.or(file.control_token),
            control_token_file: self.control_token_file.or(file.control_token_file),
            lifecycle_timeout: self.lifecycle_timeout.or(file.lifecycle_timeout),
            data_mode: self.data_mode.or(file.data_mode),
            summary_json: self.summary_json.or(file.summary_json),
            scenarios: list(self.scenarios, file.scenarios),
            csv: self.csv.or(file.csv),
            threshold: list(self.threshold, file.threshold),
            metric: list(self.metric, file.metric),
            out: list(self.out, file.out),
            metrics_addr: self.metrics_addr.or(file.metrics_addr),
            html: self.html.or(file.html),
            segment: self.segment.or(file.segment),
            segments: self.segments.or(file.segments),
            start_at: self.start_at.or(file.start_at),
            results: self.results.or(file.results),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_win_and_unset_flags_fall_back_to_the_file() {
        let flags = RunOptions { rate: Some(Rate(10.0)), ..RunOptions::default() };
        let file = RunOptions {
            rate: Some(Rate(99.0)),
            duration: Some("5s".parse().unwrap()),
            env: vec!["A=1".parse().unwrap()],
            ..RunOptions::default()
        };
        let merged = flags.or(file);
        assert_eq!(merged.rate, Some(Rate(10.0)));
        assert_eq!(merged.duration, Some("5s".parse().unwrap()));
        assert_eq!(merged.env.len(), 1);
    }
}
