//! Reading the two runs: a results file (`run --results`) or a summary JSON (`run
//! --summary-json`), told apart by their first bytes; each rule's whole-run value; and, from a
//! results file, each rule's per-interval values for the test.

use std::collections::BTreeMap;
use std::io::{BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use loadhost_metrics::compare::{Rule, RuleError, Unit};
use loadhost_metrics::count::Tally;
use loadhost_metrics::reading::Sample;
use loadhost_metrics::{MAX_COUNT, MetricKind, Overflow, RunReport, ThresholdError, Window};
use loadhost_output::RunInfo;
use loadhost_output::results::{self, IntervalRecord, RunResults};
use loadhost_output::summary::{PluginMetric, ScenarioFigures, Summary};
use serde_json::Value;

/// One side of the comparison.
pub(super) struct Run {
    /// The file as the user named it.
    pub path: PathBuf,
    /// `BASE` or `NEW`, for messages.
    pub role: &'static str,
    /// The run's summary: read from a summary JSON, or built from a results file's report.
    pub summary: Summary,
    /// A results file's contents but its intervals (streamed when a rule needs them).
    pub results: Option<RunResults>,
    /// How many interval lines the results file has.
    pub intervals: usize,
}

impl Run {
    /// Read `path`, a results file or a summary JSON.
    pub fn read(path: &Path, role: &'static str) -> anyhow::Result<Run> {
        let mut head = Vec::new();
        loadhost_input::open(path)
            .and_then(|f| f.take(64).read_to_end(&mut head))
            .with_context(|| format!("{role} {}: cannot read the file", path.display()))?;
        let path = path.to_owned();
        if head.starts_with(results::MAGIC.as_bytes()) {
            let file =
                results::read_for_merge(&path, results::CutFiles::Refuse).map_err(|err| anyhow!("{role} {err}"))?;
            let intervals = file.intervals();
            let results = file.results;
            let info = RunInfo {
                plugin_path: results.plugin_path.clone(),
                plugin_sha256: results.plugin_sha256.clone(),
                plugin_ref: results.plugin_ref.clone(),
                plugin_digest: results.plugin_digest.clone(),
                scenario_plugins: results.scenario_plugins.clone(),
                config: results.config.clone(),
                model: String::new(),
                peak_rss: None,
                tags: Vec::new(),
            };
            let mut summary = Summary::new(&info, &results.report, &results.scenarios, &[]);
            summary.merged = results.merged.clone();
            return Ok(Run { path, role, summary, results: Some(results), intervals });
        }
        if head.trim_ascii_start().starts_with(b"{") {
            let text = loadhost_input::read_to_string(&path, loadhost_input::SUMMARY)
                .with_context(|| format!("{role} {}: cannot read the file", path.display()))?;
            let not_summary = || format!("{role} {}: not a loadhost summary JSON", path.display());
            let value: Value = serde_json::from_str(&text).with_context(not_summary)?;
            // Its counts are added up (ended tasks, checks): refused past 2^53, never wrapped.
            if let Some(at) = past_max_count(&value, "") {
                bail!("{role} {}: {at} is more than loadhost counts (2^53 = {MAX_COUNT})", path.display());
            }
            let summary: Summary = serde_json::from_value(value).with_context(not_summary)?;
            return Ok(Run { path, role, summary, results: None, intervals: 0 });
        }
        bail!(
            "{role} {}: neither a results file (`loadhost run --results FILE`) nor a summary JSON (`--summary-json FILE`)",
            path.display()
        )
    }

    /// `BASE a.lhr`: how messages name the file.
    pub fn name(&self) -> String {
        format!("{} {}", self.role, self.path.display())
    }

    /// What kind of file it is, for people: a merged run says its segments.
    pub fn describe(&self) -> String {
        let kind = match self.results {
            Some(_) => {
                format!("results file, {}", loadhost_output::plural(self.intervals as u64, "interval", "intervals"))
            }
            None => "summary JSON".to_owned(),
        };
        match &self.summary.merged {
            Some(m) if !m.segments.is_empty() => {
                let of = m.segments.len() + m.missing.len();
                format!("{kind}, merged from {} of {of} segments", m.segments.len())
            }
            Some(m) => format!("{kind}, merged from {}", loadhost_output::plural(m.parts, "file", "files")),
            None => kind,
        }
    }

    /// A note when the run is a partial merge: it is compared, but its rates and counts are short
    /// of the plan by what is missing.
    pub fn partial_note(&self) -> Option<String> {
        let partial = self.summary.partial()?;
        let what = partial.strip_prefix("partial: ").unwrap_or(&partial);
        Some(format!(
            "{} is a partial merge: {what}. Compared anyway: its latencies and shares are those of the segments that ran; its rates and counts are short by what is missing",
            self.name()
        ))
    }

    /// The scenarios a `{scenario:NAME}` tag may name.
    pub fn scenarios(&self) -> Vec<String> {
        match &self.summary.scenarios {
            Some(named) => named.iter().map(|(name, _)| (*name).to_owned()).collect(),
            None => vec!["default".to_owned()],
        }
    }

    /// The plugin's metrics by name, with their kinds (checks are rates).
    pub fn declared(&self) -> Vec<(String, MetricKind)> {
        self.summary
            .metrics
            .plugin
            .iter()
            .filter(|(key, _)| !key.contains('{'))
            .map(|(key, metric)| {
                let kind = match metric {
                    PluginMetric::Trend(_) => MetricKind::Trend,
                    PluginMetric::Check(_) => MetricKind::Rate,
                    PluginMetric::Counter(_) => MetricKind::Counter,
                    PluginMetric::Gauge(_) => MetricKind::Gauge,
                };
                (key.clone(), kind)
            })
            .collect()
    }

    /// The rule's whole-run value: exact from a results file's totals, or read from the summary;
    /// `Ok(None)` when the run has no samples of it; an error when a summary JSON does not keep it.
    pub fn value(&self, rule: &Rule) -> anyhow::Result<Option<f64>> {
        let Some(results) = &self.results else {
            return summary_value(&self.summary, rule).map_err(|why| anyhow!("{}: {why}", self.name()));
        };
        let report = match rule.scenario() {
            Some(name) if !results.scenarios.is_empty() => results
                .scenarios
                .iter()
                .find(|r| r.scenario == name)
                .ok_or_else(|| anyhow!("{}: no scenario named '{name}' (field scenarios)", self.name()))?,
            _ => &results.report,
        };
        Ok(rule.measure(&totals(report))?)
    }

    /// Each rule's per-interval values, from a results file's interval lines (read one at a time,
    /// so a long run is never all in memory); `None` for a summary JSON.
    pub fn units(&self, rules: &[&Rule]) -> anyhow::Result<Option<Vec<Vec<Unit>>>> {
        let Some(results) = &self.results else { return Ok(None) };
        let mut out = vec![Vec::new(); rules.len()];
        // With scenarios, a rule on the whole run needs the scenarios' intervals added up by the
        // second they cover, as one run's row would have them.
        let mut rows: BTreeMap<u64, Row> = BTreeMap::new();
        let whole_needs_rows = !results.scenarios.is_empty() && rules.iter().any(|r| r.scenario().is_none());
        let row = results.interval;
        for_each_interval(&self.path, |number, record| {
            let sample = sample(&record);
            for (i, rule) in rules.iter().enumerate() {
                let wanted = match rule.scenario() {
                    Some(name) => name == record.scenario || results.scenarios.is_empty(),
                    None => results.scenarios.is_empty(),
                };
                if wanted && let Some(unit) = rule.unit(&sample, row)? {
                    out[i].push(unit);
                }
            }
            if whole_needs_rows {
                let at =
                    row_of(results, &record).ok_or_else(|| anyhow!("line {number}: an interval of no scenario"))?;
                rows.entry(at).or_default().add(&record).map_err(|overflow| anyhow!("line {number}: {overflow}"))?;
            }
            Ok(())
        })
        .map_err(|err| anyhow!("{}: {err:#}", self.name()))?;
        for row_values in rows.values() {
            let sample = Sample {
                window: &row_values.window,
                started: row_values.started,
                span: row_values.span,
                generation: row_values.span,
            };
            for (i, rule) in rules.iter().enumerate() {
                if rule.scenario().is_none()
                    && let Some(unit) = rule.unit(&sample, row)?
                {
                    out[i].push(unit);
                }
            }
        }
        Ok(Some(out))
    }
}

/// Where in a summary JSON a count is past [`MAX_COUNT`] (such as `tasks.scheduled`), if one is:
/// any integer but the options the run was given (`config`, `seed`), which are not added up.
fn past_max_count(value: &Value, at: &str) -> Option<String> {
    let inner = |key: &dyn std::fmt::Display| if at.is_empty() { key.to_string() } else { format!("{at}.{key}") };
    match value {
        Value::Number(n) if n.as_u64().is_some_and(|n| n > MAX_COUNT) => Some(at.to_owned()),
        Value::Object(map) => map
            .iter()
            .filter(|(k, _)| !at.is_empty() || !matches!(k.as_str(), "config" | "seed"))
            .find_map(|(k, v)| past_max_count(v, &inner(k))),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| past_max_count(v, &inner(&i))),
        _ => None,
    }
}

/// A report's totals as a rule measures them.
fn totals(report: &RunReport) -> Sample<'_> {
    Sample { window: &report.totals, started: report.started, span: report.elapsed, generation: report.generation }
}

fn sample(record: &IntervalRecord) -> Sample<'_> {
    let span = record.end.saturating_sub(record.start);
    Sample { window: &record.window, started: record.gauges.started, span, generation: span }
}

/// The intervals of a run's scenarios that cover the same second, added up.
#[derive(Default)]
struct Row {
    window: Window,
    started: u64,
    span: Duration,
}

impl Row {
    /// Add an interval, or say which count would pass 2^53 (a damaged or crafted file).
    fn add(&mut self, record: &IntervalRecord) -> Result<(), Overflow> {
        self.window.try_merge(&record.window)?;
        let mut t = Tally::default();
        t.add(&mut self.started, record.gauges.started, "tasks started");
        t.result()?;
        self.span = self.span.max(record.end.saturating_sub(record.start));
        Ok(())
    }
}

/// Which second of the run an interval of a scenario covers: its scenario's start plus its own
/// offset, from the run's start, to the nearest interval.
fn row_of(results: &RunResults, record: &IntervalRecord) -> Option<u64> {
    let scenario = results.scenarios.iter().find(|r| r.scenario == record.scenario)?;
    let offset = scenario.started_at.checked_add(record.start)?.duration_since(results.started_at).unwrap_or_default();
    let step = results.interval.as_nanos().max(1);
    u64::try_from((offset.as_nanos() + step / 2) / step).ok()
}

/// Hand each interval line of a results file (already checked whole by
/// [`results::read_for_merge`]) to `each`, decoded, with its 1-based line number; stop at the
/// `end` line.
fn for_each_interval(
    path: &Path,
    mut each: impl FnMut(usize, IntervalRecord) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut reader = BufReader::new(loadhost_input::open(path).context("cannot read the file")?);
    let mut line = Vec::new();
    let mut next = |line: &mut Vec<u8>| {
        loadhost_input::read_line(&mut reader, line, loadhost_input::RESULTS_LINE).context("cannot read the file")
    };
    // The header, checked by the first read.
    next(&mut line)?;
    for number in 2.. {
        if next(&mut line)? == 0 {
            bail!("the results file is truncated (it changed while it was read?)");
        }
        let corrupt = || format!("the results file is corrupt: line {number}");
        let mut parsed: Value = serde_json::from_slice(&line).with_context(corrupt)?;
        match parsed.get_mut("interval").map(Value::take) {
            Some(interval) => {
                let record: IntervalRecord = serde_json::from_value(interval).with_context(corrupt)?;
                // Its values are used alone (the per-interval test): each must fit, as a merge checks.
                record.check().with_context(corrupt)?;
                each(number, record)?;
            }
            None if parsed.get("end").is_some() => return Ok(()),
            // When the run and its scenarios started: the end line has them too.
            None if parsed.get("start").is_some() || parsed.get("started").is_some() => {}
            None => bail!("{}: neither an interval nor the end", corrupt()),
        }
    }
    Ok(())
}

/// A rule's value as a summary JSON keeps it (milliseconds to the microsecond, rates as shares),
/// read by the same reader as a results file's ([`loadhost_metrics::reading`]); `Err` says what
/// the summary lacks.
fn summary_value(s: &Summary, rule: &Rule) -> Result<Option<f64>, String> {
    let read = match rule.scenario().filter(|_| s.scenarios.is_some()) {
        Some(name) => rule.measure(&ScenarioFigures::of(s, name)?),
        None => rule.measure(s),
    };
    read.map_err(|err| match err {
        RuleError::Selector(ThresholdError::NotKept { why, .. }) => why,
        // A trend's percentile the summary's view lacks.
        RuleError::Selector(ThresholdError::NoAggregate { .. }) => format!(
            "a summary JSON keeps avg, min, max, p(50), p(90), p(95), p(99) and p(99.9), not {} (field {}): compare the results files",
            rule.stat,
            rule.metric()
        ),
        other => other.to_string(),
    })
}
