//! The summary's `generator` section: the generator's health over the run (docs/outputs.md), from
//! the figures the engine measured each interval. Absent when nothing was measured; a merged run's
//! is judged segment by segment (`generator_segments`). Shares have their mean and max; the
//! connects that found a resource exhausted are summed.

use loadhost_metrics::generator_verdict::{self, Cause, GeneratorTally};
use loadhost_metrics::{GeneratorHealth, GeneratorReport, GeneratorVerdict};
use serde::{Deserialize, Serialize};

/// The generator's health over the run: each figure's mean and max over the intervals, and every
/// interval's figures. Keys sorted, as the summary's are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
// A summary written before a figure existed still reads: the figure is then absent (its default).
#[serde(default)]
pub struct Generator {
    /// The cores the process could use.
    pub cores_allowed: f64,
    /// The process's CPU ÷ (interval × cores allowed).
    pub cpu: MeanMax,
    /// Open file descriptors ÷ the soft `RLIMIT_NOFILE`.
    pub fds: MeanMax,
    /// Connections not opened for want of a file descriptor, over the run.
    pub fds_exhausted: u64,
    /// Each interval's figures.
    pub intervals: Vec<GeneratorInterval>,
    /// The busiest event loop's time on or waiting for a CPU ÷ interval.
    pub loop_load: MeanMax,
    /// Resident memory ÷ (`--max-memory` × the crew's peak workers).
    pub memory: MeanMax,
    /// Peak resident memory so far ÷ the same budget.
    pub memory_peak: MeanMax,
    /// The event loops' timer overshoot p99, milliseconds.
    pub overshoot_ms: MeanMax,
    /// Connections not opened for want of a local port, over the run.
    pub ports_exhausted: u64,
    /// The event loops' time waiting for a CPU ÷ (interval × event loops).
    pub run_queue: MeanMax,
    /// The worst event loop's time waiting for a CPU ÷ interval.
    pub run_queue_max: MeanMax,
    /// A merged run's segments, each judged on its own (absent for one process's run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<super::GeneratorSegment>,
    /// The machine's steal time ÷ interval ÷ its CPUs.
    pub steal: MeanMax,
    /// The cgroup's throttled time ÷ interval.
    pub throttled: MeanMax,
    /// The worst interval's verdict (null: no interval could be judged).
    pub verdict: Option<GeneratorVerdict>,
    /// How many intervals were judged, and how many were degraded or saturated.
    pub verdicts: GeneratorTally,
    /// The sentence a person acts on (null when every judged interval was healthy).
    pub why: Option<String>,
}

/// A figure's mean and max over the intervals that have it (null when none has).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MeanMax {
    /// The mean over intervals.
    pub mean: Option<f64>,
    /// The largest interval's.
    pub max: Option<f64>,
}

/// One interval's figures (null: not measured on this machine).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GeneratorInterval {
    /// The figure behind the verdict (null when healthy or not judged).
    pub cause: Option<Cause>,
    /// The process's CPU share.
    pub cpu: Option<f64>,
    /// The interval's end, in seconds from the run's start.
    pub end_s: f64,
    /// The open file descriptors' share of their limit.
    pub fds: Option<f64>,
    /// Connections not opened for want of a file descriptor.
    pub fds_exhausted: u64,
    /// The busiest event loop's share of the interval on or waiting for a CPU.
    pub loop_load: Option<f64>,
    /// The resident memory's share of the plugins' budget.
    pub memory: Option<f64>,
    /// The peak resident memory's share of it.
    pub memory_peak: Option<f64>,
    /// The event loops' timer overshoot p99, milliseconds.
    pub overshoot_ms: Option<f64>,
    /// Connections not opened for want of a local port.
    pub ports_exhausted: u64,
    /// The event loops' mean run-queue share.
    pub run_queue: Option<f64>,
    /// The worst event loop's run-queue share.
    pub run_queue_max: Option<f64>,
    /// The interval's start, in seconds from the run's start.
    pub start_s: f64,
    /// The steal share.
    pub steal: Option<f64>,
    /// The throttled share.
    pub throttled: Option<f64>,
    /// The verdict (null: too little measured to judge).
    pub verdict: Option<GeneratorVerdict>,
}

/// Shares to four decimals (a hundredth of a percent): finer is noise.
pub(crate) fn round(share: f64) -> f64 {
    (share * 10_000.0).round() / 10_000.0
}

impl Generator {
    /// The section for what the engine measured.
    pub fn new(report: &GeneratorReport) -> Self {
        let over = |figure: fn(&GeneratorHealth) -> Option<f64>| {
            let values: Vec<f64> = report.intervals.iter().filter_map(|i| figure(&i.health)).collect();
            MeanMax {
                mean: (!values.is_empty()).then(|| round(values.iter().sum::<f64>() / values.len() as f64)),
                max: values.iter().copied().reduce(f64::max).map(round),
            }
        };
        let mut verdicts = GeneratorTally::default();
        for judgement in report.intervals.iter().filter_map(|i| i.judgement.as_ref()) {
            verdicts.count(judgement.verdict);
        }
        let sum = |count: fn(&GeneratorHealth) -> u64| report.intervals.iter().map(|i| count(&i.health)).sum();
        Generator {
            cores_allowed: round(report.cores_allowed),
            cpu: over(|h| h.cpu),
            fds: over(|h| h.fds),
            fds_exhausted: sum(|h| h.fds_exhausted),
            intervals: report
                .intervals
                .iter()
                .map(|i| {
                    let h = &i.health;
                    GeneratorInterval {
                        cause: i.judgement.as_ref().and_then(|j| j.cause()).map(|(cause, _)| cause),
                        cpu: h.cpu.map(round),
                        end_s: i.end.as_secs_f64(),
                        fds: h.fds.map(round),
                        fds_exhausted: h.fds_exhausted,
                        loop_load: h.loop_load.map(round),
                        memory: h.memory.map(round),
                        memory_peak: h.memory_peak.map(round),
                        overshoot_ms: h.overshoot_ms.map(round),
                        ports_exhausted: h.ports_exhausted,
                        run_queue: h.run_queue.map(round),
                        run_queue_max: h.run_queue_max.map(round),
                        start_s: i.start.as_secs_f64(),
                        steal: h.steal.map(round),
                        throttled: h.throttled.map(round),
                        verdict: i.judgement.as_ref().map(|j| j.verdict),
                    }
                })
                .collect(),
            loop_load: over(|h| h.loop_load),
            memory: over(|h| h.memory),
            memory_peak: over(|h| h.memory_peak),
            overshoot_ms: over(|h| h.overshoot_ms),
            ports_exhausted: sum(|h| h.ports_exhausted),
            run_queue: over(|h| h.run_queue),
            run_queue_max: over(|h| h.run_queue_max),
            segments: Vec::new(),
            steal: over(|h| h.steal),
            throttled: over(|h| h.throttled),
            verdict: verdicts.worst(),
            verdicts,
            why: generator_verdict::sentence(&report.judged()),
        }
    }

    /// The median interval's CPU share (for the terminal).
    pub fn cpu_p50(&self) -> Option<f64> {
        let mut cpu: Vec<f64> = self.intervals.iter().filter_map(|i| i.cpu).collect();
        cpu.sort_by(f64::total_cmp);
        cpu.get(cpu.len().saturating_sub(1) / 2).copied()
    }
}

/// Why the failed threshold `expr` failed, in the generator's words, when it judges the generator
/// (`generator_saturated`): the sentence a person acts on, so a CI failure says what to do rather
/// than only the share measured. `None` for any other threshold, or when the summary has no
/// sentence (nothing was saturated in the intervals it kept).
pub fn threshold_why<'a>(summary: &'a super::Summary, expr: &str) -> Option<&'a str> {
    let threshold: loadhost_metrics::Threshold = expr.parse().ok()?;
    let judges_generator = loadhost_metrics::catalogue::current_name(&threshold.metric)
        == loadhost_metrics::catalogue::names::GENERATOR_SATURATED;
    if !judges_generator {
        return None;
    }
    summary.generator.as_ref()?.why.as_deref()
}

/// A sample summary whose generator was judged `verdicts`, one a second, with the sentence `why`.
#[cfg(test)]
pub(crate) fn judged(verdicts: &[Option<GeneratorVerdict>], why: Option<&str>) -> super::Summary {
    let interval = |s: f64, verdict| GeneratorInterval {
        cpu: Some(0.3),
        end_s: s + 1.0,
        start_s: s,
        verdict,
        ..Default::default()
    };
    let mut s = super::tests::sample();
    let mut verdict_tally = GeneratorTally::default();
    verdicts.iter().flatten().for_each(|v| verdict_tally.count(*v));
    s.generator = Some(Generator {
        cores_allowed: 2.0,
        intervals: verdicts.iter().zip(0..).map(|(v, i)| interval(f64::from(i), *v)).collect(),
        verdict: verdict_tally.worst(),
        verdicts: verdict_tally,
        why: why.map(str::to_owned),
        ..Default::default()
    });
    s
}

/// One-second intervals of `health`, judged against a service p99 of `service_p99_ms` (none: not
/// judged), for tests of what the outputs show.
#[cfg(test)]
pub(crate) fn seconds(
    health: Vec<GeneratorHealth>,
    service_p99_ms: Option<f64>,
) -> Vec<loadhost_metrics::MeasuredInterval> {
    let second = std::time::Duration::from_secs(1);
    (0u32..)
        .zip(health)
        .map(|(s, health)| loadhost_metrics::MeasuredInterval {
            start: second * s,
            end: second * (s + 1),
            health,
            judgement: service_p99_ms.and_then(|p99| generator_verdict::judge(&health, Some(p99))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_summed_up_over_the_intervals_that_have_them() {
        let h = |cpu, throttled| GeneratorHealth {
            cpu: Some(cpu),
            run_queue: Some(cpu / 10.0),
            throttled,
            ..Default::default()
        };
        let report = GeneratorReport {
            cores_allowed: 2.0,
            intervals: seconds(vec![h(0.2, None), h(0.6, Some(0.5)), h(0.4, None)], Some(10.0)),
        };
        let g = Generator::new(&report);
        assert_eq!(g.cpu, MeanMax { mean: Some(0.4), max: Some(0.6) });
        assert_eq!(g.throttled, MeanMax { mean: Some(0.5), max: Some(0.5) }, "one interval had it");
        assert_eq!(g.steal, MeanMax::default(), "none had it: null, not 0");
        assert_eq!(g.cpu_p50(), Some(0.4));
        assert_eq!(g.intervals[1].start_s, 1.0);
        let json = serde_json::to_value(&g).unwrap();
        assert_eq!(json["intervals"][0]["steal"], serde_json::Value::Null);
        assert_eq!(json["run_queue"]["max"], serde_json::json!(0.06));
        // Throttled half of the second interval: saturated there, healthy elsewhere.
        assert_eq!(g.verdict, Some(GeneratorVerdict::Saturated));
        assert_eq!(json["intervals"][1]["verdict"], "saturated");
        assert_eq!(json["intervals"][1]["cause"], "throttled");
        assert_eq!(json["intervals"][0]["verdict"], "healthy");
        assert_eq!(json["verdicts"], serde_json::json!({"degraded": 0, "judged": 3, "saturated": 1}));
        assert!(
            g.why.as_deref().is_some_and(|w| w.starts_with("the generator was saturated from 1 s to 2 s")),
            "{:?}",
            g.why
        );
    }

    #[test]
    fn resources_are_shares_and_exhausted_connects_add_up() {
        let h = |fds, fds_exhausted| GeneratorHealth {
            fds: Some(fds),
            memory: Some(fds / 2.0),
            memory_peak: Some(0.5),
            fds_exhausted,
            ..Default::default()
        };
        let report =
            GeneratorReport { cores_allowed: 1.0, intervals: seconds(vec![h(0.25, 0), h(0.75, 3), h(1.0, 4)], None) };
        let g = Generator::new(&report);
        assert_eq!(g.fds, MeanMax { mean: Some(0.6667), max: Some(1.0) });
        assert_eq!(g.memory.max, Some(0.5));
        assert_eq!((g.fds_exhausted, g.ports_exhausted), (7, 0));
        assert_eq!((g.intervals[2].fds_exhausted, g.intervals[2].fds), (4, Some(1.0)));
        let json = serde_json::to_value(&g).unwrap();
        assert_eq!(json["intervals"][1]["fds_exhausted"], 3);
        let old = r#"{"cores_allowed":1.0,"cpu":{"mean":null,"max":null},"intervals":[],"run_queue":{"mean":null,"max":null},
            "run_queue_max":{"mean":null,"max":null},"steal":{"mean":null,"max":null},"throttled":{"mean":null,"max":null}}"#;
        let old: Generator = serde_json::from_str(old).unwrap();
        assert_eq!((old.fds, old.fds_exhausted), (MeanMax::default(), 0), "a summary written before reads");
    }
}
