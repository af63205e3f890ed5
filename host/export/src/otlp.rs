//! OTLP/HTTP metrics in protobuf (`--out otlp=URL`): the run so far ([`Snapshot::cumulative`]),
//! with cumulative temporality from the run's start. The run is the resource (`service.name`
//! `loadhost`, its version, and the run's labels: `run_id`, `segment`, each `--tag`); a series'
//! own labels are its point's attributes. Names are the model's, without Prometheus' suffixes
//! (a collector exporting to Prometheus adds them); counters are monotonic sums, gauges gauges,
//! histograms exponential histograms at the buckets' scale.
//!
//! # Layout
//! - [`messages`]: the protobuf messages, as prost derives.

pub mod messages;

use prost::Message;

use self::messages::exponential_histogram_data_point::Buckets;
use self::messages::{
    AggregationTemporality, AnyValue, ExponentialHistogram, ExponentialHistogramDataPoint, ExportMetricsServiceRequest,
    Gauge, InstrumentationScope, KeyValue, Metric, NumberDataPoint, Resource, ResourceMetrics, ScopeMetrics, Sum,
    any_value, metric, number_data_point,
};
use crate::payload::Payload;
use crate::series::{Distribution, Labels, Series, Snapshot, Value};

/// The body's content type.
pub const CONTENT_TYPE: &str = "application/x-protobuf";

/// The resource's `service.name` and the instrumentation scope's name.
pub const SERVICE: &str = "loadhost";

/// loadhost's version: the resource's `service.version` and the scope's version.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `snapshot`'s cumulative series as an OTLP export request, ready to POST to `/v1/metrics`.
pub fn encode(snapshot: &Snapshot) -> Payload {
    Payload { content_type: CONTENT_TYPE, headers: Vec::new(), body: request(snapshot).encode_to_vec() }
}

/// The request before encoding: one resource, one scope, one metric per name (and kind) with a
/// point per series, in the order the names first appear.
pub fn request(snapshot: &Snapshot) -> ExportMetricsServiceRequest {
    let times = Times { start: nanos(snapshot.start_ms), at: nanos(snapshot.at_ms) };
    let mut metrics: Vec<Metric> = Vec::new();
    for series in &snapshot.cumulative {
        let mut pending = Some(data(series, &times));
        for existing in metrics.iter_mut().filter(|m| m.name == series.name) {
            if let Some(into) = existing.data.as_mut()
                && let Some(data) = pending.take()
            {
                pending = merge(into, data).err();
            }
        }
        if let Some(data) = pending {
            metrics.push(Metric {
                name: series.name.clone(),
                description: series.help.to_owned(),
                unit: series.unit.ucum().to_owned(),
                data: Some(data),
            });
        }
    }
    let mut resource = vec![text(SERVICE_NAME, SERVICE), text(SERVICE_VERSION, VERSION)];
    resource.extend(snapshot.run.iter().map(|(key, value)| text(key, value)));
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource { attributes: resource, dropped_attributes_count: 0 }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope { name: SERVICE.to_owned(), version: VERSION.to_owned() }),
                metrics,
            }],
        }],
    }
}

/// OpenTelemetry's semantic-convention keys for the resource.
const SERVICE_NAME: &str = "service.name";
const SERVICE_VERSION: &str = "service.version";

/// A snapshot's two moments, in nanoseconds since the Unix epoch.
struct Times {
    start: u64,
    at: u64,
}

/// One series as a metric's data holding its one point.
fn data(series: &Series, times: &Times) -> metric::Data {
    let attributes: Vec<KeyValue> = attributes(&series.labels);
    match &series.value {
        Value::Counter(n) => metric::Data::Sum(Sum {
            data_points: vec![NumberDataPoint {
                attributes,
                start_time_unix_nano: times.start,
                time_unix_nano: times.at,
                value: Some(number_data_point::Value::AsInt(i64::try_from(*n).unwrap_or(i64::MAX))),
                flags: 0,
            }],
            aggregation_temporality: AggregationTemporality::Cumulative as i32,
            is_monotonic: true,
        }),
        // A gauge is a level at its time, with no start.
        Value::Gauge(v) => metric::Data::Gauge(Gauge {
            data_points: vec![NumberDataPoint {
                attributes,
                start_time_unix_nano: 0,
                time_unix_nano: times.at,
                value: Some(number_data_point::Value::AsDouble(*v)),
                flags: 0,
            }],
        }),
        Value::Histogram(distribution) => metric::Data::ExponentialHistogram(ExponentialHistogram {
            data_points: vec![histogram_point(distribution, attributes, times)],
            aggregation_temporality: AggregationTemporality::Cumulative as i32,
        }),
    }
}

fn histogram_point(
    distribution: &Distribution,
    attributes: Vec<KeyValue>,
    times: &Times,
) -> ExponentialHistogramDataPoint {
    let h = &distribution.buckets;
    let (offset, bucket_counts) = h.dense_otlp();
    // Min and max only say something once there are values (and OTLP has no NaN for "none").
    let extreme = |v: f64| (h.count > 0 && v.is_finite()).then_some(v);
    ExponentialHistogramDataPoint {
        attributes,
        start_time_unix_nano: times.start,
        time_unix_nano: times.at,
        count: h.count,
        sum: Some(h.sum),
        scale: i32::from(h.schema),
        zero_count: h.zero_count,
        positive: (!bucket_counts.is_empty()).then_some(Buckets { offset, bucket_counts }),
        negative: None,
        flags: 0,
        min: extreme(distribution.stats.min),
        max: extreme(distribution.stats.max),
        // OTLP's default: the zero bucket holds the values of exactly zero, which is what
        // loadhost's holds (its smallest other value is a microsecond, or a plugin's unit).
        zero_threshold: 0.0,
    }
}

/// Adds `from`'s points to `into` when they are of the same kind; otherwise gives `from` back.
fn merge(into: &mut metric::Data, from: metric::Data) -> Result<(), metric::Data> {
    match (into, from) {
        (metric::Data::Sum(into), metric::Data::Sum(from)) => into.data_points.extend(from.data_points),
        (metric::Data::Gauge(into), metric::Data::Gauge(from)) => into.data_points.extend(from.data_points),
        (metric::Data::ExponentialHistogram(into), metric::Data::ExponentialHistogram(from)) => {
            into.data_points.extend(from.data_points)
        }
        (_, from) => return Err(from),
    }
    Ok(())
}

fn attributes(labels: &Labels) -> Vec<KeyValue> {
    labels.iter().map(|(key, value)| text(key, value)).collect()
}

/// A string attribute.
fn text(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(any_value::Value::StringValue(value.to_owned())) }),
    }
}

/// Milliseconds since the epoch as OTLP's nanoseconds (a time before the epoch as the epoch).
fn nanos(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0).saturating_mul(1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample;

    fn decoded() -> ExportMetricsServiceRequest {
        let payload = encode(&sample::snapshot());
        assert_eq!((payload.content_type, payload.headers.len()), ("application/x-protobuf", 0));
        ExportMetricsServiceRequest::decode(payload.body.as_slice()).expect("an ExportMetricsServiceRequest")
    }

    fn pairs(attributes: &[KeyValue]) -> Vec<(&str, &str)> {
        attributes
            .iter()
            .map(|kv| match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(s)) => (kv.key.as_str(), s.as_str()),
                other => panic!("{}: not a string: {other:?}", kv.key),
            })
            .collect()
    }

    #[test]
    fn the_run_is_the_resource_and_loadhost_the_scope() {
        let request = decoded();
        assert_eq!(request.resource_metrics.len(), 1);
        let rm = &request.resource_metrics[0];
        let resource = rm.resource.as_ref().expect("a resource");
        assert_eq!(
            pairs(&resource.attributes),
            [("service.name", "loadhost"), ("service.version", VERSION), ("run_id", "r1"), ("env", "ci")]
        );
        let scope = rm.scope_metrics[0].scope.as_ref().expect("a scope");
        assert_eq!((scope.name.as_str(), scope.version.as_str()), ("loadhost", VERSION));
    }

    #[test]
    fn series_of_one_name_are_one_metric_with_a_point_each() {
        let request = decoded();
        let metrics = &request.resource_metrics[0].scope_metrics[0].metrics;
        let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["loadhost_tasks", "loadhost_workers", "loadhost_latency_seconds"]);
        let Some(metric::Data::Sum(tasks)) = &metrics[0].data else { panic!("a sum: {:?}", metrics[0]) };
        assert!(tasks.is_monotonic);
        assert_eq!(tasks.aggregation_temporality, AggregationTemporality::Cumulative as i32);
        let attributes: Vec<_> = tasks.data_points.iter().map(|p| pairs(&p.attributes)).collect();
        assert_eq!(
            attributes,
            [[("scenario", "browse"), ("outcome", "passed")], [("scenario", "browse"), ("outcome", "failed")]]
        );
        let values: Vec<_> = tasks.data_points.iter().map(|p| p.value).collect();
        assert_eq!(values, [Some(number_data_point::Value::AsInt(40)), Some(number_data_point::Value::AsInt(2))]);
        let point = &tasks.data_points[0];
        assert_eq!(
            (point.start_time_unix_nano, point.time_unix_nano),
            (1_700_000_000_250_000_000, 1_700_000_010_250_000_000)
        );
        let Some(metric::Data::Gauge(workers)) = &metrics[1].data else { panic!("a gauge: {:?}", metrics[1]) };
        assert_eq!(workers.data_points[0].value, Some(number_data_point::Value::AsDouble(3.5)));
        assert_eq!((metrics[1].unit.as_str(), metrics[1].description.as_str()), ("", "What it measures."));
    }

    #[test]
    fn a_histogram_is_an_exponential_histogram_at_the_buckets_scale() {
        let request = decoded();
        let latency = &request.resource_metrics[0].scope_metrics[0].metrics[2];
        assert_eq!(latency.unit, "s");
        let Some(metric::Data::ExponentialHistogram(h)) = &latency.data else { panic!("{latency:?}") };
        assert_eq!(h.aggregation_temporality, AggregationTemporality::Cumulative as i32);
        let p = &h.data_points[0];
        // Its own labels only, env=prod among them: the run's env=ci is on the resource.
        assert_eq!(pairs(&p.attributes), [("scenario", "browse"), ("env", "prod")]);
        assert_eq!((p.count, p.sum, p.scale, p.zero_count, p.zero_threshold), (7, Some(0.117), 5, 1, 0.0));
        assert_eq!((p.min, p.max), (Some(0.0), Some(0.031)));
        assert_eq!(p.start_time_unix_nano, 1_700_000_000_250_000_000);
        let positive = p.positive.as_ref().expect("positive buckets");
        // Prometheus' bucket -224 is OTLP's -225; dense from there to -161.
        assert_eq!(positive.offset, -225);
        assert_eq!(positive.bucket_counts.len(), 65);
        assert_eq!((positive.bucket_counts[0], positive.bucket_counts[1], positive.bucket_counts[64]), (2, 1, 3));
        assert_eq!(positive.bucket_counts.iter().sum::<u64>(), p.count - p.zero_count);
        assert!(p.negative.is_none());
    }

    #[test]
    fn an_empty_histogram_has_no_buckets_and_no_extremes() {
        let mut snapshot = sample::snapshot();
        snapshot.cumulative.retain(|s| matches!(s.value, Value::Histogram(_)));
        if let Value::Histogram(d) = &mut snapshot.cumulative[0].value {
            d.buckets = loadhost_metrics::exponential::ExponentialHistogram {
                count: 0,
                zero_count: 0,
                sum: 0.0,
                positive: Default::default(),
                schema: 5,
            };
        }
        let request = request(&snapshot);
        let Some(metric::Data::ExponentialHistogram(h)) = &request.resource_metrics[0].scope_metrics[0].metrics[0].data
        else {
            panic!("a histogram")
        };
        let p = &h.data_points[0];
        assert_eq!((p.count, p.min, p.max, p.positive.is_none()), (0, None, None, true));
    }

    #[test]
    fn a_name_with_two_kinds_is_two_metrics_rather_than_points_lost() {
        let mut snapshot = sample::snapshot();
        let mut clash = snapshot.cumulative[2].clone();
        clash.name = "loadhost_tasks".to_owned();
        snapshot.cumulative.push(clash);
        let request = request(&snapshot);
        let metrics = &request.resource_metrics[0].scope_metrics[0].metrics;
        let kinds: Vec<(&str, bool)> =
            metrics.iter().map(|m| (m.name.as_str(), matches!(m.data, Some(metric::Data::Gauge(_))))).collect();
        assert_eq!(kinds[3], ("loadhost_tasks", true));
        assert_eq!(kinds.len(), 4);
    }
}
