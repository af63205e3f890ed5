//! The interval rows kept for the HTML report's charts, bounded: a long run's report, and the rows
//! held in memory for it while the run goes, stop growing past [`MAX_ROWS`] per scenario.
//!
//! **Downsampling.** Rows are kept as they come until a scenario has [`MAX_ROWS`]; then each two
//! neighbours merge into one (halving the rows, so at least `MAX_ROWS / 2` remain), and from then
//! on every kept row covers twice as many intervals as before: 2, then 4, 8, … A run at one row a
//! second keeps every second for over an hour, and a day-long run still has 2,000–4,000 points,
//! more than a chart is wide. A merged row spans from its first interval's start to its last one's
//! end, and
//! - counts add up (tasks scheduled, started and ended by outcome, HTTP requests), so the charts'
//!   per-second figures are the span's averages;
//! - every other figure is the span's worst interval: the largest latency percentiles, mean and
//!   max (the smallest min), the latest pacer wake, the most workers, idle workers and tasks in
//!   flight at an interval's end. A downsampled chart never hides a spike.
//!
//! The summary tables are unaffected: they come from the run's totals, not from rows.

use std::sync::Arc;

use loadhost_metrics::{IntervalRow, Percentiles};

/// The most rows kept per scenario before neighbours merge.
pub const MAX_ROWS: usize = 4_000;

/// Interval rows kept for charts, per scenario, downsampled past a limit (see the module doc).
#[derive(Debug, Clone)]
pub struct ChartRows {
    limit: usize,
    tracks: Vec<Track>,
}

/// One scenario's kept rows.
#[derive(Debug, Clone)]
struct Track {
    scenario: Arc<str>,
    rows: Vec<IntervalRow>,
    /// Intervals per kept row.
    span: u64,
    /// The row being filled, and how many intervals it holds so far (fewer than `span`).
    pending: Option<(IntervalRow, u64)>,
}

impl Default for ChartRows {
    fn default() -> Self {
        Self::new()
    }
}

impl ChartRows {
    /// No rows yet; at most [`MAX_ROWS`] per scenario.
    pub fn new() -> Self {
        Self::with_limit(MAX_ROWS)
    }

    /// No rows yet; at most `limit` per scenario (at least 2, rounded up to an even number).
    pub fn with_limit(limit: usize) -> Self {
        Self { limit: (limit.max(2) + 1) & !1, tracks: Vec::new() }
    }

    /// Keep `row`, after the rows of its scenario that came before it.
    pub fn push(&mut self, row: &IntervalRow) {
        let index = match self.tracks.iter().position(|t| t.scenario == row.scenario) {
            Some(index) => index,
            None => {
                self.tracks.push(Track { scenario: row.scenario.clone(), rows: Vec::new(), span: 1, pending: None });
                self.tracks.len() - 1
            }
        };
        let limit = self.limit;
        let track = &mut self.tracks[index];
        let filled = match &mut track.pending {
            Some((pending, intervals)) => {
                absorb(pending, row);
                *intervals += 1;
                *intervals
            }
            None => {
                track.pending = Some((row.clone(), 1));
                1
            }
        };
        if filled < track.span {
            return;
        }
        if let Some((full, _)) = track.pending.take() {
            track.rows.push(full);
        }
        if track.rows.len() >= limit {
            track.halve();
        }
    }

    /// Every kept row, scenario by scenario (in the order each first appeared), each in time
    /// order; a last row that covers fewer intervals than the others is included.
    pub fn rows(&self) -> impl Iterator<Item = &IntervalRow> {
        self.tracks.iter().flat_map(|t| t.rows.iter().chain(t.pending.as_ref().map(|(row, _)| row)))
    }

    /// How many rows are kept.
    pub fn len(&self) -> usize {
        self.rows().count()
    }

    /// Whether no row is kept.
    pub fn is_empty(&self) -> bool {
        self.tracks.is_empty()
    }

    /// The most intervals one kept row covers: 1 when nothing was merged.
    pub fn span(&self) -> u64 {
        self.tracks.iter().map(|t| t.span).max().unwrap_or(1)
    }
}

impl<'a> FromIterator<&'a IntervalRow> for ChartRows {
    fn from_iter<I: IntoIterator<Item = &'a IntervalRow>>(rows: I) -> Self {
        let mut kept = ChartRows::new();
        for row in rows {
            kept.push(row);
        }
        kept
    }
}

impl Track {
    /// Merge each two neighbouring rows into one; every later row covers twice the intervals.
    fn halve(&mut self) {
        let rows = std::mem::take(&mut self.rows);
        let mut pairs = rows.into_iter();
        while let Some(mut first) = pairs.next() {
            if let Some(second) = pairs.next() {
                absorb(&mut first, &second);
            }
            self.rows.push(first);
        }
        self.span *= 2;
    }
}

/// Fold the next row of the same scenario into `row`, by the rules of the module doc.
fn absorb(row: &mut IntervalRow, next: &IntervalRow) {
    row.end = next.end;
    row.counts.merge(&next.counts);
    row.started += next.started;
    row.lag_max = row.lag_max.max(next.lag_max);
    row.underrun += next.underrun;
    row.workers = row.workers.max(next.workers);
    row.idle = row.idle.max(next.idle);
    row.in_flight = row.in_flight.max(next.in_flight);
    row.latency = worst(&row.latency, &next.latency);
    row.service = worst(&row.service, &next.service);
    row.wait = worst(&row.wait, &next.wait);
    row.gate_wait = worst(&row.gate_wait, &next.gate_wait);
    row.http_reqs += next.http_reqs;
    row.http_req_failed += next.http_req_failed;
    row.http_denied += next.http_denied;
    row.http_duration = worst(&row.http_duration, &next.http_duration);
}

/// The worse of two intervals' distributions, figure by figure; an interval where nothing ended
/// (all zeros) has none and does not count.
fn worst(a: &Percentiles, b: &Percentiles) -> Percentiles {
    let empty = Percentiles::default();
    if *a == empty {
        return *b;
    }
    if *b == empty {
        return *a;
    }
    Percentiles {
        min: a.min.min(b.min),
        mean: a.mean.max(b.mean),
        p50: a.p50.max(b.p50),
        p90: a.p90.max(b.p90),
        p95: a.p95.max(b.p95),
        p99: a.p99.max(b.p99),
        p999: a.p999.max(b.p999),
        max: a.max.max(b.max),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadhost_metrics::{Gauges, Outcome, Window};

    use super::*;

    /// Second `i` of `scenario`: `i + 1` passed tasks, a latency of `i` ms, `i % 7` in flight.
    fn row(scenario: &str, i: u64) -> IntervalRow {
        let mut w = Window::default();
        w.counts.scheduled = i + 1;
        for _ in 0..=i {
            w.record_task(
                Outcome::Passed,
                Some(loadhost_metrics::TaskTiming {
                    wait: Duration::ZERO,
                    service: Duration::from_millis(i),
                    gate: None,
                }),
            );
        }
        let gauges = Gauges { started: i + 1, workers: 3, idle: 1, in_flight: i % 7 };
        let mut row = IntervalRow::from_window(i, Duration::from_secs(i), Duration::from_secs(i + 1), &w, gauges);
        row.scenario = Arc::from(scenario);
        row
    }

    #[test]
    fn under_the_limit_every_row_is_kept_as_it_came() {
        let rows: Vec<IntervalRow> = (0..10).map(|i| row("default", i)).collect();
        let kept: ChartRows = rows.iter().collect();
        assert_eq!(kept.rows().cloned().collect::<Vec<_>>(), rows);
        assert_eq!(kept.span(), 1);
    }

    #[test]
    fn past_the_limit_neighbours_merge_and_the_rows_stay_bounded() {
        let mut kept = ChartRows::with_limit(8);
        for i in 0..1_000 {
            kept.push(&row("default", i));
            assert!(kept.len() <= 9, "at most the limit and one partial row: {}", kept.len());
        }
        assert_eq!(kept.span(), 128, "1000 intervals in rows of 128");
        let rows: Vec<&IntervalRow> = kept.rows().collect();
        assert_eq!(rows.len(), 8, "7 full rows of 128 and the last 104");
        // The rows still tile the run: each starts where the one before ended.
        assert_eq!(rows[0].start, Duration::ZERO);
        assert_eq!(rows.last().map(|r| r.end), Some(Duration::from_secs(1_000)));
        for pair in rows.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        // Counts add up to the run's; the worst interval shows.
        let scheduled: u64 = rows.iter().map(|r| r.counts.scheduled).sum();
        assert_eq!(scheduled, (1..=1_000).sum::<u64>());
        assert_eq!(rows.iter().map(|r| r.started).sum::<u64>(), scheduled);
        assert_eq!(rows[0].latency.max, row("default", 127).latency.max, "the slowest of the first 128 seconds");
        // Second 0's tasks took no time at all, which a distribution cannot tell from no tasks.
        assert_eq!(rows[0].latency.min, row("default", 1).latency.min);
        assert_eq!(rows[0].in_flight, 6, "the most in flight at any interval's end");
        assert_eq!(rows[0].index, 0);
    }

    #[test]
    fn each_scenario_is_bounded_on_its_own() {
        let mut kept = ChartRows::with_limit(4);
        for i in 0..16 {
            kept.push(&row("browse", i));
            if i < 3 {
                kept.push(&row("buy", i));
            }
        }
        let buy: Vec<&IntervalRow> = kept.rows().filter(|r| &*r.scenario == "buy").collect();
        assert_eq!(buy.len(), 3, "buy never reached the limit");
        let browse = kept.rows().filter(|r| &*r.scenario == "browse").count();
        assert!(browse <= 4, "{browse}");
        assert_eq!(kept.span(), 8);
    }

    #[test]
    fn an_interval_where_nothing_ended_does_not_pull_the_minimum_to_zero() {
        let mut busy = row("default", 5);
        let quiet = IntervalRow::from_window(
            6,
            Duration::from_secs(6),
            Duration::from_secs(7),
            &Window::default(),
            Gauges::default(),
        );
        let before = busy.latency;
        absorb(&mut busy, &quiet);
        assert_eq!(busy.latency, before);
        assert!(busy.latency.min > 0.0);
        assert_eq!(busy.end, Duration::from_secs(7));
    }
}
