//! Waiting in an async task without holding its instance (`loadhost:plugin/timers`).

use std::time::Duration;

use crate::async_bindings::loadhost::plugin::timers as host;

/// Resume after `duration`, letting the instance's other tasks run meanwhile: the async task's
/// sleep (an [`AsyncDoer`](crate::AsyncDoer)'s; the host offers it to `workload-async` plugins).
///
/// A part of a millisecond counts as a whole one (no sleep is shorter than asked); a duration
/// longer than a `u32` of milliseconds (about 49 days) is that long. `std::thread::sleep` in an
/// async task would instead stop every task of the instance while it sleeps.
pub async fn sleep(duration: Duration) {
    host::sleep(whole_millis(duration)).await;
}

/// `duration` in milliseconds, rounded up, at most `u32::MAX`.
pub(crate) fn whole_millis(duration: Duration) -> u32 {
    u32::try_from(duration.as_nanos().div_ceil(1_000_000)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_round_up_and_clamp() {
        assert_eq!(whole_millis(Duration::ZERO), 0);
        assert_eq!(whole_millis(Duration::from_nanos(1)), 1);
        assert_eq!(whole_millis(Duration::from_micros(1500)), 2);
        assert_eq!(whole_millis(Duration::from_millis(10)), 10);
        assert_eq!(whole_millis(Duration::from_millis(u64::from(u32::MAX))), u32::MAX);
        assert_eq!(whole_millis(Duration::from_secs(u64::MAX)), u32::MAX);
    }
}
