//! The generator's verdict on itself, per interval: **healthy**, **degraded** or **saturated**,
//! judged from the figures its health sampler measured (see [`crate::generator`]) and the
//! interval's own service times. The rules and the measurements that set them are in
//! docs/outputs.md ("The generator's verdict"); in short:
//!
//! - **saturated**: the generator's own waiting is a visible part of what it measured — its event
//!   loops' timers fired late by at least a quarter of the interval's service p99 (and by at least
//!   half a millisecond) while the busiest loop was on or waiting for a CPU half the time, or a loop waited for a CPU a quarter of the time, or the cgroup throttled
//!   the process a tenth of the time — or it failed tasks by its own fault: a connection it could
//!   not open for want of a file descriptor or a local port;
//! - **degraded**: the generator is short of CPU but its waiting is small against the latencies —
//!   timers late by half a millisecond or more (on a loop so loaded), a loop waiting 5% of the time, any throttling (1%),
//!   steal of 5%, the process using 90% of the CPU it may use, or 90% of its descriptors open;
//! - **healthy**: none of these.
//!
//! An interval with no figures (a virtual clock, a results file written before the figures were
//! kept, a tail too short to measure) is not judged.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::generator::GeneratorHealth;

/// Timer overshoot below this is the kernel's wake-up cost, which every tool pays: not counted.
pub const OVERSHOOT_FLOOR_MS: f64 = 0.5;
/// The busiest loop's share of the interval on or waiting for a CPU from which its late timers
/// count: below it the loop was mostly idle.
pub const LOOP_LOAD_BUSY: f64 = 0.5;
/// Overshoot at least this share of the interval's service p99 makes the interval saturated.
pub const OVERSHOOT_SATURATED_SHARE: f64 = 0.25;
/// Run-queue delay (the worst loop's share) that makes an interval saturated, and degraded.
pub const RUN_QUEUE_SATURATED: f64 = 0.25;
/// See [`RUN_QUEUE_SATURATED`].
pub const RUN_QUEUE_DEGRADED: f64 = 0.05;
/// Throttled share that makes an interval saturated, and degraded.
pub const THROTTLED_SATURATED: f64 = 0.10;
/// See [`THROTTLED_SATURATED`].
pub const THROTTLED_DEGRADED: f64 = 0.01;
/// Steal share that makes an interval degraded.
pub const STEAL_DEGRADED: f64 = 0.05;
/// Open descriptors' share of their limit that makes an interval degraded.
pub const FDS_DEGRADED: f64 = 0.90;
/// CPU share (of the cores allowed) that makes an interval degraded.
pub const CPU_DEGRADED: f64 = 0.90;
/// The busiest loop's share of the interval *on* a CPU (its load less its run-queue delay) that
/// makes an interval degraded: the loop was busy with its own work, not waiting for a CPU.
pub const LOOP_BUSY_DEGRADED: f64 = 0.90;

/// The generator's state over an interval, or a run (its worst interval's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GeneratorVerdict {
    /// Its waiting is no visible part of the figures.
    Healthy,
    /// Short of CPU, but its waiting is small against the latencies.
    Degraded,
    /// Its own waiting is a visible part of the latencies it measured.
    Saturated,
}

impl GeneratorVerdict {
    /// The word outputs use.
    pub fn name(self) -> &'static str {
        match self {
            GeneratorVerdict::Healthy => "healthy",
            GeneratorVerdict::Degraded => "degraded",
            GeneratorVerdict::Saturated => "saturated",
        }
    }
}

impl fmt::Display for GeneratorVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The figure behind a verdict, named as the figure is (`name`, and in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The cgroup's CPU limit stopped the process.
    Throttled,
    /// The VM's neighbours took the CPUs.
    Steal,
    /// An event loop was busy on a CPU with its own work (its tasks, the plugin's and the host's).
    LoopBusy,
    /// An event loop waited for a CPU.
    #[serde(rename = "run_queue_max")]
    RunQueue,
    /// The process used nearly all the CPU it may use.
    Cpu,
    /// The event loops' timers fired late (their own backlog, or a CPU they waited for).
    #[serde(rename = "overshoot_ms")]
    Overshoot,
    /// Connections failed for want of a file descriptor.
    FdsExhausted,
    /// Connections failed for want of a local port.
    PortsExhausted,
    /// The open file descriptors neared their limit.
    Fds,
}

impl Cause {
    /// The name outputs use (the figure's own name).
    pub fn name(self) -> &'static str {
        match self {
            Cause::Throttled => "throttled",
            Cause::Steal => "steal",
            Cause::LoopBusy => "loop_busy",
            Cause::RunQueue => "run_queue_max",
            Cause::Cpu => "cpu",
            Cause::Overshoot => "overshoot_ms",
            Cause::FdsExhausted => "fds_exhausted",
            Cause::PortsExhausted => "ports_exhausted",
            Cause::Fds => "fds",
        }
    }

    /// `value` of this figure in words.
    pub fn words(self, value: f64) -> String {
        let pct = value * 100.0;
        match self {
            Cause::Throttled => format!("the cgroup throttled the process {pct:.0}% of the time (its CPU limit)"),
            Cause::Steal => format!("the VM's neighbours took {pct:.0}% of the CPUs (steal)"),
            Cause::LoopBusy => format!(
                "an event loop was busy on its CPU {pct:.0}% of the time with its own tasks (the plugin's work and \
                 the host's)"
            ),
            Cause::RunQueue => format!("an event loop waited for a CPU {pct:.0}% of the time (run-queue delay)"),
            Cause::Cpu => format!("the process used {pct:.0}% of the CPU it may use"),
            Cause::Overshoot => format!("the event loops' timers fired {value:.1} ms late (p99)"),
            Cause::FdsExhausted => format!("{value:.0} connections failed for want of a file descriptor"),
            Cause::PortsExhausted => format!("{value:.0} connections failed for want of a local port"),
            Cause::Fds => format!("its open file descriptors reached {pct:.0}% of the limit"),
        }
    }

    /// Whether it is a resource the generator lacked (rather than how late it was).
    pub fn is_resource(self) -> bool {
        !matches!(self, Cause::Cpu | Cause::Overshoot)
    }

    /// What to do about it.
    pub fn advice(self) -> &'static str {
        match self {
            Cause::Throttled => "raise the container's CPU limit or add a segment",
            Cause::Steal => "move the generator to a machine of its own or add a segment",
            Cause::LoopBusy => {
                "the tasks need more CPU than the event loops have: raise --threads if cores are free, or lower the \
                 rate or the work a task does (a task that computes or blocks holds its loop)"
            }
            Cause::RunQueue => {
                "give the generator CPUs of its own (away from the target and other work) or add a segment"
            }
            Cause::Cpu | Cause::Overshoot => "give the generator more CPU (--threads, cores) or add a segment",
            Cause::FdsExhausted | Cause::Fds => "raise its descriptor limit (ulimit -n) or add a segment",
            Cause::PortsExhausted => {
                "reuse connections (keep-alive), widen net.ipv4.ip_local_port_range, or add a segment"
            }
        }
    }
}

/// An interval's verdict and the figures that made it, worst first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    /// The verdict.
    pub verdict: GeneratorVerdict,
    /// Each rule the figures broke: the one that decided the verdict first, then the rest at the
    /// same or a lower level (empty when healthy).
    pub causes: Vec<(Cause, f64)>,
}

impl Judgement {
    /// The figure that decided the verdict, if any.
    pub fn cause(&self) -> Option<(Cause, f64)> {
        self.causes.first().copied()
    }
}

/// Judge one interval: `health` as measured, `service_p99_ms` the interval's service p99 (`None`
/// when no task ended in it). `None` when nothing was measured.
pub fn judge(health: &GeneratorHealth, service_p99_ms: Option<f64>) -> Option<Judgement> {
    if !health.is_measured() {
        return None;
    }
    let mut broken: Vec<(GeneratorVerdict, Cause, f64)> = Vec::new();
    let mut rule = |value: Option<f64>, cause: Cause, saturated: Option<f64>, degraded: f64| {
        let Some(v) = value else { return };
        if saturated.is_some_and(|s| v >= s) {
            broken.push((GeneratorVerdict::Saturated, cause, v));
        } else if v >= degraded {
            broken.push((GeneratorVerdict::Degraded, cause, v));
        }
    };
    // The order here is the order causes are named at the same level: a resource the generator
    // lacked (throttling, steal, a CPU) explains late timers, so it comes first.
    // A connection the generator could not open failed a task by its own fault: saturated.
    let count = |n: u64| (n > 0).then_some(n as f64);
    rule(count(health.fds_exhausted), Cause::FdsExhausted, Some(1.0), 1.0);
    rule(count(health.ports_exhausted), Cause::PortsExhausted, Some(1.0), 1.0);
    rule(health.throttled, Cause::Throttled, Some(THROTTLED_SATURATED), THROTTLED_DEGRADED);
    rule(health.steal, Cause::Steal, None, STEAL_DEGRADED);
    // A loop on its CPU nearly all the time was held by its own work: named before a smaller
    // run-queue delay beside it (a burning plugin task once read as "give the generator CPUs of
    // its own", with one core of two idle).
    let busy = health.loop_load.map(|load| (load - health.run_queue_max.unwrap_or(0.0)).max(0.0));
    rule(busy, Cause::LoopBusy, None, LOOP_BUSY_DEGRADED);
    rule(health.run_queue_max, Cause::RunQueue, Some(RUN_QUEUE_SATURATED), RUN_QUEUE_DEGRADED);
    rule(health.fds, Cause::Fds, None, FDS_DEGRADED);
    rule(health.cpu, Cause::Cpu, None, CPU_DEGRADED);
    // Late timers count only on a loaded loop: an idle one's rare late fires are the platform's
    // wake-up jitter (a VM's vCPU woken by its host), which every tool on it pays, and measured
    // here without a trace in the service times (docs/outputs.md has the figures).
    let loaded = health.loop_load.is_none_or(|load| load >= LOOP_LOAD_BUSY);
    let overshoot_saturated = service_p99_ms.map(|p99| (p99 * OVERSHOOT_SATURATED_SHARE).max(OVERSHOOT_FLOOR_MS));
    rule(health.overshoot_ms.filter(|_| loaded), Cause::Overshoot, overshoot_saturated, OVERSHOOT_FLOOR_MS);
    let verdict = broken.iter().map(|(v, ..)| *v).max().unwrap_or(GeneratorVerdict::Healthy);
    // The figure that decided the level first; at the same level, in the rules' order.
    broken.sort_by_key(|(v, ..)| std::cmp::Reverse(*v));
    let causes = broken.into_iter().map(|(_, c, v)| (c, v)).collect();
    Some(Judgement { verdict, causes })
}

/// How many intervals were judged, and how many were degraded or saturated: what a window keeps
/// so thresholds (`generator_saturated`) read it, summed like every other count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GeneratorTally {
    /// Intervals judged.
    pub judged: u64,
    /// Of those, degraded.
    pub degraded: u64,
    /// Of those, saturated.
    pub saturated: u64,
}

impl GeneratorTally {
    /// Count one judged interval.
    pub fn count(&mut self, verdict: GeneratorVerdict) {
        self.judged += 1;
        match verdict {
            GeneratorVerdict::Healthy => {}
            GeneratorVerdict::Degraded => self.degraded += 1,
            GeneratorVerdict::Saturated => self.saturated += 1,
        }
    }

    /// Add `other`'s counts.
    pub fn merge(&mut self, other: &GeneratorTally) {
        self.judged += other.judged;
        self.degraded += other.degraded;
        self.saturated += other.saturated;
    }

    /// Whether no interval was judged.
    pub fn is_empty(&self) -> bool {
        self.judged == 0
    }

    /// The worst verdict counted, when any interval was judged.
    pub fn worst(&self) -> Option<GeneratorVerdict> {
        let worst = if self.saturated > 0 {
            GeneratorVerdict::Saturated
        } else if self.degraded > 0 {
            GeneratorVerdict::Degraded
        } else {
            GeneratorVerdict::Healthy
        };
        (!self.is_empty()).then_some(worst)
    }
}

/// One judged interval of a run: where it starts and ends, and its judgement.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgedInterval {
    /// Its start, from the run's start.
    pub start: Duration,
    /// Its end.
    pub end: Duration,
    /// The judgement.
    pub judgement: Judgement,
}

/// The sentence a person acts on, for a run whose intervals are `intervals` (in order): `None`
/// when every judged interval was healthy. It names the worst verdict's span (from its first
/// interval to its last), the figure behind it with its worst value, and what to do.
pub fn sentence(intervals: &[JudgedInterval]) -> Option<String> {
    let worst = intervals.iter().map(|i| i.judgement.verdict).max()?;
    if worst == GeneratorVerdict::Healthy {
        return None;
    }
    let at_worst: Vec<&JudgedInterval> = intervals.iter().filter(|i| i.judgement.verdict == worst).collect();
    let (first, last) = (at_worst.first()?, at_worst.last()?);
    // The figure that decided most of those intervals, at its worst; and the figure most often
    // broken beside it, which tends to say why (a CPU the loops waited for makes timers late).
    let deciding = most_often(at_worst.iter().filter_map(|i| i.judgement.cause()))?;
    let beside = most_often(
        at_worst.iter().flat_map(|i| i.judgement.causes.iter().skip(1).copied()).filter(|(c, _)| *c != deciding.0),
    );
    // What to do follows the resource the generator lacked, whichever of the two names it.
    let lacked = [Some(deciding), beside].into_iter().flatten().find(|(c, _)| c.is_resource());
    let advice = lacked.map_or(deciding.0, |(c, _)| c).advice();
    let figures = match beside {
        Some((cause, value)) => format!("{} while {}", deciding.0.words(deciding.1), cause.words(value)),
        None => deciding.0.words(deciding.1),
    };
    let span = format!("{} s to {} s", secs(first.start), secs(last.end));
    let count = format!("{} of {} intervals", at_worst.len(), intervals.len());
    Some(match worst {
        GeneratorVerdict::Saturated => format!(
            "the generator was saturated from {span} ({count}): {figures}, so latencies there are upper bounds; \
             {advice}"
        ),
        _ => format!("the generator was degraded from {span} ({count}): {figures}; its figures hold, but {advice}"),
    })
}

/// The cause that comes most often in `causes`, with its largest value (the first to reach the
/// most, on a tie).
fn most_often(causes: impl Iterator<Item = (Cause, f64)>) -> Option<(Cause, f64)> {
    let mut by_cause: Vec<(Cause, usize, f64)> = Vec::new();
    for (cause, value) in causes {
        match by_cause.iter_mut().find(|(c, ..)| *c == cause) {
            Some(entry) => {
                entry.1 += 1;
                entry.2 = entry.2.max(value);
            }
            None => by_cause.push((cause, 1, value)),
        }
    }
    let most = by_cause.iter().map(|(_, n, _)| *n).max()?;
    by_cause.into_iter().find(|(_, n, _)| *n == most).map(|(c, _, v)| (c, v))
}

/// Seconds as outputs print them: whole when whole, else to a tenth.
fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if (s - s.round()).abs() < 1e-9 { format!("{s:.0}") } else { format!("{s:.1}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Figures as the sampler gives them; `loop_load` the busiest loop's share on or waiting for a CPU.
    fn health(
        cpu: f64,
        run_queue_max: f64,
        throttled: Option<f64>,
        overshoot_ms: f64,
        loop_load: f64,
    ) -> GeneratorHealth {
        GeneratorHealth {
            cpu: Some(cpu),
            run_queue: Some(run_queue_max),
            run_queue_max: Some(run_queue_max),
            throttled,
            steal: Some(0.0),
            overshoot_ms: Some(overshoot_ms),
            loop_load: Some(loop_load),
            ..Default::default()
        }
    }

    /// Figures measured on this project's 2-core machine (docs/outputs.md has the runs).
    #[test]
    fn the_measured_runs_get_the_verdicts_the_docs_give_them() {
        // An open model at 200/s on a quiet machine: a loop idle 97% of the time whose timer now
        // and then fires 2.7 ms late (the VM's wake-up jitter), service p99 0.6 ms: healthy.
        let quiet = judge(&health(0.03, 0.008, None, 2.7, 0.03), Some(0.58)).unwrap();
        assert_eq!(quiet.verdict, GeneratorVerdict::Healthy, "{quiet:?}");
        // The closed model pinned beside a CPU hog: a loop waits for its core half the time.
        let hog = judge(&health(0.43, 0.52, None, 6.2, 0.95), Some(3.1)).unwrap();
        assert_eq!(hog.verdict, GeneratorVerdict::Saturated);
        assert_eq!(hog.causes, [(Cause::RunQueue, 0.52), (Cause::Overshoot, 6.2)], "the resource before the overshoot");
        // A loop never idle with its own backlog (no CPU waited for): its late timers decide, and
        // the loop's own work is what it lacked.
        let backlog = judge(&health(0.5, 0.01, Some(0.0), 3.0, 1.0), Some(2.0)).unwrap();
        assert_eq!(
            (backlog.verdict, backlog.causes.as_slice()),
            (GeneratorVerdict::Saturated, &[(Cause::Overshoot, 3.0), (Cause::LoopBusy, 0.99)][..])
        );
        // The closed model under a 20% CPU quota: throttled most of the time.
        let quota = judge(&health(1.04, 0.82, Some(0.93), 80.1, 1.0), Some(0.2)).unwrap();
        assert_eq!(quota.verdict, GeneratorVerdict::Saturated);
        assert_eq!(quota.cause().map(|c| c.0), Some(Cause::Throttled));
        // A slow target (50 ms) measured by a busy loop whose timers are 3 ms late: degraded only.
        let slow = judge(&health(0.05, 0.02, Some(0.0), 3.0, 0.6), Some(52.0)).unwrap();
        assert_eq!(slow.verdict, GeneratorVerdict::Degraded);
        assert_eq!(slow.causes, [(Cause::Overshoot, 3.0)]);
    }

    #[test]
    fn plugin_tasks_holding_their_loop_are_named_not_a_cpu_the_loop_waited_for() {
        // One event loop (--threads 1) running tasks that burn ~450 ms of CPU each at 20/s, on a
        // machine with other work (issue 41, defect 12): one core of two busy, the loop on its
        // CPU 92% of the time and waiting 8%. It said "give the generator CPUs of its own".
        let burning = judge(&health(0.5, 0.08, Some(0.0), 709.6, 1.0), Some(735.0)).unwrap();
        assert_eq!(burning.verdict, GeneratorVerdict::Saturated);
        assert_eq!(burning.causes[1].0, Cause::LoopBusy, "{burning:?}");
        let intervals: Vec<JudgedInterval> = (0..9)
            .map(|i| JudgedInterval {
                start: Duration::from_secs(i),
                end: Duration::from_secs(i + 1),
                judgement: burning.clone(),
            })
            .collect();
        let said = sentence(&intervals).unwrap();
        assert!(said.contains("busy on its CPU 92% of the time with its own tasks"), "{said}");
        assert!(said.contains("raise --threads if cores are free"), "{said}");
        assert!(!said.contains("CPUs of its own"), "{said}");
    }

    #[test]
    fn nothing_measured_is_not_judged_and_a_figure_absent_breaks_no_rule() {
        assert_eq!(judge(&GeneratorHealth::default(), Some(1.0)), None);
        let only_cpu = GeneratorHealth { cpu: Some(0.95), ..Default::default() };
        let j = judge(&only_cpu, None).unwrap();
        assert_eq!((j.verdict, j.cause().map(|c| c.0)), (GeneratorVerdict::Degraded, Some(Cause::Cpu)));
        // Without a service p99 (no task ended), late timers are at most degraded.
        let late = GeneratorHealth { overshoot_ms: Some(40.0), ..Default::default() };
        assert_eq!(judge(&late, None).map(|j| j.verdict), Some(GeneratorVerdict::Degraded));
        // A connect that found no descriptor failed a task by the generator's own fault.
        let out_of_fds = GeneratorHealth { cpu: Some(0.1), fds: Some(1.0), fds_exhausted: 37, ..Default::default() };
        let j = judge(&out_of_fds, Some(1.0)).unwrap();
        assert_eq!(j.verdict, GeneratorVerdict::Saturated);
        assert_eq!(j.causes, [(Cause::FdsExhausted, 37.0), (Cause::Fds, 1.0)]);
        let near = GeneratorHealth { fds: Some(0.95), ..Default::default() };
        assert_eq!(judge(&near, None).map(|j| j.verdict), Some(GeneratorVerdict::Degraded));
    }

    #[test]
    fn the_sentence_names_the_span_the_figure_and_what_to_do() {
        let at = |s: u64, verdict, causes: Vec<(Cause, f64)>| JudgedInterval {
            start: Duration::from_secs(s),
            end: Duration::from_secs(s + 1),
            judgement: Judgement { verdict, causes },
        };
        let healthy = |s| at(s, GeneratorVerdict::Healthy, vec![]);
        assert_eq!(sentence(&[healthy(0), healthy(1)]), None);
        let run = [
            healthy(0),
            at(1, GeneratorVerdict::Degraded, vec![(Cause::RunQueue, 0.06)]),
            at(2, GeneratorVerdict::Saturated, vec![(Cause::Throttled, 0.2), (Cause::Overshoot, 30.0)]),
            at(3, GeneratorVerdict::Saturated, vec![(Cause::Throttled, 0.31)]),
            healthy(4),
        ];
        let s = sentence(&run).unwrap();
        assert!(s.starts_with("the generator was saturated from 2 s to 4 s (2 of 5 intervals): "), "{s}");
        assert!(s.contains(": the cgroup throttled the process 31% of the time (its CPU limit) while the event loops' timers fired 30.0 ms late"), "the worst value, and the figure beside it: {s}");
        assert!(s.contains("upper bounds") && s.contains("CPU limit or add a segment"), "{s}");
        let mut tally = GeneratorTally::default();
        for i in &run {
            tally.count(i.judgement.verdict);
        }
        assert_eq!((tally.judged, tally.degraded, tally.saturated), (5, 1, 2));
        assert_eq!(tally.worst(), Some(GeneratorVerdict::Saturated));
        for cause in [
            Cause::Throttled,
            Cause::Steal,
            Cause::LoopBusy,
            Cause::RunQueue,
            Cause::Cpu,
            Cause::Overshoot,
            Cause::FdsExhausted,
            Cause::PortsExhausted,
            Cause::Fds,
        ] {
            assert_eq!(serde_json::to_value(cause).unwrap(), cause.name(), "one name in JSON and in words");
        }
    }
}
