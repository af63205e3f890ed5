//! The HTTP phases chart: where a request's time went, as two stacked bars (p50 and p95), one
//! segment per phase in the order a request goes through them (`http_req_blocked` at the bottom,
//! `http_req_receiving` on top). Not over time: its x is the two percentiles. Each bar's height is
//! the sum of the phases' percentiles, which is not a percentile of the whole request (percentiles
//! do not add up); the legend shows each phase's own value.

use loadhost_metrics::catalogue::Phase;
use serde_json::{Value, json};

use crate::round_ms;
use crate::summary::Summary;

/// The chart's element id (one of `charts::CHARTS`).
pub(super) const ID: &str = "chart-phases";

fn color(phase: Phase) -> &'static str {
    match phase {
        Phase::Blocked => "#7f7f7f",
        Phase::Connecting => "#9467bd",
        Phase::TlsHandshaking => "#e377c2",
        Phase::Sending => "#ff7f0e",
        Phase::Waiting => "#1f77b4",
        Phase::Receiving => "#2ca02c",
    }
}

/// The chart for the page script: `kind: "stacked"`, x the bars, and per phase its own values
/// (`own`, for the legend) and the running sum it is drawn to (`values`). Series are listed top
/// segment first, so each is drawn behind the ones below it. No series when no request recorded
/// its phases (the chart is then empty, like the others of a run without rows).
pub(super) fn chart(summary: &Summary) -> Value {
    let phases = summary.metrics.http.as_ref().map(|h| &h.phases).filter(|p| !p.is_empty());
    let mut series = Vec::new();
    let mut sums = [0.0_f64; 2];
    for phase in Phase::ALL {
        let Some(trend) = phases.and_then(|p| p.get(&phase)) else { continue };
        let own = [round_ms(trend.stats.p50), round_ms(trend.stats.p95)];
        sums[0] += own[0];
        sums[1] += own[1];
        let values = sums.map(round_ms);
        series.push(json!({ "label": phase.stem(), "color": color(phase), "own": own, "values": values }));
    }
    series.reverse();
    json!({ "id": ID, "unit": "ms", "kind": "stacked", "x": [0, 1], "ticks": ["p50", "p95"], "series": series })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::results::testkit::{run_info, synthetic};

    /// Segments stack in the request's order (drawn top first), each drawn to its running sum,
    /// with its own value for the legend; a run without phases has no segment.
    #[test]
    fn phases_stack_in_request_order_with_their_own_values() {
        let run = synthetic(3, None, Duration::ZERO, 4, 200);
        let summary = Summary::new(&run_info(), &run.report, &[], &[]);
        let chart = chart(&summary);
        let series = chart["series"].as_array().expect("series");
        let labels: Vec<&str> = series.iter().filter_map(|s| s["label"].as_str()).collect();
        assert_eq!(labels, ["receiving", "waiting", "sending", "tls_handshaking", "connecting", "blocked"]);
        let (top, bottom) = (&series[0], &series[5]);
        assert_eq!(bottom["values"], bottom["own"], "the bottom segment starts at 0");
        let p95 = |s: &Value, key: &str| s[key][1].as_f64().expect("a p95");
        let total: f64 = series.iter().map(|s| p95(s, "own")).sum();
        assert!((p95(top, "values") - total).abs() < 0.01, "the top reaches the sum of every phase's p95");

        let mut empty = summary.clone();
        if let Some(http) = empty.metrics.http.as_mut() {
            http.phases.clear();
        }
        assert_eq!(super::chart(&empty)["series"], serde_json::json!([]));
    }
}
