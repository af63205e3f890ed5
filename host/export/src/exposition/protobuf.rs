//! Prometheus' protobuf exposition of a snapshot's cumulative series: one
//! `io.prometheus.client.MetricFamily` per family, each preceded by its length (a varint).
//! Counters are COUNTER families named `NAME_total` (the protobuf format adds no suffix, so the
//! name is the series' name as the text gives it), gauges GAUGE, histograms **native** HISTOGRAM:
//! the exponential buckets' schema, spans and deltas, zero bucket, count and sum, and no classic
//! buckets (Prometheus ingests one or the other, and asks for protobuf only when its native
//! histograms are on).
//!
//! The messages are written by hand from prometheus/client_model's
//! `io/prometheus/client/metrics.proto` (proto2), with its field numbers; fields loadhost does
//! not write (summaries, exemplars, float histograms, timestamps) are left out, which a proto2
//! reader takes as absent.

use loadhost_metrics::exponential::ExponentialHistogram;
use prost::Message;

use super::{Family, families};
use crate::remote_write::ZERO_THRESHOLD;
use crate::{Snapshot, Value, labels};

/// The content type of [`encode`]'s body.
pub const CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

/// The message the `proto` parameter of the content type names.
pub const MESSAGE: &str = "io.prometheus.client.MetricFamily";

/// The exposition of `snapshot.cumulative` (an empty snapshot gives an empty body: no family).
pub fn encode(snapshot: &Snapshot) -> Vec<u8> {
    let mut out = Vec::new();
    for family in families(&snapshot.cumulative) {
        // Encoding into a Vec cannot run out of room.
        let _ = family_message(&family, snapshot).encode_length_delimited(&mut out);
    }
    out
}

fn family_message(family: &Family<'_>, snapshot: &Snapshot) -> MetricFamily {
    let kind = match family.series.first().map(|s| &s.value) {
        Some(Value::Counter(_)) | None => MetricType::Counter,
        Some(Value::Gauge(_)) => MetricType::Gauge,
        Some(Value::Histogram(_)) => MetricType::Histogram,
    };
    let metric = family
        .series
        .iter()
        .map(|series| {
            let label = labels::joined(&snapshot.run, &series.labels)
                .into_iter()
                .map(|(name, value)| LabelPair { name: Some(name), value: Some(value) })
                .collect();
            let mut metric = Metric { label, ..Metric::default() };
            match &series.value {
                Value::Counter(n) => metric.counter = Some(Counter { value: Some(*n as f64) }),
                Value::Gauge(v) => metric.gauge = Some(Gauge { value: Some(*v) }),
                Value::Histogram(d) => metric.histogram = Some(native(&d.buckets)),
            }
            metric
        })
        .collect();
    let name = match kind {
        MetricType::Counter => format!("{}_total", family.name),
        _ => family.name.to_owned(),
    };
    MetricFamily {
        name: Some(name),
        help: Some(family.help.to_owned()),
        r#type: Some(kind as i32),
        metric,
        unit: family.unit().map(str::to_owned),
    }
}

/// `buckets` as a native histogram.
fn native(buckets: &ExponentialHistogram) -> Histogram {
    let (spans, deltas) = buckets.spans_and_deltas();
    let mut positive_span: Vec<BucketSpan> =
        spans.iter().map(|s| BucketSpan { offset: Some(s.offset), length: Some(s.length) }).collect();
    if positive_span.is_empty() {
        // The no-op span client_model asks for, so no reader takes an empty native histogram
        // for a classic one.
        positive_span.push(BucketSpan { offset: Some(0), length: Some(0) });
    }
    Histogram {
        sample_count: Some(buckets.count),
        sample_sum: Some(buckets.sum),
        schema: Some(i32::from(buckets.schema)),
        // Remote write's (the Go client's 2^-128), and set even on an empty histogram: Prometheus
        // 2.42 takes a family as native only when its first histogram has a bucket, a zero count
        // or a zero threshold.
        zero_threshold: Some(ZERO_THRESHOLD),
        zero_count: Some(buckets.zero_count),
        positive_span,
        positive_delta: deltas,
    }
}

/// `io.prometheus.client.MetricType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum MetricType {
    /// A counter (`Metric.counter`).
    Counter = 0,
    /// A gauge (`Metric.gauge`).
    Gauge = 1,
    /// A summary (not written).
    Summary = 2,
    /// Untyped (not written).
    Untyped = 3,
    /// A histogram (`Metric.histogram`).
    Histogram = 4,
    /// A gauge histogram (not written).
    GaugeHistogram = 5,
}

/// `io.prometheus.client.MetricFamily`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricFamily {
    /// The family's name.
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// Its HELP.
    #[prost(string, optional, tag = "2")]
    pub help: Option<String>,
    /// Its [`MetricType`].
    #[prost(enumeration = "MetricType", optional, tag = "3")]
    pub r#type: Option<i32>,
    /// Its series.
    #[prost(message, repeated, tag = "4")]
    pub metric: Vec<Metric>,
    /// Its unit, when its name ends with it.
    #[prost(string, optional, tag = "5")]
    pub unit: Option<String>,
}

/// `io.prometheus.client.Metric`: one series.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    /// Its labels.
    #[prost(message, repeated, tag = "1")]
    pub label: Vec<LabelPair>,
    /// A gauge's value.
    #[prost(message, optional, tag = "2")]
    pub gauge: Option<Gauge>,
    /// A counter's value.
    #[prost(message, optional, tag = "3")]
    pub counter: Option<Counter>,
    /// A histogram's value.
    #[prost(message, optional, tag = "7")]
    pub histogram: Option<Histogram>,
}

/// `io.prometheus.client.LabelPair`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LabelPair {
    /// The label's name.
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// Its value.
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}

/// `io.prometheus.client.Gauge`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Gauge {
    /// The level.
    #[prost(double, optional, tag = "1")]
    pub value: Option<f64>,
}

/// `io.prometheus.client.Counter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Counter {
    /// The total.
    #[prost(double, optional, tag = "1")]
    pub value: Option<f64>,
}

/// `io.prometheus.client.Histogram`, its native part (no classic `bucket`s).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    /// Every value.
    #[prost(uint64, optional, tag = "1")]
    pub sample_count: Option<u64>,
    /// Their sum.
    #[prost(double, optional, tag = "2")]
    pub sample_sum: Option<f64>,
    /// The bucket schema: boundaries are powers of `2^(2^-schema)`.
    #[prost(sint32, optional, tag = "5")]
    pub schema: Option<i32>,
    /// The zero bucket's width.
    #[prost(double, optional, tag = "6")]
    pub zero_threshold: Option<f64>,
    /// The values in the zero bucket.
    #[prost(uint64, optional, tag = "7")]
    pub zero_count: Option<u64>,
    /// The runs of positive buckets.
    #[prost(message, repeated, tag = "12")]
    pub positive_span: Vec<BucketSpan>,
    /// Each positive bucket's count less the previous one's (proto2: unpacked).
    #[prost(sint64, repeated, packed = "false", tag = "13")]
    pub positive_delta: Vec<i64>,
}

/// `io.prometheus.client.BucketSpan`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BucketSpan {
    /// The gap from the previous span's end (the first: the starting index).
    #[prost(sint32, optional, tag = "1")]
    pub offset: Option<i32>,
    /// Its consecutive buckets.
    #[prost(uint32, optional, tag = "2")]
    pub length: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::tests::{counter, gauge, histogram, snapshot};

    /// Every family of a delimited body, in order.
    fn decode(mut body: &[u8]) -> Vec<MetricFamily> {
        let mut out = Vec::new();
        while !body.is_empty() {
            out.push(MetricFamily::decode_length_delimited(&mut body).expect("a delimited MetricFamily"));
        }
        out
    }

    #[test]
    fn families_are_delimited_and_decode_back_with_their_types_and_labels() {
        let s = snapshot(vec![
            counter("loadhost_tasks", &[("outcome", "passed")], 7),
            gauge("loadhost_workers", &[], 3.0),
            histogram("loadhost_latency_seconds", &[(-3, 2), (-2, 5), (0, 1), (10, 4)], 0, 1.5),
            counter("loadhost_tasks", &[("outcome", "failed"), ("segment", "x")], 1),
        ]);
        let families = decode(&encode(&s));
        let names: Vec<_> = families.iter().map(|f| f.name.as_deref().unwrap_or_default()).collect();
        assert_eq!(names, ["loadhost_tasks_total", "loadhost_workers", "loadhost_latency_seconds"]);
        let types: Vec<_> = families.iter().map(|f| f.r#type()).collect();
        assert_eq!(types, [MetricType::Counter, MetricType::Gauge, MetricType::Histogram]);
        assert_eq!(families[2].unit.as_deref(), Some("seconds"));
        let tasks = &families[0].metric;
        assert_eq!(tasks.len(), 2, "one family for both, though apart in the snapshot");
        assert_eq!(tasks[1].counter.as_ref().and_then(|c| c.value), Some(1.0));
        let labels: Vec<(&str, &str)> = tasks[1]
            .label
            .iter()
            .map(|l| (l.name.as_deref().unwrap_or_default(), l.value.as_deref().unwrap_or_default()))
            .collect();
        assert_eq!(
            labels,
            [
                ("run_id", "r1"),
                ("segment", "1/2"),
                ("scenario", "default"),
                ("outcome", "failed"),
                ("exported_segment", "x")
            ]
        );
        assert_eq!(families[1].metric[0].gauge.as_ref().and_then(|g| g.value), Some(3.0));
        assert!(decode(&encode(&snapshot(Vec::new()))).is_empty(), "no family before the first snapshot");
    }

    #[test]
    fn histograms_are_native_with_the_layouts_spans_and_deltas() {
        let s = snapshot(vec![histogram("loadhost_latency_seconds", &[(-3, 2), (-2, 5), (0, 1), (10, 4)], 3, 1.5)]);
        let family = decode(&encode(&s)).remove(0);
        let h = family.metric[0].histogram.clone().expect("a histogram");
        let Some(Value::Histogram(d)) = s.cumulative.first().map(|s| &s.value) else { panic!("a histogram") };
        let (spans, deltas) = d.buckets.spans_and_deltas();
        let decoded: Vec<(i32, u32)> =
            h.positive_span.iter().map(|s| (s.offset.unwrap_or_default(), s.length.unwrap_or_default())).collect();
        assert_eq!(decoded, spans.iter().map(|s| (s.offset, s.length)).collect::<Vec<_>>());
        assert_eq!(h.positive_delta, deltas);
        assert_eq!((h.schema, h.zero_count, h.sample_count, h.sample_sum), (Some(5), Some(3), Some(15), Some(1.5)));
        assert!(h.zero_threshold.is_some_and(|t| t > 0.0), "native even to Prometheus 2.42");
        // An empty one is still native: a no-op span and the zero threshold.
        let empty = snapshot(vec![histogram("loadhost_wait_seconds", &[], 0, 0.0)]);
        let h = decode(&encode(&empty)).remove(0).metric.remove(0).histogram.expect("a histogram");
        assert_eq!(h.positive_span, [BucketSpan { offset: Some(0), length: Some(0) }]);
        assert!(h.positive_delta.is_empty());
    }
}
