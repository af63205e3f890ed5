//! From options to a runnable plan: the checks that need more than one option at a time.
//!
//! [`resolve`] reads as its steps: this process's segment and the secrets; the limits every run
//! has (their defaults filled in, so outputs show what was in force); the directories and the
//! pass/fail criteria; the data feed, loaded once and shared by every scenario; a plan per
//! scenario (`plan_one`: counts, model, then the plan's options and retries); and last the split
//! into segments.
//!
//! # Layout
//! - [`error`]: [`ConfigError`], why options cannot run, naming the flags.
//! - [`settings`]: [`RunSettings`], the checked run: its list of plans and the options in effect.
//! - [`limits`]: the limits every run has, their defaults filled in and checked.
//! - [`plan`]: one run's (or scenario's) options made into a plan: counts, model, retries.
//! - [`scenarios`]: `[[scenario]]` blocks, a plan each (a periodic block on a timer).

use std::sync::Arc;

use loadhost_engine::{Feed, FeedMode, Plan, Segment};

use crate::criteria::MetricDecl;
use crate::options::{ArrivalsArg, DataModeArg, RunOptions};
use crate::units::Dur;

pub mod error;
pub mod limits;
pub mod plan;
pub mod scenarios;
pub mod settings;

pub use error::ConfigError;
pub use limits::{
    DEFAULT_CACHE_MAX, DEFAULT_GRACE, DEFAULT_GRACEFUL_STOP, DEFAULT_LIFECYCLE_TIMEOUT, DEFAULT_MAX_MEMORY,
    DEFAULT_MAX_PLUGIN_SIZE, DEFAULT_MAX_RESPONSE_BODY, DEFAULT_METRICS_LINGER, DEFAULT_TASK_TIMEOUT, plugin_cap,
};
pub use plan::{
    DEFAULT_CLOSED_WORKERS, DEFAULT_FLUSH_RETRIES_TIMEOUT, DEFAULT_MAX_WORKERS, DEFAULT_OPEN_WORKERS_CAP,
    DEFAULT_RETRY_BACKOFF, DEFAULT_RETRY_BUDGET, DEFAULT_RETRY_QUEUE, MIN_OPEN_WORKERS, OPEN_RATE_PER_WORKER,
    default_open_workers,
};
pub use settings::RunSettings;

use limits::fill_limits;
use plan::plan_one;
use scenarios::plan_scenarios;

/// The data feed, loaded once: every scenario's plan holds the same rows.
type SharedFeed = Option<(Arc<Feed>, FeedMode)>;

/// Check `options` and build the run's plans (one per scenario when there are `[[scenario]]` blocks).
/// A threshold on a metric nobody has declared yet is left to [`check_plugin_metrics`], which
/// the caller makes once it has read the plugin file (the plugin may declare the metric there).
pub fn resolve(mut options: RunOptions) -> Result<RunSettings, ConfigError> {
    let segment = segment(&options)?;
    crate::distributed::check(&options, segment.is_some()).map_err(ConfigError::Distributed)?;
    let env = crate::secrets::plugin_env(&options)?;
    options.control_token = crate::secrets::control_token(&options)?;
    options.metrics_token = crate::secrets::metrics_token(&options)?;
    options.out_token = crate::secrets::out_token(&options)?;
    fill_limits(&mut options)?;
    check_arrivals(&mut options)?;
    check_dirs(&options)?;
    check_criteria(&options)?;
    let feed = load_feed(&options)?;
    // A single run is a list of one plan; a run of `[[scenario]]` blocks, one plan per block.
    let plans =
        if options.scenarios.is_empty() { vec![plan_one(&options, &feed)?] } else { plan_scenarios(&options, &feed)? };
    let mut settings = RunSettings { plans, env, max_workers: 0, segment: None, options };
    if settings.plans.iter().any(Plan::is_open) {
        // Shown in every output's config, as the seed is.
        settings.options.arrivals.get_or_insert(ArrivalsArg::Even);
    }
    if let Some(segment) = segment {
        split(&mut settings, segment)?;
    }
    settings.max_workers = settings.plans.iter().map(Plan::max_workers).fold(0, u32::saturating_add);
    Ok(settings)
}

/// This process's segment: `--segment I/N` (or `LOADHOST_SEGMENT`), or `--segments N` with the
/// index from Kubernetes' `JOB_COMPLETION_INDEX`.
fn segment(options: &RunOptions) -> Result<Option<Segment>, ConfigError> {
    let wrong = |why: String| ConfigError::Segment(why);
    let arg = match (options.segment, options.segments) {
        (Some(arg), Some(n)) if arg.count != n => {
            return Err(wrong(format!("--segment {arg} and --segments {n} disagree on the number of segments")));
        }
        (Some(arg), _) => arg,
        (None, Some(n)) => {
            let name = crate::distributed::JOB_COMPLETION_INDEX;
            let index = std::env::var(name).map_err(|_| {
                wrong(format!("--segments {n} needs ${name} (set by a Kubernetes Indexed Job) or --segment I/{n}"))
            })?;
            let index: u32 = index.trim().parse().map_err(|_| {
                wrong(format!("${name}='{index}' is not a segment index (0 to {})", n.saturating_sub(1)))
            })?;
            crate::distributed::SegmentArg { index, count: n }
        }
        (None, None) => return Ok(None),
    };
    if options.control.is_some() {
        return Err(wrong("--control drives one process's rate; it cannot be combined with segments".into()));
    }
    Segment::new(arg.index, arg.count).map(Some).map_err(|err| wrong(err.to_string()))
}

/// `--arrivals` applies to the open model; the seed in effect is `--seed` or one drawn now, kept in
/// the options so every output shows it.
fn check_arrivals(options: &mut RunOptions) -> Result<(), ConfigError> {
    if options.scenarios.is_empty() && options.rate.is_none() && options.arrivals.is_some() {
        return Err(ConfigError::OpenOnly { flag: "arrivals" });
    }
    if options.seed.is_none() {
        // Every segment of a split run must draw the same arrivals (and `merge` wants one plan):
        // they take their seed from what they share, `--start-at`, not from chance.
        let segmented = options.segment.is_some() || options.segments.is_some();
        let shared = options.start_at.map(|at| at.to_string()).unwrap_or_default();
        options.seed = Some(if segmented { stable_seed(&shared) } else { random_seed() });
    }
    Ok(())
}

/// A seed below 2⁵³ that every process computes alike from `text` (FNV-1a).
fn stable_seed(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)) >> 11
}

/// A fresh seed below 2⁵³, so it survives every JSON reader and a TOML file exactly: std's
/// `RandomState` is keyed from the operating system's randomness, and the clock varies it further.
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    hasher.write_u128(now.as_nanos());
    hasher.finish() >> 11
}

/// Every `--dir` is a directory there is.
fn check_dirs(options: &RunOptions) -> Result<(), ConfigError> {
    for grant in &options.dir {
        if !grant.host.is_dir() {
            let why = if grant.host.exists() { "not a directory" } else { "no such directory" };
            return Err(ConfigError::Dir { grant: grant.to_string(), why: why.to_owned() });
        }
    }
    Ok(())
}

/// Check, before any load, that every threshold can be judged in this run's scenarios, but for
/// a metric no one has declared yet: the plugin may declare it, and its file is read later
/// ([`check_plugin_metrics`]).
fn check_criteria(options: &RunOptions) -> Result<(), ConfigError> {
    crate::criteria::check_declared(&options.metric, None, &options.threshold, &scenario_names(options))?;
    check_push(options)
}

/// The push options: `--out-interval` a whole number of reporting intervals (each push carries
/// whole intervals), and none of them without a push receiver to apply to.
fn check_push(options: &RunOptions) -> Result<(), ConfigError> {
    let pushes = options.out.iter().any(|o| matches!(o, crate::criteria::OutSpec::Push(..)));
    let given = [
        ("out-interval", options.out_interval.is_some()),
        // Not `--out-token`: $LOADHOST_OUT_TOKEN may be set for every run of a CI job.
        ("out-token-file", options.out_token_file.is_some()),
        ("out-histograms", options.out_histograms.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, given)| *given).filter(|_| !pushes) {
        return Err(ConfigError::Push(format!(
            "--{flag} applies to the push outputs: add --out prometheus-rw=URL, otlp=URL or influxdb=URL"
        )));
    }
    let interval = loadhost_engine::plan::DEFAULT_INTERVAL;
    if let Some(every) = options.out_interval {
        let whole = every.0.as_nanos() % interval.as_nanos() == 0;
        if every.0.is_zero() || !whole {
            return Err(ConfigError::Push(format!(
                "--out-interval {every}: expected a whole number of reporting intervals ({})",
                Dur(interval)
            )));
        }
    }
    Ok(())
}

/// Check, before any load, every threshold with the metrics the plugin declares (read from its
/// file) known beside the `--metric` flags: the unknown-metric check [`resolve`] leaves to this.
pub fn check_plugin_metrics(settings: &RunSettings, plugin: &[MetricDecl]) -> Result<(), ConfigError> {
    let options = &settings.options;
    crate::criteria::check_declared(&options.metric, Some(plugin), &options.threshold, &scenario_names(options))?;
    Ok(())
}

/// The run's scenario names: its `[[scenario]]` blocks', or `default`.
fn scenario_names(options: &RunOptions) -> Vec<&str> {
    if options.scenarios.is_empty() {
        vec!["default"]
    } else {
        options.scenarios.iter().map(|s| s.name.as_str()).collect()
    }
}

/// `--data`, loaded once for the whole run (the engine's workers borrow its rows, no copies).
fn load_feed(options: &RunOptions) -> Result<SharedFeed, ConfigError> {
    let mode = match options.data_mode {
        Some(DataModeArg::Once) => FeedMode::Once,
        Some(DataModeArg::Loop) | None => FeedMode::Loop,
    };
    match &options.data {
        Some(path) => Ok(Some((Arc::new(crate::feed::load(path)?), mode))),
        None if options.data_mode.is_some() => Err(ConfigError::DataModeOnly),
        None => Ok(None),
    }
}

/// Split every plan into this process's segment. A worker ramp has no exact split.
fn split(settings: &mut RunSettings, segment: Segment) -> Result<(), ConfigError> {
    if settings.plans.iter().any(|p| p.worker_curve().is_some()) {
        return Err(ConfigError::Segment(
            "worker stages (--stage without --rate) cannot be split into segments; ramp a rate instead".into(),
        ));
    }
    settings.plans = std::mem::take(&mut settings.plans).into_iter().map(|p| p.with_segment(segment)).collect();
    settings.segment = Some(segment);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadhost_engine::{Arrivals, Model, Overload};

    use super::*;
    use crate::options::OverloadArg;
    use crate::units::Rate;

    fn opts(f: impl FnOnce(&mut RunOptions)) -> RunOptions {
        let mut o = RunOptions::default();
        f(&mut o);
        o
    }

    #[test]
    fn no_options_is_one_task_on_one_worker() {
        let s = resolve(RunOptions::default()).unwrap();
        assert_eq!(s.plans[0].model(), &Model::Closed { workers: 1, duration: None, max_tasks: Some(1) });
    }

    #[test]
    fn rate_and_duration_make_the_open_model() {
        let s = resolve(opts(|o| {
            o.rate = Some(Rate(2000.0));
            o.duration = Some("5s".parse().unwrap());
        }))
        .unwrap();
        assert_eq!(s.plans[0].planned_tasks(), Some(10_000));
        assert_eq!(s.plans[0].workers(), 100, "one per 20 tasks/s, at most 100");
        assert_eq!(s.plans[0].max_workers(), DEFAULT_MAX_WORKERS);
        assert_eq!(s.max_workers, DEFAULT_MAX_WORKERS);
    }

    #[test]
    fn the_default_starting_crew_follows_the_peak_rate_within_bounds() {
        assert_eq!(default_open_workers(50.0, 1000), 3, "a slow Python plugin holds 3, not 100");
        assert_eq!(default_open_workers(10.0, 1000), MIN_OPEN_WORKERS);
        assert_eq!(default_open_workers(200.0, 1000), 10);
        assert_eq!(default_open_workers(80_000.0, 1000), DEFAULT_OPEN_WORKERS_CAP);
        assert_eq!(default_open_workers(1_000.0, 4), 4, "never above --max-workers");
    }

    #[test]
    fn stages_ramp_the_rate_with_rate_and_the_workers_without() {
        let s = resolve(opts(|o| {
            o.rate = Some(Rate(0.0));
            o.stage = vec!["10s:1000".parse().unwrap()];
        }))
        .unwrap();
        assert_eq!(s.plans[0].planned_tasks(), Some(5_000));
        let s = resolve(opts(|o| o.stage = vec!["10s:40".parse().unwrap(), "5s:0".parse().unwrap()])).unwrap();
        assert!(!s.plans[0].is_open());
        assert_eq!(s.plans[0].planned_generation(), Some(std::time::Duration::from_secs(15)));
        assert_eq!((s.plans[0].workers(), s.plans[0].max_workers(), s.max_workers), (1, 40, 40));
        // `-w 0` starts the ramp from nothing (k6's startVUs: 0); one worker is still made to check
        // the plugin, and leaves before its first task.
        let s = resolve(opts(|o| {
            o.workers = Some(0);
            o.stage = vec!["2s:4".parse().unwrap()];
        }))
        .unwrap();
        assert_eq!(s.plans[0].workers(), 1);
        assert_eq!(s.plans[0].worker_curve().map(|c| c.rate_at(0.0)), Some(0.0));
    }

    #[test]
    fn max_workers_caps_the_open_crew_and_workers_sets_its_floor() {
        let s = resolve(opts(|o| {
            o.rate = Some(Rate(2000.0));
            o.duration = Some("5s".parse().unwrap());
            o.max_workers = Some(5);
        }))
        .unwrap();
        assert_eq!((s.plans[0].workers(), s.plans[0].max_workers()), (5, 5));
        let s = resolve(opts(|o| {
            o.rate = Some(Rate(200.0));
            o.duration = Some("5s".parse().unwrap());
            o.workers = Some(2);
            o.max_workers = Some(60);
        }))
        .unwrap();
        assert_eq!((s.plans[0].workers(), s.plans[0].max_workers(), s.max_workers), (2, 60, 60));
    }

    #[test]
    fn scenarios_take_their_own_model_and_fall_back_for_bounds() {
        let toml = r#"
            duration = "10s"
            max-in-flight = 8
            [[scenario]]
            name = "browse"
            rate = 100
            [[scenario]]
            name = "checkout"
            workers = 2
            start-after = "2s"
            iterations = 50
        "#;
        let options = crate::file::parse(std::path::Path::new("run.toml"), toml).unwrap();
        let s = resolve(options).unwrap();
        assert_eq!(s.plans.len(), 2);
        let (browse, checkout) = (&s.plans[0], &s.plans[1]);
        assert_eq!((browse.scenario(), browse.is_open(), browse.planned_tasks()), ("browse", true, Some(1000)));
        assert_eq!(browse.max_in_flight(), Some(8), "bounds fall back to the top level");
        assert_eq!((checkout.scenario(), checkout.is_open()), ("checkout", false));
        assert_eq!(checkout.start_delay(), std::time::Duration::from_secs(2));
        assert_eq!(s.max_workers, DEFAULT_MAX_WORKERS + 2);
    }

    #[test]
    fn a_run_is_a_list_of_plans_and_only_scenario_blocks_are_reported_one_by_one() {
        let single = resolve(opts(|o| {
            o.rate = Some(Rate(10.0));
            o.duration = Some("5s".parse().unwrap());
        }))
        .unwrap();
        assert_eq!((single.plans.len(), single.scenarios().len()), (1, 0), "a single run is its one plan");
        assert_eq!(single.planned_generation(), Some(Duration::from_secs(5)));
        let parse = |toml: &str| crate::file::parse(std::path::Path::new("run.toml"), toml).unwrap();
        let one_block = resolve(parse("[[scenario]]\nname = \"a\"\nworkers = 1\niterations = 3\n")).unwrap();
        assert_eq!(one_block.scenarios().len(), 1, "one block still has its own section");
        let two = resolve(parse(
            "duration = \"4s\"\ngrace = \"2s\"\n[[scenario]]\nname = \"a\"\nrate = 5\n\
             [[scenario]]\nname = \"b\"\nrate = 5\nstart-after = \"3s\"\n",
        ))
        .unwrap();
        assert_eq!(two.planned_generation(), Some(Duration::from_secs(7)), "to the last plan's end");
        assert_eq!(two.grace(), Duration::from_secs(2), "run-wide, from the top level");
        assert_eq!(two.max_workers, two.plans.iter().map(Plan::max_workers).sum::<u32>());
    }

    #[test]
    fn scenarios_share_one_data_feed() {
        let dir = tempfile::tempdir().unwrap();
        let rows = dir.path().join("rows.jsonl");
        std::fs::write(&rows, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n").unwrap();
        let toml = format!(
            "data = {:?}\ndata-mode = \"once\"\nduration = \"10s\"\n[[scenario]]\nname = \"a\"\nrate = 100\n[[scenario]]\nname = \"b\"\nworkers = 1\n",
            rows.display().to_string()
        );
        let s = resolve(crate::file::parse(std::path::Path::new("run.toml"), &toml).unwrap()).unwrap();
        let (a, b) = (s.plans[0].feed().unwrap(), s.plans[1].feed().unwrap());
        assert!(std::sync::Arc::ptr_eq(a, b), "one load, one buffer for every scenario");
        assert_eq!(s.plans[0].planned_tasks(), Some(3), "a once feed bounds each scenario by its rows");
    }

    #[test]
    fn bad_scenarios_name_themselves() {
        let parse = |toml: &str| crate::file::parse(std::path::Path::new("run.toml"), toml).unwrap();
        let err = resolve(parse("[[scenario]]\nname = \"a\"\nrate = 5\n")).unwrap_err().to_string();
        assert!(err.starts_with("scenario 'a': --rate needs --duration"), "{err}");
        let err = resolve(parse("[[scenario]]\nname = \"a\"\nworkers = 1\niterations = 1\n[[scenario]]\nname = \"a\"\nworkers = 1\niterations = 1\n")).unwrap_err().to_string();
        assert!(err.contains("'a' is repeated or empty"), "{err}");
        let err = crate::file::parse(std::path::Path::new("run.toml"), "[[scenario]]\nname = \"a\"\nratez = 1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `ratez`"), "{err}");
    }

    #[test]
    fn a_periodic_block_is_one_worker_on_a_timer_for_the_runs_duration() {
        let parse = |toml: &str| crate::file::parse(std::path::Path::new("run.toml"), toml).unwrap();
        let s = resolve(parse(
            "duration = \"10s\"\noverload = \"queue\"\n[[scenario]]\nname = \"load\"\nrate = 50\n\
             [[scenario]]\nname = \"refresh\"\nevery = \"2s\"\njitter = \"500ms\"\n",
        ))
        .unwrap();
        let timer = &s.plans[1];
        assert_eq!((timer.workers(), timer.max_workers()), (1, 1));
        assert_eq!(
            timer.arrivals(),
            Arrivals::Periodic { every: Duration::from_secs(2), jitter: Duration::from_millis(500) }
        );
        assert!(
            matches!(timer.model(), Model::Open { overload: Overload::Drop, .. }),
            "a busy tick drops, never queues"
        );
        for (block, says) in
            [("every = \"1s\"\nrate = 5\n", "`rate` cannot go with it"), ("every = \"0s\"\n", "longer than 0s")]
        {
            let err = resolve(parse(&format!("duration = \"5s\"\n[[scenario]]\nname = \"t\"\n{block}"))).unwrap_err();
            assert!(err.to_string().starts_with("scenario 't': ") && err.to_string().contains(says), "{err}");
        }
        let err = resolve(parse("[[scenario]]\nname = \"t\"\nevery = \"1s\"\n")).unwrap_err().to_string();
        assert!(err.contains("runs for the run's `duration`"), "{err}");
    }

    #[test]
    fn combinations_that_cannot_run_name_their_flags() {
        let cases: Vec<(RunOptions, &str)> = vec![
            (opts(|o| o.rate = Some(Rate(10.0))), "--rate needs --duration"),
            (
                opts(|o| {
                    o.stage = vec!["5s:10".parse().unwrap()];
                    o.max_workers = Some(3);
                }),
                "--max-workers applies to the open model",
            ),
            (opts(|o| o.workers = Some(4)), "--workers needs --duration"),
            (opts(|o| o.workers = Some(0)), "--workers must be at least 1"),
            (opts(|o| o.iterations = Some(0)), "--iterations must be at least 1"),
            (
                opts(|o| {
                    o.iterations = Some(5);
                    o.retry_backoff = Some("1s".parse().unwrap());
                }),
                "--retry-backoff needs --retries N",
            ),
            (
                opts(|o| {
                    o.iterations = Some(5);
                    o.retries = Some(2);
                    o.retry_budget = Some("10".parse().unwrap());
                }),
                "--retry-budget applies to the open model",
            ),
            (opts(|o| o.duration = Some("0s".parse().unwrap())), "--duration must be longer than 0s"),
            (
                opts(|o| {
                    o.rate = Some(Rate(0.0));
                    o.duration = Some("1s".parse().unwrap());
                }),
                "--rate must be more than 0",
            ),
            (
                opts(|o| {
                    o.max_workers = Some(3);
                    o.iterations = Some(5);
                }),
                "--max-workers applies to the open model",
            ),
            (
                opts(|o| {
                    o.overload = Some(OverloadArg::Queue);
                    o.iterations = Some(5);
                }),
                "--overload applies to the open model",
            ),
            (
                opts(|o| {
                    o.rate = Some(Rate(1.0));
                    o.iterations = Some(5);
                    o.workers = Some(9);
                    o.max_workers = Some(3);
                }),
                "--workers (9) is more than --max-workers (3)",
            ),
        ];
        for (options, expected) in cases {
            let err = resolve(options).expect_err(expected).to_string();
            assert!(err.starts_with(expected), "expected '{expected}…', got '{err}'");
        }
    }
}
