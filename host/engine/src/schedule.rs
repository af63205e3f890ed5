//! The rate curve: tasks per second over time, piecewise linear (constant rates and `--stage`
//! ramps), and the absolute schedule it implies ([`Schedule`]: one segment's due times, without a
//! clock, the arrivals spaced by their [`Process`]).
//!
//! With `N(t)` the integral of the rate from the start, task `k` is due at the moment `N(t)` first
//! exceeds `k`: at a constant rate `r`, task `k` at `k / r` (task 0 at the start), and nothing inside
//! a pause at rate 0. A curve that ends at `T` schedules `ceil(N(T))` tasks, so 2,000/s for 5 s is
//! exactly 10,000 tasks and a 0→1,000/s ramp over 10 s is exactly 5,000. With Poisson arrivals
//! ([`crate::arrivals`]) task `k` is due when `N(t)` reaches a random target instead of `k`
//! ([`RateCurve::due_at`]), and the count is Poisson with mean `N(T)`.
//!
//! A sine stage ([`sine_ramps`]) is made of linear pieces, [`SINE_PIECES`] per period, whose ends
//! lie on the sine: over whole periods the pieces schedule exactly the sine's integral, and over
//! part of one within 0.1% of it.

use std::time::Duration;

use thiserror::Error;

use crate::arrivals::{Process, Targets};

/// A rate in tasks per second that a curve would not accept.
#[derive(Debug, Error, PartialEq)]
#[non_exhaustive]
pub enum CurveError {
    /// Rates must be finite and not negative.
    #[error("rate {0} is not a finite, non-negative number of tasks per second")]
    BadRate(f64),
    /// Rates above [`MAX_RATE`] are refused.
    #[error("rate {0:e}/s is above loadhost's ceiling of {MAX_RATE}/s (see docs/engine.md, \"Rate ceiling\")", MAX_RATE = MAX_RATE as u64)]
    TooHigh(f64),
    /// A ramp must take some time.
    #[error("a stage must last longer than 0s")]
    EmptyStage,
    /// A sine stage's shape cannot be drawn.
    #[error("sine stage: {0}")]
    Sine(String),
}

/// One ramp: the rate moves linearly to `target` over `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ramp {
    /// How long the ramp takes.
    pub duration: Duration,
    /// The rate (tasks/s) reached at its end.
    pub target: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    /// Seconds from the start.
    start: f64,
    /// Seconds; infinite for an open-ended hold.
    len: f64,
    from: f64,
    to: f64,
    /// Tasks due before this segment: N(start).
    before: f64,
}

impl Segment {
    fn tasks(&self) -> f64 {
        if self.len.is_infinite() {
            if self.from > 0.0 { f64::INFINITY } else { 0.0 }
        } else {
            (self.from + self.to) / 2.0 * self.len
        }
    }

    /// N(start + tau) - N(start), for 0 <= tau <= len.
    fn tasks_within(&self, tau: f64) -> f64 {
        if self.len.is_infinite() {
            return self.from * tau;
        }
        let slope = (self.to - self.from) / self.len;
        self.from * tau + slope * tau * tau / 2.0
    }

    /// The offset into this segment at which `c` more tasks have become due.
    fn offset_of(&self, c: f64) -> f64 {
        if c <= 0.0 {
            return 0.0;
        }
        let b = self.from;
        let a = if self.len.is_infinite() { 0.0 } else { (self.to - self.from) / (2.0 * self.len) };
        // a·τ² + b·τ − c = 0, in the form that stays accurate when a is (close to) zero.
        let disc = (b * b + 4.0 * a * c).max(0.0);
        let tau = 2.0 * c / (b + disc.sqrt());
        if self.len.is_finite() { tau.min(self.len) } else { tau }
    }
}

/// Tasks per second over time, and the absolute schedule it implies.
#[derive(Debug, Clone, PartialEq)]
pub struct RateCurve {
    segments: Vec<Segment>,
    /// Seconds; infinite when the curve holds its last rate forever.
    end: f64,
    /// How arrivals are spaced on it (the pacer reads it here: the curve is what it is given).
    process: Process,
}

/// The highest rate a plan or a live change may ask for, in tasks per second per process: about
/// twenty times what a no-op plugin reaches on this project's 2-core machine, and past what any
/// machine releases (each task costs microseconds of CPU). Above it a plan is not a load test but
/// a typo, and the schedule's arithmetic (counts of slots per second in an `f64`, due times in
/// nanoseconds) stops being exact.
pub const MAX_RATE: f64 = 10_000_000.0;

/// The lowest rate other than 0 a user may type (one task a day): below it the next task lies
/// beyond any test's duration, so the number is a slip, not a plan. Ramps pass through lower rates
/// on their way to 0, which the schedule handles; only typed rates (flags, TOML, the control API)
/// are held to it.
pub const MIN_RATE: f64 = 1.0 / 86_400.0;

/// The furthest ahead a due time is placed: a rate so low that its next slot lies beyond this
/// (1e-300/s) waits this long instead of overflowing a `Duration` or an `Instant`.
pub const HORIZON: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `secs` as a duration, at most [`HORIZON`] (and 0 for anything not a positive number).
pub fn clamped_secs(secs: f64) -> Duration {
    if secs >= HORIZON.as_secs_f64() {
        HORIZON
    } else if secs > 0.0 {
        Duration::from_secs_f64(secs)
    } else {
        Duration::ZERO
    }
}

fn check_rate(rate: f64) -> Result<f64, CurveError> {
    if !rate.is_finite() || rate < 0.0 {
        Err(CurveError::BadRate(rate))
    } else if rate > MAX_RATE {
        Err(CurveError::TooHigh(rate))
    } else {
        Ok(rate)
    }
}

impl RateCurve {
    /// `rate` tasks/s for `duration`, or forever when `duration` is `None`.
    pub fn constant(rate: f64, duration: Option<Duration>) -> Result<Self, CurveError> {
        Self::new(rate, &[], duration)
    }

    /// Start at `initial` tasks/s, follow `ramps` one after the other, then hold the last rate.
    ///
    /// `total` cuts the curve (or extends the final hold) to that length; without it the curve
    /// ends with the last ramp, or never when there are no ramps.
    pub fn new(initial: f64, ramps: &[Ramp], total: Option<Duration>) -> Result<Self, CurveError> {
        let mut segments = Vec::with_capacity(ramps.len() + 1);
        let (mut at, mut rate, mut before) = (0.0_f64, check_rate(initial)?, 0.0_f64);
        for ramp in ramps {
            let target = check_rate(ramp.target)?;
            let len = ramp.duration.as_secs_f64();
            if len <= 0.0 {
                return Err(CurveError::EmptyStage);
            }
            let seg = Segment { start: at, len, from: rate, to: target, before };
            before += seg.tasks();
            segments.push(seg);
            at += len;
            rate = target;
        }
        let end = match total {
            Some(total) => total.as_secs_f64(),
            None if ramps.is_empty() => f64::INFINITY,
            None => at,
        };
        if end > at {
            let len = if end.is_finite() { end - at } else { f64::INFINITY };
            segments.push(Segment { start: at, len, from: rate, to: rate, before });
        } else if end < at {
            // Cut the curve at `end`: trim the segment it falls in and drop the rest.
            segments.retain(|s| s.start < end);
            if let Some(last) = segments.last_mut() {
                let cut = end - last.start;
                let to = last.from + (last.to - last.from) * cut / last.len;
                last.len = cut;
                last.to = to;
            }
        }
        Ok(Self { segments, end, process: Process::default() })
    }

    /// The same curve with arrivals spaced as `process` says.
    pub fn with_process(mut self, process: Process) -> Self {
        self.process = process;
        self
    }

    /// How arrivals are spaced on this curve.
    pub fn process(&self) -> Process {
        self.process
    }

    /// When the curve ends, or `None` when it holds its last rate forever.
    pub fn end(&self) -> Option<Duration> {
        self.end.is_finite().then(|| clamped_secs(self.end))
    }

    /// The rate (tasks/s) at `t` seconds from the start.
    pub fn rate_at(&self, t: f64) -> f64 {
        for seg in &self.segments {
            if t < seg.start + seg.len {
                if seg.len.is_infinite() {
                    return seg.from;
                }
                return seg.from + (seg.to - seg.from) * ((t - seg.start) / seg.len).max(0.0);
            }
        }
        self.segments.last().map_or(0.0, |s| s.to)
    }

    /// The highest rate anywhere on the curve.
    pub fn peak_rate(&self) -> f64 {
        self.segments.iter().map(|s| s.from.max(s.to)).fold(0.0, f64::max)
    }

    /// N(t): how many tasks have become due `t` seconds after the start.
    pub fn tasks_by(&self, t: f64) -> f64 {
        let t = t.min(self.end).max(0.0);
        for seg in &self.segments {
            if t <= seg.start + seg.len {
                return seg.before + seg.tasks_within(t - seg.start);
            }
        }
        self.segments.last().map_or(0.0, |s| s.before + s.tasks())
    }

    /// How many tasks the whole curve schedules, or `None` when it never ends.
    pub fn total_tasks(&self) -> Option<u64> {
        if !self.end.is_finite() {
            return if self.segments.iter().any(|s| s.tasks() > 0.0) { None } else { Some(0) };
        }
        // Guard against 9999.999999999 meaning 10,000.
        let n = self.tasks_by(self.end);
        Some((n - 1e-9).ceil().max(0.0) as u64)
    }

    /// Seconds from the start at which task `k` is due; `None` past the end of the curve.
    ///
    /// `hint` remembers the segment of the previous call, so a pacer walking `k` upwards pays O(1).
    pub fn due(&self, k: u64, hint: &mut usize) -> Option<f64> {
        self.due_at(k as f64, hint)
    }

    /// Seconds from the start at which N(t) first exceeds `target` (0 at or below 0); `None` when
    /// the curve ends first. [`RateCurve::due`] is `due_at(k)`; Poisson arrivals pass their own
    /// targets.
    pub fn due_at(&self, k: f64, hint: &mut usize) -> Option<f64> {
        let k = k.max(0.0);
        let mut i = (*hint).min(self.segments.len().saturating_sub(1));
        // Walk back if the hint is ahead (callers normally move forward).
        while i > 0 && self.segments[i].before > k {
            i -= 1;
        }
        while i < self.segments.len() {
            let seg = &self.segments[i];
            if k < seg.before + seg.tasks() {
                *hint = i;
                return Some(seg.start + seg.offset_of(k - seg.before));
            }
            i += 1;
        }
        None
    }
}

/// Linear pieces per period of a sine stage: the pieces' ends lie on the sine, so over whole
/// periods they schedule exactly its integral, and over part of one the error is at most about
/// (2π/64)²/12 ≈ 0.08% of the swing's share (0.5% is what a user would notice).
pub const SINE_PIECES: u32 = 64;

/// A sine piece is never shorter than this: a shorter period gets fewer pieces per period (still
/// exact over whole periods) rather than microsecond ramps.
pub const SINE_MIN_PIECE: Duration = Duration::from_millis(1);

/// The most pieces one sine stage may have (about 8 MB of curve): past it, a longer period or a
/// shorter stage says the same with fewer.
pub const SINE_MAX_PIECES: u128 = 200_000;

/// A sine stage as ramps: for `duration`, the rate follows
/// `min + (max − min)·(1 − cos(2πt/period))/2`, from `min` (t = 0) to `max` (half a period) and back.
/// The first piece ramps from whatever rate came before to the sine's value at its end.
pub fn sine_ramps(period: Duration, min: f64, max: f64, duration: Duration) -> Result<Vec<Ramp>, CurveError> {
    let bad = |why: String| Err(CurveError::Sine(why));
    if period.is_zero() {
        return bad("the period must be longer than 0s".into());
    }
    if duration.is_zero() {
        return Err(CurveError::EmptyStage);
    }
    check_rate(min)?;
    check_rate(max)?;
    if min > max {
        return bad(format!("min ({min}) is more than max ({max})"));
    }
    let piece = (period / SINE_PIECES).max(SINE_MIN_PIECE);
    let pieces = duration.as_nanos().div_ceil(piece.as_nanos());
    if pieces > SINE_MAX_PIECES {
        return bad(format!("{pieces} linear pieces would be needed (at most {SINE_MAX_PIECES}): use a longer period"));
    }
    let rate = |t: Duration| {
        let phase = std::f64::consts::TAU * t.as_secs_f64() / period.as_secs_f64();
        min + (max - min) * (1.0 - phase.cos()) / 2.0
    };
    let (mut ramps, mut at) = (Vec::with_capacity(pieces as usize), Duration::ZERO);
    while at < duration {
        let next = (at + piece).min(duration);
        ramps.push(Ramp { duration: next - at, target: rate(next) });
        at = next;
    }
    Ok(ramps)
}

/// The due times of one segment's arrivals on a curve, in seconds from the start: what the
/// pacer releases, without a clock (for tests, and to check a plan).
#[derive(Debug, Clone)]
pub struct Schedule {
    curve: RateCurve,
    targets: Targets,
    segment: crate::segment::Segment,
    /// The next arrival of the segment, in its own numbering.
    j: u64,
    hint: usize,
}

impl Schedule {
    /// The arrivals of `segment` on `curve`, spaced as `process` says.
    pub fn new(curve: RateCurve, process: Process, segment: crate::segment::Segment) -> Self {
        Self { curve, targets: Targets::new(process), segment, j: 0, hint: 0 }
    }
}

impl Iterator for Schedule {
    /// (arrival number in the whole plan, seconds from the start)
    type Item = (u64, f64);

    fn next(&mut self) -> Option<(u64, f64)> {
        let k = self.segment.global(self.j);
        let at = self.curve.due_at(self.targets.target(k), &mut self.hint)?;
        self.j += 1;
        Some((k, at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn constant_rate_schedules_exactly_rate_times_duration() {
        let c = RateCurve::constant(2000.0, Some(secs(5.0))).unwrap();
        assert_eq!(c.total_tasks(), Some(10_000));
        let mut hint = 0;
        assert_eq!(c.due(0, &mut hint), Some(0.0));
        assert!((c.due(9_999, &mut hint).unwrap() - 4.9995).abs() < 1e-9);
        assert_eq!(c.due(10_000, &mut hint), None);
    }

    #[test]
    fn ramp_from_zero_to_1000_over_10s_schedules_5000() {
        let c = RateCurve::new(0.0, &[Ramp { duration: secs(10.0), target: 1000.0 }], None).unwrap();
        assert_eq!(c.total_tasks(), Some(5_000));
        let mut hint = 0;
        // N(t) = 50 t², so task k is due at sqrt(k / 50).
        for k in [1u64, 50, 1250, 4999] {
            let t = c.due(k, &mut hint).unwrap();
            assert!((t - (k as f64 / 50.0).sqrt()).abs() < 1e-9, "k={k} t={t}");
        }
    }

    #[test]
    fn due_times_increase_and_match_the_integral() {
        let ramps = [
            Ramp { duration: secs(2.0), target: 300.0 },
            Ramp { duration: secs(1.0), target: 300.0 },
            Ramp { duration: secs(3.0), target: 50.0 },
        ];
        let c = RateCurve::new(100.0, &ramps, Some(secs(8.0))).unwrap();
        let total = c.total_tasks().unwrap();
        let expected = 400.0 + 300.0 + 525.0 + 100.0;
        assert_eq!(total, expected as u64);
        let (mut hint, mut last) = (0, -1.0);
        for k in 0..total {
            let t = c.due(k, &mut hint).unwrap();
            assert!(t > last || k == 0, "not increasing at {k}");
            assert!((c.tasks_by(t) - k as f64).abs() < 1e-6, "N(due({k})) = {}", c.tasks_by(t));
            last = t;
        }
        assert!(last < 8.0);
    }

    #[test]
    fn total_cuts_a_ramp_midway() {
        let c = RateCurve::new(0.0, &[Ramp { duration: secs(10.0), target: 1000.0 }], Some(secs(5.0))).unwrap();
        // N(5) = 50 · 25
        assert_eq!(c.total_tasks(), Some(1250));
        assert!((c.rate_at(4.0) - 400.0).abs() < 1e-9);
    }

    #[test]
    fn an_open_ended_curve_has_no_total_unless_its_rate_is_zero() {
        assert_eq!(RateCurve::constant(10.0, None).unwrap().total_tasks(), None);
        assert_eq!(RateCurve::constant(0.0, None).unwrap().total_tasks(), Some(0));
    }

    #[test]
    fn a_pause_at_rate_zero_schedules_nothing_inside_it() {
        let ramps = [Ramp { duration: secs(1.0), target: 0.0 }, Ramp { duration: secs(0.000_001), target: 100.0 }];
        let c = RateCurve::new(0.0, &ramps, Some(secs(3.0))).unwrap();
        let mut hint = 0;
        let first = c.due(0, &mut hint).unwrap();
        assert!(first >= 1.0, "the first task must wait for the pause to end, got {first}");
    }

    #[test]
    fn due_at_a_whole_number_is_due() {
        let c = RateCurve::new(0.0, &[Ramp { duration: secs(10.0), target: 1000.0 }], None).unwrap();
        let (mut a, mut b) = (0, 0);
        for k in [0u64, 7, 4999] {
            assert_eq!(c.due(k, &mut a), c.due_at(k as f64, &mut b));
        }
        assert!((c.due_at(12.5, &mut a).unwrap() - 0.5).abs() < 1e-12, "N(t) = 50 t²");
        assert_eq!(c.due_at(5000.0, &mut a), None, "past the end");
    }

    /// ∫ of the sine stage's rate over [0, d].
    fn sine_integral(period: f64, min: f64, max: f64, d: f64) -> f64 {
        let w = std::f64::consts::TAU / period;
        min * d + (max - min) / 2.0 * (d - (w * d).sin() / w)
    }

    #[test]
    fn a_sine_stage_schedules_its_integral() {
        for (period, d) in [(60.0, 600.0), (60.0, 45.0), (7.0, 100.0), (0.01, 2.0)] {
            let ramps = sine_ramps(secs(period), 100.0, 1000.0, secs(d)).unwrap();
            let c = RateCurve::new(100.0, &ramps, None).unwrap();
            let exact = sine_integral(period, 100.0, 1000.0, d);
            let total = c.total_tasks().unwrap() as f64;
            assert!((total - exact).abs() <= 0.005 * exact, "period {period}s over {d}s: {total} vs {exact}");
            assert!((c.rate_at(period / 2.0) - 1000.0).abs() < 1.0 || d < period / 2.0);
        }
        let whole = RateCurve::new(100.0, &sine_ramps(secs(60.0), 100.0, 1000.0, secs(600.0)).unwrap(), None).unwrap();
        assert_eq!(whole.total_tasks(), Some(330_000), "whole periods: (100 + 1000) / 2 · 600");
    }

    #[test]
    fn a_bad_sine_says_what_is_wrong() {
        let err = |p, min, max, d| sine_ramps(secs(p), min, max, secs(d)).unwrap_err().to_string();
        assert!(err(0.0, 1.0, 2.0, 1.0).contains("period must be longer than 0s"));
        assert!(err(1.0, 5.0, 2.0, 1.0).contains("min (5) is more than max (2)"));
        assert!(err(0.001, 1.0, 2.0, 1e6).contains("use a longer period"));
    }

    #[test]
    fn bad_rates_and_empty_stages_are_rejected() {
        assert!(matches!(RateCurve::constant(f64::NAN, None), Err(CurveError::BadRate(_))));
        assert!(matches!(RateCurve::constant(-1.0, None), Err(CurveError::BadRate(_))));
        assert_eq!(
            RateCurve::new(1.0, &[Ramp { duration: Duration::ZERO, target: 2.0 }], None),
            Err(CurveError::EmptyStage)
        );
    }
}
