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

/// The scheme of a `--results` that goes to a registry.
pub const OCI_SCHEME: &str = "oci://";

/// `--results`' registry repository, when it names one (`oci://REGISTRY/REPO`).
pub fn results_repository(options: &crate::RunOptions) -> Option<&str> {
    options.results.as_deref()?.to_str()?.strip_prefix(OCI_SCHEME)
}

/// Whether `id` can prefix a registry tag (`ID-results-3`): a letter or digit, then letters,
/// digits, `.`, `_` or `-`, at most 64 in all.
pub fn valid_run_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Check that `--results oci://…`, `--barrier` and `--max-start-lateness` have what they need.
pub fn check(options: &crate::RunOptions, segmented: bool) -> Result<(), String> {
    let oci = results_repository(options);
    if let Some(repo) = oci {
        if !segmented {
            return Err(format!(
                "--results oci://{repo} is for a segment of a distributed run: add --segment I/N or --segments N"
            ));
        }
        match options.run_id.as_deref() {
            None => {
                return Err(format!(
                    "--results oci://{repo} needs --run-id ID (or $LOADHOST_RUN_ID): the tag names the run"
                ));
            }
            Some(id) if !valid_run_id(id) => {
                return Err(format!(
                    "--run-id '{id}': expected letters, digits, '.', '_' or '-' (at most 64, starting with a letter or digit), as it prefixes registry tags"
                ));
            }
            Some(_) => {}
        }
    }
    if options.barrier {
        if oci.is_none() {
            return Err("--barrier meets the other segments in a registry: add --results oci://REGISTRY/REPO".into());
        }
        if options.start_at.is_some() {
            return Err("--barrier and --start-at both set the start: use one".into());
        }
    } else if options.barrier_timeout.is_some() {
        return Err("--barrier-timeout needs --barrier".into());
    }
    if options.max_start_lateness.is_some() && !options.barrier && options.start_at.is_none() {
        return Err("--max-start-lateness needs a planned start: --start-at or --barrier".into());
    }
    Ok(())
}

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

    #[test]
    fn registry_results_and_the_barrier_need_their_parts() {
        use crate::RunOptions;
        let oci = RunOptions { results: Some("oci://127.0.0.1:5000/runs".into()), ..RunOptions::default() };
        assert!(check(&oci, false).unwrap_err().contains("--segment"));
        assert!(check(&oci, true).unwrap_err().contains("--run-id"));
        let named = RunOptions { run_id: Some("nightly-42".into()), ..oci.clone() };
        assert_eq!(check(&named, true), Ok(()));
        let bad_id = RunOptions { run_id: Some("a b".into()), ..oci.clone() };
        assert!(check(&bad_id, true).unwrap_err().contains("registry tags"));
        let file_barrier = RunOptions { barrier: true, ..RunOptions::default() };
        assert!(check(&file_barrier, true).unwrap_err().contains("oci://"));
        let late = RunOptions {
            max_start_lateness: Some(crate::units::Dur(std::time::Duration::from_secs(1))),
            ..RunOptions::default()
        };
        assert!(check(&late, false).unwrap_err().contains("--start-at or --barrier"));
        assert!(valid_run_id("r.1_x-2") && !valid_run_id("-x") && !valid_run_id(""));
    }
}
