//! A precise timer inside the event loop: a Linux `timerfd` registered with the event loop's runtime.
//!
//! tokio's own timer has a 1 ms granularity, which alone puts `wait_ms` p99 above a millisecond,
//! and a pacer sleeping on a thread of its own must wake a worker on another thread for every
//! task (a futex wake-up and a context switch, most of the paced path's cost). A `timerfd` has the
//! kernel's high-resolution timer behind it and is just one more file descriptor for the event loop's
//! `epoll`, so the pacer sleeps in the same loop as its workers and nothing crosses threads.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::time::Instant;

/// A one-shot timer that can be re-armed, awaited on the current runtime.
#[derive(Debug)]
pub(crate) struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
}

impl PreciseTimer {
    /// A disarmed timer on `CLOCK_MONOTONIC` (the clock `Instant` reads), registered with the
    /// current runtime. Must be called inside a runtime with I/O enabled.
    pub(crate) fn new() -> io::Result<Self> {
        // SAFETY: timerfd_create takes no pointers; a negative result is an error, checked below.
        let raw = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor this function owns from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the `OwnedFd` moves into the `AsyncFd` and is closed only when it is dropped, so
        // the descriptor stays open and the same for the registration's whole life.
        let fd = unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
            .map_err(|err| io::Error::other(err.to_string()))?;
        Ok(Self { fd })
    }

    /// Arm the timer to fire `after` from now (a zero duration would disarm it, so it is rounded
    /// up to a nanosecond).
    fn arm(&self, after: Duration) -> io::Result<()> {
        let after = after.max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                // Capped at i32::MAX seconds (68 years, far past any run), which every platform's
                // `time_t` holds, so the cast cannot wrap; the type is not named because libc
                // deprecates `time_t` on musl (its width changes there).
                tv_sec: after.as_secs().min(i32::MAX as u64) as _,
                // Below 10⁹, so it fits every platform's `c_long`.
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: `spec` is a valid itimerspec for the duration of the call; the old value is not
        // wanted (null is allowed).
        let rc = unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
    }

    /// Read the expiration count, which clears the descriptor's readiness; `false` when the timer
    /// has not fired yet.
    fn consume(&self) -> io::Result<bool> {
        let mut expirations = [0u8; 8];
        // SAFETY: the buffer is 8 writable bytes, what a timerfd read needs.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), expirations.as_mut_ptr().cast(), expirations.len()) };
        if n == 8 {
            return Ok(true);
        }
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::WouldBlock { Ok(false) } else { Err(err) }
    }

    /// Sleep until `deadline`, with the kernel's high-resolution timer.
    pub(crate) async fn sleep_until(&self, deadline: Instant) -> io::Result<()> {
        let now = Instant::now();
        if deadline <= now {
            return Ok(());
        }
        // A fire left over from an earlier sleep that was cut short must not end this one.
        self.consume()?;
        self.arm(deadline - now)?;
        loop {
            let mut ready = self.fd.readable().await?;
            if self.consume()? {
                return Ok(());
            }
            ready.clear_ready();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn sleeps_until_the_deadline_and_no_less() {
        let timer = PreciseTimer::new().unwrap();
        for micros in [0u64, 50, 300, 2_000] {
            let began = Instant::now();
            timer.sleep_until(began + Duration::from_micros(micros)).await.unwrap();
            assert!(began.elapsed() >= Duration::from_micros(micros), "woke early for {micros} µs");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_sleep_cut_short_does_not_end_the_next_one_early() {
        let timer = PreciseTimer::new().unwrap();
        let short = Instant::now() + Duration::from_millis(1);
        // Arm the timer and give up on the sleep at once, then let its expiry pass unread.
        assert!(futures_util::FutureExt::now_or_never(timer.sleep_until(short)).is_none());
        std::thread::sleep(Duration::from_millis(3));
        let began = Instant::now();
        timer.sleep_until(began + Duration::from_millis(5)).await.unwrap();
        assert!(began.elapsed() >= Duration::from_millis(5));
    }
}
