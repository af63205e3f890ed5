//! Where the segments of a distributed run meet before they start (`--barrier`): each announces
//! itself in the run's registry repository (`--results oci://…`) as a tag `RUN_ID-arrive-I`
//! carrying the time it arrived by its own clock, then watches the others arrive. The rule every
//! segment applies to what it sees gives all of them the same start, with no operator's clock:
//!
//! - all N arrived: start at the last arrival + [`LEAD`];
//! - else, at the first arrival + `--barrier-timeout` (the deadline), start at the deadline +
//!   [`LEAD`] without the missing ones (the merge then needs `--partial`);
//! - a segment that arrives after the deadline does not start (exit 5): it would run a share
//!   the others have not waited for.
//!
//! Clocks are assumed synchronised (NTP, as on any cluster's nodes); the start is an absolute
//! time, so each segment waits for it on its own clock, as with `--start-at`.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use loadhost_registry::{PluginRef, Registry};

use crate::exit::Failure;
use crate::registry::registry_failure;
use crate::results_oci::Part;

/// How long after the last arrival the segments start: every segment polls the registry, so
/// each must see the last arrival and still be waiting when the start comes.
pub const LEAD: Duration = Duration::from_secs(3);

/// How often a waiting segment looks for the others.
const POLL: Duration = Duration::from_millis(250);

/// How late past the common start a segment (not a retry) may still start: the time it takes to
/// see the last arrival and wake. Later than that, the barrier opened without it (it stalled).
const RETRY_SLACK: Duration = Duration::from_secs(1);

/// The default `--barrier-timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

const ARRIVAL_TYPE: &str = "application/vnd.loadhost.arrival.v1";
/// An arrival record is a line of JSON (`{"arrived_ms": …}`): anything past 64 KiB is not one.
const ARRIVAL_LAYER_CAP: u64 = 64 << 10;
const ARRIVAL_LAYER: &str = "application/vnd.loadhost.arrival.v1+json";

/// One run's barrier: where it is, who this segment is.
pub struct Barrier<'a> {
    /// The registry client.
    pub registry: &'a Registry,
    /// `REGISTRY/REPO`, as `--results oci://` names it.
    pub repository: &'a str,
    /// The run id (tag prefix).
    pub run_id: &'a str,
    /// This segment, and how many there are.
    pub index: u32,
    /// How many segments.
    pub count: u32,
    /// `--barrier-timeout`.
    pub timeout: Duration,
}

/// When the segments start, and which did not arrive in time.
#[derive(Debug, PartialEq, Eq)]
pub struct Meeting {
    /// The common start.
    pub start: SystemTime,
    /// Segments that had not arrived by the deadline.
    pub missing: Vec<u32>,
}

fn millis(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn at(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

/// The rule: from the arrivals seen (segment → arrival ms), the start, once it is decided.
pub fn decide(arrivals: &BTreeMap<u32, u64>, count: u32, timeout: Duration, now: SystemTime) -> Option<Meeting> {
    let first = *arrivals.values().min()?;
    let deadline = first.saturating_add(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
    let lead = u64::try_from(LEAD.as_millis()).unwrap_or(0);
    let in_time: BTreeMap<u32, u64> = arrivals.iter().filter(|(_, t)| **t <= deadline).map(|(i, t)| (*i, *t)).collect();
    if in_time.len() as u32 >= count {
        let last = in_time.values().max().copied().unwrap_or(first);
        return Some(Meeting { start: at(last + lead), missing: Vec::new() });
    }
    if millis(now) < deadline {
        return None;
    }
    let missing = (0..count).filter(|i| !in_time.contains_key(i)).collect();
    Some(Meeting { start: at(deadline + lead), missing })
}

impl Barrier<'_> {
    fn tag(&self, index: u32) -> Result<PluginRef, Failure> {
        crate::registry::parse_ref(&format!("{}:{}", self.repository, Part::Arrival.tag(self.run_id, index)))
    }

    /// Announce this segment and wait until the start is decided (or a stop is asked for).
    pub fn meet(&self, stopped: &dyn Fn() -> bool) -> Result<Meeting, Failure> {
        let (arrived, retry) = self.arrive()?;
        tracing::info!(
            "segment {}/{} of run {} arrived at the barrier; waiting for the others",
            self.index,
            self.count,
            self.run_id
        );
        let mut seen = BTreeMap::from([(self.index, arrived)]);
        loop {
            self.look(&mut seen)?;
            if let Some(meeting) = decide(&seen, self.count, self.timeout, SystemTime::now()) {
                return self.join(meeting, retry);
            }
            if stopped() {
                return Err(Failure::not_started(anyhow::anyhow!("stopped while waiting at the barrier")));
            }
            std::thread::sleep(POLL);
        }
    }

    /// Record this segment's arrival, and whether it had arrived before; a retried segment (its
    /// pod replaced) keeps its first arrival, so every segment still computes the same start.
    fn arrive(&self) -> Result<(u64, bool), Failure> {
        if let Some(first) = self.arrival(self.index)? {
            tracing::info!(
                "segment {} arrived at this barrier before (a retry): keeping its first arrival",
                self.index
            );
            return Ok((first, true));
        }
        let now = millis(SystemTime::now());
        let note = serde_json::json!({
            "run_id": self.run_id, "segment": self.index, "segments": self.count, "arrived_ms": now,
        });
        let about = serde_json::json!({ "run_id": self.run_id, "segment": self.index, "part": "arrival" });
        let layer = (ARRIVAL_LAYER.to_owned(), note.to_string().into_bytes());
        let tag = self.tag(self.index)?;
        self.registry.push_artifact(&tag, ARRIVAL_TYPE, &about, vec![layer]).map_err(registry_failure)?;
        Ok((now, false))
    }

    /// This segment's part in the decided `meeting`: it starts with the others, or not at all
    /// when it came too late for them. A retry whose barrier has already opened may have run
    /// (part of) its share before: it never starts again.
    fn join(&self, meeting: Meeting, retry: bool) -> Result<Meeting, Failure> {
        if meeting.missing.contains(&self.index) {
            return Err(Failure::not_started(anyhow::anyhow!(
                "segment {}/{} arrived after the barrier's deadline (--barrier-timeout {:?} after the first \
                 arrival): not starting a share the others did not wait for",
                self.index,
                self.count,
                self.timeout
            )));
        }
        let ago = SystemTime::now().duration_since(meeting.start).unwrap_or_default();
        if ago > RETRY_SLACK || (retry && !ago.is_zero()) {
            return Err(Failure::not_started(anyhow::anyhow!(
                "the barrier of run {} opened {:.1}s ago and the other segments are running: not starting a late \
                 share (a segment retried after the start)",
                self.run_id,
                ago.as_secs_f64()
            )));
        }
        Ok(meeting)
    }

    /// The arrival time segment `index` recorded, if it has one.
    fn arrival(&self, index: u32) -> Result<Option<u64>, Failure> {
        let artifact = match self.registry.pull_artifact(&self.tag(index)?, ARRIVAL_TYPE, ARRIVAL_LAYER_CAP) {
            Ok(artifact) => artifact,
            Err(loadhost_registry::RegistryError::NotFound { .. }) => return Ok(None),
            Err(err) => return Err(registry_failure(err)),
        };
        let note: serde_json::Value =
            artifact.layers.first().and_then(|(_, bytes)| serde_json::from_slice(bytes).ok()).unwrap_or_default();
        let ms = note["arrived_ms"].as_u64();
        if ms.is_none() {
            tracing::warn!("segment {index}'s arrival record in {} is unreadable: ignored", self.repository);
        }
        Ok(ms)
    }

    /// Add the arrivals of this run not seen yet.
    fn look(&self, seen: &mut BTreeMap<u32, u64>) -> Result<(), Failure> {
        let prefix = Part::Arrival.tag_prefix(self.run_id);
        let tags = match self.registry.tags(&self.tag(self.index)?) {
            Ok(tags) => tags,
            Err(loadhost_registry::RegistryError::NotFound { .. }) => Vec::new(),
            Err(err) => return Err(registry_failure(err)),
        };
        for index in tags.iter().filter_map(|t| t.strip_prefix(&prefix)?.parse::<u32>().ok()) {
            if index < self.count
                && !seen.contains_key(&index)
                && let Some(ms) = self.arrival(index)?
            {
                seen.insert(index, ms);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    #[test]
    fn everyone_arrived_starts_after_the_last() {
        let seen = BTreeMap::from([(0, 1_000), (1, 4_000), (2, 2_500)]);
        let meeting = decide(&seen, 3, MIN, at(4_100)).unwrap();
        assert_eq!(meeting, Meeting { start: at(4_000 + 3_000), missing: vec![] });
        assert_eq!(decide(&seen, 4, MIN, at(4_100)), None, "one still to come, deadline not reached");
    }

    #[test]
    fn past_the_deadline_the_present_start_without_the_missing() {
        let seen = BTreeMap::from([(0, 1_000), (2, 2_000)]);
        let meeting = decide(&seen, 3, MIN, at(61_000)).unwrap();
        assert_eq!(meeting, Meeting { start: at(61_000 + 3_000), missing: vec![1] });
        // One that arrives after the deadline does not count as present, whoever looks.
        let late = BTreeMap::from([(0, 1_000), (1, 70_000), (2, 2_000)]);
        assert_eq!(decide(&late, 3, MIN, at(70_100)).unwrap().missing, vec![1]);
    }
}
