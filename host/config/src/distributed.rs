//! Options for running one plan from several processes: `--segment I/N` (or `--segments N` with
//! Kubernetes' `JOB_COMPLETION_INDEX`), `--start-at TIMESTAMP` so they start together, and the
//! results file each writes for `loadhost merge`.

use std::fmt;
use std::str::FromStr;
use std::time::SystemTime;

/// `I/N`: segment I (0-based) of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentArg {
    /// 0-based index.
    pub index: u32,
    /// How many segments.
    pub count: u32,
}

impl FromStr for SegmentArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let hint = || format!("'{text}' is not a segment: expected I/N with I from 0 to N-1, such as 0/4");
        let (index, count) = text.trim().split_once('/').ok_or_else(hint)?;
        let index: u32 = index.trim().parse().map_err(|_| hint())?;
        let count: u32 = count.trim().parse().map_err(|_| hint())?;
        if count == 0 || index >= count {
            return Err(format!("'{text}': the index is 0-based, from 0 to N-1 (N at least 1)"));
        }
        Ok(Self { index, count })
    }
}

impl fmt::Display for SegmentArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// An absolute start time, RFC 3339 (`2026-11-29T23:00:00Z`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartAt(pub SystemTime);

impl FromStr for StartAt {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        humantime::parse_rfc3339_weak(text.trim())
            .map(StartAt)
            .map_err(|err| format!("'{text}' is not a time: {err} (expected RFC 3339, such as 2026-11-29T23:00:00Z)"))
    }
}

impl fmt::Display for StartAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_rfc3339(self.0))
    }
}

text_serde!(SegmentArg, StartAt);

/// The environment variable Kubernetes sets in each pod of an Indexed Job.
pub const JOB_COMPLETION_INDEX: &str = "JOB_COMPLETION_INDEX";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_0_based() {
        assert_eq!("3/4".parse::<SegmentArg>(), Ok(SegmentArg { index: 3, count: 4 }));
        assert!("4/4".parse::<SegmentArg>().unwrap_err().contains("0-based"));
        assert!("a/4".parse::<SegmentArg>().unwrap_err().contains("expected I/N"));
        assert!("2026-11-29T23:00:00Z".parse::<StartAt>().is_ok());
        assert!("tomorrow".parse::<StartAt>().unwrap_err().contains("RFC 3339"));
    }
}
