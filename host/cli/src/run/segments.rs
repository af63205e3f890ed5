//! A run split into segments (`--segment I/N`) and its results: where the results file goes,
//! its push to `--results oci://…`, and starting every segment together (`--barrier`,
//! `--start-at`).

use std::path::PathBuf;

use loadhost_config::RunSettings;
use loadhost_engine::Interrupt;

use crate::exit::Failure;
use crate::registry::Resolver;

/// Where the results file is written: `--results FILE`, or a file of its own to push when
/// `--results` names a registry.
pub(super) fn results_file(settings: &RunSettings) -> Option<PathBuf> {
    let o = &settings.options;
    if loadhost_config::distributed::results_repository(o).is_none() {
        return o.results.clone();
    }
    let run = o.run_id.as_deref().unwrap_or("run");
    let index = settings.segment.map_or(0, |s| s.index());
    Some(std::env::temp_dir().join(format!("loadhost-{run}-results-{index}-{}.lhr", std::process::id())))
}

/// Push the results file to `--results oci://…`; the file is removed once it is there, kept (and
/// named) when the push fails.
pub(super) fn push_results(settings: &RunSettings, resolver: &mut Resolver<'_>) -> Result<(), Failure> {
    let o = &settings.options;
    let (Some(repository), Some(run_id), Some(file)) =
        (loadhost_config::distributed::results_repository(o), o.run_id.as_deref(), results_file(settings))
    else {
        return Ok(());
    };
    let index = settings.segment.map_or(0, |s| s.index());
    let pushed = resolver.registry().and_then(|r| crate::results_oci::push(r, repository, run_id, index, &file));
    match pushed {
        Ok(_) => {
            let _ = std::fs::remove_file(&file);
            Ok(())
        }
        // The results are kept where they were written, and the error says where.
        Err(failure) => {
            Err(failure
                .context(format!("the results are kept in {} (merge that file, or push it again)", file.display())))
        }
    }
}

/// Wait until the segments start together: `--barrier` (then the planned start is the
/// barrier's, recorded as `start-at`) or `--start-at`; refuse to start past
/// `--max-start-lateness` (exit 5).
pub(super) fn start_together(
    settings: &mut RunSettings,
    resolver: &mut Resolver<'_>,
    interrupt: &Interrupt,
) -> Result<(), Failure> {
    let o = &settings.options;
    if let (true, Some(repository), Some(run_id), Some(segment)) =
        (o.barrier, loadhost_config::distributed::results_repository(o), o.run_id.as_deref(), settings.segment)
    {
        let barrier = super::rendezvous::Barrier {
            registry: resolver.registry()?,
            repository,
            run_id,
            index: segment.index(),
            count: segment.count(),
            timeout: o.barrier_timeout.map_or(super::rendezvous::DEFAULT_TIMEOUT, |d| d.0),
        };
        let meeting = barrier.meet(&|| interrupt.requests() > 0)?;
        if !meeting.missing.is_empty() {
            tracing::warn!(
                "segments {:?} did not arrive within --barrier-timeout: starting without them (merge with --partial)",
                meeting.missing
            );
        }
        settings.options.start_at = Some(loadhost_config::distributed::StartAt(meeting.start));
    }
    let Some(at) = settings.options.start_at else { return Ok(()) };
    if let (Ok(late), Some(limit)) =
        (std::time::SystemTime::now().duration_since(at.0), settings.options.max_start_lateness)
        && late > limit.0
    {
        return Err(Failure::not_started(anyhow::anyhow!(
            "the planned start {at} was {:.1}s ago, more than --max-start-lateness {limit}: not starting a \
             misaligned share",
            late.as_secs_f64(),
        )));
    }
    wait_for_start(settings, interrupt);
    Ok(())
}

/// The run a results file belongs to: `--run-id`, else the planned start (`--start-at`), which
/// every segment of one distributed run shares and no other run has.
pub(super) fn run_id(settings: &RunSettings) -> Option<String> {
    let o = &settings.options;
    o.run_id.clone().or_else(|| o.start_at.as_ref().map(|at| format!("start-at {at}")))
}

/// Wait for `--start-at`, so every segment starts its load together; a stop request ends the wait.
fn wait_for_start(settings: &RunSettings, interrupt: &Interrupt) {
    let Some(at) = settings.options.start_at else { return };
    match at.0.duration_since(std::time::SystemTime::now()) {
        Ok(wait) => {
            tracing::info!("waiting {:.1}s to start at {at}", wait.as_secs_f64());
            let until = std::time::Instant::now() + wait;
            while interrupt.requests() == 0 {
                let left = until.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                std::thread::sleep(left.min(std::time::Duration::from_millis(50)));
            }
        }
        Err(late) => tracing::warn!("--start-at {at} was {:.1}s ago: starting now", late.duration().as_secs_f64()),
    }
}
