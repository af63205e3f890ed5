//! The table of `loadhost compare`: every figure both runs have, in the order the run summary shows
//! them, each labelled with the name `--fail-on` takes for it (`latency_ms:p(99)`).

use loadhost_metrics::catalogue::Timing;
use loadhost_metrics::catalogue::names::{TASKS_NOT_PASSED, TASKS_STARTED};
use loadhost_metrics::compare::Change;
use loadhost_output::summary::{HttpMetrics, PercentileView, PluginMetric, Summary};

use super::report::{MetricRow, Shown};

/// The figures both runs have, in the order the summary shows them.
pub(super) fn metric_rows(base: &Summary, new: &Summary) -> Vec<MetricRow> {
    let mut rows = Vec::new();
    let mut push = |metric: String, unit: Shown, b: Option<f64>, n: Option<f64>| {
        let change = b.zip(n).map(|(b, n)| Change::new(b, n));
        rows.push(MetricRow {
            metric,
            unit,
            base: b,
            new: n,
            delta: change.map(|c| c.delta),
            relative: change.and_then(|c| c.relative),
        });
    };
    for timing in Timing::ALL {
        if timing == Timing::GateWait && !base.gate_was_used() && !new.gate_was_used() {
            continue;
        }
        for (stat, b, n) in stats(base.timing_view(timing), new.timing_view(timing)) {
            push(format!("{}:{stat}", timing.name()), Shown::Ms, Some(b), Some(n));
        }
    }
    push(format!("{TASKS_STARTED}:rate"), Shown::PerS, Some(base.rate.achieved_per_s), Some(new.rate.achieved_per_s));
    let not_passed = |s: &Summary| share(s.tasks.not_passed(), s.tasks.ended());
    push(format!("{TASKS_NOT_PASSED}:rate"), Shown::Share, not_passed(base), not_passed(new));
    if !base.checks.is_empty() || !new.checks.is_empty() {
        let checks = |s: &Summary| {
            let (p, f) = s.checks.values().fold((0, 0), |(p, f), c| (p + c.passes, f + c.fails));
            share(p, p + f)
        };
        push("checks:rate".into(), Shown::Share, checks(base), checks(new));
    }
    http_rows(base, new, &mut push);
    plugin_rows(base, new, &mut push);
    rows
}

type Push<'a> = dyn FnMut(String, Shown, Option<f64>, Option<f64>) + 'a;

fn http_rows(base: &Summary, new: &Summary, push: &mut Push<'_>) {
    if base.metrics.http.is_none() && new.metrics.http.is_none() {
        return;
    }
    let (b, n) = (base.metrics.http.as_ref(), new.metrics.http.as_ref());
    push("http_reqs:rate".into(), Shown::PerS, b.map(|h| h.reqs.rate), n.map(|h| h.reqs.rate));
    let failed = |h: Option<&HttpMetrics>| h.and_then(|h| share(h.failed.passes, h.reqs.count));
    push("http_req_failed:rate".into(), Shown::Share, failed(b), failed(n));
    let empty = PercentileView::default();
    let views = (b.map_or(&empty, |h| &h.duration.stats), n.map_or(&empty, |h| &h.duration.stats));
    for (stat, bv, nv) in stats(views.0, views.1) {
        push(format!("http_req_duration:{stat}"), Shown::Ms, b.map(|_| bv), n.map(|_| nv));
    }
}

/// Plugin trends (their statistics), counters (counts) and gauges (values), by name.
fn plugin_rows(base: &Summary, new: &Summary, push: &mut Push<'_>) {
    let mut names: Vec<&str> = base.metrics.by_name().chain(new.metrics.by_name()).map(|(name, _)| name).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let (b, n) = (base.metrics.plugin.get(name), new.metrics.plugin.get(name));
        match b.or(n) {
            Some(PluginMetric::Trend(_)) => {
                let trend = |m: Option<&PluginMetric>| match m {
                    Some(PluginMetric::Trend(t)) => Some(t.stats),
                    _ => None,
                };
                let (bt, nt) = (trend(b), trend(n));
                let empty = PercentileView::default();
                for (stat, bv, nv) in stats(bt.as_ref().unwrap_or(&empty), nt.as_ref().unwrap_or(&empty)) {
                    push(format!("{name}:{stat}"), Shown::Plain, bt.map(|_| bv), nt.map(|_| nv));
                }
            }
            Some(PluginMetric::Counter(_)) => {
                let count = |m: Option<&PluginMetric>| match m {
                    Some(PluginMetric::Counter(c)) => Some(c.count as f64),
                    _ => None,
                };
                push(format!("{name}:count"), Shown::Count, count(b), count(n));
            }
            Some(PluginMetric::Gauge(_)) => {
                let value = |m: Option<&PluginMetric>| match m {
                    Some(PluginMetric::Gauge(g)) => Some(g.value),
                    _ => None,
                };
                push(format!("{name}:value"), Shown::Plain, value(b), value(n));
            }
            _ => {}
        }
    }
}

/// The statistics of a view a table shows, with the names `--fail-on` takes.
fn stats(b: &PercentileView, n: &PercentileView) -> [(&'static str, f64, f64); 7] {
    [
        ("avg", b.mean, n.mean),
        ("p(50)", b.p50, n.p50),
        ("p(90)", b.p90, n.p90),
        ("p(95)", b.p95, n.p95),
        ("p(99)", b.p99, n.p99),
        ("p(99.9)", b.p999, n.p999),
        ("max", b.max, n.max),
    ]
}

fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}
