//! How arrivals fall on the rate curve: evenly (task k when N(t) reaches k, today's grid), or as
//! a Poisson process by time-rescaling.
//!
//! A Poisson process of rate λ(t) is a unit-rate Poisson process run on the clock N(t) = ∫λ: arrival
//! k (0-based) happens when N(t) reaches S(k) = E₁ + … + E_{k+1}, with the Eᵢ unit-mean exponential
//! draws (`-ln(1-U)` from a seeded PCG generator). [`RateCurve::due_at`](crate::RateCurve::due_at) inverts N(t) in closed
//! form, so the schedule stays absolute, a ramp stays a ramp, and the count over a curve is Poisson
//! with mean N(T).
//!
//! The draws are one global sequence per seed and scenario. A segment (or an event loop) that
//! keeps every N-th arrival still draws them all, so N processes together reproduce the
//! single-process plan arrival for arrival; drawing is a few nanoseconds per arrival.

use std::fmt;
use std::str::FromStr;

use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// How arrivals are spaced on the rate curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Arrivals {
    /// Task k when N(t) reaches k: an even grid at a constant rate (k6's arrival rate).
    #[default]
    Even,
    /// A Poisson process over the curve (Locust's, Gatling's randomized injection), seeded.
    Poisson,
    /// A timer (a periodic scenario, `every` with `jitter`): each tick comes one period after the
    /// previous one plus a uniform draw in [0, `jitter`), so ticks of several timers decorrelate.
    /// The curve's rate is one per `every`.
    Periodic {
        /// The period.
        every: std::time::Duration,
        /// The most each tick is pushed back beyond its period.
        jitter: std::time::Duration,
    },
}

impl Arrivals {
    /// Whether the arrivals are drawn at random: their count over a curve is then known only in
    /// expectation.
    pub fn is_random(self) -> bool {
        matches!(self, Arrivals::Poisson | Arrivals::Periodic { .. })
    }

    /// The name the flag and the outputs use.
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Even => "even",
            Arrivals::Poisson => "poisson",
            Arrivals::Periodic { .. } => "periodic",
        }
    }
}

impl fmt::Display for Arrivals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Arrivals {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "even" => Ok(Arrivals::Even),
            "poisson" => Ok(Arrivals::Poisson),
            other => Err(format!("'{other}' is not an arrival process: expected even or poisson")),
        }
    }
}

/// The arrival process of one plan: its kind and the key of its draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Process {
    /// Even or Poisson.
    pub arrivals: Arrivals,
    /// The generator's seed (the run's seed mixed with the scenario's name).
    pub key: u64,
}

impl Process {
    /// The process of a scenario: its own stream of draws, so two scenarios of one run do not
    /// arrive together.
    pub fn new(arrivals: Arrivals, seed: u64, scenario: &str) -> Self {
        Self { arrivals, key: seed ^ fnv1a(scenario) }
    }
}

/// FNV-1a: a hash that is the same on every machine and release (std's hashers promise neither).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The cumulative count on the curve's clock at which arrival k is due, for k walking upwards.
#[derive(Debug, Clone)]
pub(crate) enum Targets {
    /// S(k) = k.
    Even,
    /// S(k) = E₁ + … + E_{k+1}.
    Poisson(Exponentials),
    /// S(k) = k + f·(U₁ + … + U_k), f = jitter ÷ every: tick k comes a period plus up to the
    /// jitter after tick k − 1 (on a curve of one task per period).
    Periodic(Uniforms),
}

impl Targets {
    /// The targets of `process`.
    pub(crate) fn new(process: Process) -> Self {
        match process.arrivals {
            Arrivals::Even => Targets::Even,
            Arrivals::Poisson => Targets::Poisson(Exponentials::new(process.key)),
            Arrivals::Periodic { every, jitter } => {
                let share = if every.is_zero() { 0.0 } else { jitter.as_secs_f64() / every.as_secs_f64() };
                Targets::Periodic(Uniforms::new(process.key, share))
            }
        }
    }

    /// S(k). Poisson targets only move forward: `k` must not go below the previous call's.
    pub(crate) fn target(&mut self, k: u64) -> f64 {
        match self {
            Targets::Even => k as f64,
            Targets::Poisson(draws) => draws.sum_through(k),
            Targets::Periodic(draws) => k as f64 + draws.sum_through(k),
        }
    }

    /// Whether arrivals are random (their total is then not known in advance).
    pub(crate) fn is_random(&self) -> bool {
        !matches!(self, Targets::Even)
    }
}

/// The running sum of the periodic ticks' jitter, each a uniform draw scaled by `share`.
#[derive(Debug, Clone)]
pub(crate) struct Uniforms {
    rng: Pcg64,
    share: f64,
    /// Ticks whose jitter is summed so far (tick 0 has none).
    drawn: u64,
    sum: f64,
}

impl Uniforms {
    fn new(key: u64, share: f64) -> Self {
        Self { rng: Pcg64::seed_from_u64(key), share, drawn: 0, sum: 0.0 }
    }

    /// share · (U₁ + … + U_k), drawing what is still missing.
    fn sum_through(&mut self, k: u64) -> f64 {
        while self.drawn < k {
            let u = (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
            self.sum += self.share * u;
            self.drawn += 1;
        }
        self.sum
    }
}

/// The running sum of unit-mean exponential draws.
#[derive(Debug, Clone)]
pub(crate) struct Exponentials {
    rng: Pcg64,
    /// Draws summed so far.
    drawn: u64,
    sum: f64,
}

impl Exponentials {
    fn new(key: u64) -> Self {
        Self { rng: Pcg64::seed_from_u64(key), drawn: 0, sum: 0.0 }
    }

    /// E₁ + … + E_{k+1}, drawing what is still missing.
    fn sum_through(&mut self, k: u64) -> f64 {
        while self.drawn <= k {
            self.sum += self.draw();
            self.drawn += 1;
        }
        self.sum
    }

    /// One unit-mean exponential: −ln(1 − U), U uniform on [0, 1) from the top 53 bits.
    fn draw(&mut self) -> f64 {
        let u = (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        -(1.0 - u).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for a in [Arrivals::Even, Arrivals::Poisson] {
            assert_eq!(a.to_string().parse::<Arrivals>(), Ok(a));
        }
        assert!("bursty".parse::<Arrivals>().unwrap_err().contains("expected even or poisson"));
    }

    #[test]
    fn draws_have_unit_mean_and_depend_on_the_key() {
        let mut draws = Exponentials::new(1);
        let mean = draws.sum_through(99_999) / 100_000.0;
        assert!((mean - 1.0).abs() < 0.02, "{mean}");
        assert_ne!(Exponentials::new(1).sum_through(0), Exponentials::new(2).sum_through(0));
        assert_ne!(Process::new(Arrivals::Poisson, 1, "a"), Process::new(Arrivals::Poisson, 1, "b"));
    }
}
