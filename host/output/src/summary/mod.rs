//! The run's summary, typed: built once from what the run measured ([`Summary::new`]) and shown by
//! every output — the summary JSON ([`crate::json`]), the terminal ([`crate::terminal`]), the CSV
//! footer ([`crate::csv`]), the JSON lines' last line ([`crate::jsonl`]), the HTML report
//! ([`crate::html`]) — and by `loadhost merge`, so they cannot disagree.
//!
//! It serializes to the documented summary JSON (docs/outputs.md) exactly, keys in the same order
//! (sorted, as it always was), and deserializes back: a summary JSON read into [`Summary`] and
//! written again is the same bytes.

mod figures;
pub(crate) mod generator;
mod generator_segments;
mod metrics;
mod views;

pub use figures::ScenarioFigures;
pub use generator::{Generator, GeneratorInterval, MeanMax};
pub use generator_segments::GeneratorSegment;

use std::collections::BTreeMap;

use loadhost_metrics::catalogue::Timing;
use loadhost_metrics::{Attempts, RunReport, SeriesValue, ThresholdResult};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use metrics::{
    CountRate, CountSummary, EndpointMetrics, GaugeSummary, HttpMetrics, Metrics, PluginMetric, RateSummary,
    TrendSummary,
};
pub use views::{
    CheckCase, CheckCounts, ErrorRow, ExportReceiver, Exports, Host, Lag, Limiter, MergedFrom, Named, PercentileView,
    PluginFile, Rate, ScenarioRate, ScenarioSummary, SeriesCap, Tasks, ThresholdSummary, Verdict, Workers,
};

use crate::{RunInfo, VERSION, round_ms};

/// The summary of a finished run: the keys of the summary JSON, one field each, in its order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The plugin's abort message, when it aborted the run.
    pub aborted: Option<String>,
    /// How the open model's arrivals were spaced (`even`, `poisson`); null in the closed model.
    #[serde(default)]
    pub arrivals: Option<String>,
    /// Every attempt and how it ended.
    #[serde(serialize_with = "views::sorted_keys")]
    pub attempts: Attempts,
    /// Each check by name.
    pub checks: BTreeMap<String, CheckCounts>,
    /// The options in effect (flag names as keys), secrets redacted.
    pub config: Value,
    /// From the start of load to the end of the last task, in seconds.
    pub duration_s: f64,
    /// Attempts that carried an error, grouped by what they said, most frequent first.
    pub errors: Vec<ErrorRow>,
    /// What the push receivers (`--out prometheus-rw=…`, `otlp=…`, `influxdb=…`) got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exports: Option<Exports>,
    /// Time tasks waited for a gate permit (`--max-in-flight`), in ms.
    pub gate_wait_ms: PercentileView,
    /// The generator's health per interval, when it was measured (a merge's: per segment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<Generator>,
    /// The loadhost process.
    pub host: Host,
    /// Every scheduled task ended in exactly one outcome.
    pub identity_holds: bool,
    /// Pacer lateness.
    pub lag: Lag,
    /// Scheduled time → end (what a user of the target sees), in ms.
    pub latency_ms: PercentileView,
    /// Where a merged run came from (`loadhost merge` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergedFrom>,
    /// The plugin's metrics and the HTTP metrics.
    pub metrics: Metrics,
    /// The plugin file.
    pub plugin: PluginFile,
    /// Planned and achieved rate.
    pub rate: Rate,
    /// Each scenario, when the run had `[[scenario]]` blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenarios: Option<Named<ScenarioSummary>>,
    /// The run's seed (`--seed`, or the one drawn at start): the same seed repeats the schedule.
    #[serde(default)]
    pub seed: Option<u64>,
    /// The plugin-series cap.
    pub series: SeriesCap,
    /// Call → end, in ms.
    pub service_ms: PercentileView,
    /// When the load started (RFC 3339, UTC, milliseconds).
    pub started_at: String,
    /// How the user stopped the run, when they did.
    pub stopped: Option<String>,
    /// The run's `--tag` labels.
    pub tags: BTreeMap<String, String>,
    /// How every scheduled task ended.
    pub tasks: Tasks,
    /// Why the plugin's teardown failed, when it did.
    pub teardown_error: Option<String>,
    /// Each threshold by expression, in the order given.
    pub thresholds: Named<ThresholdSummary>,
    /// Tasks the pacer released late because it was itself late.
    pub underrun: u64,
    /// What limited the run.
    pub verdict: Verdict,
    /// The loadhost that ran it.
    pub version: String,
    /// Scheduled time → call, in ms.
    pub wait_ms: PercentileView,
    /// The crew.
    pub workers: Workers,
    /// What people read besides the JSON's keys (not in the JSON, whose keys are a contract).
    #[serde(skip)]
    pub notes: Notes,
}

/// What the terminal and the HTML report show beyond the summary JSON's keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notes {
    /// One line describing the load model (`RunInfo::model`).
    pub model: String,
    /// Tasks that waited at a gate: with none, there was no gate, and its view is left out.
    pub gate_waits: u64,
    /// Plugin samples ignored because their name was taken by a metric of another kind.
    pub kind_conflicts: u64,
}

impl Summary {
    /// The summary of a finished run: `report` is the whole run, `scenarios` each scenario's
    /// report (empty without `[[scenario]]` blocks), `thresholds` as judged at its end. The
    /// verdict is judged here from them, so every output names the same limit.
    pub fn new(info: &RunInfo, report: &RunReport, scenarios: &[RunReport], thresholds: &[ThresholdResult]) -> Self {
        let t = &report.totals;
        let tasks = Tasks::new(report.counts(), report.started);
        let seconds = report.elapsed.as_secs_f64();
        let started_at_ms = report.started_at.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let errors: Vec<ErrorRow> = t.errors.sorted().into_iter().map(|g| ErrorRow::new(g, started_at_ms)).collect();
        let verdict = Verdict::new(loadhost_metrics::limit::verdict(report, thresholds), thresholds, &tasks, &errors);
        Summary {
            aborted: report.aborted.clone(),
            arrivals: info.config.get("arrivals").and_then(Value::as_str).map(str::to_owned),
            attempts: t.attempts,
            checks: checks(&t.plugin),
            config: info.config.clone(),
            duration_s: seconds,
            errors,
            exports: None,
            gate_wait_ms: PercentileView::ms(&t.gate_wait.percentiles()),
            generator: report.generator.as_ref().map(Generator::new),
            host: Host { peak_rss_mb: info.peak_rss.map(round_mb) },
            identity_holds: tasks.identity_holds(),
            lag: Lag {
                max_ms: round_ms(t.lag_max.as_secs_f64() * 1000.0),
                total_ms: round_ms(t.lag_total.as_secs_f64() * 1000.0),
            },
            latency_ms: PercentileView::ms(&t.latency.percentiles()),
            merged: None,
            metrics: Metrics::new(&t.plugin, &t.http, seconds),
            plugin: PluginFile {
                path: info.plugin_path.clone(),
                sha256: info.plugin_sha256.clone(),
                reference: info.plugin_ref.clone(),
                digest: info.plugin_digest.clone(),
            },
            rate: Rate {
                achieved_per_s: report.achieved_rate(),
                generation_s: report.generation.as_secs_f64(),
                target_per_s: report.target_rate,
            },
            scenarios: (!scenarios.is_empty())
                .then(|| Named(scenarios.iter().map(|r| (r.scenario.clone(), scenario(info, r))).collect())),
            seed: info.config.get("seed").and_then(Value::as_u64),
            series: SeriesCap {
                count: t.plugin.series().len() as u64,
                discarded_samples: t.plugin.discarded(),
                folded_samples: t.plugin.folded(),
                invalid_samples: t.plugin.invalid(),
                limit: loadhost_metrics::cardinality::MAX_SERIES as u64,
            },
            service_ms: PercentileView::ms(&t.service.percentiles()),
            started_at: humantime::format_rfc3339_millis(report.started_at).to_string(),
            stopped: report.stopped.clone(),
            tags: info.tags.iter().cloned().collect(),
            tasks,
            teardown_error: report.teardown_error.clone(),
            thresholds: Named(thresholds.iter().map(|r| (r.expr.clone(), threshold(r))).collect()),
            underrun: t.underrun,
            verdict,
            version: VERSION.to_owned(),
            wait_ms: PercentileView::ms(&t.wait.percentiles()),
            workers: Workers::from(&report.workers),
            notes: Notes {
                model: info.model.clone(),
                gate_waits: t.gate_wait.count(),
                kind_conflicts: t.plugin.kind_conflicts(),
            },
        }
    }

    /// Whether CI should call the run failed: a threshold failed, a task is unaccounted for, or
    /// more than [`views::ERROR_SHARE`] of the ended tasks ended in an error. A host limit alone
    /// (the emitter, the crew, the gate) is named by the verdict but does not fail the run: the
    /// thresholds say whether the figures are good enough, and the exit code agrees.
    pub fn failed(&self) -> bool {
        let ended = self.tasks.ended();
        let errors = ended > 0 && self.tasks.errored() as f64 / ended as f64 > views::ERROR_SHARE;
        !self.thresholds_ok() || !self.identity_holds || errors
    }

    /// The verdict as a sentence: what limited the run and why, what else speaks against it, or
    /// that nothing did. Only a run with thresholds is said to have held them: a clean run
    /// without any says none were set, so a CI gate with none is not mistaken for a passing one.
    pub fn verdict_sentence(&self) -> String {
        match (&self.verdict.limit, &self.verdict.why) {
            (Some(limit), why) => format!("limited by the {limit}: {}", why.as_deref().unwrap_or("")),
            (None, Some(why)) => why.clone(),
            (None, None) if self.thresholds.is_empty() => {
                "the host kept up and nothing limited the run; no threshold was set (--threshold), so nothing \
                 was judged"
                    .to_owned()
            }
            (None, None) => "the host kept up and every threshold held; nothing limited the run".to_owned(),
        }
    }

    /// Whether every threshold held (true when there are none).
    pub fn thresholds_ok(&self) -> bool {
        self.thresholds.iter().all(|(_, t)| t.ok)
    }

    /// Whether there was a gate (`--max-in-flight`): tasks waited at it, or (read back from JSON,
    /// where the count is not kept) some waited a measurable time.
    pub fn gate_was_used(&self) -> bool {
        self.notes.gate_waits > 0 || self.gate_wait_ms.max > 0.0
    }

    /// The task timings the run has to show, in order: the gate wait only when there was a gate.
    pub fn timings(&self) -> impl Iterator<Item = Timing> + '_ {
        Timing::ALL.into_iter().filter(|t| *t != Timing::GateWait || self.gate_was_used())
    }

    /// For a merge that is less than its plan (`loadhost merge --partial`), the sentence every
    /// output leads with: which segments are missing, their share, which files were cut off.
    pub fn partial(&self) -> Option<String> {
        self.merged.as_ref()?.partial()
    }

    /// Whether the run ended on its own: neither aborted by the plugin nor stopped.
    pub fn complete(&self) -> bool {
        self.aborted.is_none() && self.stopped.is_none()
    }
}

/// One scenario's section, with the plugin its block names, if any.
fn scenario(info: &RunInfo, report: &RunReport) -> ScenarioSummary {
    ScenarioSummary::new(report, info.scenario_plugins.get(&report.scenario).cloned())
}

/// Checks by name, their tag sets added up, each tag set a case when any had tags.
fn checks(plugin: &loadhost_metrics::PluginMetrics) -> BTreeMap<String, CheckCounts> {
    let mut checks: BTreeMap<String, CheckCounts> = BTreeMap::new();
    // Sorted by name then tags: each check's cases come in order.
    for series in plugin.series() {
        let SeriesValue::Check { passes, fails } = series.value else { continue };
        let check = checks.entry(series.key.name).or_default();
        check.passes += passes;
        check.fails += fails;
        check.cases.push(CheckCase { fails, passes, tags: series.key.tags.into_iter().collect() });
    }
    for check in checks.values_mut() {
        if check.cases.iter().all(|case| case.tags.is_empty()) {
            check.cases.clear();
        }
    }
    checks
}

/// A threshold's result; its value to six decimals (enough to compare with any bound people write).
fn threshold(r: &ThresholdResult) -> ThresholdSummary {
    ThresholdSummary {
        abort_on_fail: r.abort_on_fail,
        aborted_run: r.aborted_run,
        ok: r.passed,
        value: r.value.map(|v| (v * 1e6).round() / 1e6),
    }
}

fn round_mb(bytes: u64) -> f64 {
    (bytes as f64 / f64::from(1 << 20) * 10.0).round() / 10.0
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::{Duration, SystemTime};

    use loadhost_metrics::http::HttpSample;
    use loadhost_metrics::{ErrorKind, Outcome, SeriesKey, TaskTiming, Window, WorkerStats};
    use serde_json::json;

    use super::*;

    /// A finished 3-second open-model run with every kind of measurement, two scenarios and
    /// three thresholds (one failed, one without samples).
    pub(crate) fn sample() -> Summary {
        let mut totals = Window::default();
        totals.counts.scheduled = 10;
        for (i, outcome) in [Outcome::Passed, Outcome::Failed, Outcome::Dropped, Outcome::Trapped].iter().enumerate() {
            for n in 0..(4 - i as u64) {
                let timing = TaskTiming {
                    wait: Duration::from_micros(100 + n),
                    service: Duration::from_millis(2 + n),
                    gate: Some(Duration::ZERO),
                };
                totals.record_task(*outcome, (*outcome != Outcome::Dropped).then_some(timing));
            }
        }
        totals.plugin.check(SeriesKey::new("ok".into(), vec![]), true);
        totals.plugin.trend(SeriesKey::new("size".into(), vec![("route".into(), "/a".into())]), 3.5);
        totals.http.record(HttpSample::new(Some(404), Duration::from_millis(4), 9, None));
        totals.lag_max = Duration::from_micros(1_234);
        let start_ms = 1_700_000_000_000;
        for i in 0..3 {
            totals.errors.record(ErrorKind::Failed, &format!("order {i} refused"), i, start_ms + 500 * i);
        }
        totals.errors.record(ErrorKind::Trapped, "panicked at src/lib.rs:3:9: boom", 7, start_ms + 2_000);
        let report = |name: &str, offset: u64| RunReport {
            scenario: name.into(),
            offset: Duration::from_millis(offset),
            started_at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            elapsed: Duration::from_millis(3_004),
            generation: Duration::from_secs(3),
            started: 8,
            target_rate: Some(4.0),
            totals: totals.clone(),
            workers: WorkerStats { min: 1, peak: 3, final_: 2, grown: 2, retired: 1, replaced: 1, ceiling: 4 },
            intervals: 3,
            aborted: None,
            stopped: Some("SIGINT".into()),
            teardown_error: None,
            generator: None,
        };
        let info = RunInfo {
            plugin_path: "noop.wasm".into(),
            plugin_sha256: "ab".repeat(32),
            plugin_ref: None,
            plugin_digest: None,
            scenario_plugins: Default::default(),
            config: json!({ "rate": "4/s", "duration": "3s", "env": ["K=[redacted]"], "arrivals": "poisson", "seed": 7 }),
            model: "open model: 12 tasks over 3.0s".into(),
            peak_rss: Some(50 << 20),
            tags: vec![("team".into(), "checkout".into()), ("build".into(), "7".into())],
        };
        let results = [
            ThresholdResult {
                expr: "size:p(99)<1".into(),
                value: Some(3.5),
                passed: false,
                abort_on_fail: false,
                aborted_run: false,
            },
            ThresholdResult {
                expr: "latency_ms:p(99)<500".into(),
                value: Some(5.0031234),
                passed: true,
                abort_on_fail: true,
                aborted_run: false,
            },
            ThresholdResult {
                expr: "login_ms:max<1".into(),
                value: None,
                passed: false,
                abort_on_fail: false,
                aborted_run: false,
            },
        ];
        Summary::new(&info, &report("all", 0), &[report("browse", 0), report("buy", 500)], &results)
    }

    /// A merge of segments 0/3 and 1/3 with 2/3 missing (a third of the plan).
    pub(crate) fn partial() -> MergedFrom {
        MergedFrom {
            cut: Vec::new(),
            files: vec!["seg-0.lhr".into(), "seg-1.lhr".into()],
            missing: vec!["2/3".into()],
            missing_share: Some(1.0 / 3.0),
            parts: 2,
            segments: vec!["0/3".into(), "1/3".into()],
        }
    }

    #[test]
    fn a_partial_merge_is_said_in_one_sentence_naming_what_is_missing() {
        let mut m = partial();
        assert_eq!(
            m.partial().as_deref(),
            Some("partial: 1 of 3 segments missing (segment 2/3): 33% of the plan did not run")
        );
        assert_eq!(m.missing_rate_note().as_deref(), Some("33% of the plan was in the missing segment 2/3"));
        m.cut = vec!["seg-1.lhr".into()];
        m.missing = vec!["2/4".into(), "3/4".into()];
        m.missing_share = None;
        assert_eq!(
            m.partial().as_deref(),
            Some(
                "partial: 2 of 4 segments missing (segments 2/4, 3/4); cut off before the end: seg-1.lhr (only the intervals it completed are in)"
            )
        );
        assert_eq!(m.missing_rate_note().as_deref(), Some("the plan includes the missing segments 2/4, 3/4"));
        let whole = MergedFrom { missing: Vec::new(), cut: Vec::new(), missing_share: Some(0.0), ..partial() };
        assert_eq!((whole.partial(), whole.missing_rate_note()), (None, None));
    }

    #[test]
    fn it_writes_the_keys_of_docs_outputs_md_in_the_order_they_always_had() {
        let summary = sample();
        let text = serde_json::to_string_pretty(&summary).unwrap();
        // A serde_json map sorts its keys: the summary was one, so its order is theirs.
        let as_map: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(text, serde_json::to_string_pretty(&as_map).unwrap());
        let keys: Vec<&str> = as_map.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "aborted",
                "arrivals",
                "attempts",
                "checks",
                "config",
                "duration_s",
                "errors",
                "gate_wait_ms",
                "host",
                "identity_holds",
                "lag",
                "latency_ms",
                "metrics",
                "plugin",
                "rate",
                "scenarios",
                "seed",
                "series",
                "service_ms",
                "started_at",
                "stopped",
                "tags",
                "tasks",
                "teardown_error",
                "thresholds",
                "underrun",
                "verdict",
                "version",
                "wait_ms",
                "workers",
            ]
        );
        assert_eq!(as_map["tasks"]["failed"], 3, "the failed outcome, and only it");
        assert_eq!(as_map["thresholds"]["latency_ms:p(99)<500"]["value"], 5.003123);
        assert_eq!(as_map["thresholds"]["login_ms:max<1"]["value"], Value::Null);
        assert_eq!(as_map["tags"], json!({ "build": "7", "team": "checkout" }));
        assert_eq!(as_map["host"]["peak_rss_mb"], 50.0);
        assert_eq!(as_map["lag"]["max_ms"], 1.234);
        assert_eq!(as_map["scenarios"]["buy"]["start_after_s"], 0.5);
        assert!(as_map["scenarios"]["buy"]["rate"].get("generation_s").is_none());
        assert_eq!(as_map["verdict"]["limit"], "target", "a threshold broke while the host kept up");
        assert!(as_map.get("merged").is_none(), "only merge writes `merged`");
        assert_eq!((&as_map["arrivals"], &as_map["seed"]), (&json!("poisson"), &json!(7)), "from the config");
    }

    #[test]
    fn read_back_it_writes_the_same_bytes() {
        let mut summary = sample();
        summary.merged = Some(MergedFrom {
            cut: vec!["b.lhr".into()],
            files: vec!["a.lhr".into(), "b.lhr".into()],
            missing: vec!["2/3".into()],
            missing_share: Some(0.25),
            parts: 2,
            segments: vec!["0/3".into(), "1/3".into()],
        });
        let text = serde_json::to_string_pretty(&summary).unwrap();
        let back: Summary = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string_pretty(&back).unwrap(), text);
        // Everything survives but the notes (which the JSON does not carry) and the order of
        // thresholds and scenarios (which the JSON's sorted keys do not keep).
        assert_eq!(summary.notes.gate_waits, 8, "every task that ran passed the gate");
        summary.notes = Notes::default();
        summary.thresholds.0.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(back, summary);
    }

    #[test]
    fn thresholds_and_scenarios_keep_the_order_the_run_gave() {
        let summary = sample();
        let exprs: Vec<&str> = summary.thresholds.iter().map(|(e, _)| e).collect();
        assert_eq!(exprs, ["size:p(99)<1", "latency_ms:p(99)<500", "login_ms:max<1"]);
        assert!(!summary.thresholds_ok());
        assert!(!summary.complete(), "stopped by the user");
        let names: Vec<&str> = summary.scenarios.iter().flat_map(Named::iter).map(|(n, _)| n).collect();
        assert_eq!(names, ["browse", "buy"]);
    }
}
