//! `loadhost`: a load-testing engine whose workloads are sandboxed WebAssembly components.
//!
//! The binary is glue: flags and config ([`loadhost_config`]), the wasm runtime
//! ([`loadhost_runtime`]), the scheduler ([`loadhost_engine`]) and the outputs
//! ([`loadhost_output`]). Each subcommand has its own module in [`commands`]; [`exit`] maps
//! failures to the documented exit codes.
//!
//! # Layout
//! - [`commands`]: one module per subcommand (`run`, `http`, `find-max`, `merge`, `compare`,
//!   `target`, `inspect`, `new`, `build`, `componentize`, `push`, `pin` and `pull`, `cache`).
//! - [`run`]: `run`'s pipeline, shared by `http`, its module reading as the steps of a run.
//! - [`prepare`]: the runtime, the grants and the plugins' files checked, for `run` and `find-max`.
//! - [`registry`]: reaching an OCI registry and resolving a plugin reference to a verified file.
//! - [`results_oci`]: results files pushed to and pulled from a registry (`run`, `merge`).
//! - [`outputs`]: output files created up front, written whole or streamed, and their failures.
//! - [`judge`]: thresholds judged as the run goes (`run`) and on a merged run (`merge`).
//! - [`signals`]: Ctrl-C and SIGTERM as stop requests (`run`, `find-max`).
//! - [`stdout`]: writing a command's result to standard output.
//! - [`exit`]: failures and the documented exit codes.
//! - [`k6_options`]: a k6 script's literal `options` read as `run`'s flags.
//! - [`peer_flags`]: k6's and Locust's flags that loadhost names otherwise, and what to write.

mod commands;
mod exit;
mod judge;
mod k6_options;
mod locustfile;
mod outputs;
mod peer_flags;
mod prepare;
mod registry;
mod results_oci;
mod run;
mod signals;
mod stdout;

use std::io::IsTerminal as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

/// Load tests whose workloads are sandboxed WebAssembly components.
#[derive(Debug, Parser)]
// The version names the commit, wasmtime and the WIT package (build.rs), the first word still `loadhost`.
#[command(name = "loadhost", version = env!("LOADHOST_VERSION"), about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a load test: call the plugin's `doer` once per task, on the schedule the flags describe.
    Run(Box<commands::run::RunArgs>),
    /// Load-test a URL (or a targets file) with the built-in HTTP plugin: no plugin to write, every
    /// `run` flag, `run`'s report; the URL's HOST:PORT is allowed by typing it.
    Http(Box<commands::http::HttpArgs>),
    /// Run a locustfile with Locust's command line (`-f FILE -u USERS -r SPAWN_RATE -t TIME -H
    /// URL`); `run`'s own flags follow `--`.
    Locust(Box<commands::locust::LocustArgs>),
    /// Find the highest rate that meets the SLOs, and name what limits it (target, emitter,
    /// crew or gate).
    FindMax(Box<commands::find_max::FindMaxArgs>),
    /// Merge the results files of a distributed run (`run --segment I/N --results FILE`) into the
    /// whole run's outputs, and judge thresholds on it.
    Merge(Box<commands::merge::MergeArgs>),
    /// Compare two runs (results files or summary JSON) metric by metric; `--fail-on` rules exit 99
    /// on a change past its tolerance that a test on per-interval values finds real.
    Compare(Box<commands::compare::CompareArgs>),
    /// Serve the built-in HTTP target: `/`, `/delay?ms=N`, `/status?code=N`, `/bytes?n=N`, `/echo`
    /// (the request's body back) and `/stats` (JSON counts of requests and connections).
    Target(commands::target::TargetArgs),
    /// Show what a plugin is and what it asks for: sha256, size, toolchain, exports, and its
    /// imports read as capabilities (network, files, environment, clocks, random).
    Inspect(commands::inspect::InspectArgs),
    /// Create a plugin project that builds and runs as generated.
    New(commands::new::NewArgs),
    /// Make a Python or JavaScript script (and its folder) a standalone component to share.
    Build(commands::build::BuildArgs),
    /// Wrap a WASI preview1 core module that exports the doer functions into a plugin component.
    Componentize(commands::componentize::ComponentizeArgs),
    /// Publish a plugin to an OCI registry as a wasm artifact; prints `REF@sha256:…`.
    Push(commands::registry::PushArgs),
    /// Resolve a registry reference to its digest; prints `REF@sha256:…` for a config file (a
    /// tag's digest is recorded, as by `pull`: a moved tag is accepted).
    Pin(commands::registry::PinArgs),
    /// Fetch a registry reference into the local store; prints `REF@sha256:…`. For a tag, records
    /// the digest it resolves to now: how a moved tag is accepted (see `run --pin-tags`).
    Pull(commands::registry::PullArgs),
    /// Sign a pushed plugin with a private key: the signature goes to the registry beside it.
    Sign(commands::registry::SignArgs),
    /// Make a signing key pair: NAME.key (private, 0600) and NAME.pub (for a trust policy).
    Keygen(commands::registry::KeygenArgs),
    /// Print an example trust policy (`--example`) for `run --trust-policy FILE`.
    TrustPolicy(commands::registry::TrustPolicyArgs),
    /// Registry housekeeping: `registry prune` deletes distributed runs' results and arrivals.
    #[command(subcommand)]
    Registry(commands::registry_prune::RegistryCommand),
    /// The compiled-plugin cache.
    #[command(subcommand)]
    Cache(commands::cache::CacheCommand),
}

fn init_logging() {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("warn,loadhost=info,loadhost_runtime=info,loadhost_engine=info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour only on a terminal, and never when NO_COLOR is set (no-color.org): CI logs stay plain.
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()))
        .without_time()
        .with_target(false)
        .init();
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return exit::usage_error(&err),
    };
    init_logging();
    let result = match cli.command {
        Command::Run(args) => commands::run::run(*args),
        Command::Http(args) => commands::http::run(*args),
        Command::Locust(args) => commands::locust::run(*args),
        Command::Target(args) => commands::target::run(args),
        Command::FindMax(args) => commands::find_max::run(*args),
        Command::Merge(args) => commands::merge::run(*args),
        Command::Compare(args) => commands::compare::run(*args),
        Command::Inspect(args) => commands::inspect::run(args),
        Command::New(args) => commands::new::run(args),
        Command::Build(args) => commands::build::run(args),
        Command::Componentize(args) => commands::componentize::run(args),
        Command::Push(args) => commands::registry::push(args),
        Command::Pin(args) => commands::registry::pin(args),
        Command::Pull(args) => commands::registry::pull(args),
        Command::Sign(args) => commands::registry::sign(args),
        Command::Keygen(args) => commands::registry::keygen_command(args),
        Command::TrustPolicy(args) => commands::registry::trust_policy(args),
        Command::Registry(command) => commands::registry_prune::run(command),
        Command::Cache(command) => commands::cache::run(command),
    };
    match result {
        Ok(code) => code,
        Err(failure) => failure.report(),
    }
}
