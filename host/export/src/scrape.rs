//! `--metrics-addr`'s state: the run's latest snapshot, published once per interval, encoded for
//! each scrape in the format it asks for ([`crate::exposition`]); and whether a scrape has read
//! the run's final figures, so the run can linger for its scraper and no longer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::exposition::{self, Format};
use crate::{Payload, Snapshot};

/// Shared between the run (which publishes) and the HTTP endpoint (which encodes).
#[derive(Debug, Default)]
pub struct Scrape {
    /// The latest snapshot; none before the first interval.
    latest: Mutex<Option<Arc<Snapshot>>>,
    /// The latest snapshot is the run's last (every interval in, thresholds judged on the whole
    /// run).
    last: AtomicBool,
    /// A scrape has read it since: the run need not linger any longer for its scraper.
    last_read: AtomicBool,
}

impl Scrape {
    /// Nothing published yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serve `snapshot` from now on.
    pub fn publish(&self, snapshot: impl Into<Arc<Snapshot>>) {
        *self.latest.lock().unwrap_or_else(PoisonError::into_inner) = Some(snapshot.into());
    }

    /// The snapshot published last is final: every interval is in and the thresholds are the
    /// run's verdicts.
    pub fn mark_final(&self) {
        self.last.store(true, Ordering::Release);
    }

    /// Whether a scrape has read the final figures.
    pub fn final_read(&self) -> bool {
        self.last_read.load(Ordering::Acquire)
    }

    /// The answer to a scrape whose `Accept` header is `accept`; before the first snapshot, a
    /// valid exposition of no series.
    pub fn encode(&self, accept: Option<&str>) -> Payload {
        // Read before the snapshot: figures marked final after this read are not in this answer.
        let last = self.last.load(Ordering::Acquire);
        let latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let format: Format = exposition::negotiate(accept);
        let payload = match &latest {
            Some(snapshot) => exposition::encode(snapshot, format),
            None => exposition::encode(&empty(), format),
        };
        if last {
            self.last_read.store(true, Ordering::Release);
        }
        payload
    }
}

/// A snapshot of no series.
fn empty() -> Snapshot {
    Snapshot { at_ms: 0, start_ms: 0, run: Vec::new(), cumulative: Vec::new(), interval: Vec::new(), last: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::protobuf;
    use crate::exposition::tests::{counter, snapshot};

    #[test]
    fn only_a_scrape_after_the_figures_are_final_reads_them() {
        let scrape = Scrape::new();
        assert_eq!(scrape.encode(None).body, b"# EOF\n", "before the first snapshot");
        scrape.publish(snapshot(vec![counter("loadhost_tasks_scheduled", &[], 5)]));
        assert!(!scrape.final_read(), "a scrape during the run");
        scrape.publish(snapshot(vec![counter("loadhost_tasks_scheduled", &[], 9)]));
        scrape.mark_final();
        assert!(!scrape.final_read(), "final, not yet scraped");
        let text = String::from_utf8(scrape.encode(None).body).unwrap_or_default();
        assert!(text.contains("loadhost_tasks_scheduled_total{run_id=\"r1\",segment=\"1/2\",scenario=\"default\"} 9"));
        assert!(scrape.final_read());
    }

    #[test]
    fn a_scrape_gets_the_format_it_asks_for_even_before_the_first_snapshot() {
        let scrape = Scrape::new();
        let accept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited";
        let empty = scrape.encode(Some(accept));
        assert_eq!((empty.content_type, empty.body.len()), (protobuf::CONTENT_TYPE, 0), "no family, no bytes");
        scrape.publish(Arc::new(snapshot(vec![counter("loadhost_retries", &[], 1)])));
        assert!(!scrape.encode(Some(accept)).body.is_empty());
        assert!(scrape.encode(Some("text/plain")).body.ends_with(b"# EOF\n"));
    }
}
