//! OTLP's metrics protobuf messages, the ones loadhost sends, with their field numbers and wire
//! types as opentelemetry-proto has them (`collector/metrics/v1/metrics_service.proto`,
//! `metrics/v1/metrics.proto`, `common/v1/common.proto`, `resource/v1/resource.proto`). Written as
//! prost derives so the build needs no `protoc`; fields loadhost never sets (exemplars, explicit
//! histograms, summaries, schema URLs, array values) are left out: an absent field is not on the
//! wire, and a decoder of these structs skips one it does not know.
//!
//! Note the wire types: times and histogram counts are `fixed64`, an integer value `sfixed64`,
//! a scale and bucket offset `sint32`, bucket counts plain `uint64`.

/// The body of `POST /v1/metrics`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsServiceRequest {
    /// The metrics, by the resource that produced them.
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

/// One resource's metrics.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceMetrics {
    /// What produced them.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// The metrics, by instrumentation scope.
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
}

/// What produced the metrics: its attributes.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    /// Its attributes (`service.name`, the run's labels).
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
    /// Attributes dropped on the way.
    #[prost(uint32, tag = "2")]
    pub dropped_attributes_count: u32,
}

/// An attribute.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    /// Its key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// Its value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// An attribute's value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    /// The value, of one of the kinds.
    #[prost(oneof = "any_value::Value", tags = "1, 2, 3, 4")]
    pub value: Option<any_value::Value>,
}

/// [`AnyValue`]'s oneof.
pub mod any_value {
    /// The kinds of value loadhost may send.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        /// A string.
        #[prost(string, tag = "1")]
        StringValue(String),
        /// A boolean.
        #[prost(bool, tag = "2")]
        BoolValue(bool),
        /// An integer.
        #[prost(int64, tag = "3")]
        IntValue(i64),
        /// A float.
        #[prost(double, tag = "4")]
        DoubleValue(f64),
    }
}

/// What recorded the metrics (loadhost itself).
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    /// Its name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version.
    #[prost(string, tag = "2")]
    pub version: String,
}

/// One scope's metrics.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeMetrics {
    /// The scope.
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// Its metrics.
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
}

/// A metric: its name, description, unit and data points.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    /// Its name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// What it measures.
    #[prost(string, tag = "2")]
    pub description: String,
    /// Its unit, in UCUM (`s`, `By`, `1`).
    #[prost(string, tag = "3")]
    pub unit: String,
    /// Its points, of one kind.
    #[prost(oneof = "metric::Data", tags = "5, 7, 10")]
    pub data: Option<metric::Data>,
}

/// [`Metric`]'s oneof.
pub mod metric {
    /// The kinds of data loadhost sends.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Data {
        /// Levels.
        #[prost(message, tag = "5")]
        Gauge(super::Gauge),
        /// Totals.
        #[prost(message, tag = "7")]
        Sum(super::Sum),
        /// Distributions in exponential buckets.
        #[prost(message, tag = "10")]
        ExponentialHistogram(super::ExponentialHistogram),
    }
}

/// A gauge's points.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Gauge {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

/// A sum's points and how they add up.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sum {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    /// Whether each point is since the start (cumulative) or since the previous point (delta).
    #[prost(enumeration = "AggregationTemporality", tag = "2")]
    pub aggregation_temporality: i32,
    /// Whether it only grows (a counter).
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

/// An exponential histogram's points.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExponentialHistogram {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<ExponentialHistogramDataPoint>,
    /// Cumulative or delta.
    #[prost(enumeration = "AggregationTemporality", tag = "2")]
    pub aggregation_temporality: i32,
}

/// Whether a point covers the time since the start or since the previous point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum AggregationTemporality {
    /// Not said (invalid for a sum or histogram).
    Unspecified = 0,
    /// Since the previous point.
    Delta = 1,
    /// Since `start_time_unix_nano`.
    Cumulative = 2,
}

/// A number at a time.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NumberDataPoint {
    /// The series' own attributes.
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    /// When a cumulative point's count started, in nanoseconds since the Unix epoch.
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// The point's time, in nanoseconds since the Unix epoch.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// The value.
    #[prost(oneof = "number_data_point::Value", tags = "4, 6")]
    pub value: Option<number_data_point::Value>,
    /// Flags (no recorded value).
    #[prost(uint32, tag = "8")]
    pub flags: u32,
}

/// [`NumberDataPoint`]'s oneof.
pub mod number_data_point {
    /// A float or an integer.
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum Value {
        /// A float.
        #[prost(double, tag = "4")]
        AsDouble(f64),
        /// An integer.
        #[prost(sfixed64, tag = "6")]
        AsInt(i64),
    }
}

/// A distribution in exponential buckets at a time.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExponentialHistogramDataPoint {
    /// The series' own attributes.
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
    /// When its values started, in nanoseconds since the Unix epoch.
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// The point's time, in nanoseconds since the Unix epoch.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// How many values.
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    /// Their sum.
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
    /// Bucket boundaries are powers of `2^(2^-scale)` (Prometheus' schema).
    #[prost(sint32, tag = "6")]
    pub scale: i32,
    /// Values in the zero bucket.
    #[prost(fixed64, tag = "7")]
    pub zero_count: u64,
    /// The positive buckets.
    #[prost(message, optional, tag = "8")]
    pub positive: Option<exponential_histogram_data_point::Buckets>,
    /// The negative buckets (loadhost has no negative values).
    #[prost(message, optional, tag = "9")]
    pub negative: Option<exponential_histogram_data_point::Buckets>,
    /// Flags (no recorded value).
    #[prost(uint32, tag = "10")]
    pub flags: u32,
    /// The smallest value.
    #[prost(double, optional, tag = "12")]
    pub min: Option<f64>,
    /// The largest value.
    #[prost(double, optional, tag = "13")]
    pub max: Option<f64>,
    /// The zero bucket's half-width (0: exactly zero, and values too small for the scale).
    #[prost(double, tag = "14")]
    pub zero_threshold: f64,
}

/// [`ExponentialHistogramDataPoint`]'s buckets.
pub mod exponential_histogram_data_point {
    /// A dense run of buckets: bucket `offset + k` holds `(base^(offset+k), base^(offset+k+1)]`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Buckets {
        /// The first bucket's index.
        #[prost(sint32, tag = "1")]
        pub offset: i32,
        /// Each bucket's count, from the first.
        #[prost(uint64, repeated, tag = "2")]
        pub bucket_counts: Vec<u64>,
    }
}
