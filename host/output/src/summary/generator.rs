//! The summary's `generator` section: the generator's health over the run (docs/outputs.md), from
//! the figures the engine measured each interval. Absent when nothing was measured (a merge).
//! Shares have their mean and max; the connects that found a resource exhausted are summed.

use loadhost_metrics::{GeneratorHealth, GeneratorReport};
use serde::{Deserialize, Serialize};

/// The generator's health over the run: each figure's mean and max over the intervals, and every
/// interval's figures. Keys sorted, as the summary's are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generator {
    /// The cores the process could use.
    pub cores_allowed: f64,
    /// The process's CPU ÷ (interval × cores allowed).
    pub cpu: MeanMax,
    /// Open file descriptors ÷ the soft `RLIMIT_NOFILE`.
    #[serde(default)]
    pub fds: MeanMax,
    /// Connections not opened for want of a file descriptor, over the run.
    #[serde(default)]
    pub fds_exhausted: u64,
    /// Each interval's figures.
    pub intervals: Vec<GeneratorInterval>,
    /// Resident memory ÷ (`--max-memory` × the crew's peak workers).
    #[serde(default)]
    pub memory: MeanMax,
    /// Peak resident memory so far ÷ the same budget.
    #[serde(default)]
    pub memory_peak: MeanMax,
    /// Connections not opened for want of a local port, over the run.
    #[serde(default)]
    pub ports_exhausted: u64,
    /// The event loops' time waiting for a CPU ÷ (interval × event loops).
    pub run_queue: MeanMax,
    /// The worst event loop's time waiting for a CPU ÷ interval.
    pub run_queue_max: MeanMax,
    /// The machine's steal time ÷ interval ÷ its CPUs.
    pub steal: MeanMax,
    /// The cgroup's throttled time ÷ interval.
    pub throttled: MeanMax,
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
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GeneratorInterval {
    /// The process's CPU share.
    pub cpu: Option<f64>,
    /// The open file descriptors' share of their limit.
    #[serde(default)]
    pub fds: Option<f64>,
    /// Connections not opened for want of a file descriptor.
    #[serde(default)]
    pub fds_exhausted: u64,
    /// The resident memory's share of the plugins' budget.
    #[serde(default)]
    pub memory: Option<f64>,
    /// The peak resident memory's share of it.
    #[serde(default)]
    pub memory_peak: Option<f64>,
    /// Connections not opened for want of a local port.
    #[serde(default)]
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
}

/// Shares to four decimals (a hundredth of a percent): finer is noise.
pub(crate) fn round(share: f64) -> f64 {
    (share * 10_000.0).round() / 10_000.0
}

impl Generator {
    /// The section for what the engine measured.
    pub fn new(report: &GeneratorReport) -> Self {
        let over = |figure: fn(&GeneratorHealth) -> Option<f64>| {
            let values: Vec<f64> = report.intervals.iter().filter_map(|(_, h)| figure(h)).collect();
            MeanMax {
                mean: (!values.is_empty()).then(|| round(values.iter().sum::<f64>() / values.len() as f64)),
                max: values.iter().copied().reduce(f64::max).map(round),
            }
        };
        let sum = |count: fn(&GeneratorHealth) -> u64| report.intervals.iter().map(|(_, h)| count(h)).sum();
        Generator {
            cores_allowed: round(report.cores_allowed),
            cpu: over(|h| h.cpu),
            fds: over(|h| h.fds),
            fds_exhausted: sum(|h| h.fds_exhausted),
            intervals: report
                .intervals
                .iter()
                .map(|(start, h)| GeneratorInterval {
                    cpu: h.cpu.map(round),
                    fds: h.fds.map(round),
                    fds_exhausted: h.fds_exhausted,
                    memory: h.memory.map(round),
                    memory_peak: h.memory_peak.map(round),
                    ports_exhausted: h.ports_exhausted,
                    run_queue: h.run_queue.map(round),
                    run_queue_max: h.run_queue_max.map(round),
                    start_s: start.as_secs_f64(),
                    steal: h.steal.map(round),
                    throttled: h.throttled.map(round),
                })
                .collect(),
            memory: over(|h| h.memory),
            memory_peak: over(|h| h.memory_peak),
            ports_exhausted: sum(|h| h.ports_exhausted),
            run_queue: over(|h| h.run_queue),
            run_queue_max: over(|h| h.run_queue_max),
            steal: over(|h| h.steal),
            throttled: over(|h| h.throttled),
        }
    }

    /// The median interval's CPU share (for the terminal).
    pub fn cpu_p50(&self) -> Option<f64> {
        let mut cpu: Vec<f64> = self.intervals.iter().filter_map(|i| i.cpu).collect();
        cpu.sort_by(f64::total_cmp);
        cpu.get(cpu.len().saturating_sub(1) / 2).copied()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
            intervals: vec![
                (Duration::ZERO, h(0.2, None)),
                (Duration::from_secs(1), h(0.6, Some(0.5))),
                (Duration::from_secs(2), h(0.4, None)),
            ],
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
        let report = GeneratorReport {
            cores_allowed: 1.0,
            intervals: vec![
                (Duration::ZERO, h(0.25, 0)),
                (Duration::from_secs(1), h(0.75, 3)),
                (Duration::from_secs(2), h(1.0, 4)),
            ],
        };
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
