//! Prometheus remote write 1.0 (`--out prometheus-rw=URL`): the run so far
//! ([`Snapshot::cumulative`]) as a snappy-compressed `WriteRequest`, every value stamped with the
//! snapshot's time. Prometheus' own naming: a counter is `NAME_total`; a histogram is either one
//! native histogram series (the exponential buckets as they are, 2.2% wide) or, for a receiver
//! without native histograms, the classic `NAME_bucket{le}`, `NAME_sum` and `NAME_count` on the
//! buckets [`crate::classic`] fixes for the scrape endpoint too.
//!
//! # Layout
//! - [`messages`]: the protobuf messages, as prost derives.

pub mod messages;

use std::collections::HashSet;

use loadhost_metrics::exponential::ExponentialHistogram;
use prost::Message;

use self::messages::histogram::{Count, ResetHint, ZeroCount};
use self::messages::metric_metadata::MetricType;
use self::messages::{BucketSpan, Histogram, Label, MetricMetadata, Sample, TimeSeries, WriteRequest};
use crate::classic;
use crate::labels::{EXPORTED_PREFIX, joined};
use crate::payload::Payload;
use crate::series::{Labels, Series, Snapshot, Value};

/// How a histogram travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistogramStyle {
    /// One native histogram per series (Prometheus 2.40 on, with native histograms enabled).
    Native,
    /// Classic `_bucket{le}`, `_sum` and `_count` float series, for any receiver.
    Classic,
}

/// The body's content type.
pub const CONTENT_TYPE: &str = "application/x-protobuf";

/// The protocol version remote write 1.0 receivers expect in `X-Prometheus-Remote-Write-Version`.
pub const VERSION: &str = "0.1.0";

/// The zero bucket's half-width sent with every native histogram: 2^-128, the default of
/// Prometheus' Go client, a bucket boundary at every schema. loadhost's zero bucket holds values
/// of exactly zero and its smallest other value is a microsecond (or a plugin's unit), far above
/// 2^-128, so any threshold up to that would say the same; sending the Go client's means a
/// receiver adding loadhost's histograms to an instrumented service's has no thresholds to
/// reconcile.
pub const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

/// The label that names a series.
const NAME: &str = "__name__";
/// The label that bounds a classic bucket.
const LE: &str = "le";

/// `snapshot`'s cumulative series as a remote write request, ready to POST.
pub fn encode(snapshot: &Snapshot, histograms: HistogramStyle) -> Payload {
    Payload {
        content_type: CONTENT_TYPE,
        headers: vec![("Content-Encoding", "snappy"), ("X-Prometheus-Remote-Write-Version", VERSION)],
        body: compress(&request(snapshot, histograms).encode_to_vec()),
    }
}

/// The request before encoding.
pub fn request(snapshot: &Snapshot, histograms: HistogramStyle) -> WriteRequest {
    let mut out = WriteRequest::default();
    let mut described = HashSet::new();
    let at = snapshot.at_ms;
    for series in &snapshot.cumulative {
        let labels = joined(&snapshot.run, &series.labels);
        let family = match &series.value {
            Value::Counter(n) => {
                // The family is named as its series is, so a receiver finds the metadata by the
                // name it stores (as a Prometheus text-format scrape names it).
                let name = format!("{}_total", series.name);
                out.timeseries.push(float_series(&name, &labels, None, *n as f64, at));
                (name, MetricType::Counter)
            }
            Value::Gauge(v) => {
                out.timeseries.push(float_series(&series.name, &labels, None, *v, at));
                (series.name.clone(), MetricType::Gauge)
            }
            Value::Histogram(distribution) => {
                let buckets = &distribution.buckets;
                match histograms {
                    HistogramStyle::Native => out.timeseries.push(TimeSeries {
                        labels: sorted(&series.name, &labels, None),
                        histograms: vec![native(buckets, at)],
                        ..TimeSeries::default()
                    }),
                    HistogramStyle::Classic => {
                        out.timeseries.extend(classic_series(&series.name, &labels, buckets, at))
                    }
                }
                (series.name.clone(), MetricType::Histogram)
            }
        };
        if described.insert(family.0.clone()) {
            out.metadata.push(metadata(series, family.0, family.1));
        }
    }
    out
}

/// A native histogram of `buckets` at `at` (ms).
fn native(buckets: &ExponentialHistogram, at: i64) -> Histogram {
    let (spans, deltas) = buckets.spans_and_deltas();
    Histogram {
        count: Some(Count::CountInt(buckets.count)),
        sum: buckets.sum,
        schema: i32::from(buckets.schema),
        zero_threshold: ZERO_THRESHOLD,
        zero_count: Some(ZeroCount::ZeroCountInt(buckets.zero_count)),
        positive_spans: spans.iter().map(|s| BucketSpan { offset: s.offset, length: s.length }).collect(),
        positive_deltas: deltas,
        // Every run is new series (its `run_id`), whose values only grow: nothing to hint.
        reset_hint: ResetHint::Unknown as i32,
        timestamp: at,
        ..Histogram::default()
    }
}

/// A histogram as classic float series: a `NAME_bucket` per boundary, `NAME_sum`, `NAME_count`.
/// A series label already called `le` keeps its value as `exported_le`, on all three, so the
/// family's series still join on their labels.
fn classic_series(name: &str, labels: &Labels, buckets: &ExponentialHistogram, at: i64) -> Vec<TimeSeries> {
    let labels: Labels = labels
        .iter()
        .map(|(n, v)| if n == LE { (format!("{EXPORTED_PREFIX}{LE}"), v.clone()) } else { (n.clone(), v.clone()) })
        .collect();
    let bucket = format!("{name}_bucket");
    let mut out: Vec<TimeSeries> = classic::buckets(buckets)
        .into_iter()
        .map(|(le, n)| float_series(&bucket, &labels, Some(classic::le(le)), n as f64, at))
        .collect();
    out.push(float_series(&format!("{name}_sum"), &labels, None, buckets.sum, at));
    out.push(float_series(&format!("{name}_count"), &labels, None, buckets.count as f64, at));
    out
}

/// A series of one float sample.
fn float_series(name: &str, labels: &Labels, le: Option<String>, value: f64, at: i64) -> TimeSeries {
    TimeSeries {
        labels: sorted(name, labels, le),
        samples: vec![Sample { value, timestamp: at }],
        ..TimeSeries::default()
    }
}

/// `__name__`, `labels` and a classic bucket's `le`, sorted by name as remote write requires. A
/// label with an empty value is left out: Prometheus treats it as absent.
fn sorted(name: &str, labels: &Labels, le: Option<String>) -> Vec<Label> {
    let mut out = vec![Label { name: NAME.to_owned(), value: name.to_owned() }];
    out.extend(
        labels.iter().filter(|(_, value)| !value.is_empty()).map(|(n, v)| Label { name: n.clone(), value: v.clone() }),
    );
    out.extend(le.map(|value| Label { name: LE.to_owned(), value }));
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn metadata(series: &Series, family: String, kind: MetricType) -> MetricMetadata {
    MetricMetadata {
        r#type: kind as i32,
        metric_family_name: family,
        help: series.help.to_owned(),
        unit: series.unit.prometheus().to_owned(),
    }
}

/// `raw` in snappy's block format, as remote write 1.0 requires (not the framed format).
fn compress(raw: &[u8]) -> Vec<u8> {
    match snap::raw::Encoder::new().compress_vec(raw) {
        Ok(body) => body,
        Err(error) => {
            // Snappy's only refusal is a block over 4 GiB, which no snapshot comes near; should
            // one, an empty request (snappy's zero length) keeps the push task going and says so.
            tracing::error!("remote write: the request could not be compressed ({error}); sending none of it");
            vec![0]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample;

    fn decoded(style: HistogramStyle) -> WriteRequest {
        let payload = encode(&sample::snapshot(), style);
        assert_eq!(payload.content_type, "application/x-protobuf");
        assert_eq!(payload.headers, [("Content-Encoding", "snappy"), ("X-Prometheus-Remote-Write-Version", "0.1.0")]);
        let raw = snap::raw::Decoder::new().decompress_vec(&payload.body).expect("a snappy block");
        WriteRequest::decode(raw.as_slice()).expect("a WriteRequest")
    }

    fn label_pairs(series: &TimeSeries) -> Vec<(&str, &str)> {
        series.labels.iter().map(|l| (l.name.as_str(), l.value.as_str())).collect()
    }

    fn named<'a>(request: &'a WriteRequest, name: &str) -> Vec<&'a TimeSeries> {
        request.timeseries.iter().filter(|s| s.labels.iter().any(|l| l.name == NAME && l.value == name)).collect()
    }

    #[test]
    fn counters_get_total_and_every_series_its_sorted_labels_and_the_snapshots_time() {
        let request = decoded(HistogramStyle::Native);
        let tasks = named(&request, "loadhost_tasks_total");
        assert_eq!(tasks.len(), 2);
        assert_eq!(
            label_pairs(tasks[0]),
            [
                ("__name__", "loadhost_tasks_total"),
                ("env", "ci"),
                ("outcome", "passed"),
                ("run_id", "r1"),
                ("scenario", "browse")
            ]
        );
        assert_eq!(tasks[0].samples, [Sample { value: 40.0, timestamp: sample::AT_MS }]);
        assert_eq!(tasks[1].samples[0].value, 2.0);
        let workers = named(&request, "loadhost_workers");
        assert_eq!(workers[0].samples, [Sample { value: 3.5, timestamp: sample::AT_MS }]);
        assert!(named(&request, "loadhost_tasks").is_empty(), "no counter without its suffix");
        for series in &request.timeseries {
            let names: Vec<&str> = series.labels.iter().map(|l| l.name.as_str()).collect();
            assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted and unique: {names:?}");
        }
    }

    #[test]
    fn a_native_histogram_is_the_exponential_buckets_as_spans_and_deltas() {
        let request = decoded(HistogramStyle::Native);
        let latency = named(&request, "loadhost_latency_seconds");
        assert_eq!(latency.len(), 1);
        // The series' own env=prod collides with the run's env=ci, which wins.
        assert_eq!(
            label_pairs(latency[0]),
            [
                ("__name__", "loadhost_latency_seconds"),
                ("env", "ci"),
                ("exported_env", "prod"),
                ("run_id", "r1"),
                ("scenario", "browse")
            ]
        );
        assert!(latency[0].samples.is_empty());
        let h = &latency[0].histograms[0];
        assert_eq!((h.count, h.zero_count), (Some(Count::CountInt(7)), Some(ZeroCount::ZeroCountInt(1))));
        assert_eq!((h.schema, h.sum, h.timestamp), (5, 0.117, sample::AT_MS));
        assert_eq!(h.zero_threshold, 2f64.powi(-128));
        // Buckets -224 and -223, then -160: 62 buckets after the first span's end.
        assert_eq!(h.positive_spans, [BucketSpan { offset: -224, length: 2 }, BucketSpan { offset: 62, length: 1 }]);
        assert_eq!(h.positive_deltas, [2, -1, 2]);
        assert!(h.negative_spans.is_empty() && h.negative_deltas.is_empty());
    }

    #[test]
    fn a_classic_histogram_is_cumulative_buckets_ending_in_inf_with_sum_and_count() {
        let request = decoded(HistogramStyle::Classic);
        assert!(named(&request, "loadhost_latency_seconds").is_empty());
        let buckets = named(&request, "loadhost_latency_seconds_bucket");
        assert_eq!(buckets.len(), 82);
        let le = |series: &TimeSeries| series.labels.iter().find(|l| l.name == "le").map(|l| l.value.clone());
        let count_at = |bound: &str| {
            buckets.iter().find(|s| le(s).as_deref() == Some(bound)).map(|s| s.samples[0].value).expect(bound)
        };
        // 2^-7 s holds the zero and bucket -224's two; 2^-6.75 adds -223's one; 2^-5 all.
        assert_eq!(count_at("6.103515625e-05"), 1.0);
        assert_eq!(count_at("0.0078125"), 3.0);
        assert_eq!(count_at(&classic::le(classic::boundary(-27))), 4.0);
        assert_eq!(count_at("0.03125"), 7.0);
        assert_eq!(count_at("+Inf"), 7.0, "+Inf is the count");
        let values: Vec<f64> = buckets.iter().map(|s| s.samples[0].value).collect();
        assert!(values.windows(2).all(|w| w[0] <= w[1]), "cumulative");
        let sum = named(&request, "loadhost_latency_seconds_sum");
        let count = named(&request, "loadhost_latency_seconds_count");
        assert_eq!((sum[0].samples[0].value, count[0].samples[0].value), (0.117, 7.0));
        assert_eq!(le(sum[0]), None);
    }

    #[test]
    fn a_series_label_called_le_is_exported_on_every_classic_series() {
        let labels = sample::labels(&[("le", "x")]);
        let series = classic_series("h", &labels, &sample::latencies().buckets, 0);
        for s in &series {
            assert_eq!(
                s.labels.iter().filter(|l| l.name == "le").count(),
                usize::from(s.labels[0].value == "h_bucket")
            );
            assert!(s.labels.iter().any(|l| l.name == "exported_le" && l.value == "x"));
        }
    }

    #[test]
    fn each_family_is_described_once() {
        let request = decoded(HistogramStyle::Classic);
        let described: Vec<(i32, &str, &str)> =
            request.metadata.iter().map(|m| (m.r#type, m.metric_family_name.as_str(), m.unit.as_str())).collect();
        assert_eq!(
            described,
            [
                (MetricType::Counter as i32, "loadhost_tasks_total", ""),
                (MetricType::Gauge as i32, "loadhost_workers", ""),
                (MetricType::Histogram as i32, "loadhost_latency_seconds", "seconds"),
            ]
        );
        assert_eq!(request.metadata[0].help, "What it measures.");
    }
}
