//! `loadhost http URL [options]`: a load test of one URL (or of a targets file) with no plugin to
//! write. The binary carries a generic HTTP plugin (`plugins/http-generic`, embedded by
//! `cargo xtask embed`); this command describes the request to it in its environment (`-e`),
//! allows the URL's `HOST:PORT` (typing the URL is the grant), turns `--targets` into its data feed,
//! and runs it through `loadhost run`'s own code, so the report, the outputs and the exit codes are
//! `run`'s.

pub(crate) mod targets;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use loadhost_config::RunOptions;
use loadhost_config::units::{Dur, EnvPair, Rate};

use crate::commands::run::RunArgs;
use crate::exit::Failure;
use targets::Target;

/// The generic HTTP plugin, built from `plugins/http-generic` by `cargo xtask embed`.
const PLUGIN: &[u8] = include_bytes!("../../assets/http-generic.wasm");

/// How every output names the plugin (its file is a temporary one).
const PLUGIN_NAME: &str = "loadhost http (built-in)";

/// The rate when no load model is given: vegeta's default.
const DEFAULT_RATE: f64 = 50.0;

/// How long when no end is given: wrk's default.
const DEFAULT_DURATION: Duration = Duration::from_secs(10);

const AFTER_HELP: &str = "\
Defaults: without -r, -w, -n or --stage (on the command line or in -c FILE) it sends 50 requests/s, and without -d, -n \
or --stage it runs 10s: the bare command is 500 requests over 10 seconds.

A task is one request. It passes when the status is 2xx or 3xx (exactly --expect-status when given); any other status \
fails it with a message naming the status. Every `loadhost run` flag applies; the report, outputs and exit codes are \
run's (98 when no request passed).

Examples:
  loadhost http http://127.0.0.1:8080/ -r 1000 -d 10s
  loadhost http http://127.0.0.1:8080/echo -X POST -H 'Content-Type: application/json' --body '{\"id\":7}'
  loadhost http 'http://127.0.0.1:8080/status?code=201' -X POST --body-file order.json --expect-status 201
  loadhost http --targets targets.txt -r 200 -d 30s --summary-json summary.json";

/// Arguments of `loadhost http`.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct HttpArgs {
    /// The URL to request: http://HOST[:PORT]/PATH or https://…. Typing it is the grant: its
    /// HOST:PORT is allowed to the built-in plugin without --allow-host.
    #[arg(value_name = "URL", required_unless_present = "targets", conflicts_with = "targets")]
    url: Option<String>,

    /// The request's method (default GET).
    #[arg(short = 'X', long, value_name = "METHOD")]
    method: Option<String>,

    /// A request header, 'Name: value' (repeatable); with --targets, added to every target.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    header: Vec<String>,

    /// The request's body.
    #[arg(long, value_name = "TEXT", conflicts_with = "body_file")]
    body: Option<String>,

    /// The request's body, read from FILE (at most 1 MiB).
    #[arg(long, value_name = "FILE")]
    body_file: Option<PathBuf>,

    /// The one status that passes (default: any 2xx or 3xx).
    #[arg(long, value_name = "CODE", value_parser = clap::value_parser!(u16).range(100..=999))]
    expect_status: Option<u16>,

    /// Requests from FILE, one per task in turn (looping; --data-mode once ends the run after
    /// the last): vegeta's JSON lines ({"method":"GET","url":"…","header":{"K":["v"]},
    /// "body":"BASE64"}) or its text format (a `GET URL` line, `Name: value` lines, an optional
    /// `@body-file` line; blank lines between targets). Every target's HOST:PORT is allowed.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["method", "body", "body_file"])]
    targets: Option<PathBuf>,

    /// Read options from a TOML file whose keys are the long flag names, as `run -c`; flags win.
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    config: Option<PathBuf>,

    #[command(flatten)]
    options: RunOptions,
}

/// Run the load test of the URL (or the targets) and report it as `run` does.
pub fn run(args: HttpArgs) -> Result<ExitCode, Failure> {
    // The plugin file and the feed live in a private folder (0700) until the run is over.
    let scratch = tempfile::Builder::new()
        .prefix("loadhost-http-")
        .tempdir()
        .context("creating a temporary folder for the built-in plugin")
        .map_err(Failure::runtime)?;
    let (options, config) = run_options(args, scratch.path())?;
    let plugin = scratch.path().join("http-generic.wasm");
    std::fs::write(&plugin, PLUGIN)
        .with_context(|| format!("writing the built-in plugin to {}", plugin.display()))
        .map_err(Failure::runtime)?;
    let result = crate::run::run(RunArgs::built_in(plugin, PLUGIN_NAME, config, options));
    drop(scratch);
    result
}

/// `run`'s flags for what `args` asks (the plugin's environment, the hosts it may reach, the
/// feed written into `scratch`, any load filled in), and the `-c` file.
fn run_options(args: HttpArgs, scratch: &Path) -> Result<(RunOptions, Option<PathBuf>), Failure> {
    let HttpArgs { url, method, header, body, body_file, expect_status, targets, config, mut options } = args;
    let file_options = match &config {
        Some(path) => loadhost_config::file::load(path).map_err(Failure::usage)?,
        None => RunOptions::default(),
    };
    let merged = options.clone().or(file_options);
    if merged.data.is_some() {
        return Err(usage("--data: loadhost http takes its feed from --targets FILE".to_owned()));
    }
    let headers = header.iter().map(|h| targets::header(h)).collect::<Result<Vec<_>, _>>();
    let headers = headers.map_err(|why| usage(format!("--header {why}")))?;
    let requests = match (url, targets) {
        (Some(url), _) => {
            let target = command_line_target(&url, method.as_deref(), body, body_file.as_deref())?;
            options.env.extend(request_env(&target));
            vec![target]
        }
        (None, Some(file)) => feed(&file, scratch, &mut options)?,
        (None, None) => return Err(usage("a URL to request, or --targets FILE".to_owned())),
    };
    options.env.extend(common_env(&headers, expect_status));
    let hosts = targets::authorities(&requests);
    options.allow_host.extend(hosts.iter().cloned());
    let defaults = default_load(&mut options, &merged);
    log_plan(&requests, &hosts, &defaults);
    Ok((options, config))
}

fn usage(message: String) -> Failure {
    Failure::usage(anyhow::anyhow!(message))
}

/// The one request the command line describes.
fn command_line_target(
    url: &str,
    method: Option<&str>,
    body: Option<String>,
    body_file: Option<&Path>,
) -> Result<Target, Failure> {
    let body = match (body, body_file) {
        (Some(text), _) => text.into_bytes(),
        (None, Some(path)) => targets::read_body(path).map_err(|why| usage(format!("--body-file {why}")))?,
        (None, None) => Vec::new(),
    };
    Target::new(method.unwrap_or("GET"), url, Vec::new(), body).map_err(usage)
}

/// Settings of the built-in plugin that are not secrets: what the user typed as the command's
/// arguments, which its messages quote (`GET http://…`). Headers and bodies stay redacted (they
/// carry credentials).
pub(crate) const PUBLIC_ENV: [&str; 3] = ["LOADHOST_HTTP_URL", "LOADHOST_HTTP_METHOD", "LOADHOST_HTTP_EXPECT_STATUS"];

/// The plugin's environment for the command line's request.
fn request_env(target: &Target) -> Vec<EnvPair> {
    let body = if target.body.is_empty() {
        None
    } else if let Some(text) = std::str::from_utf8(&target.body).ok().filter(|t| !t.contains('\0')) {
        Some(pair("LOADHOST_HTTP_BODY", text))
    } else {
        use base64::Engine as _;
        Some(pair("LOADHOST_HTTP_BODY_B64", &base64::engine::general_purpose::STANDARD.encode(&target.body)))
    };
    [pair("LOADHOST_HTTP_URL", &target.url), pair("LOADHOST_HTTP_METHOD", &target.method)]
        .into_iter()
        .chain(body)
        .collect()
}

/// The plugin's environment for every request: the extra headers and the expected status.
fn common_env(headers: &[(String, String)], expect_status: Option<u16>) -> Vec<EnvPair> {
    let mut env = Vec::new();
    if !headers.is_empty() {
        let lines: Vec<String> = headers.iter().map(|(name, value)| format!("{name}: {value}")).collect();
        env.push(pair("LOADHOST_HTTP_HEADERS", &lines.join("\n")));
    }
    if let Some(code) = expect_status {
        env.push(pair("LOADHOST_HTTP_EXPECT_STATUS", &code.to_string()));
    }
    env
}

fn pair(key: &str, value: &str) -> EnvPair {
    EnvPair { key: key.to_owned(), value: value.to_owned() }
}

/// Read and check the targets file, and make it the run's feed (JSON lines in `dir`).
fn feed(file: &Path, dir: &Path, options: &mut RunOptions) -> Result<Vec<Target>, Failure> {
    let targets = targets::load(file).map_err(|why| usage(format!("--targets {why}")))?;
    let rows = dir.join("targets.jsonl");
    targets::write_rows(&targets, &rows)
        .with_context(|| format!("writing the targets' feed to {}", rows.display()))
        .map_err(Failure::runtime)?;
    options.data = Some(rows);
    Ok(targets)
}

/// Fill in the load that neither the flags nor the `-c` file (`merged`) give: 50 requests/s
/// unless a model is chosen (-r, -w, -n, --stage), for 10s unless an end is (-d, -n, --stage).
/// Returns what was filled in, to be said.
fn default_load(options: &mut RunOptions, merged: &RunOptions) -> Vec<String> {
    let mut filled = Vec::new();
    if !merged.scenarios.is_empty() {
        return filled;
    }
    let counted = merged.iterations.is_some() || !merged.stage.is_empty();
    if merged.rate.is_none() && merged.workers.is_none() && !counted {
        options.rate = Some(Rate(DEFAULT_RATE));
        filled.push(format!("-r {DEFAULT_RATE}"));
    }
    if merged.duration.is_none() && !counted {
        options.duration = Some(Dur(DEFAULT_DURATION));
        filled.push(format!("-d {}s", DEFAULT_DURATION.as_secs()));
    }
    filled
}

/// Say what is requested, what is allowed, and any load filled in.
fn log_plan(requests: &[Target], hosts: &std::collections::BTreeSet<String>, defaults: &[String]) {
    let allowed = hosts.iter().map(String::as_str).collect::<Vec<_>>().join(", ");
    match requests {
        [one] => tracing::info!("{} {} with the built-in plugin; allowed {allowed}", one.method, one.url),
        many => tracing::info!("{} targets in turn with the built-in plugin; allowed {allowed}", many.len()),
    }
    if !defaults.is_empty() {
        tracing::info!("no load given: {} (the defaults of loadhost http)", defaults.join(" "));
    }
}

/// The digest check of the embedded plugin shares its code with `cargo xtask embed`.
#[cfg(test)]
#[path = "../../../../xtask/src/sources.rs"]
#[allow(dead_code, reason = "xtask's module; the test uses part of it")]
mod embedded_sources;

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    #[test]
    fn the_embedded_plugin_is_built_from_the_current_sources() {
        let root = repo_root();
        let record = std::fs::read_to_string(root.join(embedded_sources::EMBEDDED_RECORD)).unwrap_or_default();
        let Some((sources, wasm)) = embedded_sources::parse_record(&record) else {
            panic!("{} is missing or unreadable: run `cargo xtask embed`", embedded_sources::EMBEDDED_RECORD)
        };
        assert_eq!(
            wasm,
            embedded_sources::sha256_hex(PLUGIN),
            "host/cli/assets/http-generic.wasm is not the component `cargo xtask embed` recorded: run `cargo xtask embed`"
        );
        let now = embedded_sources::sources_digest(&root).expect("the embedded plugin's sources are readable");
        assert_eq!(
            sources, now,
            "plugins/http-generic, sdk/rust or wit/ changed since the built-in plugin of `loadhost http` was \
             embedded: run `cargo xtask embed` (and keep host/cli/assets/ with the change)"
        );
    }

    fn options(flags: &[&str]) -> RunOptions {
        use clap::{Args as _, FromArgMatches as _};
        let command = RunOptions::augment_args(clap::Command::new("t"));
        let matches = command.try_get_matches_from(std::iter::once("t").chain(flags.iter().copied()));
        RunOptions::from_arg_matches(&matches.expect("flags parse")).expect("options")
    }

    #[test]
    fn missing_load_is_filled_in_and_given_load_is_kept() {
        for (flags, filled) in [
            (&[][..], vec!["-r 50", "-d 10s"]),
            (&["-r", "1000"][..], vec!["-d 10s"]),
            (&["-d", "3s"][..], vec!["-r 50"]),
            (&["-w", "4"][..], vec!["-d 10s"]),
            (&["-n", "5"][..], vec![]),
            (&["-r", "10", "-d", "1s"][..], vec![]),
            (&["--stage", "1s:5"][..], vec![]),
        ] {
            let mut given = options(flags);
            let merged = given.clone();
            assert_eq!(default_load(&mut given, &merged), filled, "{flags:?}");
        }
    }

    #[test]
    fn the_request_travels_in_the_plugins_environment() {
        let target = Target::new("post", "http://127.0.0.1:1/p", Vec::new(), b"{}".to_vec()).expect("a target");
        let env: Vec<(String, String)> = request_env(&target).into_iter().map(|p| (p.key, p.value)).collect();
        let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["LOADHOST_HTTP_URL", "LOADHOST_HTTP_METHOD", "LOADHOST_HTTP_BODY"]);
        assert_eq!(env[1].1, "POST");
        let binary = Target::new("PUT", "http://127.0.0.1:1/p", Vec::new(), vec![0, 255]).expect("a target");
        assert!(request_env(&binary).iter().any(|p| p.key == "LOADHOST_HTTP_BODY_B64" && p.value == "AP8="));
        let common = common_env(&[("A".into(), "1".into()), ("B".into(), "2".into())], Some(201));
        assert_eq!(common[0].value, "A: 1\nB: 2");
        assert_eq!(common[1].value, "201");
    }
}
