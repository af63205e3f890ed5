//! How a closed-model worker spaces its tasks: `--pace` (Locust's constant pacing: start an
//! iteration at most every DUR, measured against the intended start so an overrun shows as wait,
//! the closed model's correction for coordinated omission) and `--think` (a pause between a
//! worker's tasks, uniform or exponential).

use std::time::Duration;

use thiserror::Error;

/// A think time that cannot be drawn.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ThinkError {
    /// A range whose end is before its start.
    #[error("the think time's range ends ({max:?}) before it starts ({min:?})")]
    Reversed {
        /// Its start.
        min: Duration,
        /// Its end.
        max: Duration,
    },
}

/// A pause between a worker's tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Think {
    /// Uniform in [min, max].
    Uniform {
        /// The shortest pause.
        min: Duration,
        /// The longest pause.
        max: Duration,
    },
    /// Exponential with this mean (a Poisson process of task starts per worker, less the tasks).
    Exponential {
        /// The mean pause.
        mean: Duration,
    },
}

impl Think {
    /// Uniform in [min, max].
    pub fn uniform(min: Duration, max: Duration) -> Result<Self, ThinkError> {
        if max < min {
            return Err(ThinkError::Reversed { min, max });
        }
        Ok(Self::Uniform { min, max })
    }

    /// The pause for a uniform draw `unit` in [0, 1).
    pub fn draw(&self, unit: f64) -> Duration {
        let unit = unit.clamp(0.0, 1.0);
        match *self {
            Self::Uniform { min, max } => min + (max - min).mul_f64(unit),
            // Capped so one unlucky draw (u → 1) cannot stall a worker for the whole run.
            Self::Exponential { mean } => mean.mul_f64((-(1.0 - unit).ln()).min(20.0)),
        }
    }
}

/// A closed-model worker's spacing of its tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spacing {
    /// Start an iteration at most every this long.
    pub pace: Option<Duration>,
    /// Pause this long between tasks.
    pub think: Option<Think>,
}

impl Spacing {
    /// Whether either is set.
    pub fn is_set(&self) -> bool {
        self.pace.is_some() || self.think.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_in_their_range_and_average_their_mean() {
        let ms = Duration::from_millis;
        let uniform = Think::uniform(ms(100), ms(300)).expect("a range");
        assert_eq!(uniform.draw(0.0), ms(100));
        assert_eq!(uniform.draw(0.5), ms(200));
        assert!(Think::uniform(ms(3), ms(1)).is_err());
        let exp = Think::Exponential { mean: ms(100) };
        let n = 10_000;
        let total: Duration = (0..n).map(|i| exp.draw((f64::from(i) + 0.5) / f64::from(n))).sum();
        let mean = total.as_secs_f64() / f64::from(n);
        assert!((mean - 0.1).abs() < 0.002, "mean {mean}");
    }
}
