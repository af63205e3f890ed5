//! The results file (`loadhost run --results FILE`): everything a run measured, exactly
//! (counters, full HDR histograms, plugin metrics), as JSON lines after a header line
//! (docs/merge.md has the details):
//!
//! ```text
//! loadhost-results 2
//! {"start":{"version":2,"loadhost_version":…,"plugin_path":…,"plugin_sha256":…,"config":{…},
//!           "segment":{"index":0,"count":4},"interval":…,"scenarios":[{"scenario":"default",…}]}}
//! {"started":{"scenario":"default","at":…}}
//! {"interval":{"scenario":"default","index":0,"start":…,"end":…,"window":{…},"gauges":{…}}}
//! …one line per interval…
//! {"end":{"version":2,"loadhost_version":…,"plugin_path":…,"plugin_sha256":…,"config":{…},
//!         "segment":{"index":0,"count":4},"interval":…,"started_at":…,"report":{…},
//!         "scenarios":[…],"intervals":60}}
//! ```
//!
//! The run writes it as it goes ([`ResultsWriter`](super::ResultsWriter)): the `start` line
//! before the load, a `started` line when each scenario's load starts, and each interval's line as
//! it ends, each flushed to the file at once; the `end` line comes last. So a long run holds no
//! windows in memory, and a run that is killed (out of memory, a CI timeout) leaves a file whose
//! completed intervals can still be merged ([`CutFiles::Accept`](super::CutFiles::Accept): the
//! part's report is rebuilt from them).
//!
//! This module is the file's shape: its lines and what they hold. Writing it is `write`, reading
//! it `read` (and `cut` for a file cut off before its end).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use loadhost_engine::Segment;
use loadhost_metrics::{Gauges, GeneratorHealth, IntervalRow, MeasuredInterval, Overflow, RunReport, Window};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::summary::{MergedFrom, PluginFile};

/// The first word of every results file.
pub const MAGIC: &str = "loadhost-results";

/// The format version this loadhost writes.
pub const FORMAT_VERSION: u32 = 2;

/// The oldest format version this loadhost reads. Version 1 had no `start` and `started` lines,
/// so a version 1 file merges only when whole.
pub const OLDEST_VERSION: u32 = 1;

/// One interval as recorded, for rebuilding rows after a merge.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IntervalRecord {
    /// The scenario ("default" when there is one).
    pub scenario: String,
    /// 0 for the scenario's first interval.
    pub index: u64,
    /// Offset of the interval's start from the scenario's start (see [`RunResults::started_at`]).
    pub start: Duration,
    /// Offset of the interval's end.
    pub end: Duration,
    /// Everything the interval recorded.
    pub window: Window,
    /// The gauges sampled at its end.
    pub gauges: Gauges,
    /// The generator's health in the interval, so a merge judges each segment's generator; not
    /// written when nothing was measured (a virtual clock), absent in files written before it was
    /// kept (read as not measured).
    #[serde(default, skip_serializing_if = "not_measured")]
    pub generator: GeneratorHealth,
}

fn not_measured(health: &GeneratorHealth) -> bool {
    !health.is_measured()
}

impl IntervalRecord {
    /// Whether every count of the interval fits (see `loadhost_metrics::count`): a file is input,
    /// and a damaged or crafted one must be refused, not wrapped round when it is added up. A merge
    /// needs no such check first (it adds every interval checked); a reader that uses an
    /// interval alone does.
    pub fn check(&self) -> Result<(), Overflow> {
        self.window.check()?;
        Gauges::default().try_add(&self.gauges)
    }

    /// The generator's figures in this interval and the verdict on them, judged as the run judged
    /// them (against the interval's own service times); `None` when nothing was measured.
    pub fn measured(&self) -> Option<MeasuredInterval> {
        if !self.generator.is_measured() {
            return None;
        }
        let mut row = IntervalRow::from_window(self.index, self.start, self.end, &self.window, self.gauges);
        row.generator = self.generator;
        Some(MeasuredInterval {
            start: self.start,
            end: self.end,
            health: self.generator,
            judgement: row.generator_judgement(),
        })
    }

    /// The record of the interval an observer was just given (clones the window).
    pub fn new(row: &IntervalRow, window: &Window) -> Self {
        Self {
            scenario: row.scenario.to_string(),
            index: row.index,
            start: row.start,
            end: row.end,
            window: window.clone(),
            gauges: gauges_of(row),
            generator: row.generator,
        }
    }
}

pub(super) fn gauges_of(row: &IntervalRow) -> Gauges {
    Gauges { started: row.started, workers: row.workers, idle: row.idle, in_flight: row.in_flight }
}

/// An interval line's shape, borrowed (so a writer need not clone the window).
#[derive(Serialize)]
pub(super) struct IntervalRef<'a> {
    pub(super) scenario: &'a str,
    pub(super) index: u64,
    pub(super) start: Duration,
    pub(super) end: Duration,
    pub(super) window: &'a Window,
    pub(super) gauges: Gauges,
    #[serde(skip_serializing_if = "not_measured")]
    pub(super) generator: GeneratorHealth,
}

/// `I/N`, as `--segment` takes it and outputs show it.
pub fn segment_name(segment: &Segment) -> String {
    format!("{}/{}", segment.index(), segment.count())
}

/// A segment in a results file: `{"index": I, "count": N}`, or null for a whole plan. Read back, it
/// must name a segment that exists.
mod segment_field {
    use loadhost_engine::Segment;
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Shape {
        index: u32,
        count: u32,
    }

    pub(super) fn serialize<S: Serializer>(segment: &Option<Segment>, serializer: S) -> Result<S::Ok, S::Error> {
        segment.map(|s| Shape { index: s.index(), count: s.count() }).serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Segment>, D::Error> {
        Option::<Shape>::deserialize(deserializer)?
            .map(|s| Segment::new(s.index, s.count).map_err(D::Error::custom))
            .transpose()
    }
}

/// The `start` line: what a results file says before the load starts. It is what a merge needs
/// of a part besides its measurements, so a file cut off before its `end` line (which says all of
/// it again) can still be merged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStart {
    /// The format version: [`FORMAT_VERSION`].
    pub version: u32,
    /// The loadhost that writes it.
    pub loadhost_version: String,
    /// The plugin file as the user named it.
    pub plugin_path: String,
    /// Hex sha256 of the plugin file.
    pub plugin_sha256: String,
    /// The registry reference the plugin was pulled as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_ref: Option<String>,
    /// The manifest digest `plugin_ref` resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_digest: Option<String>,
    /// The scenarios that run a plugin of their own, with it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scenario_plugins: BTreeMap<String, PluginFile>,
    /// The options in effect (flag names as keys), as in the summary JSON.
    pub config: Value,
    /// This process's segment, when the plan is split.
    #[serde(with = "segment_field")]
    pub segment: Option<Segment>,
    /// The run this part belongs to (see [`RunResults::run_id`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// When the load is planned to start (see [`RunResults::planned_start`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_start: Option<SystemTime>,
    /// The row interval (1 s).
    pub interval: Duration,
    /// The scenarios planned, in order ("default" alone without `[[scenario]]` blocks).
    pub scenarios: Vec<PlannedScenario>,
    /// Where a merged run came from (`loadhost merge --results`): its parts, and the segments
    /// missing from it; absent for a run's own file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergedFrom>,
}

/// A scenario as planned: what its report takes from the plan rather than from its intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedScenario {
    /// Its name ("default" without `[[scenario]]` blocks).
    pub scenario: String,
    /// How long after the run's start it starts.
    pub offset: Duration,
    /// The planned average rate (tasks/s) of this file's share of the plan (its segment's);
    /// `None` in the closed model.
    pub target_rate: Option<f64>,
    /// The whole plan's planned average rate, every segment's share together (equal to
    /// `target_rate` when the plan is not split): what a merge states its achieved rate against,
    /// missing segments or not. Absent from files written before it was kept, and in the closed
    /// model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_rate_whole: Option<f64>,
}

impl RunStart {
    /// The results of the run this line starts, once measured (its intervals are added apart).
    pub fn into_results(self, report: RunReport, scenarios: Vec<RunReport>) -> RunResults {
        RunResults {
            version: self.version,
            loadhost_version: self.loadhost_version,
            plugin_path: self.plugin_path,
            plugin_sha256: self.plugin_sha256,
            plugin_ref: self.plugin_ref,
            plugin_digest: self.plugin_digest,
            scenario_plugins: self.scenario_plugins,
            config: self.config,
            segment: self.segment,
            run_id: self.run_id,
            planned_start: self.planned_start,
            interval: self.interval,
            started_at: report.started_at,
            cores_allowed: report.generator.as_ref().map(|g| g.cores_allowed),
            report,
            scenarios,
            intervals: Vec::new(),
            merged: self.merged,
        }
    }

    /// The `start` line of a run already measured (for [`write`](super::write())): its plan as its
    /// reports say it.
    pub fn of(results: &RunResults) -> Self {
        let reports =
            if results.scenarios.is_empty() { std::slice::from_ref(&results.report) } else { &results.scenarios[..] };
        RunStart {
            version: results.version,
            loadhost_version: results.loadhost_version.clone(),
            plugin_path: results.plugin_path.clone(),
            plugin_sha256: results.plugin_sha256.clone(),
            plugin_ref: results.plugin_ref.clone(),
            plugin_digest: results.plugin_digest.clone(),
            scenario_plugins: results.scenario_plugins.clone(),
            config: results.config.clone(),
            segment: results.segment,
            run_id: results.run_id.clone(),
            planned_start: results.planned_start,
            interval: results.interval,
            scenarios: reports
                .iter()
                .map(|r| PlannedScenario {
                    scenario: r.scenario.clone(),
                    offset: r.offset,
                    target_rate: r.target_rate,
                    // A measured run's reports do not say the whole plan: the start line did.
                    target_rate_whole: None,
                })
                .collect(),
            merged: results.merged.clone(),
        }
    }
}

/// Everything needed to rebuild a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResults {
    /// The format version: [`FORMAT_VERSION`].
    pub version: u32,
    /// The loadhost that wrote it.
    pub loadhost_version: String,
    /// The plugin file as the user named it.
    pub plugin_path: String,
    /// Hex sha256 of the plugin file.
    pub plugin_sha256: String,
    /// The registry reference the plugin was pulled as, and its manifest digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_ref: Option<String>,
    /// The manifest digest `plugin_ref` resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_digest: Option<String>,
    /// The scenarios that ran a plugin of their own, with it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scenario_plugins: BTreeMap<String, PluginFile>,
    /// The options in effect (flag names as keys), as in the summary JSON.
    pub config: Value,
    /// This process's segment, when the plan was split.
    #[serde(with = "segment_field")]
    pub segment: Option<Segment>,
    /// The run this part belongs to (`--run-id`, or the planned start `--start-at`), so `merge`
    /// refuses parts of different runs; `None` when the run had neither.
    pub run_id: Option<String>,
    /// When the load was planned to start (`--start-at`, or the barrier's common start), for
    /// every segment of the run alike; `None` for a run that did not plan one.
    pub planned_start: Option<SystemTime>,
    /// The row interval (1 s).
    pub interval: Duration,
    /// When the load started (the whole run's report's `started_at`). Rows of a single run are
    /// offsets from it; with scenarios, each scenario's rows are offsets from that scenario's own
    /// `started_at` in [`RunResults::scenarios`].
    pub started_at: SystemTime,
    /// The cores the process could use (see `GeneratorReport`), when its generator's health was
    /// measured: with each interval's `generator` figures, what a merge judges a segment by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores_allowed: Option<f64>,
    /// The whole run (all scenarios combined).
    pub report: RunReport,
    /// Each scenario's report; empty for a single scenario.
    pub scenarios: Vec<RunReport>,
    /// Every interval, in the order they ended.
    pub intervals: Vec<IntervalRecord>,
    /// Where a merged run came from (`loadhost merge --results`); `None` for a run's own file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergedFrom>,
}

/// The `end` line: everything but the intervals, and how many there were.
#[derive(Serialize)]
pub(super) struct EndRef<'a> {
    pub(super) version: u32,
    pub(super) loadhost_version: &'a str,
    pub(super) plugin_path: &'a str,
    pub(super) plugin_sha256: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) plugin_ref: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) plugin_digest: Option<&'a str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) scenario_plugins: &'a BTreeMap<String, PluginFile>,
    pub(super) config: &'a Value,
    #[serde(with = "segment_field")]
    pub(super) segment: Option<Segment>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) run_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) planned_start: Option<SystemTime>,
    pub(super) interval: Duration,
    pub(super) started_at: SystemTime,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) cores_allowed: Option<f64>,
    pub(super) report: &'a RunReport,
    pub(super) scenarios: &'a [RunReport],
    pub(super) intervals: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) merged: Option<&'a MergedFrom>,
}

#[derive(Deserialize)]
pub(super) struct EndOwned {
    pub(super) version: u32,
    pub(super) loadhost_version: String,
    pub(super) plugin_path: String,
    pub(super) plugin_sha256: String,
    #[serde(default)]
    pub(super) plugin_ref: Option<String>,
    #[serde(default)]
    pub(super) plugin_digest: Option<String>,
    #[serde(default)]
    pub(super) scenario_plugins: BTreeMap<String, PluginFile>,
    pub(super) config: Value,
    #[serde(with = "segment_field")]
    pub(super) segment: Option<Segment>,
    #[serde(default)]
    pub(super) run_id: Option<String>,
    #[serde(default)]
    pub(super) planned_start: Option<SystemTime>,
    pub(super) interval: Duration,
    pub(super) started_at: SystemTime,
    #[serde(default)]
    pub(super) cores_allowed: Option<f64>,
    pub(super) report: RunReport,
    #[serde(default)]
    pub(super) scenarios: Vec<RunReport>,
    pub(super) intervals: u64,
    #[serde(default)]
    pub(super) merged: Option<MergedFrom>,
}

/// A `started` line: when a scenario's load started (its rows count from there).
#[derive(Serialize, Deserialize)]
pub(super) struct StartedLine {
    pub(super) scenario: String,
    pub(super) at: SystemTime,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum LineRef<'a> {
    Start(&'a RunStart),
    Started(StartedLine),
    Interval(IntervalRef<'a>),
    End(EndRef<'a>),
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum LineOwned {
    Start(Box<RunStart>),
    Started(StartedLine),
    Interval(Box<IntervalRecord>),
    End(Box<EndOwned>),
}

impl EndOwned {
    /// The results the end line describes (their intervals are read separately).
    pub(super) fn into_results(self) -> RunResults {
        RunResults {
            version: self.version,
            loadhost_version: self.loadhost_version,
            plugin_path: self.plugin_path,
            plugin_sha256: self.plugin_sha256,
            plugin_ref: self.plugin_ref,
            plugin_digest: self.plugin_digest,
            scenario_plugins: self.scenario_plugins,
            config: self.config,
            segment: self.segment,
            run_id: self.run_id,
            planned_start: self.planned_start,
            interval: self.interval,
            started_at: self.started_at,
            cores_allowed: self.cores_allowed,
            report: self.report,
            scenarios: self.scenarios,
            intervals: Vec::new(),
            merged: self.merged,
        }
    }
}
