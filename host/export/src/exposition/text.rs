//! OpenMetrics text 1.0 of a snapshot's cumulative series: per family `# TYPE`, `# UNIT` (when
//! the name ends with it), `# HELP` (when it has one), then its samples; counters as
//! `NAME_total`, gauges as `NAME`, histograms as classic cumulative `NAME_bucket{le}` (fixed
//! boundaries, then `+Inf`), `NAME_count` and `NAME_sum`; `# EOF` last.

use std::fmt::{self, Write};

use super::{Family, families};
use crate::{Series, Snapshot, Value, classic, labels};

/// The content type of [`encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The exposition of `snapshot.cumulative` (an empty snapshot gives `# EOF` alone).
pub fn encode(snapshot: &Snapshot) -> Vec<u8> {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_families(&mut out, snapshot);
    out.push_str("# EOF\n");
    out.into_bytes()
}

fn write_families(out: &mut String, snapshot: &Snapshot) -> fmt::Result {
    for family in families(&snapshot.cumulative) {
        let kind = match family.series.first().map(|s| &s.value) {
            Some(Value::Counter(_)) | None => "counter",
            Some(Value::Gauge(_)) => "gauge",
            Some(Value::Histogram(_)) => "histogram",
        };
        writeln!(out, "# TYPE {} {kind}", family.name)?;
        if let Some(unit) = family.unit() {
            writeln!(out, "# UNIT {} {unit}", family.name)?;
        }
        // A family without a line of help has no HELP line rather than an empty one.
        if !family.help.is_empty() {
            writeln!(out, "# HELP {} {}", family.name, Escaped(family.help))?;
        }
        for series in &family.series {
            write_series(out, &family, series, snapshot)?;
        }
    }
    Ok(())
}

fn write_series(out: &mut String, family: &Family<'_>, series: &Series, snapshot: &Snapshot) -> fmt::Result {
    let labels = labels::joined(&snapshot.run, &series.labels);
    let sample = |out: &mut String, suffix: &str, le: Option<f64>, value: &dyn fmt::Display| {
        write!(out, "{}{suffix}{{", family.name)?;
        for (i, (key, value)) in labels.iter().enumerate() {
            let comma = if i == 0 { "" } else { "," };
            write!(out, "{comma}{key}=\"{}\"", Escaped(value))?;
        }
        if let Some(le) = le {
            let comma = if labels.is_empty() { "" } else { "," };
            write!(out, "{comma}le=\"{}\"", classic::le(le))?;
        }
        writeln!(out, "}} {value}")
    };
    match &series.value {
        Value::Counter(n) => sample(out, "_total", None, n),
        Value::Gauge(v) => sample(out, "", None, &Number(*v)),
        Value::Histogram(d) => {
            for (le, cumulative) in classic::buckets(&d.buckets) {
                sample(out, "_bucket", Some(le), &cumulative)?;
            }
            sample(out, "_count", None, &d.buckets.count)?;
            sample(out, "_sum", None, &Number(d.buckets.sum))
        }
    }
}

/// A label value or HELP text with `\`, `"` and newlines escaped, as OpenMetrics asks.
struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '\\' => f.write_str("\\\\")?,
                '"' => f.write_str("\\\"")?,
                '\n' => f.write_str("\\n")?,
                c => f.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// A float as OpenMetrics spells it: `+Inf`, `-Inf`, `NaN`, else the shortest text that reads
/// back to the same value (`1.0`, `0.25`, `7.62939453125e-6`).
struct Number(f64);

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            v if v.is_nan() => f.write_str("NaN"),
            f64::INFINITY => f.write_str("+Inf"),
            f64::NEG_INFINITY => f.write_str("-Inf"),
            v => write!(f, "{v:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::tests::{counter, gauge, histogram, snapshot};

    fn text(snapshot: &Snapshot) -> String {
        String::from_utf8(encode(snapshot)).expect("UTF-8")
    }

    #[test]
    fn a_small_snapshot_is_written_exactly() {
        let mut s = snapshot(vec![
            counter("loadhost_tasks", &[("outcome", "passed")], 7),
            gauge("loadhost_workers", &[], 3.0),
            counter("loadhost_tasks", &[("outcome", "failed")], 1),
            counter("loadhost_http_sent_bytes", &[("run_id", "theirs")], 1024),
            gauge("loadhost_generator_cpu", &[], 0.25),
        ]);
        s.cumulative[0].help = "Tasks ended, \"by\" outcome\\kind\nnext line";
        s.cumulative[4].help = "";
        let expected = r#"# TYPE loadhost_tasks counter
# HELP loadhost_tasks Tasks ended, \"by\" outcome\\kind\nnext line
loadhost_tasks_total{run_id="r1",segment="1/2",scenario="default",outcome="passed"} 7
loadhost_tasks_total{run_id="r1",segment="1/2",scenario="default",outcome="failed"} 1
# TYPE loadhost_workers gauge
# HELP loadhost_workers help
loadhost_workers{run_id="r1",segment="1/2",scenario="default"} 3.0
# TYPE loadhost_http_sent_bytes counter
# UNIT loadhost_http_sent_bytes bytes
# HELP loadhost_http_sent_bytes help
loadhost_http_sent_bytes_total{run_id="r1",segment="1/2",scenario="default",exported_run_id="theirs"} 1024
# TYPE loadhost_generator_cpu gauge
loadhost_generator_cpu{run_id="r1",segment="1/2",scenario="default"} 0.25
# EOF
"#;
        assert_eq!(text(&s), expected);
    }

    #[test]
    fn label_values_are_escaped_and_an_empty_snapshot_is_eof_alone() {
        let s = snapshot(vec![gauge("loadhost_plugin_gauge", &[("metric", "a\"b\\c\nd")], f64::NAN)]);
        let text = text(&s);
        assert!(text.contains(r#"metric="a\"b\\c\nd"} NaN"#), "{text}");
        assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 1, "the newline is escaped");
        assert_eq!(super::super::text::encode(&snapshot(Vec::new())), b"# EOF\n");
    }

    #[test]
    fn histograms_are_cumulative_classic_buckets_whose_inf_is_the_count() {
        // Schema 5: bucket 0 ends at 1 s, bucket 8 at 2^(1/4) s, bucket 32 at 2 s.
        let s = snapshot(vec![histogram("loadhost_latency_seconds", &[(0, 2), (8, 3), (32, 5)], 1, 12.5)]);
        let text = text(&s);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..2],
            ["# TYPE loadhost_latency_seconds histogram", "# UNIT loadhost_latency_seconds seconds"]
        );
        let run = r#"run_id="r1",segment="1/2",scenario="default""#;
        let bucket = |le: &str| format!("loadhost_latency_seconds_bucket{{{run},le=\"{le}\"}}");
        let value = |series: &str| {
            let line =
                lines.iter().find(|l| l.starts_with(&format!("{series} "))).unwrap_or_else(|| panic!("{series}"));
            line.rsplit_once(' ').map(|(_, v)| v.to_owned()).unwrap_or_default()
        };
        assert_eq!(value(&bucket("6.103515625e-05")), "1", "the zero in the first bucket");
        assert_eq!(value(&bucket("1.0")), "3");
        assert_eq!(value(&bucket("1.189207115002721")), "6");
        assert_eq!(value(&bucket("2.0")), "11");
        assert_eq!(value(&bucket("64.0")), "11");
        assert_eq!(value(&bucket("+Inf")), "11");
        assert_eq!(value(&format!("loadhost_latency_seconds_count{{{run}}}")), "11", "+Inf == count");
        assert_eq!(value(&format!("loadhost_latency_seconds_sum{{{run}}}")), "12.5");
        let buckets: Vec<u64> = lines
            .iter()
            .filter(|l| l.contains("_bucket{"))
            .filter_map(|l| l.rsplit_once(' ').and_then(|(_, v)| v.parse().ok()))
            .collect();
        assert_eq!(buckets.len(), 82);
        assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "cumulative: {buckets:?}");
        assert_eq!(lines.last(), Some(&"# EOF"));
    }
}
