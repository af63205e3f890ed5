//! Runs to write, read and merge in the results tests: synthetic parts with every kind of
//! measurement, and comparisons that check every bucket.

use std::time::{Duration, SystemTime};

use loadhost_engine::Segment;
use loadhost_metrics::http::HttpSample;
use loadhost_metrics::{
    AttemptEnd, AttemptRecord, ErrorKind, Gauges, GeneratorHealth, Outcome, RunReport, SeriesKey, SeriesSummary,
    SeriesValue, TaskTiming, Window, WorkerStats, generator_verdict,
};
use serde_json::{Value, json};

use super::{FORMAT_VERSION, IntervalRecord, RunResults, read, segment_name, write};
use crate::summary::PluginFile;

/// What a synthetic run says of itself: a plugin `p.wasm`, nothing else.
pub(crate) fn run_info() -> crate::RunInfo {
    crate::RunInfo {
        plugin_path: "p.wasm".into(),
        plugin_sha256: "ab".repeat(32),
        plugin_ref: None,
        plugin_digest: None,
        scenario_plugins: std::collections::BTreeMap::new(),
        config: Value::Null,
        model: String::new(),
        peak_rss: None,
        tags: Vec::new(),
    }
}

/// Segment `index` of `count`.
pub(crate) fn seg(index: u32, count: u32) -> Segment {
    Segment::new(index, count).unwrap()
}

/// A small deterministic generator (xorshift), so tests need no randomness crate.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Latency-like microseconds: mostly 1-20 ms with a long tail.
    pub(crate) fn micros(&mut self) -> u64 {
        let base = 1_000 + self.next() % 19_000;
        if self.next().is_multiple_of(100) { base * (1 + self.next() % 50) } else { base }
    }
}

pub(crate) fn key(name: &str, tags: &[(&str, &str)]) -> SeriesKey {
    SeriesKey::new(name.into(), tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

/// Record one task of latency `micros` into `w`, touching every kind of measurement.
pub(crate) fn task(w: &mut Window, micros: u64, n: u64) {
    let failed = n.is_multiple_of(50);
    w.counts.scheduled += 1;
    w.record_attempt(AttemptRecord {
        end: if failed { AttemptEnd::Error(ErrorKind::Failed) } else { AttemptEnd::Passed },
        retry: false,
        timing: TaskTiming {
            wait: Duration::from_micros(micros / 20),
            service: Duration::from_micros(micros),
            gate: n.is_multiple_of(4).then(|| Duration::from_micros(micros / 50)),
        },
        terminal: Some(if failed { Outcome::Failed } else { Outcome::Passed }),
        since_first: Duration::ZERO,
    });
    if failed {
        // Two kinds of error, each with a number that varies, at times that vary.
        let text = if n.is_multiple_of(100) { format!("order {n} refused") } else { format!("timeout after {n} ms") };
        w.errors.record(ErrorKind::Failed, &text, n, 1_700_000_000_000 + n * 7);
    }
    // Timed, so every phase has figures: a duration of micros × 0.9, a connection every tenth.
    let called = std::time::Instant::now();
    let (ready, duration) = (called + Duration::from_micros(micros / 30), Duration::from_micros(micros * 9 / 10));
    let sent = ready + Duration::from_micros(5).min(duration);
    let end = ready + duration;
    let clock = loadhost_metrics::phases::RequestClock {
        called,
        queued: Duration::ZERO,
        connect: n.is_multiple_of(10).then(|| loadhost_metrics::phases::ConnectTimes {
            connecting: Duration::from_micros(micros / 90),
            tls: None,
        }),
        ready,
        sent,
        head: sent.max(end - duration / 10),
        end,
    };
    w.http.record(HttpSample::timed(
        if failed { 503 } else { 200 },
        &clock,
        100 + n % 7,
        Some(loadhost_metrics::http::Endpoint::new("GET", if n.is_multiple_of(3) { "GET /a" } else { "GET /b" })),
    ));
    w.http.bytes_sent += 120;
    w.http.bytes_received += 300;
    w.plugin
        .trend(key("login_ms", &[("route", if n.is_multiple_of(3) { "/a" } else { "/b" })]), micros as f64 / 1000.0);
    w.plugin.check(key("status is 200", &[]), !failed);
    w.plugin.counter(key("greetings", &[]), 1);
    w.plugin.gauge(key("queue_depth", &[]), (n % 17) as f64 + 0.25, n);
}

pub(crate) fn base_time() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

/// A synthetic single-scenario run: `intervals` one-second intervals of `per_interval` tasks,
/// started `delay` after the base time.
pub(crate) fn synthetic(
    seed: u64,
    segment: Option<Segment>,
    delay: Duration,
    intervals: u64,
    per_interval: u64,
) -> RunResults {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let started_at = base_time() + delay;
    let mut totals = Window::default();
    let mut records = Vec::new();
    for index in 0..intervals {
        let mut w = Window::default();
        for n in 0..per_interval {
            task(&mut w, rng.micros(), index * per_interval + n);
        }
        w.lag_max = Duration::from_micros(rng.next() % 900);
        w.lag_total = w.lag_max * 3;
        w.underrun = rng.next() % 2;
        // The generator's figures as a busy machine measures them: every few intervals one is saturated.
        let generator = GeneratorHealth {
            cpu: Some(0.3 + (rng.next() % 1000) as f64 / 10_000.0),
            run_queue: Some((rng.next() % 300) as f64 / 1_000.0),
            run_queue_max: Some((rng.next() % 300) as f64 / 1_000.0),
            throttled: None,
            steal: Some(0.0012),
            overshoot_ms: Some((rng.next() % 5000) as f64 / 1_000.0),
            fds: Some(0.0021),
            memory: Some(0.119),
            memory_peak: Some(0.2),
            ..GeneratorHealth::default()
        };
        if let Some(judgement) = generator_verdict::judge(&generator, Some(w.service.percentiles().p99)) {
            w.generator.count(judgement.verdict);
        }
        totals.merge(&w);
        let gauges = Gauges { started: per_interval, workers: 10, idle: 4, in_flight: 6 };
        let start = Duration::from_secs(index);
        records.push(IntervalRecord {
            scenario: "default".into(),
            index,
            start,
            end: start + Duration::from_secs(1),
            window: w,
            gauges,
            generator,
        });
    }
    let report = RunReport {
        scenario: "default".into(),
        offset: Duration::ZERO,
        started_at,
        elapsed: Duration::from_secs(intervals) + Duration::from_millis(20),
        generation: Duration::from_secs(intervals),
        started: intervals * per_interval,
        target_rate: Some(per_interval as f64),
        totals,
        workers: WorkerStats { min: 8, peak: 12, final_: 10, grown: 4, retired: 2, replaced: 1, ceiling: 16 },
        intervals,
        aborted: None,
        stopped: None,
        teardown_error: None,
        generator: None,
    };
    let mut config = json!({"rate": "4000/s", "duration": format!("{intervals}s"), "allow-host": ["127.0.0.1:8080"]});
    if let Some(s) = segment {
        config["segment"] = json!(segment_name(&s));
        config["results"] = json!(format!("segment-{}.lhr", s.index()));
    }
    RunResults {
        version: FORMAT_VERSION,
        loadhost_version: crate::VERSION.into(),
        plugin_path: "plugins/http-get.wasm".into(),
        plugin_sha256: "ab".repeat(32),
        plugin_ref: Some("127.0.0.1:5000/team/http-get:1".into()),
        plugin_digest: Some(format!("sha256:{}", "cd".repeat(32))),
        scenario_plugins: [("checkout".to_owned(), PluginFile { path: "c.wasm".into(), ..PluginFile::default() })]
            .into(),
        config,
        segment,
        run_id: Some("run-7".into()),
        planned_start: None,
        interval: Duration::from_secs(1),
        started_at,
        cores_allowed: Some(2.0),
        report,
        scenarios: Vec::new(),
        intervals: records,
        merged: None,
    }
}

pub(crate) fn values(h: &loadhost_metrics::LatencyHistogram) -> Vec<(u64, u64)> {
    h.hdr().iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
}

/// The same measurements: counts, every histogram bucket, plugin series and HTTP figures.
pub(crate) fn assert_same_window(a: &Window, b: &Window) {
    assert_eq!(a.counts, b.counts);
    assert_eq!(a.attempts, b.attempts);
    for (x, y) in [(&a.latency, &b.latency), (&a.service, &b.service), (&a.wait, &b.wait), (&a.gate_wait, &b.gate_wait)]
    {
        assert_eq!(values(x), values(y));
        assert_eq!(x.percentiles(), y.percentiles());
    }
    assert_eq!(
        (a.lag_max, a.lag_total, a.underrun, a.dropped_at_gate),
        (b.lag_max, b.lag_total, b.underrun, b.dropped_at_gate)
    );
    assert_eq!(
        (a.plugin.kind_conflicts(), a.plugin.folded(), a.plugin.discarded(), a.plugin.invalid()),
        (b.plugin.kind_conflicts(), b.plugin.folded(), b.plugin.discarded(), b.plugin.invalid())
    );
    let (sa, sb) = (a.plugin.series(), b.plugin.series());
    assert_eq!(sa.len(), sb.len());
    for (x, y) in sa.iter().zip(&sb) {
        assert_eq!(x.key, y.key);
        match (x.value.to_summary(), y.value.to_summary()) {
            // A trend's mean is its sum over its count, and floating-point sums added in another
            // order (part by part) may differ in the last bits; everything else is exact.
            (SeriesSummary::Trend { count: c, stats: mut s }, SeriesSummary::Trend { count: d, stats: t })
                if c == d && (s.mean - t.mean).abs() <= 1e-9 * t.mean.abs().max(1.0) =>
            {
                s.mean = t.mean;
                assert_eq!(s, t, "{}", x.key);
            }
            (sx, sy) => assert_eq!(sx, sy, "{}", x.key),
        }
        if let (SeriesValue::Gauge { seq: s, .. }, SeriesValue::Gauge { seq: t, .. }) = (&x.value, &y.value) {
            assert_eq!(s, t);
        }
    }
    // The HTTP counts as they serialize; the histogram bucket by bucket (its encoding depends on
    // the range it grew to, which merging changes).
    let counts = |w: &Window| {
        let mut value = serde_json::to_value(&w.http).unwrap();
        for histograms in ["duration", "phases"] {
            value.as_object_mut().unwrap().remove(histograms);
            for endpoint in value.get_mut("endpoints").and_then(Value::as_array_mut).into_iter().flatten() {
                endpoint.as_object_mut().unwrap().remove(histograms);
            }
        }
        value
    };
    assert_eq!(counts(a), counts(b));
    assert_eq!(values(&a.http.duration), values(&b.http.duration));
    let phases = |x: &loadhost_metrics::phases::PhaseHistograms, y: &loadhost_metrics::phases::PhaseHistograms| {
        for phase in loadhost_metrics::catalogue::Phase::ALL {
            assert_eq!(values(x.get(phase)), values(y.get(phase)), "{}", phase.name());
        }
    };
    phases(&a.http.phases, &b.http.phases);
    for (x, y) in a.http.endpoints.values().zip(b.http.endpoints.values()) {
        assert_eq!(values(&x.duration), values(&y.duration));
        phases(&x.phases, &y.phases);
    }
    assert_eq!(a.errors, b.errors, "the errors tables");
    assert_eq!(a.generator, b.generator, "the generator's verdicts");
}

pub(crate) fn assert_same_report(a: &RunReport, b: &RunReport) {
    assert_eq!(
        (&a.scenario, a.offset, a.started_at, a.elapsed, a.generation, a.started, a.target_rate),
        (&b.scenario, b.offset, b.started_at, b.elapsed, b.generation, b.started, b.target_rate)
    );
    assert_eq!(
        (a.workers, a.intervals, &a.aborted, &a.stopped, &a.teardown_error),
        (b.workers, b.intervals, &b.aborted, &b.stopped, &b.teardown_error)
    );
    assert_same_window(&a.totals, &b.totals);
}

pub(crate) fn assert_same_results(a: &RunResults, b: &RunResults) {
    assert_eq!(
        (
            a.version,
            &a.loadhost_version,
            &a.plugin_path,
            &a.plugin_sha256,
            &a.config,
            a.segment,
            a.interval,
            a.started_at,
            a.cores_allowed
        ),
        (
            b.version,
            &b.loadhost_version,
            &b.plugin_path,
            &b.plugin_sha256,
            &b.config,
            b.segment,
            b.interval,
            b.started_at,
            b.cores_allowed
        )
    );
    assert_eq!(
        (&a.plugin_ref, &a.plugin_digest, &a.scenario_plugins),
        (&b.plugin_ref, &b.plugin_digest, &b.scenario_plugins)
    );
    assert_same_report(&a.report, &b.report);
    assert_eq!(a.scenarios.len(), b.scenarios.len());
    for (x, y) in a.scenarios.iter().zip(&b.scenarios) {
        assert_same_report(x, y);
    }
    assert_eq!(a.intervals.len(), b.intervals.len());
    for (x, y) in a.intervals.iter().zip(&b.intervals) {
        assert_eq!((&x.scenario, x.index, x.start, x.end, x.gauges), (&y.scenario, y.index, y.start, y.end, y.gauges));
        assert_eq!(x.generator, y.generator, "the generator's figures");
        assert_same_window(&x.window, &y.window);
    }
}

pub(crate) fn write_read(results: &RunResults) -> RunResults {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("part.lhr");
    write(&path, results).unwrap();
    read(&path).unwrap()
}
