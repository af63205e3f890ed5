//! Sleeping in a synchronous task (`loadhost:plugin/pause`): think time in a journey, k6's and
//! Locust's `sleep`, on the host's timer.
//!
//! The worker's instance waits while other workers run, and the time slept is in the task's
//! duration, not in any request's. `std::thread::sleep` would block on WASI's clock instead. An
//! [`AsyncDoer`](crate::AsyncDoer)'s task awaits [`crate::sleep`], which does not hold its instance.

use std::time::Duration;

use crate::bindings::loadhost::plugin::pause as host;

/// Wait `duration` (a part of a millisecond counts as a whole one; at most a `u32` of
/// milliseconds, about 49 days). A task's timeout still ends the task.
pub fn sleep(duration: Duration) {
    host::sleep(crate::timers::whole_millis(duration));
}
