//! InfluxDB 1.x line protocol (`--out influxdb=URL`): one point per series of the interval just
//! ended ([`Snapshot::interval`]), stamped with the interval's end in nanoseconds: a counter's
//! point is the interval's share (a dashboard sums them) and a histogram's the interval's
//! statistics, since InfluxDB has no buckets to add up a run-so-far distribution from.
//!
//! A point is `measurement,tag=value,… field=value,… timestamp`: the measurement is the series'
//! name, the tags are the run's labels then the series' own ([`crate::labels::joined`]), and the
//! fields are a counter's `count` (an integer), a gauge's `value`, or a histogram's `count`,
//! `sum`, `min`, `mean`, `p50`, `p90`, `p95`, `p99` and `max` (in its unit, from the HDR
//! summary; an interval without values writes no point). InfluxDB refuses an empty tag value and
//! a non-finite field, so those are left out, and a point left with no field is not written.

use std::fmt::Write as _;

use crate::labels::joined;
use crate::payload::Payload;
use crate::series::{Snapshot, Value};

/// The body's content type.
pub const CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// `snapshot`'s interval as line protocol, one line per point, ready to POST to `/write`.
pub fn encode(snapshot: &Snapshot) -> Payload {
    let at_ns = snapshot.at_ms.saturating_mul(1_000_000);
    let mut body = String::new();
    for series in &snapshot.interval {
        let fields = fields(&series.value);
        if fields.is_empty() {
            continue;
        }
        body.push_str(&escaped(&series.name, MEASUREMENT));
        for (key, value) in joined(&snapshot.run, &series.labels) {
            if !key.is_empty() && !value.is_empty() {
                let _ = write!(body, ",{}={}", escaped(&key, TAG), escaped(&value, TAG));
            }
        }
        let fields: Vec<String> = fields.iter().map(|(key, value)| format!("{key}={value}")).collect();
        let _ = writeln!(body, " {} {at_ns}", fields.join(","));
    }
    Payload { content_type: CONTENT_TYPE, headers: Vec::new(), body: body.into_bytes() }
}

/// A series' fields, already written as line protocol values (an integer with its `i`).
fn fields(value: &Value) -> Vec<(&'static str, String)> {
    match value {
        Value::Counter(n) => vec![("count", integer(*n))],
        Value::Gauge(v) => float("value", *v).into_iter().collect(),
        Value::Histogram(distribution) if distribution.buckets.count > 0 => {
            let s = &distribution.stats;
            let mut out = vec![("count", integer(distribution.buckets.count))];
            let floats = [
                ("sum", distribution.buckets.sum),
                ("min", s.min),
                ("mean", s.mean),
                ("p50", s.p50),
                ("p90", s.p90),
                ("p95", s.p95),
                ("p99", s.p99),
                ("max", s.max),
            ];
            out.extend(floats.into_iter().filter_map(|(key, v)| float(key, v)));
            out
        }
        Value::Histogram(_) => Vec::new(),
    }
}

/// An integer field value (InfluxDB's are signed 64-bit).
fn integer(n: u64) -> String {
    format!("{}i", i64::try_from(n).unwrap_or(i64::MAX))
}

/// A float field, unless the value is NaN or infinite.
fn float(key: &'static str, v: f64) -> Option<(&'static str, String)> {
    v.is_finite().then(|| (key, format!("{v}")))
}

/// The characters a measurement escapes.
const MEASUREMENT: &[char] = &[',', ' '];
/// The characters a tag key or value escapes.
const TAG: &[char] = &[',', '=', ' '];

/// `text` with each of `special` preceded by a backslash. Line protocol cannot carry a line break
/// in a name or tag, so one is written as the two characters `\n` (or `\r`) rather than end the
/// point early.
fn escaped(text: &str, special: &[char]) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if special.contains(&c) => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample;
    use crate::series::Series;

    /// `series` alone, as the line it writes.
    fn line(series: &Series, snapshot: &Snapshot) -> String {
        let one = Snapshot { interval: vec![series.clone()], ..snapshot.clone() };
        String::from_utf8(encode(&one).body).expect("utf-8")
    }

    #[test]
    fn each_interval_series_is_one_line_escaped_with_its_fields_and_nanoseconds() {
        let payload = encode(&sample::snapshot());
        assert_eq!(payload.content_type, "text/plain; charset=utf-8");
        let body = String::from_utf8(payload.body).expect("utf-8");
        let t = "1700000010250000000";
        let expected = [
            format!("loadhost_tasks,run_id=r1,env=ci,scenario=browse,outcome=passed count=4i {t}"),
            // Measurement: comma and space escaped; tag value: space, comma and equals; the empty
            // tag left out.
            format!(r"loadhost_plugin\ counter\,x,run_id=r1,env=ci,scenario=browse,metric=a\ b\,c\=d count=1i {t}"),
            format!("loadhost_workers,run_id=r1,env=ci,scenario=browse value=3.5 {t}"),
            // The NaN gauge and the empty histogram write no line; env=prod collides with the run's.
            format!(
                "loadhost_latency_seconds,run_id=r1,env=ci,scenario=browse,exported_env=prod \
                 count=7i,sum=0.117,min=0,mean={},p50=0.0079,p90=0.031,p95=0.031,p99=0.031,max=0.031 {t}",
                0.117 / 7.0
            ),
        ];
        assert_eq!(body, expected.map(|l| l + "\n").concat());
    }

    #[test]
    fn non_finite_statistics_are_left_out_and_a_line_break_cannot_end_a_point() {
        let snapshot = sample::snapshot();
        let mut latency = snapshot.interval[4].clone();
        if let Value::Histogram(d) = &mut latency.value {
            d.stats.max = f64::INFINITY;
            d.stats.mean = f64::NAN;
        }
        latency.labels.push(("note".to_owned(), "two\nlines".to_owned()));
        let line = line(&latency, &snapshot);
        assert!(line.contains(",note=two\\nlines "), "{line}");
        assert!(line.contains("count=7i,sum=0.117,min=0,p50=") && line.contains("p99=0.031 "), "{line}");
        assert!(!line.contains("max=") && !line.contains("mean="), "{line}");
        assert_eq!(line.matches('\n').count(), 1);
    }
}
