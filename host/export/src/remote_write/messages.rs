//! Prometheus remote write 1.0's protobuf messages, the ones loadhost sends, with their field
//! numbers and wire types as Prometheus' `prompb/remote.proto` and `prompb/types.proto` have them
//! (package `prometheus`). Written as prost derives so the build needs no `protoc`. Fields
//! loadhost never sets (exemplars, a float histogram's bucket counts) are left out: an absent
//! field is not on the wire, and a decoder of these structs skips one it does not know.

/// The request body (before snappy): every series and the metadata of each family.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    /// The series, each with its samples or histograms.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
    /// Type, help and unit by metric family (field 2 is reserved by Prometheus for Cortex).
    #[prost(message, repeated, tag = "3")]
    pub metadata: Vec<MetricMetadata>,
}

/// One series: its labels (sorted by name, `__name__` among them) and its values.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// The labels, sorted by name.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Float samples (counters, gauges, a classic histogram's series).
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    /// Native histograms (field 3 is exemplars, which loadhost does not send).
    #[prost(message, repeated, tag = "4")]
    pub histograms: Vec<Histogram>,
}

/// A label pair.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Label {
    /// The label's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// A float sample.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// A native histogram (integer counts: loadhost counts values).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    /// How many values.
    #[prost(oneof = "histogram::Count", tags = "1, 2")]
    pub count: Option<histogram::Count>,
    /// Their sum.
    #[prost(double, tag = "3")]
    pub sum: f64,
    /// The bucket schema: boundaries are powers of `2^(2^-schema)`.
    #[prost(sint32, tag = "4")]
    pub schema: i32,
    /// The zero bucket's half-width.
    #[prost(double, tag = "5")]
    pub zero_threshold: f64,
    /// How many values are in the zero bucket.
    #[prost(oneof = "histogram::ZeroCount", tags = "6, 7")]
    pub zero_count: Option<histogram::ZeroCount>,
    /// The negative buckets' spans (loadhost has no negative values).
    #[prost(message, repeated, tag = "8")]
    pub negative_spans: Vec<BucketSpan>,
    /// The negative buckets' counts as deltas.
    #[prost(sint64, repeated, tag = "9")]
    pub negative_deltas: Vec<i64>,
    /// The positive buckets' spans.
    #[prost(message, repeated, tag = "11")]
    pub positive_spans: Vec<BucketSpan>,
    /// Each positive bucket's count minus the previous one's (the first's minus zero).
    #[prost(sint64, repeated, tag = "12")]
    pub positive_deltas: Vec<i64>,
    /// Whether a counter reset happened before this histogram.
    #[prost(enumeration = "histogram::ResetHint", tag = "14")]
    pub reset_hint: i32,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "15")]
    pub timestamp: i64,
}

/// [`Histogram`]'s oneofs and enum.
pub mod histogram {
    /// A histogram's count: integer for an integer histogram.
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum Count {
        /// An integer histogram's count.
        #[prost(uint64, tag = "1")]
        CountInt(u64),
        /// A float histogram's count.
        #[prost(double, tag = "2")]
        CountFloat(f64),
    }

    /// The zero bucket's count, in the same kind as [`Count`].
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum ZeroCount {
        /// An integer histogram's zero count.
        #[prost(uint64, tag = "6")]
        ZeroCountInt(u64),
        /// A float histogram's zero count.
        #[prost(double, tag = "7")]
        ZeroCountFloat(f64),
    }

    /// Whether a counter reset happened before a histogram.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum ResetHint {
        /// The receiver finds out by comparing with the previous histogram.
        Unknown = 0,
        /// The first histogram after a reset.
        Yes = 1,
        /// No reset since the previous histogram.
        No = 2,
        /// A gauge histogram, which has no resets.
        Gauge = 3,
    }
}

/// A run of consecutive buckets: `offset` buckets after the previous span (the first: the index
/// of its first bucket), `length` buckets long.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct BucketSpan {
    /// The gap before it.
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    /// Its buckets.
    #[prost(uint32, tag = "2")]
    pub length: u32,
}

/// What a metric family is: its type, help and unit.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct MetricMetadata {
    /// Its type.
    #[prost(enumeration = "metric_metadata::MetricType", tag = "1")]
    pub r#type: i32,
    /// The family's name.
    #[prost(string, tag = "2")]
    pub metric_family_name: String,
    /// Prometheus' HELP (field 3 is unused in Prometheus' definition).
    #[prost(string, tag = "4")]
    pub help: String,
    /// Its unit (`seconds`, `bytes`, `ratio`), empty when it has none.
    #[prost(string, tag = "5")]
    pub unit: String,
}

/// [`MetricMetadata`]'s enum.
pub mod metric_metadata {
    /// A metric family's type, as Prometheus has them.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum MetricType {
        /// Not known.
        Unknown = 0,
        /// A counter.
        Counter = 1,
        /// A gauge.
        Gauge = 2,
        /// A histogram (classic or native).
        Histogram = 3,
        /// A gauge histogram.
        Gaugehistogram = 4,
        /// A summary.
        Summary = 5,
        /// An info metric.
        Info = 6,
        /// A state set.
        Stateset = 7,
    }
}
