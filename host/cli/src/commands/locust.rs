//! `loadhost locust`: Locust's own command line (`-f FILE -u USERS -r SPAWN_RATE -t RUN_TIME -H
//! HOST --headless`) for a locustfile, made into `loadhost run`'s flags (issue 42). Locust's flags
//! clash with `run`'s (`-u`, `-r`, `-t`, `-H` mean other things there), so they live here; `run`'s
//! own flags follow `--`. What maps is in docs/migrating.md, "Locust".

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::commands::run::RunArgs;
use crate::exit::Failure;

#[derive(Debug, clap::Args)]
pub struct LocustArgs {
    /// The locustfile (Locust's default: locustfile.py).
    #[arg(short = 'f', long = "locustfile", value_name = "FILE", default_value = "locustfile.py")]
    locustfile: PathBuf,

    /// Peak number of concurrent users: loadhost's workers (Locust's default: 1).
    #[arg(short = 'u', long = "users", value_name = "USERS")]
    users: Option<u32>,

    /// Users started a second until all are (Locust's default: 1): a ramp of workers,
    /// `--stage USERS/RATE:USERS`.
    #[arg(short = 'r', long = "spawn-rate", value_name = "RATE")]
    spawn_rate: Option<f64>,

    /// How long to run (300s, 20m, 3h, 1h30m; a bare number is seconds). loadhost runs a set time:
    /// this is required.
    #[arg(short = 't', long = "run-time", value_name = "TIME")]
    run_time: Option<String>,

    /// The host the users aim at, `http://HOST[:PORT]`: the locustfile's `host`, and the one host
    /// its requests may reach (typing it is the grant, as `--allow-host`).
    #[arg(short = 'H', long = "host", value_name = "URL")]
    host: Option<String>,

    /// Run only the tasks with one of these tags.
    #[arg(short = 'T', long = "tags", value_name = "TAG", num_args = 1..)]
    tags: Vec<String>,

    /// Run no task with one of these tags.
    #[arg(short = 'E', long = "exclude-tags", value_name = "TAG", num_args = 1..)]
    exclude_tags: Vec<String>,

    /// Locust exits with this code when a request failed (default 1): here thresholds,
    /// `http_req_failed:rate==0` (and `checks:rate==1` when the locustfile uses `catch_response`,
    /// whose failures are checks), which exit 99 when crossed; 0 leaves them out.
    #[arg(long = "exit-code-on-error", value_name = "CODE", default_value_t = 1)]
    exit_code_on_error: u8,

    /// Write the HTML report (loadhost's) to FILE.
    #[arg(long = "html", value_name = "FILE")]
    html: Option<PathBuf>,

    /// Locust's CSV tables: not written (see the error for loadhost's outputs).
    #[arg(long = "csv", value_name = "PREFIX", hide = true)]
    csv: Option<String>,

    /// Locust's console and web-UI switches, accepted and unneeded: loadhost has no web UI and
    /// prints one report at the end.
    #[arg(long, hide = true)]
    headless: bool,
    #[arg(long, hide = true)]
    autostart: bool,
    #[arg(long, hide = true)]
    autoquit: Option<u32>,
    #[arg(long = "only-summary", hide = true)]
    only_summary: bool,
    #[arg(short = 'L', long = "loglevel", value_name = "LEVEL", hide = true)]
    loglevel: Option<String>,

    /// User classes to run, by name (default: every User class of the file, by weight).
    #[arg(value_name = "USER_CLASS")]
    user_classes: Vec<String>,

    /// `loadhost run`'s own flags, after `--` (`-- --allow-host api:443 --summary-json s.json`).
    #[arg(last = true, value_name = "RUN_FLAGS")]
    run_flags: Vec<String>,
}

/// `run`'s arguments parsed from the words `locust` made.
#[derive(Debug, Parser)]
#[command(name = "loadhost run", no_binary_name = true)]
struct AsRun {
    #[command(flatten)]
    run: RunArgs,
}

/// Run the locustfile as `run` would with the flags Locust's name.
pub fn run(args: LocustArgs) -> Result<ExitCode, Failure> {
    let words = run_words(&args)?;
    tracing::info!("as loadhost run {}", words.join(" "));
    match AsRun::try_parse_from(&words) {
        Ok(parsed) => crate::commands::run::run(parsed.run),
        Err(err) => Ok(crate::exit::usage_error(&err)),
    }
}

/// The words of `loadhost run` that mean what `args` asks of Locust.
fn run_words(args: &LocustArgs) -> Result<Vec<String>, Failure> {
    let usage = |why: String| Failure::usage(anyhow::anyhow!("{why}"));
    if args.csv.is_some() {
        return Err(usage(
            "--csv: Locust's CSV tables are not written; loadhost writes its figures per interval with \
             `-- --csv FILE` and at the end with `-- --summary-json FILE`"
                .to_owned(),
        ));
    }
    let mut words = vec![args.locustfile.to_string_lossy().into_owned()];
    let mut flag = |name: &str, value: String| words.extend([name.to_owned(), value]);
    if let Some((at, class)) = crate::locustfile::shape(&args.locustfile) {
        // As Locust: a shape gives the load, and these flags have no effect on it.
        let given: Vec<&str> =
            [(args.users.is_some(), "-u"), (args.spawn_rate.is_some(), "-r"), (args.run_time.is_some(), "-t")]
                .into_iter()
                .filter_map(|(given, name)| given.then_some(name))
                .collect();
        if !given.is_empty() {
            tracing::warn!("{at}: {class} shapes the load: {} have no effect on it, as in Locust", given.join(", "));
        }
    } else {
        let Some(run_time) = &args.run_time else {
            return Err(usage(
                "loadhost locust needs -t/--run-time: a run lasts a set time (Locust's runs until stopped)".to_owned(),
            ));
        };
        let (users, spawn_rate) = (args.users.unwrap_or(1), args.spawn_rate.unwrap_or(1.0));
        if users == 0 {
            return Err(usage("-u/--users: at least 1 user".to_owned()));
        }
        if !(spawn_rate.is_finite() && spawn_rate > 0.0) {
            return Err(usage(format!("-r/--spawn-rate {spawn_rate}: a number of users a second, above 0")));
        }
        flag("-d", seconds_if_bare(run_time));
        // Locust starts its users at the spawn rate: the workers ramp to the users over users/rate s.
        let ramp_ms = (f64::from(users) / spawn_rate * 1000.0).round();
        if users > 1 && ramp_ms >= 1.0 {
            flag("--stage", format!("{ramp_ms}ms:{users}"));
        } else {
            flag("-w", users.to_string());
        }
    }
    if let Some(host) = &args.host {
        let authority =
            crate::commands::http::targets::authority(host).map_err(|why| usage(format!("-H/--host: {why}")))?;
        flag("-e", format!("LOCUST_HOST={host}"));
        flag("--allow-host", authority);
    }
    if !args.tags.is_empty() {
        flag("-e", format!("LOCUST_TAGS={}", args.tags.join(",")));
    }
    if !args.exclude_tags.is_empty() {
        flag("-e", format!("LOCUST_EXCLUDE_TAGS={}", args.exclude_tags.join(",")));
    }
    if !args.user_classes.is_empty() {
        flag("-e", format!("LOCUST_USER_CLASSES={}", args.user_classes.join(",")));
    }
    // A run whose requests failed must not pass a CI gate that passed under Locust's exit code.
    if args.exit_code_on_error != 0 {
        flag("--threshold", "http_req_failed:rate==0".to_owned());
        // Locust counts a `response.failure()` as a failed request; loadhost records it as a check
        // of the request's name (its status was expected). A file that never catches a response has
        // no checks, and a threshold on none would fail for want of samples.
        if catches_responses(&args.locustfile) {
            flag("--threshold", "checks:rate==1".to_owned());
        }
    }
    if let Some(html) = &args.html {
        flag("--html", html.to_string_lossy().into_owned());
    }
    words.extend(args.run_flags.iter().cloned());
    Ok(words)
}

/// Whether the locustfile judges responses itself (`catch_response=True`).
fn catches_responses(locustfile: &std::path::Path) -> bool {
    crate::k6_options::script_text(locustfile, loadhost_component::script::Language::Python)
        .is_some_and(|(_, text)| text.contains("catch_response"))
}

/// Locust's run time as `-d` reads it: a bare number is seconds.
fn seconds_if_bare(time: &str) -> String {
    if !time.is_empty() && time.bytes().all(|b| b.is_ascii_digit()) { format!("{time}s") } else { time.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Result<Vec<String>, String> {
        let mut argv = vec!["locust"];
        argv.extend(line.split_whitespace());
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            args: LocustArgs,
        }
        let parsed = Wrap::try_parse_from(argv).map_err(|e| e.to_string())?;
        run_words(&parsed.args).map_err(|f| f.text())
    }

    #[test]
    fn locusts_command_line_becomes_runs_flags() {
        let made = words(
            "-f shop.py --headless -u 10 -r 2 -t 1m -H http://127.0.0.1:8089 --tags read -- --summary-json s.json",
        )
        .expect("made");
        assert_eq!(
            made.join(" "),
            "shop.py -d 1m --stage 5000ms:10 -e LOCUST_HOST=http://127.0.0.1:8089 --allow-host 127.0.0.1:8089 \
             -e LOCUST_TAGS=read --threshold http_req_failed:rate==0 --summary-json s.json"
        );
        let made = words("-u 1 -t 30 -H https://api.example/v1 --exit-code-on-error 0 Admin Shopper").expect("made");
        assert_eq!(
            made.join(" "),
            "locustfile.py -d 30s -w 1 -e LOCUST_HOST=https://api.example/v1 --allow-host api.example:443 \
             -e LOCUST_USER_CLASSES=Admin,Shopper"
        );
        let parsed = AsRun::try_parse_from(words("-u 3 -r 100 -t 2s").expect("made")).expect("run's flags");
        assert_eq!(parsed.run.plugin.as_deref(), Some(std::path::Path::new("locustfile.py")));
    }

    #[test]
    fn a_locustfile_that_catches_responses_fails_on_a_failure_it_declares() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let file = dir.path().join("judged.py");
        std::fs::write(&file, "with self.client.get('/', catch_response=True) as r:\n    r.failure('no')\n").unwrap();
        let made = words(&format!("-f {} -u 1 -t 5s", file.display())).expect("made").join(" ");
        assert!(made.ends_with("--threshold http_req_failed:rate==0 --threshold checks:rate==1"), "{made}");
        let made = words(&format!("-f {} -u 1 -t 5s --exit-code-on-error 0", file.display())).expect("made").join(" ");
        assert!(!made.contains("--threshold"), "{made}");
    }

    #[test]
    fn what_loadhost_cannot_do_is_said() {
        assert!(words("-u 2").unwrap_err().contains("needs -t/--run-time"));
        assert!(words("-t 5s --csv out").unwrap_err().contains("--summary-json FILE"));
        assert!(words("-t 5s -r 0").unwrap_err().contains("above 0"));
        assert!(words("-t 5s -H ftp://x").unwrap_err().contains("expected http://HOST"));
        assert!(words("-t 5s --vus 3").is_err(), "k6's flags are not Locust's");
    }
}
