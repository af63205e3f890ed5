//! One small snapshot, built by hand, that the formats' tests encode: a run label that a series
//! label collides with, two series of one name, a histogram with zeros and a gap between its
//! buckets, and, for InfluxDB's interval points, text to escape, an empty tag value, a
//! non-finite gauge and an empty histogram.

use std::collections::BTreeMap;

use loadhost_metrics::Percentiles;
use loadhost_metrics::exponential::ExponentialHistogram;

use crate::series::{Distribution, Labels, Series, Snapshot, Unit, Value};

/// The snapshot's moment (ms since the epoch) and its run's start, ten seconds earlier.
pub const AT_MS: i64 = 1_700_000_010_250;
pub const START_MS: i64 = 1_700_000_000_250;

pub fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect()
}

fn series(name: &str, unit: Unit, own: &[(&str, &str)], value: Value) -> Series {
    Series { name: name.to_owned(), help: "What it measures.", unit, labels: labels(own), value }
}

/// Seven latencies: one of exactly zero, two in (2^(-225/32), 2^-7] s, one in the bucket above,
/// three in (2^(-161/32), 2^-5] s (bucket indices -224, -223 and -160 at schema 5).
pub fn latencies() -> Distribution {
    Distribution {
        buckets: ExponentialHistogram {
            schema: 5,
            zero_count: 1,
            count: 7,
            sum: 0.117,
            positive: BTreeMap::from([(-224, 2), (-223, 1), (-160, 3)]),
        },
        stats: Percentiles {
            min: 0.0,
            mean: 0.117 / 7.0,
            p50: 0.0079,
            p90: 0.031,
            p95: 0.031,
            p99: 0.031,
            p999: 0.031,
            max: 0.031,
        },
    }
}

/// The run `r1` (tagged `env=ci`) after ten seconds.
pub fn snapshot() -> Snapshot {
    let scenario = ("scenario", "browse");
    let empty = Distribution {
        buckets: ExponentialHistogram { schema: 5, zero_count: 0, count: 0, sum: 0.0, positive: BTreeMap::new() },
        stats: Percentiles::default(),
    };
    Snapshot {
        at_ms: AT_MS,
        start_ms: START_MS,
        run: labels(&[("run_id", "r1"), ("env", "ci")]),
        cumulative: vec![
            series("loadhost_tasks", Unit::None, &[scenario, ("outcome", "passed")], Value::Counter(40)),
            series("loadhost_tasks", Unit::None, &[scenario, ("outcome", "failed")], Value::Counter(2)),
            series("loadhost_workers", Unit::None, &[scenario], Value::Gauge(3.5)),
            series(
                "loadhost_latency_seconds",
                Unit::Seconds,
                &[scenario, ("env", "prod")],
                Value::Histogram(Box::new(latencies())),
            ),
        ],
        interval: vec![
            series("loadhost_tasks", Unit::None, &[scenario, ("outcome", "passed")], Value::Counter(4)),
            series(
                "loadhost_plugin counter,x",
                Unit::None,
                &[scenario, ("metric", "a b,c=d"), ("empty", "")],
                Value::Counter(1),
            ),
            series("loadhost_workers", Unit::None, &[scenario], Value::Gauge(3.5)),
            series("loadhost_lag_max_seconds", Unit::Seconds, &[scenario], Value::Gauge(f64::NAN)),
            series(
                "loadhost_latency_seconds",
                Unit::Seconds,
                &[scenario, ("env", "prod")],
                Value::Histogram(Box::new(latencies())),
            ),
            series("loadhost_wait_seconds", Unit::Seconds, &[scenario], Value::Histogram(Box::new(empty))),
        ],
        last: false,
    }
}
