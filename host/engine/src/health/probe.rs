//! Timer overshoot: each event loop arms a precise timer every [`PERIOD`] and records how late it
//! fired. A loop reacts to a response, a due task or a timer only when it next gets the CPU and
//! has worked through what was ready before it, so this lateness is the delay the generator adds
//! to what it measures, from CPU starvation and from its own backlog alike (which run-queue delay
//! alone misses: a loop busy with its own tasks waits for no CPU). The closed model has no pacer
//! whose lag would show it; the probe measures both models the same way.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use loadhost_metrics::LatencyHistogram;
use tokio::time::Instant;

use crate::timer::PreciseTimer;

/// How often a loop's probe fires: 100 wake-ups a second cost a loop well under 0.1% of a core,
/// and give a 1 s interval a hundred samples for its p99.
pub(crate) const PERIOD: Duration = Duration::from_millis(10);

/// One event loop's overshoots since the sampler last read them.
#[derive(Debug, Default)]
pub(crate) struct Overshoot(Mutex<LatencyHistogram>);

impl Overshoot {
    fn record(&self, late: Duration) {
        self.lock().record(late);
    }

    /// Add what was recorded since the last call into `into`, and start afresh.
    pub(crate) fn drain_into(&self, into: &mut LatencyHistogram) {
        let mut own = self.lock();
        into.merge(&own);
        own.reset();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LatencyHistogram> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Fire every [`PERIOD`] on the current event loop and record how late each fire was, until the
/// loop's runtime drops this task. Records nothing when the timer cannot be made (the figure is
/// then absent, never 0).
pub(crate) async fn run(overshoot: Arc<Overshoot>) {
    let Ok(timer) = PreciseTimer::new() else {
        return;
    };
    loop {
        let due = Instant::now() + PERIOD;
        if timer.sleep_until(due).await.is_err() {
            return;
        }
        overshoot.record(Instant::now().saturating_duration_since(due));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn a_loop_blocked_by_its_own_work_shows_as_overshoot() {
        let overshoot = Arc::new(Overshoot::default());
        let probe = tokio::spawn(run(overshoot.clone()));
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Hold the loop's only thread past the probe's next fire, as a backlog of tasks would.
        std::thread::sleep(PERIOD * 3);
        tokio::time::sleep(Duration::from_millis(30)).await;
        probe.abort();
        let mut all = LatencyHistogram::new();
        overshoot.drain_into(&mut all);
        assert!(all.count() >= 3, "{} fires", all.count());
        assert!(all.quantile_micros(1.0) >= 15_000, "the blocked fire was late by ≥ 15 ms: {all:?}");
        let mut again = LatencyHistogram::new();
        overshoot.drain_into(&mut again);
        assert_eq!(again.count(), 0, "drained once");
    }
}
