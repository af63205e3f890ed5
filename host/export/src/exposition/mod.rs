//! The scrape endpoint's answer (`--metrics-addr`): a snapshot's cumulative series, in the format
//! the scraper's `Accept` header asks for. Prometheus asks for the protobuf exposition when its
//! native histograms are on, and gets each histogram as a native one (2.2% buckets); any other
//! scraper gets OpenMetrics text, each histogram as classic buckets ([`crate::classic`]).
//!
//! Both formats write a snapshot's series grouped by name (a family), in the order each name first
//! appears, each series with the run's labels before its own ([`crate::labels::joined`]).
//!
//! # Layout
//! - [`text`]: OpenMetrics text 1.0, histograms as classic buckets.
//! - [`protobuf`]: Prometheus' delimited protobuf, histograms as native histograms.

pub mod protobuf;
pub mod text;

use std::collections::HashMap;

use crate::{Payload, Series, Snapshot, Unit};

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics text 1.0.
    Text,
    /// Prometheus' protobuf exposition (`io.prometheus.client.MetricFamily`, length-delimited).
    Protobuf,
}

/// The format an `Accept` header asks for: the protobuf exposition when it names
/// `application/vnd.google.protobuf` with `proto=io.prometheus.client.MetricFamily` (and the
/// delimited encoding, or none said) at a quality no lower than any text type's; else text.
pub fn negotiate(accept: Option<&str>) -> Format {
    let (mut protobuf, mut text) = (0.0f64, 0.0f64);
    for range in accept.unwrap_or_default().split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let (mut proto, mut encoding, mut q) = (None, None, 1.0f64);
        for param in parts {
            let (key, value) = param.split_once('=').unwrap_or((param, ""));
            let value = value.trim().trim_matches('"');
            match key.trim().to_ascii_lowercase().as_str() {
                "proto" => proto = Some(value),
                "encoding" => encoding = Some(value),
                "q" => q = value.parse().unwrap_or(0.0),
                _ => {}
            }
        }
        match media.as_str() {
            "application/vnd.google.protobuf"
                if proto == Some(protobuf::MESSAGE) && encoding.is_none_or(|e| e == "delimited") =>
            {
                protobuf = protobuf.max(q);
            }
            "application/openmetrics-text" | "text/plain" | "text/*" | "*/*" => text = text.max(q),
            _ => {}
        }
    }
    if protobuf > 0.0 && protobuf >= text { Format::Protobuf } else { Format::Text }
}

/// `snapshot`'s cumulative series in `format`.
pub fn encode(snapshot: &Snapshot, format: Format) -> Payload {
    match format {
        Format::Text => Payload { content_type: text::CONTENT_TYPE, headers: Vec::new(), body: text::encode(snapshot) },
        Format::Protobuf => {
            Payload { content_type: protobuf::CONTENT_TYPE, headers: Vec::new(), body: protobuf::encode(snapshot) }
        }
    }
}

/// The series sharing a name: one `# TYPE` (one `MetricFamily`) for all of them.
struct Family<'a> {
    name: &'a str,
    help: &'static str,
    unit: Unit,
    series: Vec<&'a Series>,
}

impl Family<'_> {
    /// The unit as OpenMetrics names it, when the name ends with it (OpenMetrics and Prometheus
    /// refuse a unit that is not the name's suffix: `loadhost_generator_cpu` is a ratio without
    /// saying so).
    fn unit(&self) -> Option<&'static str> {
        let unit = self.unit.prometheus();
        if unit.is_empty() {
            return None;
        }
        self.name.strip_suffix(unit).is_some_and(|stem| stem.ends_with('_')).then_some(unit)
    }
}

/// `series` grouped by name, each group where its name first appears: the model lists a family's
/// series apart (each scenario's series in turn), the formats may not.
fn families(series: &[Series]) -> Vec<Family<'_>> {
    let mut out: Vec<Family<'_>> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for s in series {
        let slot = *index.entry(s.name.as_str()).or_insert_with(|| {
            out.push(Family { name: &s.name, help: s.help, unit: s.unit, series: Vec::new() });
            out.len() - 1
        });
        out[slot].series.push(s);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use loadhost_metrics::Percentiles;
    use loadhost_metrics::exponential::{ExponentialHistogram, SCHEMA};

    use super::*;
    use crate::{Distribution, Value};

    /// A snapshot of a run `r1`, segment `1/2`, holding `cumulative`.
    pub(crate) fn snapshot(cumulative: Vec<Series>) -> Snapshot {
        let run = vec![("run_id".to_owned(), "r1".to_owned()), ("segment".to_owned(), "1/2".to_owned())];
        Snapshot { at_ms: 2_000, start_ms: 1_000, run, cumulative, interval: Vec::new(), last: false }
    }

    fn series(name: &str, labels: &[(&str, &str)], value: Value) -> Series {
        let unit = match name {
            n if n.ends_with("_seconds") => Unit::Seconds,
            n if n.ends_with("_bytes") => Unit::Bytes,
            n if n.starts_with("loadhost_generator_") => Unit::Ratio,
            _ => Unit::None,
        };
        let mut own = vec![("scenario".to_owned(), "default".to_owned())];
        own.extend(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        Series { name: name.to_owned(), help: "help", unit, labels: own, value }
    }

    pub(crate) fn counter(name: &str, labels: &[(&str, &str)], n: u64) -> Series {
        series(name, labels, Value::Counter(n))
    }

    pub(crate) fn gauge(name: &str, labels: &[(&str, &str)], v: f64) -> Series {
        series(name, labels, Value::Gauge(v))
    }

    /// A histogram of `positive` (schema-5 index, count) and `zero_count` zeros.
    pub(crate) fn histogram(name: &str, positive: &[(i32, u64)], zero_count: u64, sum: f64) -> Series {
        let positive: BTreeMap<i32, u64> = positive.iter().copied().collect();
        let count = zero_count + positive.values().sum::<u64>();
        let buckets = ExponentialHistogram { schema: SCHEMA, zero_count, count, sum, positive };
        series(name, &[], Value::Histogram(Box::new(Distribution { buckets, stats: Percentiles::default() })))
    }

    #[test]
    fn prometheus_gets_protobuf_only_when_its_native_histograms_ask_for_it() {
        // Prometheus 2.42's Accept headers, without and with --enable-feature=native-histograms.
        let plain = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,\
                     text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        let native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,\
                      application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;\
                      q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(plain)), Format::Text);
        assert_eq!(negotiate(Some(native)), Format::Protobuf);
        assert_eq!(negotiate(None), Format::Text, "curl, a browser");
        assert_eq!(negotiate(Some("*/*")), Format::Text);
        // Spaces, quotes and case as other clients write them.
        let spaced =
            r#"Application/Vnd.Google.Protobuf; proto="io.prometheus.client.MetricFamily"; encoding=delimited"#;
        assert_eq!(negotiate(Some(spaced)), Format::Protobuf);
        // Not the delimited MetricFamily stream, or ranked below text: text.
        let text_encoding = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text";
        assert_eq!(negotiate(Some(text_encoding)), Format::Text);
        assert_eq!(negotiate(Some("application/vnd.google.protobuf;proto=other.Message")), Format::Text);
        let ranked_low = "application/openmetrics-text;version=1.0.0,\
                          application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;q=0.5";
        assert_eq!(negotiate(Some(ranked_low)), Format::Text);
        let refused = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;q=0";
        assert_eq!(negotiate(Some(refused)), Format::Text);
    }

    #[test]
    fn each_format_is_labelled_with_its_content_type() {
        let s = snapshot(vec![counter("loadhost_retries", &[], 1)]);
        let text = encode(&s, Format::Text);
        assert!(text.content_type.starts_with("application/openmetrics-text; version=1.0.0"));
        assert!(text.body.ends_with(b"# EOF\n"));
        let protobuf = encode(&s, Format::Protobuf);
        assert!(protobuf.content_type.starts_with("application/vnd.google.protobuf;"));
        assert!(protobuf.content_type.contains("proto=io.prometheus.client.MetricFamily; encoding=delimited"));
        assert_eq!(
            protobuf.body.first().map(|&n| usize::from(n)),
            Some(protobuf.body.len() - 1),
            "one delimited family"
        );
    }
}
