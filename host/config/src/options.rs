//! The options of `loadhost run`. One list of fields is the clap flags, the TOML schema, the
//! `[[scenario]]` block and their merges ([`define_options!`](crate::merge)), so the names cannot
//! drift apart: a TOML key is the flag's long name (`max-workers = 50`). A default that `--help`
//! states is checked against the constant the code uses (the tests below).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::criteria::{HistogramsArg, HttpDebugArg, MetricDecl, OutSpec, PluginOutputSpec, ThresholdSpec};
use crate::distributed::{SegmentArg, StartAt};
use crate::units::{DirGrant, Dur, EnvPair, Percent, REDACTED, Rate, Size, Stage, Tag};

/// What a due task does when no worker is free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OverloadArg {
    /// Count it as dropped (the default).
    Drop,
    /// Let it wait for a worker.
    Queue,
}

/// How the open model's arrivals are spaced on the rate curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArrivalsArg {
    /// On an even grid: task k when k tasks are due (the default).
    Even,
    /// A Poisson process over the rate curve, ramps and stages included (seeded by --seed).
    Poisson,
}

/// What happens when the data feed runs out of rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataModeArg {
    /// Each row once; the run ends when they run out.
    Once,
    /// Wrap around to the first row (the default).
    Loop,
}

define_options! {
    /// Flags of `loadhost run` that may also come from a TOML file (`-c`). Flags win over the file.
    #[derive(Debug, Clone, Default, PartialEq, Args, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
    pub struct RunOptions {
        /// The open model: task starts per second (N, N/s, N/m or N/h), on a fixed schedule
        /// whatever the workers are doing. Without it the model is closed: workers looping.
        #[scenario(own)]
        #[arg(short = 'r', long, value_name = "RATE")]
        pub rate: Option<Rate>,

        /// Workers (plugin instances). Open model: the crew starts with N (default one per 20
        /// tasks/s of the peak rate, at least 2, at most 100) and never retires below it. Without --rate: a closed model of N workers looping (default 1), or
        /// the start of the --stage ramp (0: from nothing).
        #[scenario(own)]
        #[arg(short = 'w', long, value_name = "N")]
        pub workers: Option<u32>,

        /// Open model: the crew grows on demand up to N workers (default 1000) and retires the
        /// surplus.
        #[scenario(inherit)]
        #[arg(long, value_name = "N")]
        pub max_workers: Option<u32>,

        /// How long to generate load (500ms, 10s, 5m, 1h, 1m30s); with --stage, the last target
        /// holds until then (or the stages are cut there).
        #[scenario(inherit)]
        #[arg(short = 'd', long, value_name = "DURATION")]
        pub duration: Option<Dur>,

        /// Stop after N tasks are scheduled.
        #[scenario(inherit)]
        #[arg(short = 'n', long, value_name = "N")]
        pub iterations: Option<u64>,

        /// A ramp, linear over DURATION to TARGET (repeatable, in order): with --rate, of the
        /// rate; without, of the closed model's looping workers.
        ///
        /// With --rate it ramps the rate (tasks/s), starting from --rate (-r 0 to start from
        /// nothing); without --rate it ramps the number of looping workers, starting from -w
        /// (default 1), as k6's --stage does. Without -d the run lasts as long as the stages; with
        /// -d the last target holds until then, or the stages are cut there.
        #[scenario(own)]
        #[arg(long = "stage", value_name = "DURATION:TARGET")]
        pub stage: Vec<Stage>,

        /// Open model: how task starts are spaced on the rate curve.
        #[scenario(inherit)]
        #[arg(long, value_enum, value_name = "PROCESS")]
        pub arrivals: Option<ArrivalsArg>,

        /// Closed model: each worker starts an iteration at most every DUR (Locust's constant
        /// pacing); a task that overruns makes the next start at once, its lateness counted as wait.
        #[scenario(own)]
        #[arg(long, value_name = "DUR")]
        pub pace: Option<Dur>,

        /// Closed model: pause between a worker's tasks, MIN..MAX (uniform), exp:MEAN
        /// (exponential) or DUR (fixed); drawn from the run's seed; not counted in any latency.
        #[scenario(own)]
        #[arg(long, value_name = "MIN..MAX|exp:MEAN")]
        pub think: Option<crate::spacing::ThinkTime>,

        /// The seed of everything random in the run (Poisson arrivals; default: drawn at start, logged
        /// and written to every output, so a run can be repeated; with --segment, taken from
        /// --start-at instead, so every segment draws the same arrivals).
        #[arg(long, value_name = "N")]
        pub seed: Option<u64>,

        /// The gate: at most N tasks execute at once, whatever the number of workers; waiting for
        /// a permit shows as gate_wait_ms.
        #[scenario(inherit)]
        #[arg(long, value_name = "N")]
        pub max_in_flight: Option<u32>,

        /// Event loops (threads), each running its share of the plan with its own workers,
        /// pacer and connections (default: one per CPU, but never more than the workers, and in
        /// the open model one per 10,000 tasks/s of the peak rate).
        #[arg(long, value_name = "N")]
        pub threads: Option<u32>,

        /// Retry a task that fails with a retryable error up to N more times (exponential backoff
        /// with full jitter).
        #[arg(long, value_name = "N")]
        pub retries: Option<u32>,

        /// The base of the retry backoff: retry n waits a random time below base · 2ⁿ⁻¹ (default
        /// 100ms; needs --retries).
        #[arg(long, value_name = "DURATION")]
        pub retry_backoff: Option<Dur>,

        /// Open model: retries may take at most PCT% of the rate's slots (default 20; needs
        /// --retries).
        #[arg(long, value_name = "PCT")]
        pub retry_budget: Option<Percent>,

        /// The most retries waiting at once; beyond it a retryable failure ends as failed (default
        /// 100,000; needs --retries).
        #[arg(long, value_name = "N")]
        pub retry_queue: Option<u32>,

        /// After the schedule ends, keep running pending retries for at most this long (default
        /// 5s; needs --retries).
        #[arg(long, value_name = "DURATION")]
        pub flush_retries_timeout: Option<Dur>,

        /// Open model: what a due task does when no worker is free.
        #[scenario(inherit)]
        #[arg(long, value_enum, value_name = "POLICY")]
        pub overload: Option<OverloadArg>,

        /// An environment variable for the plugin (repeatable): KEY=VALUE, or KEY to pass loadhost's own
        /// value of KEY; the plugin sees nothing else. Values are never written to an output.
        #[arg(short = 'e', long = "env", value_name = "KEY[=VALUE]")]
        pub env: Vec<EnvPair>,

        /// Environment variables for the plugin from FILE: KEY=VALUE lines, `#` comments and blank
        /// lines (repeatable; -e wins over a file for the same KEY).
        #[arg(long, value_name = "FILE")]
        pub env_file: Vec<PathBuf>,

        /// A label of the run, written to every output (repeatable; team, build, commit, …). Unlike -e
        /// values, tags are meant to be read.
        #[arg(long, value_name = "KEY=VALUE")]
        pub tag: Vec<Tag>,

        /// Let the plugin read a host directory: DIR, or DIR::GUEST_PATH to mount it elsewhere
        /// (repeatable, read-only). Without it a plugin sees no files.
        #[arg(long = "dir", value_name = "DIR[::GUEST]")]
        pub dir: Vec<DirGrant>,

        /// The longest one task may run; past it the task ends as timed_out and its instance is
        /// replaced (default 60s).
        #[arg(long, value_name = "DURATION")]
        pub task_timeout: Option<Dur>,

        /// The most linear memory one plugin instance may use, from 2MiB to 4GiB (default 128MiB);
        /// past it the task traps with "memory limit". Also the instance's byte budget: the most the
        /// host holds on its behalf (messages, streams, bodies read whole); past it the host call
        /// fails with "byte budget".
        #[arg(long, value_name = "SIZE")]
        pub max_memory: Option<Size>,

        /// The largest response body the host reads for a plugin (default 64MiB or --max-memory,
        /// whichever is smaller): past it the request fails, naming this flag, and nothing more is kept.
        #[arg(long, value_name = "SIZE")]
        pub max_response_body: Option<Size>,

        /// The most disk the compile cache may use (default 1GiB): after a compile, the least
        /// recently used compiled plugins are deleted until it fits (the one just compiled always
        /// stays). 0 turns the cache off.
        #[arg(long, value_name = "SIZE")]
        pub cache_max: Option<Size>,

        /// The largest plugin file loadhost reads (default 256MiB): a larger one is refused before
        /// it is read.
        #[arg(long, value_name = "SIZE")]
        pub max_plugin_size: Option<Size>,

        /// After a stop (Ctrl-C, SIGTERM, the control API, an abort), how long tasks under way may
        /// finish before they end as interrupted (default 5s).
        #[arg(long, value_name = "DURATION")]
        pub grace: Option<Dur>,

        /// When the plan ends (its duration, its iterations), how long tasks still running may
        /// finish before they end as interrupted (default 30s, as k6's gracefulStop); the terminal
        /// counts it down, and Ctrl-C ends the wait at once.
        #[arg(long, value_name = "DURATION")]
        pub graceful_stop: Option<Dur>,

        /// What the plugin may reach over HTTP and sockets, and the only names it may look up
        /// (repeatable; nothing without it): HOST:PORT that port, a bare HOST ports 80 and 443
        /// only, HOST:* every port. Never the host's own --control and --metrics-addr listeners.
        #[arg(long = "allow-host", value_name = "HOST[:PORT|:*]")]
        pub allow_host: Vec<String>,

        /// Trust the certificates in this PEM file for https, besides the system's (repeatable).
        #[arg(long = "ca-cert", value_name = "FILE")]
        pub ca_cert: Vec<PathBuf>,

        /// Accept any https certificate (self-signed test targets only).
        #[arg(long)]
        pub insecure: bool,

        /// Send HTTP through this forward proxy, http://[USER:PASS@]HOST[:PORT]: http targets as
        /// absolute-form requests, https ones through CONNECT tunnels. Wins over $HTTP_PROXY and
        /// $HTTPS_PROXY (loadhost's own, which apply without it); $NO_PROXY still exempts hosts;
        /// `none` ignores the environment's proxies.
        #[arg(long, value_name = "URL|none")]
        #[serde(serialize_with = "proxy_redacted")]
        pub proxy: Option<String>,

        /// Present this PEM certificate (chain) to https servers that ask for one (mTLS): FILE for
        /// every host, HOST=FILE for one host (repeatable, one per host); pairs with --client-key.
        #[arg(long = "client-cert", value_name = "[HOST=]FILE")]
        pub client_cert: Vec<String>,

        /// The PEM private key of --client-cert: FILE, or HOST=FILE for that host's certificate.
        #[arg(long = "client-key", value_name = "[HOST=]FILE")]
        pub client_key: Vec<String>,

        /// Send every HTTP request over HTTP/2 (prior knowledge on cleartext: h2c).
        #[arg(long)]
        pub h2c: bool,

        /// Keep no cookie jar: requests of the SDKs (`send-opts`) neither send nor store cookies
        /// (by default each worker keeps its own jar, as a browser or a k6 VU does).
        #[arg(long)]
        pub no_cookies: bool,

        /// At most N requests in flight, and N connections open, per host:port; those connections
        /// are shared by the whole run (without it each worker keeps its own).
        #[arg(long, value_name = "N")]
        pub max_connections_per_host: Option<u32>,

        /// A data feed: task k gets row k as its input (JSON lines, or CSV with a header, each row
        /// a JSON object); loaded once and shared by every worker and scenario.
        #[arg(long, value_name = "FILE")]
        pub data: Option<PathBuf>,

        /// When the rows run out: end the run (once) or wrap around (loop, the default).
        #[arg(long, value_enum, value_name = "MODE")]
        pub data_mode: Option<DataModeArg>,

        /// The longest each of the plugin's setup, per-worker init and teardown may take (default
        /// 30s).
        #[arg(long, value_name = "DURATION")]
        pub lifecycle_timeout: Option<Dur>,

        /// Serve the live control API on ADDR (GET/PATCH /v1/status, POST /v1/stop): loopback
        /// only, unless a --control-token is given.
        #[arg(long, value_name = "ADDR")]
        pub control: Option<std::net::SocketAddr>,

        /// Require `Authorization: Bearer TOKEN` on the control API (needed to bind off loopback). Also
        /// from $LOADHOST_CONTROL_TOKEN or --control-token-file, which keep it off the command line.
        #[arg(long, value_name = "TOKEN", env = "LOADHOST_CONTROL_TOKEN", hide_env_values = true)]
        #[serde(serialize_with = "redacted")]
        pub control_token: Option<String>,

        /// Read the control API's token from FILE (its first line).
        #[arg(long, value_name = "FILE")]
        pub control_token_file: Option<PathBuf>,

        /// Write the end-of-run summary as JSON to FILE (keys in docs/outputs.md).
        #[arg(long, value_name = "FILE")]
        pub summary_json: Option<PathBuf>,

        /// Scenarios run together (TOML `[[scenario]]` blocks only).
        #[arg(skip)]
        #[serde(rename = "scenario")]
        pub scenarios: Vec<ScenarioOptions>,

        /// Write one CSV row per second (per interval) to FILE, with a config comment and a closing
        /// footer.
        #[arg(long, value_name = "FILE")]
        pub csv: Option<PathBuf>,

        /// A pass/fail criterion in k6's syntax, such as 'latency_ms:p(99)<200' (repeatable),
        /// checked before any load; a failure exits 99. Append ';abort_on_fail' to stop the run
        /// when it fails, ';delay=10s' to judge that only after 10s.
        #[arg(long = "threshold", value_name = "EXPR")]
        pub threshold: Vec<ThresholdSpec>,

        /// Declare a metric the plugin records, NAME:KIND (trend, counter, rate, gauge), so thresholds
        /// on it are checked before any load (repeatable). Not needed for one the plugin declares
        /// itself (loadhost inspect lists them); a flag for one must give the same kind.
        #[arg(long = "metric", value_name = "NAME:KIND")]
        pub metric: Vec<MetricDecl>,

        /// A streaming output (repeatable): json=FILE writes a JSON line per interval and per
        /// plugin-metric batch, and the summary last; prometheus-rw=URL (remote write, native
        /// histograms), otlp=URL (OTLP/HTTP) and influxdb=URL (InfluxDB 1.x line protocol) push
        /// the run's metrics every interval, and once more at the end.
        #[arg(long = "out", value_name = "KIND=FILE|URL")]
        pub out: Vec<OutSpec>,

        /// Push to the --out receivers every DURATION (a whole number of reporting intervals;
        /// default every interval, 1s).
        #[arg(long, value_name = "DURATION")]
        pub out_interval: Option<Dur>,

        /// Send `Authorization: Bearer TOKEN` to the --out receivers. Also from
        /// $LOADHOST_OUT_TOKEN or --out-token-file.
        #[arg(long, value_name = "TOKEN", env = "LOADHOST_OUT_TOKEN", hide_env_values = true)]
        #[serde(serialize_with = "redacted")]
        pub out_token: Option<String>,

        /// Read the --out receivers' token from FILE (its first line).
        #[arg(long, value_name = "FILE")]
        pub out_token_file: Option<PathBuf>,

        /// How prometheus-rw sends latency: native (native histograms, exponential buckets; the
        /// default) or classic (`_bucket{le}` series, for receivers without native histograms).
        #[arg(long, value_name = "native|classic")]
        pub out_histograms: Option<HistogramsArg>,

        /// Keep URL-like tags (`url`, `uri`, values with `://`) as labels of the pushed and
        /// scraped series; without it they are left out, as their values are unbounded.
        #[arg(long)]
        pub out_url_labels: bool,

        /// Exit 0 even when no task passed. Without it, a run in which tasks were scheduled and
        /// none passed (every one failed, trapped, timed out or was dropped: a forgotten
        /// --allow-host, an exception in every task) exits 98, so CI cannot pass a broken run.
        #[arg(long)]
        pub allow_failures: bool,

        /// Write JUnit XML to FILE for CI systems: a test case per threshold, per check, for "every
        /// scheduled task accounted for" and for the verdict.
        #[arg(long, value_name = "FILE")]
        pub junit: Option<PathBuf>,

        /// In --junit, a check fails when its pass rate is under PCT (100, the default: any
        /// failed check fails its case).
        #[arg(long, value_name = "PCT")]
        pub check_rate: Option<Percent>,

        /// Write a compact Markdown summary to FILE (for a pull-request comment). With
        /// $GITHUB_STEP_SUMMARY set, the summary is also appended there.
        #[arg(long, value_name = "FILE")]
        pub markdown: Option<PathBuf>,

        /// Where the plugin's stdout and stderr lines go: log (the terminal, each line prefixed with
        /// its worker and iteration; the first 100, then a count of the rest), file=PATH (every
        /// line, timestamped) or none (log, the default). They also go to --out json as `log` lines.
        #[arg(long, value_name = "log|file=PATH|none")]
        pub plugin_output: Option<PluginOutputSpec>,

        /// Show each request the plugin makes and its response (method, URL, status, headers;
        /// with =full the bodies too, cut at 1 KiB) with the plugin's lines (--plugin-output);
        /// Authorization headers are redacted.
        #[arg(long, value_name = "full", num_args = 0..=1, require_equals = true, default_missing_value = "headers")]
        pub http_debug: Option<HttpDebugArg>,

        /// Serve the run's series for Prometheus on ADDR (GET /metrics) while the run goes, as
        /// OpenMetrics text, or protobuf with native histograms when the scrape asks: loopback
        /// only, unless a --metrics-token is given (then every scrape needs it).
        #[arg(long, value_name = "ADDR")]
        pub metrics_addr: Option<std::net::SocketAddr>,

        /// Require `Authorization: Bearer TOKEN` on the OpenMetrics endpoint (needed to bind off
        /// loopback, as in a pod). Also from $LOADHOST_METRICS_TOKEN or --metrics-token-file.
        #[arg(long, value_name = "TOKEN", env = "LOADHOST_METRICS_TOKEN", hide_env_values = true)]
        #[serde(serialize_with = "redacted")]
        pub metrics_token: Option<String>,

        /// Read the OpenMetrics endpoint's token from FILE (its first line).
        #[arg(long, value_name = "FILE")]
        pub metrics_token_file: Option<PathBuf>,

        /// After the run, keep serving the final figures on --metrics-addr until a scrape has read
        /// them, for at most DURATION (default 15s, a common scrape interval; 0s: end at once), so a
        /// scraper sees the last interval; Ctrl-C ends the wait.
        #[arg(long, value_name = "DURATION")]
        pub metrics_linger: Option<Dur>,

        /// Write a self-contained HTML report (charts and tables) to FILE.
        #[arg(long, value_name = "FILE")]
        pub html: Option<PathBuf>,

        /// Run segment I (0-based) of N of the plan: its share of the rate, iterations, data rows and
        /// workers, so N processes together run the whole plan exactly.
        #[arg(long, value_name = "I/N", env = "LOADHOST_SEGMENT")]
        pub segment: Option<SegmentArg>,

        /// Split the plan into N segments and run the one $JOB_COMPLETION_INDEX names (a Kubernetes
        /// Indexed Job).
        #[arg(long, value_name = "N")]
        pub segments: Option<u32>,

        /// Start the load at this time (RFC 3339), so every segment starts together.
        #[arg(long, value_name = "TIMESTAMP")]
        pub start_at: Option<StartAt>,

        /// Name the run its results file belongs to, so `loadhost merge` refuses a part of another
        /// run (a file left from an earlier run). Without it, a --start-at names the run.
        #[arg(long, value_name = "ID", env = "LOADHOST_RUN_ID")]
        pub run_id: Option<String>,

        /// Write a results file that `loadhost merge` combines with other segments' exactly; or,
        /// as oci://REGISTRY/REPO, push it there as an artifact tagged RUN_ID-results-I (needs
        /// --run-id and a segment), for `loadhost merge oci://REGISTRY/REPO --run-id RUN_ID`.
        #[arg(long, value_name = "FILE|oci://REGISTRY/REPO")]
        pub results: Option<PathBuf>,

        /// Meet the run's other segments before starting: each announces itself in the
        /// --results oci:// repository, and all start together a few seconds after the last
        /// arrives (no --start-at, no shared clock but the segments' own).
        #[arg(long)]
        pub barrier: bool,

        /// With --barrier: how long after the first segment arrives the ones present start
        /// without the missing ones (default 120s; the merge then needs --partial).
        #[arg(long, value_name = "DUR")]
        pub barrier_timeout: Option<Dur>,

        /// Refuse to start (exit 5) a segment that would start more than DUR after its planned
        /// start (--start-at, or the barrier's), rather than run a misaligned share.
        #[arg(long, value_name = "DUR")]
        pub max_start_lateness: Option<Dur>,
    }

    /// One `[[scenario]]` block of a TOML config: a load of its own that runs alongside the others.
    ///
    /// Its model (`rate`, `workers`, `stage`) is its own; what it leaves unset of the bounds and
    /// policies (`duration`, `iterations`, `max-workers`, `overload`, `max-in-flight`) comes from the
    /// top level. Everything else (the plugin's environment, network, retries, data, outputs) is
    /// shared. Which options a block accepts is the `#[scenario(…)]` mark on each option above.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case", deny_unknown_fields)]
    pub struct ScenarioOptions {
        /// The name plugins see in `task.scenario` and outputs group by.
        pub name: String,
        /// The plugin this scenario runs, when not the run's own: a file path or a registry
        /// reference (pin it, `REF@sha256:…`), resolved like the command line's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub plugin: Option<String>,
        /// Start this long after the run starts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub start_after: Option<Dur>,
        /// A periodic scenario: one task per this period, on a worker of its own, for the run's
        /// duration; a tick that finds the previous task still running is dropped.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub every: Option<Dur>,
        /// With `every`: each tick comes up to this much later than its period, drawn per tick
        /// from the run's seed, so periodic scenarios decorrelate.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub jitter: Option<Dur>,
    }
}

/// A proxy URL, written out without the credentials it may carry.
fn proxy_redacted<S: serde::Serializer>(proxy: &Option<String>, out: S) -> Result<S::Ok, S::Error> {
    match proxy {
        Some(url) => match url.split_once('@') {
            Some((userinfo, host)) if !userinfo.contains('/') || userinfo.contains("://") => {
                let scheme = userinfo.split_once("://").map_or(String::new(), |(s, _)| format!("{s}://"));
                out.serialize_str(&format!("{scheme}{REDACTED}@{host}"))
            }
            _ => out.serialize_str(url),
        },
        None => out.serialize_none(),
    }
}

/// A secret, written out: only that there is one.
fn redacted<S: serde::Serializer>(secret: &Option<String>, out: S) -> Result<S::Ok, S::Error> {
    match secret {
        Some(_) => out.serialize_str(REDACTED),
        None => out.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::{
        DEFAULT_CACHE_MAX, DEFAULT_CLOSED_WORKERS, DEFAULT_FLUSH_RETRIES_TIMEOUT, DEFAULT_GRACE, DEFAULT_GRACEFUL_STOP,
        DEFAULT_LIFECYCLE_TIMEOUT, DEFAULT_MAX_MEMORY, DEFAULT_MAX_PLUGIN_SIZE, DEFAULT_MAX_RESPONSE_BODY,
        DEFAULT_MAX_WORKERS, DEFAULT_METRICS_LINGER, DEFAULT_OPEN_WORKERS_CAP, DEFAULT_RETRY_BACKOFF,
        DEFAULT_RETRY_BUDGET, DEFAULT_RETRY_QUEUE, DEFAULT_TASK_TIMEOUT,
    };

    fn parse(toml: &str) -> Result<RunOptions, String> {
        crate::file::parse(std::path::Path::new("run.toml"), toml).map_err(|e| e.to_string())
    }

    /// Every option of `loadhost run`, set in a file.
    const EVERY_OPTION: &str = r#"
        rate = 100
        workers = 2
        max-workers = 9
        duration = "5s"
        iterations = 50
        stage = ["1s:10", { shape = "sine", period = "1s", min = 1, max = 5, duration = "2s" }]
        arrivals = "poisson"
        seed = 7
        pace = "100ms"
        think = "exp:1s"
        max-in-flight = 4
        threads = 1
        retries = 2
        retry-backoff = "10ms"
        retry-budget = 5
        retry-queue = 10
        flush-retries-timeout = "1s"
        overload = "queue"
        plugin-output = "none"
        junit = "r.xml"
        allow-failures = true
        run-id = "nightly-7"
        markdown = "r.md"
        check-rate = 99
        http-debug = "full"
        env = ["A=1"]
        env-file = ["a.env"]
        tag = ["team=x"]
        dir = ["/tmp"]
        task-timeout = "2s"
        max-memory = "64MiB"
        max-response-body = "1MiB"
        cache-max = "2GiB"
        max-plugin-size = "300MiB"
        grace = "1s"
        graceful-stop = "10s"
        allow-host = ["127.0.0.1:8080"]
        ca-cert = ["ca.pem"]
        insecure = true
        proxy = "http://127.0.0.1:3128"
        client-cert = ["cert.pem", "api.example=api.pem"]
        client-key = ["key.pem", "api.example=api-key.pem"]
        h2c = true
        no-cookies = true
        max-connections-per-host = 3
        data = "rows.jsonl"
        data-mode = "once"
        lifecycle-timeout = "3s"
        control = "127.0.0.1:9000"
        control-token = "secret"
        control-token-file = "token"
        summary-json = "s.json"
        csv = "rows.csv"
        threshold = ["latency_ms:p(99)<200"]
        metric = ["login:trend"]
        out = ["json=run.jsonl", "prometheus-rw=http://127.0.0.1:9090/api/v1/write"]
        out-interval = "2s"
        out-token = "t"
        out-token-file = "out-token"
        out-histograms = "classic"
        out-url-labels = true
        metrics-addr = "127.0.0.1:9001"
        metrics-linger = "5s"
        html = "r.html"
        segment = "0/2"
        segments = 2
        start-at = "2026-11-29T23:00:00Z"
        results = "r.lhr"
        barrier = true
        barrier-timeout = "60s"
        max-start-lateness = "5s"
        metrics-token = "scrape"
        metrics-token-file = "metrics-token"
        [[scenario]]
        name = "a"
    "#;

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

    #[test]
    fn a_proxy_is_written_out_without_its_credentials() {
        let with = |proxy: &str| {
            let options = RunOptions { proxy: Some(proxy.to_owned()), ..RunOptions::default() };
            serde_json::to_value(&options).unwrap()["proxy"].as_str().unwrap().to_owned()
        };
        assert_eq!(with("http://user:secret@proxy:3128"), "http://[redacted]@proxy:3128");
        assert_eq!(with("user:secret@proxy:3128"), "[redacted]@proxy:3128");
        assert_eq!(with("http://proxy:3128"), "http://proxy:3128");
    }

    #[test]
    fn every_option_merges_both_ways() {
        let every = parse(EVERY_OPTION).unwrap();
        // The file sets every flag (and the scenarios), so this test covers a flag added later too.
        let flags = RunOptions::augment_args(clap::Command::new("run")).get_arguments().count();
        let written = serde_json::to_value(&every).unwrap();
        assert_eq!(written.as_object().unwrap().len(), flags + 1, "EVERY_OPTION misses an option: {written}");
        assert_eq!(RunOptions::default().or(every.clone()), every, "unset flags take the file's");
        assert_eq!(every.clone().or(RunOptions::default()), every, "set flags stay");
    }

    #[test]
    fn scenario_blocks_take_exactly_their_keys() {
        let block = r#"
            [[scenario]]
            name = "a"
            start-after = "1s"
            rate = 5
            workers = 2
            max-workers = 3
            duration = "2s"
            iterations = 9
            stage = ["1s:10"]
            overload = "queue"
            max-in-flight = 1
            arrivals = "poisson"
        "#;
        let scenario = &parse(block).unwrap().scenarios[0];
        assert_eq!((scenario.max_in_flight, scenario.overload), (Some(1), Some(OverloadArg::Queue)));
        let err = parse("[[scenario]]\nname = \"a\"\nthreads = 2\n").unwrap_err();
        assert!(err.starts_with("run.toml:3:1: unknown field `threads`, expected one of"), "{err}");
        let mut accepted: Vec<&str> =
            err.split("expected one of").nth(1).unwrap().split('`').skip(1).step_by(2).collect();
        accepted.sort_unstable();
        let mut expected = vec![
            "name",
            "start-after",
            "rate",
            "workers",
            "max-workers",
            "duration",
            "iterations",
            "stage",
            "overload",
            "max-in-flight",
            "arrivals",
            "plugin",
            "pace",
            "think",
            "every",
            "jitter",
        ];
        expected.sort_unstable();
        assert_eq!(accepted, expected);
        assert!(parse("[[scenario]]\nrate = 5\n").unwrap_err().contains("missing field `name`"));
    }

    #[test]
    fn a_scenario_has_its_own_model_and_falls_back_for_bounds() {
        let top = parse(EVERY_OPTION).unwrap();
        let scenario =
            ScenarioOptions { name: "a".into(), workers: Some(7), iterations: Some(3), ..Default::default() };
        let own = scenario.within(&top);
        assert_eq!((own.rate, own.workers, own.stage.len()), (None, Some(7), 0), "the model is the scenario's alone");
        assert_eq!((own.iterations, own.duration), (Some(3), top.duration), "bounds fall back");
        assert_eq!(
            (own.max_workers, own.max_in_flight, own.overload),
            (top.max_workers, top.max_in_flight, top.overload)
        );
        assert_eq!((&own.env, own.retries, &own.data), (&top.env, top.retries, &top.data), "the rest is shared");
    }

    /// `1234567` as `1,234,567`, as the help writes large numbers.
    fn thousands(n: u64) -> String {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    }

    #[test]
    fn help_states_the_defaults_the_code_uses() {
        let command = RunOptions::augment_args(clap::Command::new("run"));
        let help = |long: &str| {
            let arg = command.get_arguments().find(|a| a.get_long() == Some(long)).unwrap();
            let text = arg.get_long_help().or(arg.get_help()).unwrap().to_string();
            let values: Vec<String> =
                arg.get_possible_values().iter().filter_map(|v| v.get_help().map(ToString::to_string)).collect();
            format!("{text} {}", values.join(" "))
        };
        let cases = [
            ("workers", format!("at most {DEFAULT_OPEN_WORKERS_CAP})")),
            ("workers", format!("(default {DEFAULT_CLOSED_WORKERS})")),
            ("max-workers", format!("(default {DEFAULT_MAX_WORKERS})")),
            ("retry-backoff", format!("(default {}", Dur(DEFAULT_RETRY_BACKOFF))),
            ("retry-budget", format!("(default {}", DEFAULT_RETRY_BUDGET * 100.0)),
            ("retry-queue", format!("(default {}", thousands(DEFAULT_RETRY_QUEUE.into()))),
            ("flush-retries-timeout", format!("(default {}", Dur(DEFAULT_FLUSH_RETRIES_TIMEOUT))),
            ("task-timeout", format!("(default {})", Dur(DEFAULT_TASK_TIMEOUT))),
            ("grace", format!("(default {})", Dur(DEFAULT_GRACE))),
            ("graceful-stop", format!("(default {}", Dur(DEFAULT_GRACEFUL_STOP))),
            ("metrics-linger", format!("(default {}", Dur(DEFAULT_METRICS_LINGER))),
            ("lifecycle-timeout", format!("(default {})", Dur(DEFAULT_LIFECYCLE_TIMEOUT))),
            ("max-memory", format!("(default {})", Size(DEFAULT_MAX_MEMORY))),
            ("cache-max", format!("(default {})", Size(DEFAULT_CACHE_MAX))),
            ("max-plugin-size", format!("(default {})", Size(DEFAULT_MAX_PLUGIN_SIZE))),
            ("max-response-body", format!("(default {} or --max-memory", Size(DEFAULT_MAX_RESPONSE_BODY))),
            ("threads", format!("one per {} tasks/s", thousands(loadhost_engine::RATE_PER_EVENT_LOOP as u64))),
            ("threads", "one per CPU".to_owned()),
            ("overload", "dropped (the default)".to_owned()),
            ("arrivals", "even grid: task k when k tasks are due (the default)".to_owned()),
            ("seed", "default: drawn at start".to_owned()),
            ("data-mode", "(loop, the default)".to_owned()),
            ("plugin-output", "(log, the default)".to_owned()),
            ("check-rate", "(100, the default".to_owned()),
            ("metrics-addr", "loopback only, unless a --metrics-token".to_owned()),
            ("barrier-timeout", "(default 120s".to_owned()),
            ("control", "loopback only, unless a --control-token".to_owned()),
            ("stage", "With --rate it ramps the rate".to_owned()),
            ("stage", "without --rate it ramps the number of looping workers".to_owned()),
            ("allow-host", "a bare HOST ports 80 and 443".to_owned()),
        ];
        for (long, says) in cases {
            let text = help(long);
            assert!(text.contains(&says), "--{long}'s help should say '{says}': {text}");
        }
    }
}
