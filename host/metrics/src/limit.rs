//! What limited a run, named from its own measurements:
//!
//! - **emitter**: the pacer fell behind (underrun), the achieved rate fell short of the plan, or
//!   the generator judged itself saturated (its own waiting a visible part of the latencies:
//!   [`crate::generator_verdict`]); the load generator, not the target, is the bottleneck;
//! - **crew**: due tasks found no idle worker (at `--max-workers`, or growing too slowly);
//! - **gate**: due tasks found the gate full, or waited at it (`--max-in-flight`);
//! - **target**: a threshold broke while the host kept up, so the system under test is the limit.

use crate::report::RunReport;

/// Who limited a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The pacer or the host's CPU.
    Emitter,
    /// Too few workers.
    Crew,
    /// The in-flight gate.
    Gate,
    /// The system under test.
    Target,
}

impl Limit {
    /// The name outputs use: `emitter`, `crew`, `gate`, `target`.
    pub fn name(self) -> &'static str {
        match self {
            Limit::Emitter => "emitter",
            Limit::Crew => "crew",
            Limit::Gate => "gate",
            Limit::Target => "target",
        }
    }
}

/// A host-side shortfall counts when it reaches this share of the run's tasks, and at least
/// [`MIN_SHORTFALL`] tasks: one late release in a short run is scheduling noise, not a limit.
pub const HOST_SHORTFALL: f64 = 0.01;
/// The fewest tasks a shortfall needs to count.
pub const MIN_SHORTFALL: u64 = 5;
/// The share of judged intervals in which the generator was saturated that makes it the limit.
pub const GENERATOR_SATURATED_SHARE: f64 = 0.10;
/// Gate wait (p99, ms) above which the gate counts as saturated.
pub const GATE_WAIT_LIMIT_MS: f64 = 1.0;

/// What limited `report`, and why in words; `None` when the host kept up and every threshold
/// held. `planned_rate` is the open model's rate (`None` in the closed model, which has no plan
/// to fall short of); `broken` is a failed threshold's expression and value.
pub fn limiting(report: &RunReport, planned_rate: Option<f64>, broken: Option<(&str, f64)>) -> Option<(Limit, String)> {
    let t = &report.totals;
    let c = report.counts();
    let scheduled = c.scheduled.max(1) as f64;
    let crew_drops = c.dropped - t.dropped_at_gate;
    let gate_wait = t.gate_wait.percentiles().p99;
    let significant = |n: u64| n >= MIN_SHORTFALL && n as f64 > HOST_SHORTFALL * scheduled;
    let achieved = report.achieved_rate();
    // The generator first: one starved of CPU explains the host's other shortfalls (late
    // releases, a crew that grew too slowly). One stalled interval in a long run is reported (the
    // generator section, its threshold) but does not make it the limit; a tenth of them does.
    if t.generator.saturated > 0
        && t.generator.saturated as f64 >= GENERATOR_SATURATED_SHARE * t.generator.judged as f64
    {
        let why =
            report.generator.as_ref().and_then(|g| crate::generator_verdict::sentence(&g.judged())).unwrap_or_else(
                || {
                    let g = &t.generator;
                    format!("the generator was saturated in {} of {} intervals", g.saturated, g.judged)
                },
            );
        return Some((Limit::Emitter, why));
    }
    // Below the share that makes it the limit, the generator's own word still says why the pacer
    // fell behind (throttling, a CPU it waited for), when it had one.
    let generator_said = || {
        let sentence = report.generator.as_ref().and_then(|g| crate::generator_verdict::sentence(&g.judged()));
        sentence.map(|s| format!("; {s}")).unwrap_or_default()
    };
    // A crew at its ceiling is named before the pacer's lateness when it dropped more: every due
    // task that finds the crew busy costs the pacer an event-loop round, so a full crew makes the
    // pacer late too (1,717 drops were once blamed on the emitter's underrun, never on the flag).
    // The pacer's own drops (slots it reached too late) are counted in both; what is left past
    // the underrun found a busy crew for sure.
    let crew = significant(crew_drops).then(|| (Limit::Crew, crew_sentence(report, crew_drops)));
    if crew.is_some() && crew_drops.saturating_sub(t.underrun) >= t.underrun {
        return crew;
    }
    if significant(t.underrun) {
        let why = format!("{} tasks released late or dropped by the pacer (underrun){}", t.underrun, generator_said());
        return Some((Limit::Emitter, why));
    }
    if crew.is_some() {
        return crew;
    }
    if significant(t.dropped_at_gate) || gate_wait > GATE_WAIT_LIMIT_MS {
        let why = format!("{} due tasks found the gate full; gate wait p99 {gate_wait:.2} ms", t.dropped_at_gate);
        return Some((Limit::Gate, why));
    }
    if let Some(rate) = planned_rate
        && achieved < rate * (1.0 - HOST_SHORTFALL)
    {
        return Some((Limit::Emitter, format!("achieved {achieved:.1}/s of {rate:.0}/s{}", generator_said())));
    }
    broken.map(|(expr, value)| (Limit::Target, format!("{expr} broke ({value:.3}) while the host kept up")))
}

/// Why the crew limited the run: the due tasks that found no idle worker and, when the crew was
/// at its ceiling, the ceiling and the flag that sets it (as k6 says "Insufficient VUs").
fn crew_sentence(report: &RunReport, drops: u64) -> String {
    let w = &report.workers;
    if w.ceiling > 0 && w.peak >= w.ceiling {
        format!(
            "{drops} due tasks found no idle worker: the crew was at its ceiling of {} workers (--max-workers); \
             raise --max-workers, or lower the rate",
            w.ceiling
        )
    } else {
        format!("{drops} due tasks found no idle worker (peak {} workers; the crew grew too slowly)", w.peak)
    }
}

/// The run's verdict: what limited it, judged after its thresholds. The host (emitter, crew,
/// gate) comes before the target, which is named only when a threshold with a value broke while
/// the host kept up; a stopped or aborted run did not fall short of its plan, it was cut short.
pub fn verdict(report: &RunReport, thresholds: &[crate::ThresholdResult]) -> Option<(Limit, String)> {
    let broken = thresholds.iter().find(|t| !t.passed).and_then(|t| t.value.map(|v| (t.expr.as_str(), v)));
    let planned = if report.stopped.is_some() || report.aborted.is_some() { None } else { report.target_rate };
    limiting(report, planned, broken)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::generator_verdict::GeneratorVerdict;
    use crate::outcome::Outcome;
    use crate::report::WorkerStats;
    use crate::window::Window;

    /// A 10 s run of 1,000 passed tasks with `underrun` late releases, whose generator was
    /// saturated in `saturated` of its `judged` intervals.
    fn run(underrun: u64, saturated: u64, judged: u64) -> RunReport {
        let mut totals = Window::default();
        totals.counts.scheduled = 1_000;
        totals.counts.add(Outcome::Passed, 1_000);
        totals.underrun = underrun;
        for i in 0..judged {
            totals.generator.count(if i < saturated { GeneratorVerdict::Saturated } else { GeneratorVerdict::Healthy });
        }
        RunReport {
            scenario: "default".into(),
            offset: Duration::ZERO,
            started_at: SystemTime::UNIX_EPOCH,
            elapsed: Duration::from_secs(10),
            generation: Duration::from_secs(10),
            started: 1_000,
            target_rate: Some(100.0),
            totals,
            workers: WorkerStats::default(),
            intervals: 10,
            aborted: None,
            stopped: None,
            teardown_error: None,
            generator: None,
        }
    }

    #[test]
    fn a_crew_at_its_ceiling_is_named_with_the_flag_before_the_pacer_it_made_late() {
        // -w 10 --max-workers 10 and tasks needing 20: 1,049 dropped, 138 late releases.
        let mut report = run(138, 0, 10);
        report.totals.counts.dropped = 1_049;
        report.workers = WorkerStats { min: 10, peak: 10, final_: 10, ceiling: 10, ..WorkerStats::default() };
        let (limit, why) = limiting(&report, Some(200.0), None).unwrap();
        assert_eq!(limit, Limit::Crew, "{why}");
        assert!(why.contains("the crew was at its ceiling of 10 workers (--max-workers)"), "{why}");
        // The pacer's own drops (late slots) alone still name the emitter.
        let mut overrun = run(400, 0, 10);
        overrun.totals.counts.dropped = 400;
        overrun.workers.ceiling = 10;
        assert_eq!(limiting(&overrun, Some(200.0), None).map(|(l, _)| l), Some(Limit::Emitter));
        // A crew below its ceiling grew too slowly.
        report.workers.ceiling = 100;
        let (_, why) = limiting(&report, Some(200.0), None).unwrap();
        assert!(why.contains("peak 10 workers; the crew grew too slowly"), "{why}");
    }

    #[test]
    fn a_saturated_generator_is_named_before_the_pacer_and_the_target() {
        let broken = Some(("latency_ms:p(99)<1", 5.0));
        let (limit, why) = limiting(&run(50, 2, 10), Some(100.0), broken).unwrap();
        assert_eq!((limit, why.as_str()), (Limit::Emitter, "the generator was saturated in 2 of 10 intervals"));
        // One interval in twenty is a stall, reported but not the run's limit: the pacer is.
        let (limit, why) = limiting(&run(50, 1, 20), Some(100.0), broken).unwrap();
        assert_eq!(limit, Limit::Emitter);
        assert!(why.contains("underrun"), "{why}");
        let (limit, _) = limiting(&run(0, 0, 10), Some(100.0), broken).unwrap();
        assert_eq!(limit, Limit::Target, "the host kept up");
        // The pacer named, and the generator's own word on why beside it.
        let mut degraded = run(50, 0, 10);
        let judgement = crate::generator_verdict::judge(
            &crate::GeneratorHealth { throttled: Some(0.05), ..Default::default() },
            Some(1.0),
        );
        degraded.generator = Some(crate::GeneratorReport {
            cores_allowed: 0.2,
            intervals: vec![crate::MeasuredInterval {
                start: Duration::ZERO,
                end: Duration::from_secs(1),
                health: crate::GeneratorHealth { throttled: Some(0.05), ..Default::default() },
                judgement,
            }],
        });
        let (limit, why) = limiting(&degraded, Some(100.0), broken).unwrap();
        assert_eq!(limit, Limit::Emitter);
        assert!(
            why.starts_with(
                "50 tasks released late or dropped by the pacer (underrun); the generator was degraded from 0 s to 1 s"
            ),
            "{why}"
        );
        assert!(why.contains("throttled the process 5%"), "{why}");
    }
}
