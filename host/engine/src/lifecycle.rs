//! The plugin's lifecycle around a run: `setup` once before anything else, `teardown` once after
//! everything, each bounded by the lifecycle timeout.

use std::sync::Arc;
use std::time::Duration;

use crate::EngineError;
use crate::worker::{MetricsHandle, WorkerFactory};

/// The id under which the plugin's `setup` and `teardown` record metrics (no worker has it).
pub(crate) const LIFECYCLE_ID: u32 = u32::MAX;

/// The plugin's setup, once, before anything else: its failure sends nothing.
pub(crate) async fn setup<F: WorkerFactory>(
    factory: &F,
    limit: Duration,
    metrics: MetricsHandle,
) -> Result<Option<Arc<str>>, EngineError> {
    match tokio::time::timeout(limit, factory.setup(metrics)).await {
        Ok(Ok(data)) => Ok(data.map(Arc::from)),
        Ok(Err(err)) => Err(EngineError::Setup(err.to_string())),
        Err(_) => Err(EngineError::Setup(format!("took longer than {limit:?}"))),
    }
}

/// The plugin's teardown, once, after everything: why it failed, if it did.
pub(crate) async fn teardown<F: WorkerFactory>(
    factory: &F,
    data: &str,
    limit: Duration,
    metrics: MetricsHandle,
) -> Option<String> {
    match tokio::time::timeout(limit, factory.teardown(data, metrics)).await {
        Ok(Ok(())) => None,
        Ok(Err(err)) => Some(err.to_string()),
        Err(_) => Some(format!("took longer than {limit:?}")),
    }
}
