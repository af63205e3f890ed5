//! The summary's sections, one type each. Every struct declares its fields in byte order of
//! their JSON names: that is the order serde writes them, and the order the summary JSON has
//! always had (its objects were serde_json maps, which sort their keys), so tools that compare
//! files see no change.

use std::collections::BTreeMap;
use std::fmt;

use loadhost_metrics::checks::{CheckSelector, PassFail};
use loadhost_metrics::limit::Limit;
use loadhost_metrics::{Counts, ErrorGroup, ErrorKind, Outcome, Percentiles, RunReport, ThresholdResult, WorkerStats};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::round_ms;

/// How every scheduled task ended (`tasks`): the run's task counts (one per outcome, plus
/// `scheduled` and `retries`) and `started`. It reads as the [`Counts`] it holds (`tasks.passed`,
/// [`Counts::not_passed`], [`Counts::errored`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct Tasks {
    /// How they ended.
    #[serde(flatten)]
    pub counts: Counts,
    /// Tasks that started executing.
    pub started: u64,
}

impl Tasks {
    /// The counts of a report, and the tasks that started.
    pub fn new(counts: &Counts, started: u64) -> Self {
        Tasks { counts: *counts, started }
    }

    /// Tasks that ended in `outcome` (as [`Counts::get`]).
    pub fn count(&self, outcome: Outcome) -> u64 {
        self.counts.get(outcome)
    }
}

impl std::ops::Deref for Tasks {
    type Target = Counts;

    fn deref(&self) -> &Counts {
        &self.counts
    }
}

impl std::ops::DerefMut for Tasks {
    fn deref_mut(&mut self) -> &mut Counts {
        &mut self.counts
    }
}

impl Serialize for Tasks {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Flat<'a> {
            #[serde(flatten)]
            counts: &'a Counts,
            started: u64,
        }
        sorted_keys(&Flat { counts: &self.counts, started: self.started }, serializer)
    }
}

/// `value` (a struct) written as a JSON object with its keys in byte order, as the summary has
/// always had them: the count structs declare their fields in the results file's order, which
/// the summary does not follow.
pub(crate) fn sorted_keys<T: Serialize, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    match serde_json::to_value(value).map_err(serde::ser::Error::custom)? {
        serde_json::Value::Object(fields) => fields.into_iter().collect::<BTreeMap<_, _>>().serialize(serializer),
        other => other.serialize(serializer),
    }
}

/// A distribution's summary (`latency_ms`, a trend, …): min, mean, percentiles and max, with no
/// percentile above the max.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PercentileView {
    /// Largest value.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
}

impl PercentileView {
    /// Milliseconds rounded to the microsecond, as the latency views are written.
    pub fn ms(p: &Percentiles) -> Self {
        let view = Self::exact(p);
        view.map(round_ms)
    }

    /// The values as they are (a plugin trend, in the plugin's unit).
    pub fn exact(p: &Percentiles) -> Self {
        let p = p.clamped();
        PercentileView {
            max: p.max,
            mean: p.mean,
            min: p.min,
            p50: p.p50,
            p90: p.p90,
            p95: p.p95,
            p99: p.p99,
            p999: p.p999,
        }
    }

    fn map(self, f: impl Fn(f64) -> f64) -> Self {
        PercentileView {
            max: f(self.max),
            mean: f(self.mean),
            min: f(self.min),
            p50: f(self.p50),
            p90: f(self.p90),
            p95: f(self.p95),
            p99: f(self.p99),
            p999: f(self.p999),
        }
    }

    /// (label, value) in the order people read them: min, mean, p50 … p99.9, max.
    pub fn labelled(&self) -> [(&'static str, f64); 8] {
        [
            ("min", self.min),
            ("mean", self.mean),
            ("p50", self.p50),
            ("p90", self.p90),
            ("p95", self.p95),
            ("p99", self.p99),
            ("p99.9", self.p999),
            ("max", self.max),
        ]
    }
}

/// The run's rate (`rate`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Tasks started ÷ `generation_s`.
    pub achieved_per_s: f64,
    /// Load-generation time: from the start until the last task was released.
    pub generation_s: f64,
    /// The planned average rate; `None` (null) in the closed model.
    pub target_per_s: Option<f64>,
}

/// A scenario's rate (`scenarios.NAME.rate`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ScenarioRate {
    /// Tasks started ÷ the scenario's load-generation time.
    pub achieved_per_s: f64,
    /// The planned average rate; `None` (null) in the closed model.
    pub target_per_s: Option<f64>,
}

/// Pacer lateness (`lag`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Lag {
    /// The latest the pacer woke after a task was due, in ms.
    pub max_ms: f64,
    /// Total lateness beyond the timer's tolerance, in ms.
    pub total_ms: f64,
}

/// The loadhost process itself (`host`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// Peak resident memory in MiB (one decimal); `None` when unknown (a merge).
    pub peak_rss_mb: Option<f64>,
}

/// The push receivers (`exports`): the labels that identify the run's series, the budget's
/// folds, and what each receiver got.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Exports {
    /// The `run_id` label on every pushed series (`--run-id`, or the one generated).
    pub run_id: String,
    /// Label sets folded into an `other` series by the cardinality budget.
    pub folded_series: u64,
    /// Each receiver, in `--out` order.
    pub receivers: Vec<ExportReceiver>,
}

/// What one push receiver got.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportReceiver {
    /// As `--out` named it (`prometheus-rw=URL`, a password in it redacted).
    pub out: String,
    /// Pushes it accepted.
    pub sent: u64,
    /// Pushes dropped: the queue was full (a receiver slower than the intervals), every try
    /// failed, or the final flush ran out of time.
    pub dropped: u64,
    /// Pushes of the run so far (remote write, OTLP) still waiting when the final one was queued:
    /// replaced by it, as it carries their totals; not lost.
    #[serde(default)]
    pub superseded: u64,
    /// Whether the run's final figures reached it.
    pub final_delivered: bool,
    /// The last error it answered, if any.
    pub last_error: Option<String>,
}

/// The plugin-series cap (`series`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesCap {
    /// Distinct plugin series (name + tag set) recorded.
    pub count: u64,
    /// Samples discarded because even their name's overflow series could not be made.
    pub discarded_samples: u64,
    /// Samples folded into `NAME{overflow:true}`.
    pub folded_samples: u64,
    /// Samples refused: a malformed name or tag, or a value that is not finite or beyond ±1e15.
    pub invalid_samples: u64,
    /// The most series a run keeps.
    pub limit: u64,
}

/// How the crew changed (`workers`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workers {
    /// The most the crew could have at the end (`--max-workers`, or what live control or the
    /// memory ceiling set); 0 when not known (a summary written before it was kept). The keys are
    /// in alphabetical order, as they always were.
    #[serde(default)]
    pub ceiling: u64,
    /// Workers resident at the end.
    #[serde(rename = "final")]
    pub final_: u64,
    /// Workers added on demand.
    pub grown: u64,
    /// Fewest resident at once (after start-up).
    pub min: u64,
    /// Most resident at once.
    pub peak: u64,
    /// Instances replaced after a trap or a timeout.
    pub replaced: u64,
    /// Workers retired as surplus.
    pub retired: u64,
}

impl From<&WorkerStats> for Workers {
    fn from(w: &WorkerStats) -> Self {
        Workers {
            final_: w.final_,
            grown: w.grown,
            min: w.min,
            peak: w.peak,
            replaced: w.replaced,
            retired: w.retired,
            ceiling: w.ceiling,
        }
    }
}

/// What limited the run (`verdict.limit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Limiter {
    /// The pacer fell behind, or the achieved rate fell short of the plan.
    Emitter,
    /// Due tasks found no idle worker.
    Crew,
    /// The in-flight gate was full or made tasks wait.
    Gate,
    /// A threshold broke while the host kept up.
    Target,
}

impl Limiter {
    /// The name outputs use: `emitter`, `crew`, `gate`, `target`.
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Emitter => "emitter",
            Limiter::Crew => "crew",
            Limiter::Gate => "gate",
            Limiter::Target => "target",
        }
    }
}

impl From<Limit> for Limiter {
    fn from(limit: Limit) -> Self {
        match limit {
            Limit::Emitter => Limiter::Emitter,
            Limit::Crew => Limiter::Crew,
            Limit::Gate => Limiter::Gate,
            Limit::Target => Limiter::Target,
        }
    }
}

impl fmt::Display for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One row of the errors table (`errors`): attempts that ended the same way saying the same thing,
/// once numbers, hex ids and UUIDs are folded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorRow {
    /// Attempts in the group.
    pub count: u64,
    /// The earliest of them, verbatim.
    pub example: String,
    /// Seconds from the start of load to the first.
    pub first_s: f64,
    /// The example's iteration.
    pub iteration: u64,
    /// Seconds from the start of load to the last.
    pub last_s: f64,
    /// The normalized message the rows are grouped by.
    pub message: String,
    /// How the attempts ended: `failed`, `retryable`, `trapped`, `timed_out` or `aborted`.
    pub outcome: ErrorKind,
}

impl ErrorRow {
    /// The row of `group`, its times counted from `started_at_ms`.
    pub fn new(group: &ErrorGroup, started_at_ms: u64) -> Self {
        let since = |ms: u64| ms.saturating_sub(started_at_ms) as f64 / 1000.0;
        ErrorRow {
            count: group.count,
            example: group.example.clone(),
            first_s: since(group.first_ms),
            iteration: group.iteration,
            last_s: since(group.last_ms),
            message: group.message.clone(),
            outcome: group.outcome,
        }
    }
}

/// What limited the run and why (`verdict`): `limit` names the host or the target when one of them
/// did, `why` says so in words along with failed thresholds and frequent errors; both null for a
/// clean run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Who limited the run.
    pub limit: Option<Limiter>,
    /// Why, in words.
    pub why: Option<String>,
}

/// The share of ended tasks that ended in an error of their own (failed, trapped, timed out)
/// past which the verdict says so: a run that mostly fails measured little worth reading.
pub const ERROR_SHARE: f64 = 0.05;

impl Verdict {
    /// The verdict of a finished run: what limited it (`limit`, as find-max names it), and why in
    /// words, which also names what the limit does not: thresholds that failed with no samples,
    /// and more than [`ERROR_SHARE`] of the tasks ending in an error, with the most frequent one.
    /// `why` is null only when nothing limited the run, every threshold held and errors were rare.
    pub fn new(
        limit: Option<(Limit, String)>,
        thresholds: &[ThresholdResult],
        tasks: &Tasks,
        errors: &[ErrorRow],
    ) -> Self {
        let mut why = Vec::new();
        let limit = limit.map(|(limit, reason)| {
            why.push(reason);
            Limiter::from(limit)
        });
        for t in thresholds.iter().filter(|t| !t.passed && t.value.is_none()) {
            why.push(format!("{} failed: no samples", t.expr));
        }
        let ended = tasks.ended();
        let share = if ended == 0 { 0.0 } else { tasks.errored() as f64 / ended as f64 };
        if share > ERROR_SHARE {
            let mut line = format!("{:.1}% of tasks ended in an error", share * 100.0);
            if let Some(top) = errors.iter().find(|e| e.outcome != ErrorKind::Retryable).or(errors.first()) {
                let example = crate::shorten(&top.example, 160);
                line.push_str(&format!(" (most frequent, {} {}: {example})", top.count, top.outcome.as_str()));
            }
            why.push(line);
        }
        Verdict { limit, why: (!why.is_empty()).then(|| why.join("; ")) }
    }
}

/// How one threshold ended (`thresholds.EXPR`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ThresholdSummary {
    /// Whether a failure stops the run while it goes.
    pub abort_on_fail: bool,
    /// Whether this threshold's failure stopped the run.
    pub aborted_run: bool,
    /// Whether it held.
    pub ok: bool,
    /// The measured value (to 6 decimals); `None` (null) when the metric had no samples.
    pub value: Option<f64>,
}

/// The plugin file (`plugin`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginFile {
    /// As the user named it.
    pub path: String,
    /// Hex sha256 of the file.
    pub sha256: String,
    /// The registry reference the plugin was pulled as (`loadhost run REF`).
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none", default)]
    pub reference: Option<String>,
    /// The manifest digest that reference resolved to (`sha256:…`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub digest: Option<String>,
}

/// A check's tally (`checks.NAME`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckCounts {
    /// Each tag set the check was recorded with, when any had tags (the SDKs tag a check made
    /// inside a group with `group`): which tagged case failed. The untagged case, if any, has no
    /// tags. Sorted by tags; absent for a check recorded only without tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<CheckCase>,
    /// Times the check failed.
    pub fails: u64,
    /// Times it passed.
    pub passes: u64,
}

/// One tag set of a check (`checks.NAME.cases[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckCase {
    /// Times the check failed with these tags.
    pub fails: u64,
    /// Times it passed with them.
    pub passes: u64,
    /// The tags, as the plugin recorded them.
    pub tags: BTreeMap<String, String>,
}

impl CheckCounts {
    /// passes ÷ (passes + fails); `None` before any.
    pub fn rate(&self) -> Option<f64> {
        PassFail { passes: self.passes, fails: self.fails }.rate()
    }

    /// The passes and fails of the tag sets `selector` picks (the check as a whole when it had
    /// no tags): what a `checks{…}` rule reads in a summary, as in a results file's series.
    pub fn picked(&self, name: &str, selector: &CheckSelector<'_>) -> PassFail {
        let mut tally = PassFail::default();
        if self.cases.is_empty() {
            if selector.picks(name, &[]) {
                tally.add(self.passes, self.fails);
            }
            return tally;
        }
        for case in &self.cases {
            let tags: Vec<(String, String)> = case.tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            if selector.picks(name, &tags) {
                tally.add(case.passes, case.fails);
            }
        }
        tally
    }
}

impl CheckCase {
    /// passes ÷ (passes + fails); `None` before any.
    pub fn rate(&self) -> Option<f64> {
        PassFail { passes: self.passes, fails: self.fails }.rate()
    }

    /// The tags in k6's sub-metric syntax, as a threshold selects them: `{tier:gold}`, `{}`.
    pub fn label(&self) -> String {
        let pairs: Vec<String> = self.tags.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        format!("{{{}}}", pairs.join(","))
    }
}

/// One scenario's section (`scenarios.NAME`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSummary {
    /// From the scenario's start to the end of its last task, in seconds.
    pub duration_s: f64,
    /// Every scheduled task of the scenario ended in exactly one outcome.
    pub identity_holds: bool,
    /// Scheduled time → end, in ms.
    pub latency_ms: PercentileView,
    /// Its rate.
    pub rate: ScenarioRate,
    /// Call → end, in ms.
    pub service_ms: PercentileView,
    /// How long after the run's start it started, in seconds.
    pub start_after_s: f64,
    /// How its tasks ended.
    pub tasks: Tasks,
    /// The plugin it ran, when its block names one of its own (else the run's `plugin`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub plugin: Option<PluginFile>,
    /// Scheduled time → call, in ms.
    pub wait_ms: PercentileView,
    /// Its crew.
    pub workers: Workers,
}

impl ScenarioSummary {
    /// The section of one scenario's report, run by its own `plugin` when it names one.
    pub fn new(r: &RunReport, plugin: Option<PluginFile>) -> Self {
        let tasks = Tasks::new(r.counts(), r.started);
        ScenarioSummary {
            duration_s: r.elapsed.as_secs_f64(),
            identity_holds: tasks.identity_holds(),
            latency_ms: PercentileView::ms(&r.totals.latency.percentiles()),
            rate: ScenarioRate { achieved_per_s: r.achieved_rate(), target_per_s: r.target_rate },
            service_ms: PercentileView::ms(&r.totals.service.percentiles()),
            start_after_s: r.offset.as_secs_f64(),
            tasks,
            plugin,
            wait_ms: PercentileView::ms(&r.totals.wait.percentiles()),
            workers: Workers::from(&r.workers),
        }
    }
}

/// Where a merged run came from (`merged`, written by `loadhost merge` only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MergedFrom {
    /// The results files that were cut off before their end (a killed process, merged with
    /// `--partial`): only the intervals they completed are in.
    #[serde(default)]
    pub cut: Vec<String>,
    /// The results files, as given.
    pub files: Vec<String>,
    /// Segments of the split that no file was (`I/N`).
    pub missing: Vec<String>,
    /// The share of the whole plan's tasks that the missing segments were to run (0 when none is
    /// missing); `None` (null) when the plan has no rate to tell it by (the closed model).
    #[serde(default)]
    pub missing_share: Option<f64>,
    /// How many files were merged.
    pub parts: u64,
    /// The files' segments, sorted (`I/N`); empty when they ran whole plans.
    pub segments: Vec<String>,
}

impl MergedFrom {
    /// Whether the merged run is less than its plan: a segment is missing or a file was cut off
    /// (`loadhost merge --partial`).
    pub fn is_partial(&self) -> bool {
        !self.missing.is_empty() || !self.cut.is_empty()
    }

    /// The missing segments as every output names them: `segment 2/3`, `segments 1/4, 3/4`.
    fn missing_named(&self) -> String {
        let noun = if self.missing.len() == 1 { "segment" } else { "segments" };
        format!("{noun} {}", self.missing.join(", "))
    }

    /// The missing share in words, `25%`, when it is known and there is one.
    fn share_text(&self) -> Option<String> {
        let share = self.missing_share.filter(|s| *s > 0.0)?;
        let pct = share * 100.0;
        Some(if pct < 10.0 { format!("{pct:.1}%") } else { format!("{pct:.0}%") })
    }

    /// The one sentence a partial merge shows at the top of every output (terminal, Markdown,
    /// JUnit, HTML): `partial: 1 of 3 segments missing (segment 2/3), 33% of the plan; cut off
    /// before the end: seg-1.lhr (only the intervals it completed are in)`. `None` for a merge of
    /// the whole plan.
    pub fn partial(&self) -> Option<String> {
        if !self.is_partial() {
            return None;
        }
        let mut said = Vec::new();
        if !self.missing.is_empty() {
            let of = self.segments.len() + self.missing.len();
            let share = self.share_text().map(|s| format!(": {s} of the plan did not run")).unwrap_or_default();
            said.push(format!("{} of {of} segments missing ({}){share}", self.missing.len(), self.missing_named()));
        }
        if !self.cut.is_empty() {
            let it = if self.cut.len() == 1 { "it" } else { "each" };
            said.push(format!(
                "cut off before the end: {} (only the intervals {it} completed are in)",
                self.cut.join(", ")
            ));
        }
        Some(format!("partial: {}", said.join("; ")))
    }

    /// What the rate line adds after the whole plan's rate when segments are missing: `25% of the
    /// plan was in the missing segment 3/4`.
    pub fn missing_rate_note(&self) -> Option<String> {
        if self.missing.is_empty() {
            return None;
        }
        Some(match self.share_text() {
            Some(share) => format!("{share} of the plan was in the missing {}", self.missing_named()),
            None => format!("the plan includes the missing {}", self.missing_named()),
        })
    }
}

/// Entries keyed by name in the order the run gave them (thresholds as the user listed them,
/// scenarios as they were declared), written as one JSON object with its keys sorted, as
/// serde_json maps write them; when two entries share a name the JSON keeps the last. Read back,
/// the entries come in the JSON's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Named<T>(pub Vec<(String, T)>);

impl<T> Default for Named<T> {
    fn default() -> Self {
        Named(Vec::new())
    }
}

impl<T> Named<T> {
    /// The entries, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &T)> {
        self.0.iter().map(|(name, value)| (name.as_str(), value))
    }

    /// The last entry named `name`.
    pub fn get(&self, name: &str) -> Option<&T> {
        self.0.iter().rev().find(|(n, _)| n == name).map(|(_, value)| value)
    }

    /// The position of the first entry named `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|(n, _)| n == name)
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<T: Serialize> Serialize for Named<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let sorted: BTreeMap<&str, &T> = self.iter().collect();
        sorted.serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Named<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let sorted = BTreeMap::<String, T>::deserialize(deserializer)?;
        Ok(Named(sorted.into_iter().collect()))
    }
}

#[cfg(test)]
mod tests {
    use loadhost_metrics::Attempts;

    use super::*;

    #[test]
    fn tasks_are_the_run_counts_and_started_written_with_sorted_keys() {
        let mut counts = Counts { scheduled: 12, retries: 3, ..Counts::default() };
        for (i, outcome) in Outcome::ALL.into_iter().enumerate() {
            counts.add(outcome, i as u64);
        }
        let tasks = Tasks::new(&counts, 10);
        assert_eq!((tasks.passed, tasks.failed, tasks.timed_out, tasks.trapped, tasks.started), (0, 1, 4, 5, 10));
        let text = serde_json::to_string(&tasks).unwrap();
        assert_eq!(
            text,
            r#"{"aborted":2,"dropped":3,"failed":1,"interrupted":6,"passed":0,"retries":3,"scheduled":12,"started":10,"timed_out":4,"trapped":5}"#
        );
        assert_eq!(serde_json::from_str::<Tasks>(&text).unwrap(), tasks);
        let attempts = Attempts { total: 7, passed: 1, retryable: 2, failed: 3, aborted: 4, trapped: 5, timed_out: 6 };
        let mut out = Vec::new();
        sorted_keys(&attempts, &mut serde_json::Serializer::new(&mut out)).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"aborted":4,"failed":3,"passed":1,"retryable":2,"timed_out":6,"total":7,"trapped":5}"#
        );
    }

    #[test]
    fn named_entries_keep_their_order_but_write_sorted_and_the_last_wins() {
        let named = Named(vec![("b".to_owned(), 1), ("a".to_owned(), 2), ("b".to_owned(), 3)]);
        assert_eq!(serde_json::to_string(&named).unwrap(), r#"{"a":2,"b":3}"#);
        assert_eq!(named.get("b"), Some(&3));
        assert_eq!(named.position("a"), Some(1));
        let back: Named<i32> = serde_json::from_str(r#"{"b":3,"a":2}"#).unwrap();
        assert_eq!(back, Named(vec![("a".to_owned(), 2), ("b".to_owned(), 3)]));
    }

    #[test]
    fn percentile_views_round_to_the_microsecond_and_stay_under_the_max() {
        let p =
            Percentiles { min: 0.0704, mean: 1.23456, p50: 2.0, p90: 2.5, p95: 2.9, p99: 3.01, p999: 3.2, max: 3.0 };
        let view = PercentileView::ms(&p);
        assert_eq!((view.min, view.mean, view.p99, view.p999, view.max), (0.07, 1.235, 3.0, 3.0, 3.0));
        assert_eq!(view.labelled()[6], ("p99.9", 3.0));
    }
}
