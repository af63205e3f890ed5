//! The units users type: durations, rates, stages and environment pairs. Each parser's error says
//! what was expected, with an example, because it ends up in a one-line message next to the flag.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use loadhost_engine::schedule::{MAX_RATE, MIN_RATE};
use serde::{Deserialize, Deserializer};

/// A length of time: one or more `<number><unit>` parts with units `ms`, `s`, `m`, `h`
/// (`500ms`, `5s`, `1.5m`, `1m30s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub Duration);

/// The longest duration accepted, in seconds (about 31 years).
pub const MAX_DURATION_SECS: f64 = 1e9;

const DURATION_HINT: &str = "expected a duration such as 500ms, 5s, 1.5m, 2h or 1m30s";

impl FromStr for Dur {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let s = text.trim();
        if s.is_empty() {
            return Err(format!("empty duration: {DURATION_HINT}"));
        }
        let mut total = 0f64;
        let mut rest = s;
        while !rest.is_empty() {
            let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
            if digits == 0 {
                return Err(format!("'{text}' is not a duration: {DURATION_HINT}"));
            }
            let number: f64 =
                rest[..digits].parse().map_err(|_| format!("'{text}' is not a duration: {DURATION_HINT}"))?;
            rest = &rest[digits..];
            let unit = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
            let seconds = match &rest[..unit] {
                "ms" => number / 1000.0,
                "s" => number,
                "m" => number * 60.0,
                "h" => number * 3600.0,
                "" => return Err(format!("'{text}' has no unit: {DURATION_HINT}")),
                other => return Err(format!("'{text}' has an unknown unit '{other}': {DURATION_HINT}")),
            };
            total += seconds;
            rest = &rest[unit..];
        }
        // Beyond this an f64 of seconds no longer holds microseconds (found by fuzzing: a printed
        // duration would not parse back to itself), and nobody runs a test for 30 years.
        if !total.is_finite() || total > MAX_DURATION_SECS {
            return Err(format!("'{text}' is too long a duration: the most is {MAX_DURATION_SECS}s"));
        }
        Ok(Dur(Duration::from_secs_f64(total)))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_secs_f64() * 1000.0;
        if ms >= 1000.0 && (ms / 1000.0).fract() == 0.0 {
            write!(f, "{}s", ms / 1000.0)
        } else {
            write!(f, "{}ms", round3(ms))
        }
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Tasks per second, written `N`, `N/s`, `N/m` or `N/h` (`2000`, `120/m`).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate(pub f64);

const RATE_HINT: &str = "expected a number of tasks, optionally per s, m or h, such as 2000, 2000/s or 120/m";

impl FromStr for Rate {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let s = text.trim();
        let (number, per) = match s.split_once('/') {
            Some((n, unit)) => (n.trim(), unit.trim()),
            None => (s, "s"),
        };
        let divisor = match per {
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(format!("'{text}' has an unknown unit '/{per}': {RATE_HINT}")),
        };
        let n: f64 = number.parse().map_err(|_| format!("'{text}' is not a rate: {RATE_HINT}"))?;
        if !n.is_finite() || n < 0.0 {
            return Err(format!("'{text}' is not a rate: {RATE_HINT}"));
        }
        Rate::checked(n / divisor, text)
    }
}

impl Rate {
    /// `per_s` tasks/s, refused above the engine's ceiling; `typed` is what the user wrote.
    fn checked(per_s: f64, typed: &str) -> Result<Self, String> {
        if per_s > MAX_RATE {
            return Err(format!(
                "'{typed}' is above loadhost's ceiling of {} tasks/s per process (docs/engine.md, \"Rate ceiling\")",
                MAX_RATE as u64
            ));
        }
        if per_s > 0.0 && per_s < MIN_RATE {
            return Err(format!("'{typed}' is below the lowest rate, 1 task a day (1/h is 0.000278/s; 0 pauses)"));
        }
        Ok(Rate(per_s))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/s", round3(self.0))
    }
}

/// One stage of `--stage`: the rate (with `--rate`) or the closed model's looping workers
/// (without) move linearly to TARGET over DUR (`DUR:TARGET`), or, in TOML only, follow a sine
/// (`{ shape = "sine", period = "60s", min = 100, max = 1000, duration = "10m" }`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    /// How long the stage takes.
    pub duration: Dur,
    /// The rate, or the number of workers, reached at its end.
    pub target: Rate,
    /// How it gets there.
    pub shape: Shape,
}

/// The path a stage takes to its target.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Shape {
    /// A straight line from the previous rate.
    #[default]
    Linear,
    /// `min + (max − min)·(1 − cos(2πt/period))/2`: from `min` up to `max` at half a period and
    /// back; the first of its linear pieces ramps from the previous rate.
    Sine {
        /// One cycle.
        period: Dur,
        /// The trough.
        min: Rate,
        /// The crest.
        max: Rate,
    },
}

impl Stage {
    /// A sine stage, checked: each error names the key that is wrong.
    pub fn sine(period: Dur, min: Rate, max: Rate, duration: Dur) -> Result<Self, String> {
        if period.0.is_zero() {
            return Err("stage: `period` must be longer than 0s".into());
        }
        if duration.0.is_zero() {
            return Err("stage: `duration` must be longer than 0s".into());
        }
        if min.0 > max.0 {
            return Err(format!("stage: `min` ({min}) is more than `max` ({max})"));
        }
        let phase = std::f64::consts::TAU * duration.0.as_secs_f64() / period.0.as_secs_f64();
        let target = Rate(min.0 + (max.0 - min.0) * (1.0 - phase.cos()) / 2.0);
        Ok(Stage { duration, target, shape: Shape::Sine { period, min, max } })
    }
}

impl FromStr for Stage {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (dur, rate) = text
            .split_once(':')
            .ok_or_else(|| format!("'{text}' is not a stage: expected DURATION:TARGET, such as 30s:1000"))?;
        let duration: Dur = dur.parse().map_err(|e| format!("stage '{text}': {e}"))?;
        let target: Rate = rate.parse().map_err(|e| format!("stage '{text}': {e}"))?;
        if duration.0.is_zero() {
            return Err(format!("stage '{text}': the duration must be longer than 0s"));
        }
        Ok(Stage { duration, target, shape: Shape::Linear })
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.shape {
            Shape::Linear => write!(f, "{}:{}", self.duration, self.target),
            Shape::Sine { period, min, max } => write!(f, "sine {min}..{max} every {period} for {}", self.duration),
        }
    }
}

/// A sine stage as written in TOML; every key optional here so that the shape is checked first
/// and each missing key is named.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShapedStage {
    shape: String,
    period: Option<Dur>,
    min: Option<Rate>,
    max: Option<Rate>,
    duration: Option<Dur>,
}

impl ShapedStage {
    fn check(self) -> Result<Stage, String> {
        if self.shape != "sine" {
            return Err(format!(
                "stage: unknown `shape` '{}': expected \"sine\" (or a \"DURATION:TARGET\" string)",
                self.shape
            ));
        }
        let missing = |key: &str| format!("stage: a sine stage needs `{key}`");
        Stage::sine(
            self.period.ok_or_else(|| missing("period"))?,
            self.min.ok_or_else(|| missing("min"))?,
            self.max.ok_or_else(|| missing("max"))?,
            self.duration.ok_or_else(|| missing("duration"))?,
        )
    }
}

impl<'de> Deserialize<'de> for Stage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Read as a value first: an untagged enum would hide why a table was refused.
        let stage = match toml::Value::deserialize(d)? {
            toml::Value::String(text) => text.parse(),
            table @ toml::Value::Table(_) => ShapedStage::deserialize(table)
                .map_err(|e| format!("stage: {}", e.message()))
                .and_then(ShapedStage::check),
            other => Err(format!(
                "stage: expected a \"DURATION:TARGET\" string or a {{ shape = \"sine\", … }} table, not {}",
                other.type_str()
            )),
        };
        stage.map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for Stage {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Shape::Sine { period, min, max } = self.shape else { return s.collect_str(self) };
        let mut map = s.serialize_map(Some(5))?;
        map.serialize_entry("shape", "sine")?;
        map.serialize_entry("period", &period)?;
        map.serialize_entry("min", &min)?;
        map.serialize_entry("max", &max)?;
        map.serialize_entry("duration", &self.duration)?;
        map.end()
    }
}

/// A percentage, written `20` or `20%`, kept as a fraction (0.2).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Percent(pub f64);

impl FromStr for Percent {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let number = text.trim().trim_end_matches('%').trim();
        match number.parse::<f64>() {
            Ok(n) if n.is_finite() && n > 0.0 && n <= 100.0 => Ok(Percent(n / 100.0)),
            _ => Err(format!(
                "'{text}' is not a percentage: expected a number above 0 and at most 100, such as 20 or 20%"
            )),
        }
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", round3(self.0 * 100.0))
    }
}

impl<'de> Deserialize<'de> for Percent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        let text = match Raw::deserialize(d)? {
            Raw::Number(n) => n.to_string(),
            Raw::Text(t) => t,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A variable of the plugin's environment (`-e`): `KEY=VALUE`, or `KEY` alone to pass loadhost's
/// own value of `KEY` (as `docker run -e KEY` does), so a secret need not be on a command line.
///
/// Its value never reaches an output: written out (the config echoed in every output, the options
/// the plugin's `setup` gets) it reads `KEY=[redacted]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPair {
    /// The variable's name.
    pub key: String,
    /// Its value (may be empty).
    pub value: String,
}

/// What an output shows in place of a secret.
pub const REDACTED: &str = "[redacted]";

impl FromStr for EnvPair {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.split_once('=') {
            Some((key, value)) if !key.is_empty() => Ok(EnvPair { key: key.to_owned(), value: value.to_owned() }),
            Some(_) => Err(format!("'{text}' is not KEY=VALUE or KEY: the name is empty")),
            None if !text.is_empty() => match std::env::var(text) {
                Ok(value) => Ok(EnvPair { key: text.to_owned(), value }),
                Err(_) => Err(format!(
                    "'{text}' is not set in loadhost's environment (-e KEY passes loadhost's own value of KEY; -e KEY=VALUE sets one)"
                )),
            },
            None => Err("an empty -e: expected KEY=VALUE or KEY".to_owned()),
        }
    }
}

impl fmt::Display for EnvPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={REDACTED}", self.key)
    }
}

/// A label of the run (`--tag KEY=VALUE`, as k6's `--tag`): meant for reports (team, build, commit),
/// so written to every output, unlike `-e` values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// The label's name: letters, digits, `_`, `-` and `.`, at most 64.
    pub key: String,
    /// Its value.
    pub value: String,
}

impl FromStr for Tag {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (key, value) = text.split_once('=').ok_or_else(|| format!("'{text}' is not KEY=VALUE"))?;
        let name_ok = !key.is_empty()
            && key.len() <= 64
            && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !name_ok {
            return Err(format!("'{text}': the name '{key}' must be 1 to 64 letters, digits, '_', '-' or '.'"));
        }
        Ok(Tag { key: key.to_owned(), value: value.to_owned() })
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// A number of bytes, written `N` (bytes) or with a unit: `KiB`, `MiB`, `GiB` (powers of 1024) or
/// `KB`, `MB`, `GB` (powers of 1000): `64MiB`, `1GiB`, `500MB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Size(pub u64);

const SIZE_HINT: &str = "expected a size such as 64MiB, 512KiB or 1GiB (units B, KiB, MiB, GiB, KB, MB, GB)";

impl FromStr for Size {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let s = text.trim();
        let digits = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
        let number: f64 = s[..digits].parse().map_err(|_| format!("'{text}' is not a size: {SIZE_HINT}"))?;
        let scale: u64 = match s[digits..].trim() {
            "" | "B" => 1,
            "KiB" => 1 << 10,
            "MiB" => 1 << 20,
            "GiB" => 1 << 30,
            "KB" => 1_000,
            "MB" => 1_000_000,
            "GB" => 1_000_000_000,
            other => return Err(format!("'{text}' has an unknown unit '{other}': {SIZE_HINT}")),
        };
        let bytes = number * scale as f64;
        // Nothing loadhost sizes comes near a terabyte: past it, the number is a typo.
        if !bytes.is_finite() || bytes > (1u64 << 40) as f64 {
            return Err(format!("'{text}' is too large a size: {SIZE_HINT}"));
        }
        Ok(Size(bytes.round() as u64))
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (unit, scale) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
            if self.0 >= scale && self.0.is_multiple_of(scale) {
                return write!(f, "{}{unit}", self.0 / scale);
            }
        }
        write!(f, "{}B", self.0)
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) => Ok(Size(n)),
            Raw::Text(text) => text.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// A host directory granted to the plugin read-only: `HOST_DIR` (seen at the same path) or
/// `HOST_DIR::GUEST_DIR` (wasmtime's syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirGrant {
    /// The directory on this machine.
    pub host: std::path::PathBuf,
    /// Where the plugin sees it.
    pub guest: String,
}

impl FromStr for DirGrant {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (host, guest) = match text.split_once("::") {
            Some((host, guest)) => (host, guest),
            None => (text, text),
        };
        if host.is_empty() || guest.is_empty() {
            return Err(format!("'{text}' is not a directory grant: expected HOST_DIR or HOST_DIR::GUEST_DIR"));
        }
        Ok(DirGrant { host: host.into(), guest: guest.to_owned() })
    }
}

impl fmt::Display for DirGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.as_os_str() == self.guest.as_str() {
            write!(f, "{}", self.guest)
        } else {
            write!(f, "{}::{}", self.host.display(), self.guest)
        }
    }
}

// Rates, percentages and sizes also take a TOML number, so they deserialize by hand below.
display_serialize!(Rate, Percent, Size);
text_serde!(Dur, EnvPair, Tag, DirGrant);

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) if n.is_finite() && n >= 0.0 => {
                // 1e308 as written, not as 309 digits.
                let typed = if n >= 1e15 { format!("{n:e}") } else { n.to_string() };
                Rate::checked(n, &typed).map_err(serde::de::Error::custom)
            }
            Raw::Number(n) => Err(serde::de::Error::custom(format!("{n} is not a rate: {RATE_HINT}"))),
            Raw::Text(text) => text.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Result<Duration, String> {
        s.parse::<Dur>().map(|d| d.0)
    }

    #[test]
    fn durations_take_ms_s_m_h_and_combinations() {
        assert_eq!(d("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(d("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(d("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(d("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(d("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(d(" 10s "), Ok(Duration::from_secs(10)));
    }

    #[test]
    fn bad_durations_say_what_was_expected() {
        for bad in ["5x", "5", "", "s", "abc", "1.2.3s", "5 s"] {
            let err = d(bad).expect_err(bad);
            assert!(err.contains("expected a duration"), "{bad}: {err}");
        }
    }

    #[test]
    fn rates_above_the_ceiling_are_refused_naming_it() {
        assert_eq!("10000000".parse::<Rate>(), Ok(Rate(MAX_RATE)));
        for typed in ["1e8", "1e12", "1e308", "600000001/m"] {
            let err = typed.parse::<Rate>().expect_err(typed);
            assert!(err.contains("ceiling of 10000000 tasks/s"), "{err}");
        }
        for typed in ["1e-300", "5e-324", "1/h"] {
            let parsed = typed.parse::<Rate>();
            assert_eq!(parsed.is_err(), typed != "1/h", "{typed}: {parsed:?}");
        }
        let err = toml::from_str::<std::collections::HashMap<String, Rate>>("rate = 1e308").unwrap_err().to_string();
        assert!(err.contains("'1e308' is above loadhost's ceiling"), "{err}");
    }

    #[test]
    fn rates_take_an_optional_unit() {
        assert_eq!("2000".parse::<Rate>(), Ok(Rate(2000.0)));
        assert_eq!("2000/s".parse::<Rate>(), Ok(Rate(2000.0)));
        assert_eq!("120/m".parse::<Rate>(), Ok(Rate(2.0)));
        assert_eq!("3600/h".parse::<Rate>(), Ok(Rate(1.0)));
        for bad in ["abc", "-5", "10/d", "", "NaN"] {
            let err = bad.parse::<Rate>().expect_err(bad);
            assert!(err.contains("expected a number of tasks"), "{bad}: {err}");
        }
    }

    #[test]
    fn stages_are_duration_colon_target() {
        let s: Stage = "30s:1000".parse().unwrap();
        assert_eq!((s.duration.0, s.target.0), (Duration::from_secs(30), 1000.0));
        assert!("30s".parse::<Stage>().unwrap_err().contains("DURATION:TARGET"));
        assert!("0s:10".parse::<Stage>().unwrap_err().contains("longer than 0s"));
        assert!("x:10".parse::<Stage>().unwrap_err().contains("expected a duration"));
    }

    #[test]
    fn display_round_trips() {
        for text in ["500ms", "5s", "90s", "1.5s"] {
            let dur: Dur = text.parse().unwrap();
            assert_eq!(dur.to_string().parse::<Dur>().unwrap(), dur, "{text}");
        }
        let stage: Stage = "1m:120/m".parse().unwrap();
        assert_eq!(stage.to_string(), "60s:2/s");
    }

    #[test]
    fn percentages_take_an_optional_sign() {
        assert_eq!("20".parse::<Percent>(), Ok(Percent(0.2)));
        assert_eq!("100%".parse::<Percent>(), Ok(Percent(1.0)));
        for bad in ["0", "101", "-5", "x", ""] {
            assert!(bad.parse::<Percent>().is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_take_binary_and_decimal_units() {
        assert_eq!("64MiB".parse::<Size>(), Ok(Size(64 << 20)));
        assert_eq!("1GiB".parse::<Size>(), Ok(Size(1 << 30)));
        assert_eq!("500MB".parse::<Size>(), Ok(Size(500_000_000)));
        assert_eq!("4096".parse::<Size>(), Ok(Size(4096)));
        assert_eq!("1.5KiB".parse::<Size>(), Ok(Size(1536)));
        assert_eq!(Size(128 << 20).to_string(), "128MiB");
        for bad in ["", "MiB", "12XB", "-1MiB", "64 mib", "2000GiB"] {
            let err = bad.parse::<Size>().expect_err(bad);
            assert!(err.contains("expected a size"), "{bad}: {err}");
        }
    }

    #[test]
    fn dir_grants_take_an_optional_guest_path() {
        let same: DirGrant = "fixtures".parse().unwrap();
        assert_eq!((same.host.to_str(), same.guest.as_str()), (Some("fixtures"), "fixtures"));
        let mapped: DirGrant = "./data::/data".parse().unwrap();
        assert_eq!((mapped.host.to_str(), mapped.guest.as_str()), (Some("./data"), "/data"));
        assert_eq!(mapped.to_string(), "./data::/data");
        assert!("::/data".parse::<DirGrant>().is_err());
        assert!("data::".parse::<DirGrant>().is_err());
    }

    #[test]
    fn env_pairs_need_a_key_and_never_show_their_value() {
        assert_eq!("A=1".parse::<EnvPair>(), Ok(EnvPair { key: "A".into(), value: "1".into() }));
        assert_eq!("A=".parse::<EnvPair>().map(|p| p.value), Ok(String::new()));
        assert!("=1".parse::<EnvPair>().is_err());
        assert!("".parse::<EnvPair>().is_err());
        let unset = "LOADHOST_TEST_SURELY_UNSET_VARIABLE".parse::<EnvPair>().unwrap_err();
        assert!(unset.contains("not set in loadhost's environment"), "{unset}");
        // `PATH` is set in any process that runs tests: -e KEY takes loadhost's own value.
        let path = "PATH".parse::<EnvPair>().unwrap();
        assert_eq!(Some(path.value.clone()), std::env::var("PATH").ok());
        assert_eq!(path.to_string(), "PATH=[redacted]");
        assert_eq!(serde_json::to_string(&path).unwrap(), "\"PATH=[redacted]\"");
    }

    #[test]
    fn tags_need_a_plain_name() {
        assert_eq!("team=checkout".parse::<Tag>(), Ok(Tag { key: "team".into(), value: "checkout".into() }));
        assert_eq!("build.id=a=b".parse::<Tag>().map(|t| t.value), Ok("a=b".to_owned()));
        for bad in ["team", "=x", "a b=1", "é=1"] {
            assert!(bad.parse::<Tag>().is_err(), "{bad}");
        }
        assert_eq!("team=x".parse::<Tag>().unwrap().to_string(), "team=x", "tags are meant for reports");
    }
}
