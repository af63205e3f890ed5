//! The rate curve: tasks per second over time, piecewise linear (constant rates and `--stage`
//! ramps), and the absolute schedule it implies.
//!
//! With `N(t)` the integral of the rate from the start, task `k` is due at the moment `N(t)` first
//! exceeds `k`: at a constant rate `r`, task `k` at `k / r` (task 0 at the start), and nothing inside
//! a pause at rate 0. A curve that ends at `T` schedules `ceil(N(T))` tasks, so 2,000/s for 5 s is
//! exactly 10,000 tasks and a 0→1,000/s ramp over 10 s is exactly 5,000.

use std::time::Duration;

use thiserror::Error;

/// A rate in tasks per second that a curve would not accept.
#[derive(Debug, Error, PartialEq)]
#[non_exhaustive]
pub enum CurveError {
    /// Rates must be finite and not negative.
    #[error("rate {0} is not a finite, non-negative number of tasks per second")]
    BadRate(f64),
    /// A ramp must take some time.
    #[error("a stage must last longer than 0s")]
    EmptyStage,
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
}

fn check_rate(rate: f64) -> Result<f64, CurveError> {
    if rate.is_finite() && rate >= 0.0 { Ok(rate) } else { Err(CurveError::BadRate(rate)) }
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
        Ok(Self { segments, end })
    }

    /// When the curve ends, or `None` when it holds its last rate forever.
    pub fn end(&self) -> Option<Duration> {
        self.end.is_finite().then(|| Duration::from_secs_f64(self.end))
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
        let k = k as f64;
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
    fn bad_rates_and_empty_stages_are_rejected() {
        assert!(matches!(RateCurve::constant(f64::NAN, None), Err(CurveError::BadRate(_))));
        assert!(matches!(RateCurve::constant(-1.0, None), Err(CurveError::BadRate(_))));
        assert_eq!(
            RateCurve::new(1.0, &[Ramp { duration: Duration::ZERO, target: 2.0 }], None),
            Err(CurveError::EmptyStage)
        );
    }
}
