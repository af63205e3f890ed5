//! Each receiver's format as the push task's [`Encode`]: which series it takes (the run's so
//! far, or each interval's) and how several intervals travel together.

use crate::payload::Payload;
use crate::push::Encode;
use crate::remote_write::HistogramStyle;
use crate::series::Snapshot;
use crate::{influx, otlp, remote_write};

/// A push format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Prometheus remote write 1.0, histograms as native or classic.
    RemoteWrite(HistogramStyle),
    /// OTLP/HTTP protobuf.
    Otlp,
    /// InfluxDB 1.x line protocol.
    Influx,
}

impl Encode for Format {
    fn cumulative(&self) -> bool {
        !matches!(self, Format::Influx)
    }

    fn encode(&self, snapshot: &Snapshot) -> Option<Payload> {
        let payload = match self {
            Format::RemoteWrite(style) => remote_write::encode(snapshot, *style),
            Format::Otlp => otlp::encode(snapshot),
            Format::Influx => influx::encode(snapshot),
        };
        (!payload.body.is_empty()).then_some(payload)
    }

    /// Line protocol is lines: several intervals' points are one body.
    fn join(&self, mut earlier: Payload, later: Payload) -> Option<Payload> {
        if *self != Format::Influx {
            return None;
        }
        if !earlier.body.ends_with(b"\n") && !earlier.body.is_empty() {
            earlier.body.push(b'\n');
        }
        earlier.body.extend_from_slice(&later.body);
        Some(earlier)
    }
}
