//! `--think MIN..MAX` and `--think exp:MEAN`: the closed model's pause between a worker's tasks,
//! as typed on the command line and in TOML.

use std::fmt;
use std::str::FromStr;

use loadhost_engine::Think;

use crate::units::Dur;

const THINK_HINT: &str = "expected MIN..MAX (uniform, such as 1s..3s) or exp:MEAN (exponential, such as exp:2s)";

/// A think time as the user wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThinkTime(pub Think);

impl FromStr for ThinkTime {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let s = text.trim();
        let dur = |part: &str| part.parse::<Dur>().map(|d| d.0).map_err(|err| format!("think '{text}': {err}"));
        if let Some(mean) = s.strip_prefix("exp:") {
            let mean = dur(mean)?;
            if mean.is_zero() {
                return Err(format!("think '{text}': the mean must be longer than 0s"));
            }
            return Ok(Self(Think::Exponential { mean }));
        }
        let Some((min, max)) = s.split_once("..") else {
            // A single duration is a fixed pause, the range of one value.
            let fixed = dur(s).map_err(|_| format!("'{text}' is not a think time: {THINK_HINT}"))?;
            return Ok(Self(Think::Uniform { min: fixed, max: fixed }));
        };
        Think::uniform(dur(min)?, dur(max)?).map(Self).map_err(|err| format!("think '{text}': {err}"))
    }
}

impl fmt::Display for ThinkTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Think::Uniform { min, max } if min == max => write!(f, "{}", Dur(min)),
            Think::Uniform { min, max } => write!(f, "{}..{}", Dur(min), Dur(max)),
            Think::Exponential { mean } => write!(f, "exp:{}", Dur(mean)),
        }
    }
}

text_serde!(ThinkTime);

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn think_times_parse_and_print_back() {
        let ms = Duration::from_millis;
        assert_eq!("1s..3s".parse(), Ok(ThinkTime(Think::Uniform { min: ms(1000), max: ms(3000) })));
        assert_eq!("exp:500ms".parse(), Ok(ThinkTime(Think::Exponential { mean: ms(500) })));
        assert_eq!("200ms".parse(), Ok(ThinkTime(Think::Uniform { min: ms(200), max: ms(200) })));
        for text in ["1s..3s", "exp:500ms", "200ms"] {
            assert_eq!(text.parse::<ThinkTime>().map(|t| t.to_string()), Ok(text.to_owned()));
        }
        for (bad, says) in
            [("3s..1s", "ends"), ("exp:0s", "longer than 0s"), ("soon", "MIN..MAX"), ("1s..x", "expected a duration")]
        {
            let err = bad.parse::<ThinkTime>().expect_err(bad);
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
