//! Ctrl-C and SIGTERM during a run: the first stops it gracefully (tasks under way get `--grace`),
//! the second stops it at once; either way every output is still written. A third ends the
//! process on the spot, for a run wedged beyond both.

use std::sync::Arc;

use loadhost_engine::Interrupt;
use tokio::signal::unix::{SignalKind, signal};

use crate::exit::STOPPED;

/// Turn SIGINT and SIGTERM into requests on `interrupt` for as long as `runtime` runs.
pub(crate) fn watch(runtime: &tokio::runtime::Runtime, interrupt: Arc<Interrupt>, grace: std::time::Duration) {
    runtime.spawn(async move {
        let (mut int, mut term) = match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
            (Ok(int), Ok(term)) => (int, term),
            (Err(err), _) | (_, Err(err)) => {
                tracing::warn!("cannot watch for Ctrl-C and SIGTERM ({err}): a stop will lose the results");
                return;
            }
        };
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            match interrupt.request() {
                1 => tracing::warn!(
                    "stopping: tasks under way have {grace:?} (--grace) to finish; press Ctrl-C again to stop at once"
                ),
                2 => tracing::warn!("stopping at once: tasks under way end as interrupted"),
                _ => {
                    tracing::error!("stopped a third time: exiting without writing the outputs");
                    std::process::exit(i32::from(STOPPED));
                }
            }
        }
    });
}
