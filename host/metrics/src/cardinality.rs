//! A run-wide bound on plugin series. A plugin that tags by something unbounded (a user id, a full
//! URL) would otherwise make one series per value, and the host's memory would grow with the run.
//! Past [`MAX_SERIES`] distinct series, a sample for a new series goes to `NAME{overflow:true}`
//! instead; past as many overflow series too (a plugin inventing metric names), it is discarded.
//! Both are counted, so the summary says how much was folded.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::endpoint::{Endpoint, OVERFLOW_NAME};

use crate::plugin::SeriesKey;

/// Distinct plugin series a run keeps before new ones fold into an overflow series.
pub const MAX_SERIES: usize = 1000;

/// The tag that marks an overflow series.
pub const OVERFLOW_TAG: (&str, &str) = ("overflow", "true");

/// Where a sample goes.
#[derive(Debug, PartialEq, Eq)]
pub enum Admission {
    /// Its own series.
    Own(SeriesKey),
    /// Its name's overflow series.
    Folded(SeriesKey),
    /// Nowhere: every overflow series is taken too.
    Discarded,
}

/// The series admitted so far.
#[derive(Debug, Default)]
pub(crate) struct SeriesCap {
    state: Mutex<CapState>,
}

#[derive(Debug, Default)]
struct CapState {
    known: HashSet<SeriesKey>,
    own: usize,
    overflow: usize,
}

impl SeriesCap {
    /// Admit a sample for `key`, which its stripe's window does not hold yet.
    pub(crate) fn admit(&self, key: SeriesKey) -> Admission {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.known.contains(&key) {
            return Admission::Own(key);
        }
        if state.own < MAX_SERIES {
            state.own += 1;
            state.known.insert(key.clone());
            return Admission::Own(key);
        }
        let overflow = SeriesKey::new(key.name, vec![(OVERFLOW_TAG.0.into(), OVERFLOW_TAG.1.into())]);
        if state.known.contains(&overflow) {
            return Admission::Folded(overflow);
        }
        if state.overflow < MAX_SERIES {
            state.overflow += 1;
            state.known.insert(overflow.clone());
            return Admission::Folded(overflow);
        }
        Admission::Discarded
    }
}

/// The run-wide bound on HTTP endpoints: the same [`MAX_SERIES`] as plugin series, its own budget.
/// Past it a request counts under [`Endpoint::overflow`], and a warning is logged once.
#[derive(Debug, Default)]
pub(crate) struct EndpointCap {
    known: Mutex<HashSet<Endpoint>>,
    warned: AtomicBool,
}

impl EndpointCap {
    /// Where a request for `endpoint` (which its stripe's window does not hold yet) counts:
    /// `Ok` its own endpoint, `Err` the overflow one.
    pub(crate) fn admit(&self, endpoint: Endpoint) -> Result<Endpoint, Endpoint> {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if known.contains(&endpoint) {
            return Ok(endpoint);
        }
        if known.len() < MAX_SERIES {
            known.insert(endpoint.clone());
            return Ok(endpoint);
        }
        drop(known);
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "more than {MAX_SERIES} HTTP endpoints: further ones (such as {endpoint}) count under \
                 {OVERFLOW_NAME}; name requests so that ids in URLs share a name"
            );
        }
        Err(Endpoint::overflow())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, id: usize) -> SeriesKey {
        SeriesKey::new(name.into(), vec![("id".into(), id.to_string())])
    }

    #[test]
    fn past_the_cap_new_endpoints_fold_and_known_ones_stay() {
        let cap = EndpointCap::default();
        let e = |i: usize| Endpoint::new("GET", &format!("GET /e{i}"));
        for i in 0..MAX_SERIES {
            assert_eq!(cap.admit(e(i)), Ok(e(i)));
        }
        assert_eq!(cap.admit(e(MAX_SERIES)), Err(Endpoint::overflow()));
        assert_eq!(cap.admit(e(3)), Ok(e(3)));
        assert!(cap.warned.load(Ordering::Relaxed));
    }

    #[test]
    fn past_the_cap_new_series_fold_and_known_ones_stay() {
        let cap = SeriesCap::default();
        for i in 0..MAX_SERIES {
            assert_eq!(cap.admit(key("a", i)), Admission::Own(key("a", i)));
        }
        assert_eq!(cap.admit(key("a", 0)), Admission::Own(key("a", 0)), "a known series is still its own");
        let Admission::Folded(overflow) = cap.admit(key("a", MAX_SERIES)) else { panic!("must fold") };
        assert_eq!(overflow.to_string(), "a{overflow:true}");
        // "a" took one overflow series; the other names take the rest.
        for name in 1..MAX_SERIES {
            assert!(matches!(cap.admit(key(&format!("n{name}"), 0)), Admission::Folded(_)));
        }
        assert_eq!(cap.admit(key("one-too-many", 0)), Admission::Discarded);
        assert!(matches!(cap.admit(key("a", 5000)), Admission::Folded(_)), "existing overflow series take more");
    }
}
