//! How measurements taken side by side add up to one run: the one rule that combines reports,
//! and where intervals recorded by several processes land on one timeline.
//!
//! Two things combine reports, and both use [`RunReport::combine`]:
//! - `loadhost run` with `[[scenario]]` blocks: the scenarios ran together in one process, and
//!   the run is all of them;
//! - `loadhost merge`: the segments of one plan ran together in several processes, and the run
//!   is all of them (and each scenario is that scenario in every part).
//!
//! In both, each report covers its own span of wall-clock time, `started_at` to `started_at +
//! elapsed`, and the combined report spans them all. That one rule is right for both uses: a
//! scenario that starts late is a report that starts late, exactly like a segment whose machine
//! started late, so neither needs its own arithmetic (the scenario's planned `offset` and a part's
//! clock are both already in its `started_at`).
//!
//! Why here and not in `loadhost-output`: how counts, histograms, crews and spans add up is what
//! the measurements mean, not how a file or a page shows them. It has no I/O, so it is tested
//! without files, and every caller (the CLI for scenarios, the merge of results files, the
//! engine's tests) gets the same answer. What stays in `loadhost-output` is what is about files:
//! reading results, refusing parts that are not one run's (different plugins, plans or segment
//! splits), and decoding a window only when its row is built.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use crate::count::{Overflow, Tally};
use crate::report::{Gauges, RunReport, WorkerStats};
use crate::window::Window;

impl RunReport {
    /// Reports that ran side by side (the scenarios of one run, or the parts of a distributed
    /// one), as one report; `None` when there are none.
    ///
    /// - counts, histograms, plugin metrics, HTTP figures: added ([`crate::Window::merge`]);
    /// - `started`, the crew's figures: summed (crews side by side);
    /// - `target_rate`: the sum, or `None` when any report has none (a closed model has no plan);
    /// - `started_at`: the earliest; `elapsed` and `generation`: from it to the latest end, where a
    ///   report ends at its own `started_at` plus its `elapsed` (or `generation`);
    /// - `offset`: the smallest; `intervals`: the most;
    /// - `scenario`: the reports' name when they share one (parts of one scenario), else `"all"`;
    /// - `aborted`, `stopped`, `teardown_error`: the first report, in the order given, that has one;
    /// - `generator`: the first report's that has one (the scenarios of one process share its CPU;
    ///   the parts of a merge come from files, which do not carry it).
    pub fn combine<'a>(reports: impl IntoIterator<Item = &'a RunReport>) -> Option<RunReport> {
        let mut reports = reports.into_iter();
        let mut all = reports.next()?.clone();
        for report in reports {
            all.absorb(report, &mut Tally::default());
        }
        Some(all)
    }

    /// Fold `other` into this report by the rules of [`RunReport::combine`], or say which figure
    /// would not fit (a count past [`MAX_COUNT`](crate::count::MAX_COUNT), an end past what a clock
    /// can say: a damaged or crafted results file); the report is then not to be used.
    pub fn try_absorb(&mut self, other: &RunReport) -> Result<(), Overflow> {
        let mut t = Tally::default();
        self.absorb(other, &mut t);
        t.result()
    }

    /// Whether every figure of this report fits (one read from a file: see [`crate::count`]).
    pub fn check(&self) -> Result<(), Overflow> {
        let mut t = Tally::default();
        t.add(&mut 0, self.started, "tasks started");
        t.add(&mut 0, self.intervals, "intervals");
        WorkerStats::default().add_to(&self.workers, &mut t);
        Window::default().add_to(&self.totals, &mut t);
        t.at(self.started_at, self.elapsed.max(self.generation), "the run's end");
        t.at(self.started_at, self.offset, "the scenario's start");
        t.result()
    }

    /// Fold `other` into this report by the rules of [`RunReport::combine`].
    fn absorb(&mut self, other: &RunReport, t: &mut Tally) {
        if self.scenario != other.scenario {
            self.scenario = "all".into();
        }
        let start = self.started_at.min(other.started_at);
        let mut span = |at: SystemTime, a: Duration, other_at: SystemTime, b: Duration| {
            let end = t.at(at, a, "the run's end").max(t.at(other_at, b, "the run's end"));
            end.duration_since(start).unwrap_or_default()
        };
        self.elapsed = span(self.started_at, self.elapsed, other.started_at, other.elapsed);
        self.generation = span(self.started_at, self.generation, other.started_at, other.generation);
        self.started_at = start;
        self.offset = self.offset.min(other.offset);
        t.add(&mut self.started, other.started, "tasks started");
        self.target_rate = self.target_rate.zip(other.target_rate).map(|(a, b)| a + b);
        self.totals.add_to(&other.totals, t);
        self.workers.add_to(&other.workers, t);
        self.intervals = self.intervals.max(other.intervals);
        for (mine, theirs) in [
            (&mut self.aborted, &other.aborted),
            (&mut self.stopped, &other.stopped),
            (&mut self.teardown_error, &other.teardown_error),
        ] {
            if mine.is_none() {
                mine.clone_from(theirs);
            }
        }
        if self.generator.is_none() {
            self.generator.clone_from(&other.generator);
        }
    }
}

impl Gauges {
    /// Add the gauges of intervals that ran side by side (parts of one run at the same time), or
    /// say which would pass [`MAX_COUNT`](crate::count::MAX_COUNT).
    pub fn try_add(&mut self, other: &Gauges) -> Result<(), Overflow> {
        let mut t = Tally::default();
        t.add(&mut self.started, other.started, "tasks started in an interval");
        t.add(&mut self.workers, other.workers, "workers at an interval's end");
        t.add(&mut self.idle, other.idle, "idle workers at an interval's end");
        t.add(&mut self.in_flight, other.in_flight, "tasks in flight at an interval's end");
        t.result()
    }
}

/// One timeline of `interval`-long rows for intervals recorded by several processes: an interval
/// lands on the row its absolute start rounds to, counted from the earliest start of its
/// scenario among the parts. Parts started together (`--start-at`) land on the same rows; a part
/// whose clock is d ms off blurs each row's edge by d ms.
#[derive(Debug, Clone)]
pub struct Timeline {
    interval: Duration,
    earliest: HashMap<String, SystemTime>,
}

impl Timeline {
    /// An empty timeline of rows `interval` long.
    pub fn new(interval: Duration) -> Self {
        Self { interval, earliest: HashMap::new() }
    }

    /// Note that a part's rows of `scenario` count from `anchor` (its start of that scenario).
    pub fn anchor(&mut self, scenario: &str, anchor: SystemTime) {
        let earliest = self.earliest.entry(scenario.to_owned()).or_insert(anchor);
        *earliest = (*earliest).min(anchor);
    }

    /// The row of an interval of `scenario` that started `start` after `anchor`: its absolute
    /// start, minus the scenario's earliest anchor, divided by the interval, to the nearest;
    /// `None` when no clock can say that start (a damaged or crafted file).
    pub fn row(&self, scenario: &str, anchor: SystemTime, start: Duration) -> Option<u64> {
        let from = self.earliest.get(scenario).copied().unwrap_or(anchor);
        let offset = anchor.checked_add(start)?.duration_since(from).unwrap_or_default();
        let step = self.interval.as_nanos().max(1);
        u64::try_from((offset.as_nanos() + step / 2) / step).ok()
    }

    /// Where row `row` starts, from the scenario's earliest anchor.
    pub fn row_start(&self, row: u64) -> Duration {
        self.interval.saturating_mul(u32::try_from(row).unwrap_or(u32::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Outcome;
    use crate::report::WorkerStats;
    use crate::window::Window;

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000) + Duration::from_millis(ms)
    }

    fn report(name: &str, start_ms: u64, elapsed_ms: u64, passed: u64, target: Option<f64>) -> RunReport {
        let mut totals = Window::default();
        totals.counts.scheduled = passed;
        totals.counts.add(Outcome::Passed, passed);
        RunReport {
            scenario: name.into(),
            offset: Duration::ZERO,
            started_at: at(start_ms),
            elapsed: Duration::from_millis(elapsed_ms),
            generation: Duration::from_millis(elapsed_ms.saturating_sub(20)),
            started: passed,
            target_rate: target,
            totals,
            workers: WorkerStats { min: 1, peak: 4, final_: 2, grown: 3, retired: 1, replaced: 0, ceiling: 8 },
            intervals: elapsed_ms / 1000,
            aborted: None,
            stopped: None,
            teardown_error: None,
            generator: None,
        }
    }

    #[test]
    fn nothing_combines_to_nothing_and_one_report_to_itself() {
        assert!(RunReport::combine(&[]).is_none());
        let one = report("browse", 0, 2_000, 10, Some(5.0));
        let same = RunReport::combine([&one]).expect("one report");
        assert_eq!((same.scenario.as_str(), same.elapsed, same.started), ("browse", one.elapsed, 10));
    }

    #[test]
    fn scenarios_of_one_run_span_from_the_first_start_to_the_last_end() {
        // browse: 0 → 3 s; checkout starts 1 s later (its offset) and runs 2.5 s, to 3.5 s.
        let browse = report("browse", 0, 3_000, 30, Some(10.0));
        let mut checkout = report("checkout", 1_000, 2_500, 5, None);
        checkout.offset = Duration::from_secs(1);
        checkout.stopped = Some("SIGINT".into());
        let all = RunReport::combine([&browse, &checkout]).expect("two reports");
        assert_eq!(all.scenario, "all");
        assert_eq!(all.started_at, at(0));
        assert_eq!(all.offset, Duration::ZERO);
        assert_eq!(all.elapsed, Duration::from_millis(3_500));
        assert_eq!(all.generation, Duration::from_millis(3_480));
        assert_eq!(all.started, 35);
        assert_eq!(all.target_rate, None, "a closed scenario has no plan, so the run has none");
        assert_eq!(all.counts().passed, 35);
        assert!(all.counts().identity_holds());
        assert_eq!(all.workers.peak, 8, "crews side by side add up");
        assert_eq!(all.intervals, 3);
        assert_eq!(all.stopped.as_deref(), Some("SIGINT"));
    }

    #[test]
    fn parts_of_one_scenario_keep_its_name_and_the_first_reason_wins() {
        // Two segments of "default": the second machine started 400 ms late.
        let mut a = report("default", 0, 3_020, 100, Some(10.0));
        let mut b = report("default", 400, 3_020, 100, Some(10.0));
        a.aborted = Some("a aborted".into());
        b.aborted = Some("b aborted".into());
        b.teardown_error = Some("b teardown".into());
        let all = RunReport::combine([&a, &b]).expect("two parts");
        assert_eq!(all.scenario, "default");
        assert_eq!(all.elapsed, Duration::from_millis(3_420));
        assert_eq!(all.target_rate, Some(20.0));
        assert_eq!(all.aborted.as_deref(), Some("a aborted"));
        assert_eq!(all.teardown_error.as_deref(), Some("b teardown"));
        // The order given decides "first", not the start time.
        let reversed = RunReport::combine([&b, &a]).expect("two parts");
        assert_eq!(reversed.aborted.as_deref(), Some("b aborted"));
        assert_eq!((reversed.started_at, reversed.elapsed), (all.started_at, all.elapsed));
    }

    #[test]
    fn combining_is_the_same_in_any_grouping() {
        let parts = [
            report("x", 0, 1_000, 1, Some(1.0)),
            report("y", 250, 900, 2, Some(2.0)),
            report("x", 90, 2_000, 3, Some(3.0)),
        ];
        let at_once = RunReport::combine(&parts).expect("three");
        let left = RunReport::combine(&parts[..2]).expect("two");
        let stepwise = RunReport::combine([&left, &parts[2]]).expect("two");
        assert_eq!(
            (at_once.scenario.clone(), at_once.started_at, at_once.elapsed, at_once.generation, at_once.started),
            (stepwise.scenario.clone(), stepwise.started_at, stepwise.elapsed, stepwise.generation, stepwise.started)
        );
        assert_eq!(at_once.target_rate, stepwise.target_rate);
    }

    #[test]
    fn intervals_land_on_the_nearest_row_of_their_scenarios_timeline() {
        let mut timeline = Timeline::new(Duration::from_secs(1));
        timeline.anchor("default", at(400));
        timeline.anchor("default", at(0));
        timeline.anchor("late", at(10_000));
        // 400 ms late rounds onto the same second; 600 ms late onto the next.
        assert_eq!(timeline.row("default", at(400), Duration::from_secs(1)), Some(1));
        assert_eq!(timeline.row("default", at(600), Duration::from_secs(1)), Some(2));
        // Each scenario counts from its own earliest start.
        assert_eq!(timeline.row("late", at(10_000), Duration::ZERO), Some(0));
        assert_eq!(timeline.row("late", at(10_000), Duration::MAX), None, "no clock says it");
        assert_eq!(timeline.row_start(3), Duration::from_secs(3));
    }

    #[test]
    fn gauges_of_parts_at_the_same_time_add_up() {
        let mut g = Gauges { started: 1, workers: 2, idle: 3, in_flight: 4 };
        g.try_add(&Gauges { started: 10, workers: 20, idle: 30, in_flight: 40 }).unwrap();
        assert_eq!(g, Gauges { started: 11, workers: 22, idle: 33, in_flight: 44 });
        let err = g.try_add(&Gauges { started: u64::MAX, ..Gauges::default() }).unwrap_err();
        assert_eq!(err.what, "tasks started in an interval");
    }

    #[test]
    fn a_count_that_would_wrap_is_refused_not_wrapped() {
        // u64::MAX tasks beside 600 real ones: with `+` that is 599, "every task accounted for".
        let real = report("default", 0, 1_000, 600, Some(600.0));
        let mut crafted = report("default", 0, 1_000, 600, Some(600.0));
        crafted.totals.counts.scheduled = u64::MAX;
        crafted.totals.counts.passed = u64::MAX;
        assert!(crafted.check().is_err(), "a single file's count past 2^53 is refused");
        let mut all = real.clone();
        let err = all.try_absorb(&crafted).unwrap_err();
        assert_eq!(err.what, "tasks scheduled");
        let mut huge = report("default", 0, 1_000, crate::count::MAX_COUNT / 2 + 1, Some(1.0));
        let half = huge.clone();
        assert!(huge.check().is_ok());
        assert!(huge.try_absorb(&half).is_err(), "two halves of 2^53 and more do not fit");
        let mut late = real.clone();
        late.elapsed = Duration::MAX;
        assert!(late.check().is_err() && real.clone().try_absorb(&late).is_err(), "an end no clock can say");
    }
}
