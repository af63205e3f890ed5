//! Where a request's time went (k6's phases): the instants the host reads while it sends one
//! request ([`RequestClock`]), the phases they make ([`PhaseTimes`]), and one histogram per phase
//! ([`PhaseHistograms`]) beside `http_req_duration`'s, in the totals and per endpoint.
//!
//! The phases of one request follow each other without overlap, from the plugin's call into the
//! host to the end of the response body: blocked, connecting, TLS handshaking, sending, waiting,
//! receiving. `http_req_duration` is sending + waiting + receiving, computed from the same
//! instants, as in k6. Connecting and TLS handshaking are recorded only for a request that opened
//! a connection, so their counts are the connections opened (TLS: over https).

use std::time::{Duration, Instant};

use crate::catalogue::Phase;
use crate::count::Tally;
use crate::histogram::LatencyHistogram;

/// What opening a connection took, as the connector measured it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectTimes {
    /// TCP connect (the name already resolved).
    pub connecting: Duration,
    /// The TLS handshake; `None` over cleartext.
    pub tls: Option<Duration>,
}

/// The instants of one request with a response. Each is read once with `Instant::now()` (no
/// allocation), in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestClock {
    /// The plugin's call came into the host (the task's gate wait, when it is the task's first
    /// request, is added to blocked apart: see [`RequestClock::queued`]).
    pub called: Instant,
    /// Time the task waited at the gate (`--max-in-flight`) before this, its first request.
    pub queued: Duration,
    /// The connection opened for this request, if it opened one.
    pub connect: Option<ConnectTimes>,
    /// A connection was ready to carry the request.
    pub ready: Instant,
    /// The request was written.
    pub sent: Instant,
    /// The response head came.
    pub head: Instant,
    /// The body ended.
    pub end: Instant,
}

/// One request's phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseTimes {
    /// Waiting for a connection: the gate (first request of a task), a per-host cap's slot, the
    /// pool, name resolution, another request's connect.
    pub blocked: Duration,
    /// TCP connect, for a request that opened a connection.
    pub connecting: Option<Duration>,
    /// The TLS handshake, for a request that opened an https connection.
    pub tls_handshaking: Option<Duration>,
    /// Writing the request.
    pub sending: Duration,
    /// Sent to the first byte of the response head (time to first byte).
    pub waiting: Duration,
    /// Head to the end of the body.
    pub receiving: Duration,
}

impl RequestClock {
    /// The phases of these instants. Blocked is what is left of the wait for a connection once
    /// connecting and TLS are taken out, so the phases add up to the call's whole time.
    pub fn phases(&self) -> PhaseTimes {
        let (connecting, tls) = match self.connect {
            Some(c) => (Some(c.connecting), c.tls),
            None => (None, None),
        };
        let connect = connecting.unwrap_or_default() + tls.unwrap_or_default();
        let to_ready = self.ready.saturating_duration_since(self.called);
        PhaseTimes {
            blocked: self.queued + to_ready.saturating_sub(connect),
            connecting,
            tls_handshaking: tls,
            sending: self.sent.saturating_duration_since(self.ready),
            waiting: self.head.saturating_duration_since(self.sent),
            receiving: self.end.saturating_duration_since(self.head),
        }
    }
}

impl PhaseTimes {
    /// `http_req_duration`: sending + waiting + receiving (k6's definition), exactly.
    pub fn duration(&self) -> Duration {
        self.sending + self.waiting + self.receiving
    }

    /// A phase's time; `None` for connecting or TLS on a request that did not open a connection.
    pub fn get(&self, phase: Phase) -> Option<Duration> {
        match phase {
            Phase::Blocked => Some(self.blocked),
            Phase::Connecting => self.connecting,
            Phase::TlsHandshaking => self.tls_handshaking,
            Phase::Sending => Some(self.sending),
            Phase::Waiting => Some(self.waiting),
            Phase::Receiving => Some(self.receiving),
        }
    }
}

/// One histogram per phase (microseconds, as `http_req_duration`'s). Results files carry them
/// under `phases`; files written before phases existed read as empty.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PhaseHistograms {
    /// `http_req_blocked`.
    pub blocked: LatencyHistogram,
    /// `http_req_connecting`.
    pub connecting: LatencyHistogram,
    /// `http_req_tls_handshaking`.
    pub tls_handshaking: LatencyHistogram,
    /// `http_req_sending`.
    pub sending: LatencyHistogram,
    /// `http_req_waiting`.
    pub waiting: LatencyHistogram,
    /// `http_req_receiving`.
    pub receiving: LatencyHistogram,
}

impl PhaseHistograms {
    /// The histogram of `phase`.
    pub fn get(&self, phase: Phase) -> &LatencyHistogram {
        match phase {
            Phase::Blocked => &self.blocked,
            Phase::Connecting => &self.connecting,
            Phase::TlsHandshaking => &self.tls_handshaking,
            Phase::Sending => &self.sending,
            Phase::Waiting => &self.waiting,
            Phase::Receiving => &self.receiving,
        }
    }

    fn get_mut(&mut self, phase: Phase) -> &mut LatencyHistogram {
        match phase {
            Phase::Blocked => &mut self.blocked,
            Phase::Connecting => &mut self.connecting,
            Phase::TlsHandshaking => &mut self.tls_handshaking,
            Phase::Sending => &mut self.sending,
            Phase::Waiting => &mut self.waiting,
            Phase::Receiving => &mut self.receiving,
        }
    }

    /// Record one request's phases.
    pub fn record(&mut self, times: &PhaseTimes) {
        for phase in Phase::ALL {
            if let Some(d) = times.get(phase) {
                self.get_mut(phase).record(d);
            }
        }
    }

    /// Whether no request recorded its phases (every request has a blocked time).
    pub fn is_empty(&self) -> bool {
        self.blocked.count() == 0
    }

    /// Fold `other` into this.
    pub fn merge(&mut self, other: &PhaseHistograms) {
        self.add_to(other, &mut Tally::default());
    }

    pub(crate) fn add_to(&mut self, other: &PhaseHistograms, t: &mut Tally) {
        for phase in Phase::ALL {
            self.get_mut(phase).add_to(other.get(phase), t, format_args!("the {} histogram's count", phase.name()));
        }
    }

    /// Empty them, keeping their allocations.
    pub fn reset(&mut self) {
        for phase in Phase::ALL {
            self.get_mut(phase).reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(connect: Option<ConnectTimes>) -> RequestClock {
        let called = Instant::now();
        let at = |us: u64| called + Duration::from_micros(us);
        RequestClock {
            called,
            queued: Duration::from_micros(7),
            connect,
            ready: at(1_000),
            sent: at(1_013),
            head: at(51_500),
            end: at(51_533),
        }
    }

    /// The sum rule: duration is sending + waiting + receiving exactly, and the phases with the
    /// connect add up to the call's whole time (plus the gate wait).
    #[test]
    fn phases_add_up_and_duration_is_sending_waiting_receiving() {
        let connect = ConnectTimes { connecting: Duration::from_micros(300), tls: Some(Duration::from_micros(600)) };
        for c in [None, Some(connect)] {
            let clock = clock(c);
            let p = clock.phases();
            assert_eq!(p.duration(), p.sending + p.waiting + p.receiving);
            assert_eq!(p.duration(), clock.end - clock.ready, "ready to body end");
            let whole = p.blocked + p.connecting.unwrap_or_default() + p.tls_handshaking.unwrap_or_default();
            assert_eq!(whole + p.duration(), clock.end - clock.called + clock.queued, "{c:?}");
            assert_eq!((p.sending, p.waiting), (Duration::from_micros(13), Duration::from_micros(50_487)));
        }
        let p = clock(Some(connect)).phases();
        assert_eq!(p.blocked, Duration::from_micros(7 + 1_000 - 900), "the connect is not blocked time");
        assert_eq!((p.connecting, p.tls_handshaking), (Some(connect.connecting), connect.tls));
        assert_eq!(clock(None).phases().connecting, None, "a reused connection has no connecting time");
    }

    #[test]
    fn histograms_count_connects_only_where_a_connection_opened_and_merge() {
        let connect = ConnectTimes { connecting: Duration::from_micros(300), tls: None };
        let mut h = PhaseHistograms::default();
        h.record(&clock(Some(connect)).phases());
        h.record(&clock(None).phases());
        h.record(&clock(None).phases());
        assert_eq!((h.blocked.count(), h.connecting.count(), h.tls_handshaking.count()), (3, 1, 0));
        assert!(h.waiting.quantile_micros(0.5) >= 50_000);
        let mut total = PhaseHistograms::default();
        total.merge(&h);
        total.merge(&h);
        assert_eq!((total.waiting.count(), total.connecting.count()), (6, 2));
        let text = serde_json::to_string(&total).expect("serializes");
        let back: PhaseHistograms = serde_json::from_str(&text).expect("reads back");
        assert_eq!(back.receiving.count(), 6);
        let old: PhaseHistograms = serde_json::from_str("{}").expect("an absent phase reads as empty");
        assert!(old.is_empty());
        total.reset();
        assert!(total.is_empty());
    }
}
