//! How measurements serialize (serde), for results files that other processes merge: every
//! [`Window`](crate::Window) and [`RunReport`](crate::RunReport) comes back exactly, so merging
//! windows read from files gives what merging the originals would have.
//!
//! - A [`LatencyHistogram`] is its HDR V2-deflate encoding (the HdrHistogram log format, the
//!   `HISTFAAA…` strings other HDR tools read), base64 in text formats and raw bytes in binary
//!   ones; an empty histogram is the empty string.
//! - [`PluginMetrics`] is `{series: [{key, value}], kind_conflicts, folded, discarded, invalid}`,
//!   series sorted by key.
//! - An `f64` that may not be finite (gauge values, trend sums) is, as `nonfinite` writes it, a number when finite and the
//!   string `"NaN"`, `"inf"` or `"-inf"` otherwise, which JSON cannot hold as a number. Exact
//!   round trips of finite values through JSON need serde_json's `float_roundtrip` feature.
//! - Everything else is serde's default shape (durations `{secs, nanos}`).

use std::io::Read as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hdrhistogram::serialization::{Deserializer as HdrDeserializer, Serializer as _, V2DeflateSerializer};
use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use crate::histogram::{LatencyHistogram, SIGNIFICANT_DIGITS};
use crate::plugin::{PluginMetrics, Series, SeriesKey, SeriesValue};

/// Why bytes are not a histogram.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistogramError {
    /// Not base64.
    #[error("a histogram is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// Not an HDR V2 (deflate) encoding, or a damaged one.
    #[error("a histogram is damaged: {0}")]
    Damaged(String),
    /// Together with the histograms read before it, more buckets than [`with_bucket_budget`] allows.
    #[error("its histograms hold more than {LINE_BUCKETS} buckets (256 MiB) together, the most one line may hold")]
    Budget,
    /// The histogram could not be encoded.
    #[error("a histogram could not be encoded: {0}")]
    Encode(String),
}

/// The V2-deflate cookie: a zlib stream of a V2 encoding follows its length.
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;
/// The plain V2 cookie.
const V2_COOKIE: u32 = 0x1c84_9313;
/// Bytes of a V2 header: cookie, payload length, normalizing offset, digits, low, high, ratio.
const V2_HEADER: usize = 40;
/// The largest decoded V2 encoding accepted. A histogram of the widest range loadhost keeps
/// (microseconds up to `u64::MAX`) has about 56,000 buckets of at most 9 bytes each; the bound
/// stops a damaged length field from making the decoder allocate gigabytes.
const MAX_V2_BYTES: u64 = 1 << 20;

/// The most buckets the histograms of one results-file line may hold together (256 MiB of counts),
/// under [`with_bucket_budget`]. A line of a few hundred kilobytes can carry thousands of
/// histograms of the widest range (a 3 MB file of them took `merge` 27 s and 5.2 GB); a real run
/// comes near this only with hundreds of endpoints each spread over seconds (a 10 s spread is
/// 14,000 buckets), and its own process would have held as much.
pub const LINE_BUCKETS: u64 = 32 << 20;

thread_local! {
    /// Buckets still allowed to histograms decoded on this thread, while a budget is set.
    static BUCKETS_LEFT: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Run `decode` with at most `budget` buckets for the histograms it reads on this thread; one past
/// it is [`HistogramError::Budget`]. Buckets are counted as each histogram is made, so what is
/// allocated past the budget is one histogram (at most 440 KiB), not the rest of the line.
pub fn with_bucket_budget<T>(budget: u64, decode: impl FnOnce() -> T) -> T {
    let before = BUCKETS_LEFT.replace(Some(budget));
    let out = decode();
    BUCKETS_LEFT.set(before);
    out
}

/// Count a histogram's buckets against the budget [`with_bucket_budget`] set, if any.
fn spend_buckets(buckets: u64) -> Result<(), HistogramError> {
    match BUCKETS_LEFT.get() {
        Some(left) if buckets > left => {
            BUCKETS_LEFT.set(Some(0));
            Err(HistogramError::Budget)
        }
        Some(left) => {
            BUCKETS_LEFT.set(Some(left - buckets));
            Ok(())
        }
        None => Ok(()),
    }
}

/// The histogram's V2-deflate encoding; empty for an empty histogram.
pub fn histogram_bytes(h: &LatencyHistogram) -> Result<Vec<u8>, HistogramError> {
    let mut out = Vec::new();
    if h.count() > 0 {
        V2DeflateSerializer::new()
            .serialize(&h.inner, &mut out)
            .map_err(|e| HistogramError::Encode(format!("{e:?}")))?;
    }
    Ok(out)
}

/// A histogram from [`histogram_bytes`] (plain V2 encodings are read too).
pub fn histogram_from_bytes(bytes: &[u8]) -> Result<LatencyHistogram, HistogramError> {
    if bytes.is_empty() {
        return Ok(LatencyHistogram::new());
    }
    let damaged = |why: &str| HistogramError::Damaged(why.to_owned());
    let word = |b: &[u8], at: usize| b.get(at..at + 4).map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
    // Inflate (bounded) and check the V2 header's own length before the decoder trusts it.
    let plain = match word(bytes, 0) {
        Some(V2_DEFLATE_COOKIE) => {
            let mut plain = Vec::new();
            flate2::read::ZlibDecoder::new(bytes.get(8..).unwrap_or_default())
                .take(MAX_V2_BYTES + 1)
                .read_to_end(&mut plain)
                .map_err(|e| HistogramError::Damaged(e.to_string()))?;
            if plain.len() as u64 > MAX_V2_BYTES {
                return Err(damaged("larger than any histogram"));
            }
            plain
        }
        Some(V2_COOKIE) => bytes.to_vec(),
        _ => return Err(damaged("not an HDR V2 encoding")),
    };
    if word(&plain, 0) != Some(V2_COOKIE) {
        return Err(damaged("not an HDR V2 encoding"));
    }
    let payload = word(&plain, 4).ok_or_else(|| damaged("cut short"))? as usize;
    if plain.len() < V2_HEADER || plain.len() - V2_HEADER < payload {
        return Err(damaged("cut short"));
    }
    // A histogram's buckets (what decoding allocates, and what every merge and percentile walks)
    // follow its precision and range, which the header sets: 5 significant digits over the widest
    // range are 6.2 M buckets (47 MiB) from a 100-byte encoding, where loadhost's 3 digits are at
    // most 56,000 (440 KiB). So only histograms of loadhost's own shape are read.
    let digits = word(&plain, 12).ok_or_else(|| damaged("cut short"))?;
    let lowest = plain.get(16..24).and_then(|w| w.try_into().ok()).map(u64::from_be_bytes);
    if digits != u32::from(SIGNIFICANT_DIGITS) || lowest != Some(1) {
        return Err(HistogramError::Damaged(format!(
            "not a loadhost histogram: {digits} significant digits and a lowest value of {} \
             (loadhost writes {SIGNIFICANT_DIGITS} and 1)",
            lowest.unwrap_or_default()
        )));
    }
    let mut inner: hdrhistogram::Histogram<u64> = HdrDeserializer::new()
        .deserialize(&mut plain.as_slice())
        .map_err(|e| HistogramError::Damaged(format!("{e:?}")))?;
    spend_buckets(inner.distinct_values() as u64)?;
    inner.auto(true);
    Ok(LatencyHistogram { inner })
}

/// [`histogram_bytes`] in base64 (standard alphabet, padded): the text form.
pub fn histogram_text(h: &LatencyHistogram) -> Result<String, HistogramError> {
    Ok(BASE64.encode(histogram_bytes(h)?))
}

/// A histogram from [`histogram_text`].
pub fn histogram_from_text(text: &str) -> Result<LatencyHistogram, HistogramError> {
    histogram_from_bytes(&BASE64.decode(text)?)
}

impl Serialize for LatencyHistogram {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let bytes = histogram_bytes(self).map_err(serde::ser::Error::custom)?;
        if s.is_human_readable() { s.serialize_str(&BASE64.encode(bytes)) } else { s.serialize_bytes(&bytes) }
    }
}

impl<'de> Deserialize<'de> for LatencyHistogram {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct HistogramVisitor;
        impl Visitor<'_> for HistogramVisitor {
            type Value = LatencyHistogram;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an HDR histogram (base64 of its V2-deflate encoding)")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<LatencyHistogram, E> {
                histogram_from_text(text).map_err(E::custom)
            }
            fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<LatencyHistogram, E> {
                histogram_from_bytes(bytes).map_err(E::custom)
            }
        }
        if d.is_human_readable() { d.deserialize_str(HistogramVisitor) } else { d.deserialize_bytes(HistogramVisitor) }
    }
}

#[derive(Serialize)]
struct SeriesRef<'a> {
    key: &'a SeriesKey,
    value: &'a SeriesValue,
}

#[derive(Serialize)]
struct PluginMetricsRef<'a> {
    series: Vec<SeriesRef<'a>>,
    kind_conflicts: u64,
    folded: u64,
    discarded: u64,
    invalid: u64,
}

#[derive(Deserialize)]
struct PluginMetricsOwned {
    #[serde(default)]
    series: Vec<Series>,
    #[serde(default)]
    kind_conflicts: u64,
    #[serde(default)]
    folded: u64,
    #[serde(default)]
    discarded: u64,
    #[serde(default)]
    invalid: u64,
}

impl Serialize for PluginMetrics {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut series: Vec<SeriesRef<'_>> = self.series.iter().map(|(key, value)| SeriesRef { key, value }).collect();
        series.sort_by(|a, b| a.key.cmp(b.key));
        PluginMetricsRef {
            series,
            kind_conflicts: self.kind_conflicts,
            folded: self.folded,
            discarded: self.discarded,
            invalid: self.invalid,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for PluginMetrics {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let owned = PluginMetricsOwned::deserialize(d)?;
        let mut metrics = PluginMetrics {
            kind_conflicts: owned.kind_conflicts,
            folded: owned.folded,
            discarded: owned.discarded,
            invalid: owned.invalid,
            ..PluginMetrics::default()
        };
        for Series { key, value } in owned.series {
            // Keys are re-sorted, and a key given twice merges as it would have in the run.
            metrics.add_series(SeriesKey::new(key.name, key.tags), value).map_err(de::Error::custom)?;
        }
        Ok(metrics)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use proptest::prelude::*;

    use super::*;
    use crate::generator_verdict::GeneratorVerdict;
    use crate::http::HttpSample;
    use crate::outcome::{AttemptEnd, ErrorKind, Outcome};
    use crate::recorder::{AttemptRecord, TaskTiming};
    use crate::window::Window;

    fn key(name: &str, tags: &[(&str, &str)]) -> SeriesKey {
        SeriesKey::new(name.into(), tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    fn values(h: &LatencyHistogram) -> Vec<(u64, u64)> {
        h.hdr().iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
    }

    /// Bit for bit, except that every NaN is one NaN (its payload is not kept).
    fn same(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    fn round_trip<T: Serialize + for<'de> Deserialize<'de>>(value: &T) -> T {
        let text = serde_json::to_string(value).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// Every field of two windows, compared (Window has no PartialEq: histograms by bucket).
    pub(crate) fn assert_same(a: &Window, b: &Window) {
        assert_eq!(a.counts, b.counts);
        assert_eq!(a.attempts, b.attempts);
        for (x, y) in
            [(&a.latency, &b.latency), (&a.service, &b.service), (&a.wait, &b.wait), (&a.gate_wait, &b.gate_wait)]
        {
            assert_eq!(values(x), values(y));
            assert_eq!(x.percentiles(), y.percentiles());
        }
        assert_eq!(
            (a.lag_max, a.lag_total, a.underrun, a.dropped_at_gate),
            (b.lag_max, b.lag_total, b.underrun, b.dropped_at_gate)
        );
        assert_eq!(a.generator, b.generator);
        let (p, q) = (&a.plugin, &b.plugin);
        assert_eq!(
            (p.kind_conflicts(), p.folded(), p.discarded(), p.invalid()),
            (q.kind_conflicts(), q.folded(), q.discarded(), q.invalid())
        );
        let (ps, qs) = (p.series(), q.series());
        assert_eq!(ps.len(), qs.len());
        for (s, t) in ps.iter().zip(&qs) {
            assert_eq!(s.key, t.key);
            match (&s.value, &t.value) {
                (SeriesValue::Counter(x), SeriesValue::Counter(y)) => assert_eq!(x, y),
                (SeriesValue::Gauge { value: v, seq: s }, SeriesValue::Gauge { value: w, seq: t }) => {
                    assert!(same(*v, *w), "{v} vs {w}");
                    assert_eq!(s, t);
                }
                (SeriesValue::Check { passes: a, fails: b }, SeriesValue::Check { passes: c, fails: d }) => {
                    assert_eq!((a, b), (c, d))
                }
                (SeriesValue::Trend(x), SeriesValue::Trend(y)) => {
                    assert_eq!(x.count, y.count);
                    assert!(same(x.sum, y.sum) && same(x.min, y.min) && same(x.max, y.max), "{x:?} vs {y:?}");
                    assert_eq!(values(&x.hist), values(&y.hist));
                }
                (x, y) => panic!("kinds differ: {x:?} vs {y:?}"),
            }
        }
        let (h, k) = (&a.http, &b.http);
        assert_eq!(
            (
                h.requests,
                h.failed,
                h.denied,
                &h.by_status,
                h.connections_opened,
                h.bytes_sent,
                h.bytes_received,
                h.body_bytes
            ),
            (
                k.requests,
                k.failed,
                k.denied,
                &k.by_status,
                k.connections_opened,
                k.bytes_sent,
                k.bytes_received,
                k.body_bytes
            )
        );
        assert_eq!(values(&h.duration), values(&k.duration));
        assert_eq!(h.endpoints.len(), k.endpoints.len());
        for ((e, x), (f, y)) in h.endpoints.iter().zip(&k.endpoints) {
            assert_eq!((e, x.requests, x.failed), (f, y.requests, y.failed));
            assert_eq!(values(&x.duration), values(&y.duration));
        }
    }

    /// A window with something in every field.
    pub(crate) fn busy_window(seed: u64) -> Window {
        let mut w = Window::default();
        w.generator.count(
            [GeneratorVerdict::Healthy, GeneratorVerdict::Degraded, GeneratorVerdict::Saturated][(seed % 3) as usize],
        );
        for i in 0..500u64 {
            let micros = (i * 7919 + seed * 104_729) % 250_000 + 1;
            w.record_attempt(AttemptRecord {
                end: if i % 10 == 0 { AttemptEnd::Error(ErrorKind::Retryable) } else { AttemptEnd::Passed },
                retry: i % 11 == 0,
                timing: TaskTiming {
                    wait: Duration::from_micros(micros / 10),
                    service: Duration::from_micros(micros),
                    gate: (i % 3 == 0).then(|| Duration::from_micros(micros / 100)),
                },
                terminal: (i % 10 != 0).then_some(Outcome::Passed),
                since_first: Duration::from_micros(if i % 11 == 0 { micros * 2 } else { 0 }),
            });
            w.http.record(HttpSample::new(
                [Some(200), Some(503), None][(i % 3) as usize],
                Duration::from_micros(micros),
                i,
                Some(crate::http::Endpoint::new("GET", ["GET /a", "GET /b/{id}"][(i % 2) as usize])),
            ));
            w.plugin.trend(key("login_ms", &[("route", "/a")]), micros as f64 / 1000.0 - 0.5);
            w.plugin.check(key("status is 200", &[]), i % 7 != 0);
        }
        w.record_task(Outcome::Dropped, None);
        w.counts.scheduled = 460;
        w.lag_max = Duration::from_nanos(1_234_567 + seed);
        w.lag_total = Duration::from_nanos(98_765_432);
        w.underrun = 3;
        w.dropped_at_gate = 1;
        w.http.denied = 2;
        w.http.connections_opened = 4;
        w.http.bytes_sent = 1 << 20;
        w.http.bytes_received = 1 << 21;
        w.plugin.counter(key("greetings", &[("scenario", "default")]), 41 + seed);
        w.plugin.gauge(key("queue", &[]), 0.1 + 0.2, 17 + seed);
        w.plugin.gauge(key("nan", &[]), f64::NAN, 1);
        w.plugin.trend(key("greetings", &[("scenario", "default")]), 1.0); // a kind conflict
        w.plugin.note_folded();
        w.plugin.note_discarded();
        w.plugin.note_discarded();
        w.plugin.note_invalid();
        w
    }

    #[test]
    fn a_busy_window_round_trips_exactly() {
        let w = busy_window(1);
        let back = round_trip(&w);
        assert_same(&w, &back);
        assert_eq!(w.plugin.kind_conflicts(), 1);
        // Merging read windows is merging the originals.
        let (mut merged, mut merged_back) = (busy_window(2), round_trip(&busy_window(2)));
        merged.merge(&w);
        merged_back.merge(&back);
        assert_same(&merged, &merged_back);
    }

    #[test]
    fn empty_things_are_short_and_come_back_empty() {
        assert_eq!(serde_json::to_string(&LatencyHistogram::new()).unwrap(), "\"\"");
        let back = round_trip(&Window::default());
        assert_same(&Window::default(), &back);
        assert_eq!(back.latency.count(), 0);
    }

    #[test]
    fn read_histograms_keep_growing() {
        let mut h = LatencyHistogram::new();
        h.record_micros(5);
        let mut back = round_trip(&h);
        back.record_micros(3_600_000_000);
        assert_eq!(back.count(), 2);
        assert!(back.percentiles().max >= 3_600_000.0);
    }

    #[test]
    fn damaged_histograms_are_errors_not_panics() {
        let mut h = LatencyHistogram::new();
        for v in 1..1000 {
            h.record_micros(v * 37);
        }
        let bytes = histogram_bytes(&h).unwrap();
        assert!(histogram_from_text("not base64!").is_err());
        assert!(histogram_from_bytes(&bytes[..bytes.len() / 2]).is_err());
        assert!(histogram_from_bytes(b"\x1c\x84\x93\x13\xff\xff\xff\xff").is_err());
        let mut flipped = bytes.clone();
        flipped[12] ^= 0xff;
        let _ = histogram_from_bytes(&flipped); // an error or some histogram, never a panic
        assert_eq!(values(&histogram_from_bytes(&bytes).unwrap()), values(&h));
    }

    #[test]
    fn histograms_of_another_precision_or_floor_are_refused_before_their_buckets_are_made() {
        // Issue 41, defect 9: 5 digits over the widest range decode to 6.2 M buckets (47 MiB)
        // from ~100 bytes; 700 of them in a 103 KiB results file cost `merge` 24 s and 436 MiB.
        let encode = |low: u64, digits: u8| {
            let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(low, u64::MAX / 2, digits).unwrap();
            h.record(low.max(1)).unwrap();
            h.record(u64::MAX / 2 - 1).unwrap();
            let mut out = Vec::new();
            V2DeflateSerializer::new().serialize(&h, &mut out).unwrap();
            out
        };
        for (low, digits) in [(1, 5), (1, 2), (1000, 3)] {
            let bytes = encode(low, digits);
            assert!(bytes.len() < 200, "{} bytes", bytes.len());
            let err = histogram_from_bytes(&bytes).map(|h| h.count()).unwrap_err().to_string();
            assert!(
                err.contains("not a loadhost histogram") && err.contains(&format!("{digits} significant")),
                "{err}"
            );
        }
        // loadhost's own widest histogram (a trend that saturated) still reads back.
        let mut widest = LatencyHistogram::new();
        widest.record_micros(1);
        widest.record_micros(u64::MAX);
        assert_eq!(round_trip(&widest).count(), 2);
    }

    #[test]
    fn a_budget_bounds_the_buckets_of_histograms_read_together() {
        let mut widest = LatencyHistogram::new();
        widest.record_micros(1);
        widest.record_micros(u64::MAX);
        let bytes = histogram_bytes(&widest).unwrap();
        let buckets = widest.inner.distinct_values() as u64;
        let read =
            |n: usize| (0..n).map(|_| histogram_from_bytes(&bytes).map(|h| h.count())).collect::<Result<Vec<_>, _>>();
        assert_eq!(with_bucket_budget(3 * buckets, || read(3)).unwrap(), vec![2, 2, 2]);
        let err = with_bucket_budget(3 * buckets, || read(4)).unwrap_err();
        assert!(matches!(err, HistogramError::Budget), "{err}");
        assert!(err.to_string().contains(&format!("more than {LINE_BUCKETS} buckets")), "{err}");
        // Outside a budget (and after one), histograms read as many as they are.
        assert_eq!(read(5).unwrap().len(), 5);
        // A budget set inside another gives the outer one back.
        with_bucket_budget(buckets, || {
            assert!(with_bucket_budget(10 * buckets, || read(4)).is_ok());
            assert!(read(2).is_err());
        });
    }

    #[test]
    fn floats_that_json_cannot_hold_round_trip() {
        #[derive(Serialize, Deserialize)]
        struct F(
            #[serde(with = "crate::nonfinite::float")] f64,
            #[serde(with = "crate::nonfinite::opt_float")] Option<f64>,
        );
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.1 + 0.2, -0.0, 5e-324, f64::MAX, 3.0] {
            let back: F = round_trip(&F(v, Some(v)));
            assert_eq!(back.0.to_bits(), v.to_bits(), "{v}");
            assert_eq!(back.1.map(f64::to_bits), Some(v.to_bits()), "{v}");
        }
        assert!(round_trip(&F(1.0, None)).1.is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn random_histograms_and_trends_round_trip(
            micros in proptest::collection::vec(0u64..u64::MAX / 4, 0..400),
            trend in proptest::collection::vec(-1e9f64..1e12, 0..200),
            gauge in proptest::num::f64::ANY,
        ) {
            let mut w = Window::default();
            for (i, &m) in micros.iter().enumerate() {
                w.latency.record_micros(m);
                w.service.record_micros(m / 3);
                w.http.record(HttpSample::new(Some(100 + (m % 500) as u16), Duration::from_micros(m % 10_000_000), m % 1000, None));
                w.plugin.counter(key("c", &[("k", &(i % 5).to_string())]), m % 100);
            }
            for &v in &trend {
                w.plugin.trend(key("t", &[]), v);
            }
            w.plugin.gauge(key("g", &[]), gauge, 9);
            let back = round_trip(&w);
            assert_same(&w, &back);
            for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
                prop_assert_eq!(w.latency.quantile_micros(q), back.latency.quantile_micros(q));
            }
        }
    }
}
