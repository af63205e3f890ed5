//! Where instances of their own are made: threads of their own, off the event loops.
//!
//! Making a worker of a script is heavy: instantiating the runner and loading the script in it
//! takes milliseconds of CPU (a JavaScript one ~4 ms, more on a busy machine). Made on the event
//! loop that runs the tasks, that time is taken from the tasks themselves: while the loop makes a
//! peer it answers no response and hands out no task, so on a machine loaded by other work a crew
//! that grows to meet a stall made the stall longer, which grew the crew further (issue 41, defect
//! 11: a stall grew a crew of 10 to 228 workers and dropped 7% of the tasks, where k6, which makes
//! its VUs on goroutines of their own, dropped none). Made here, the loop goes on serving while the
//! peer is made, and the operating system shares the cores between the two.
//!
//! An `init` runs here too (it is part of making the worker). A connection it opens (a login) is
//! then driven by these threads while the loop's tasks reuse it: it works, at the cost of a wake-up
//! across threads per read, for the few connections an `init` opens.
//!
//! One pool serves the process (a process runs one run at a time); its threads idle when nothing
//! is being made. An async plugin's workers are places in instances the event loop drives, so they
//! are made on the loop, as before; so are setup and teardown (on the run's own runtime).

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Runtime};
use tokio::task::JoinHandle;

/// At most this many threads make instances, however many cores: making is CPU work, and more
/// threads than cores would only take turns.
const MAX_THREADS: usize = 4;

static POOL: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// Why the work could not be done where it should be.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OffLoopError {
    #[error("could not start the threads that make instances: {0}")]
    Start(String),
    #[error("making the instance panicked: {0}")]
    Panicked(String),
}

/// Run `work` on these threads and wait for it; dropping the returned future (a deadline, a
/// stop) cancels the work at its next await.
pub(crate) async fn make<T, W>(work: W) -> Result<T, OffLoopError>
where
    T: Send + 'static,
    W: Future<Output = T> + Send + 'static,
{
    let pool = POOL.get_or_init(start).as_ref().map_err(|err| OffLoopError::Start(err.clone()))?;
    let mut task = AbortOnDrop(pool.spawn(work));
    match (&mut task.0).await {
        Ok(made) => Ok(made),
        Err(err) => Err(OffLoopError::Panicked(err.to_string())),
    }
}

fn start() -> Result<Runtime, String> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from).min(MAX_THREADS);
    Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("loadhost-maker")
        .enable_all()
        .build()
        .map_err(|err| err.to_string())
}

/// A task's handle that aborts the task when dropped: whoever waits for it stopped waiting.
pub(crate) struct AbortOnDrop<T>(pub(crate) JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn work_runs_on_a_thread_other_than_the_callers() {
        let here = std::thread::current().id();
        let there = make(async { std::thread::current().id() }).await.expect("made");
        assert_ne!(here, there);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_caller_that_stops_waiting_cancels_the_work() {
        let finished = Arc::new(AtomicBool::new(false));
        let flag = finished.clone();
        let work = make(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            flag.store(true, Ordering::SeqCst);
        });
        assert!(tokio::time::timeout(Duration::from_millis(20), work).await.is_err());
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(!finished.load(Ordering::SeqCst), "the work went on after its caller gave up");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_panic_is_an_error_not_a_crash() {
        let err = make(async {
            if true {
                panic!("boom");
            }
        })
        .await
        .expect_err("a panic");
        assert!(err.to_string().contains("panicked"), "{err}");
    }
}
