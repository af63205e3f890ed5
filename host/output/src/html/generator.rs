//! The generator's verdict in the report: its sentence beside the run's verdict, and on every
//! latency chart a band over each interval where the generator was degraded (amber) or saturated
//! (red), so a reader sees which stretch of a latency line may be the generator's own waiting.
//!
//! The bands come from the summary's `generator.intervals` (on the run's timeline, as the charts'
//! x is); the page script fills them under the series (`shading` in the data block). A latency
//! chart is one whose unit is milliseconds: every chart on the run's time axis that shows a time.

use std::fmt::Write as _;

use loadhost_metrics::GeneratorVerdict;
use serde_json::{Value, json};

use super::text::{capitalised, esc};
use crate::summary::Summary;

/// The unit of a latency chart: these charts get the bands.
const LATENCY_UNIT: &str = "ms";

/// Band colours, light enough that the lines over them stay readable.
const AMBER: &str = "rgba(255, 179, 0, 0.18)";
const RED: &str = "rgba(229, 57, 53, 0.16)";

fn color(verdict: GeneratorVerdict) -> Option<&'static str> {
    match verdict {
        GeneratorVerdict::Healthy => None,
        GeneratorVerdict::Degraded => Some(AMBER),
        GeneratorVerdict::Saturated => Some(RED),
    }
}

/// What the page script shades: `bands` (`from`/`to` in seconds on the run's timeline, `color`,
/// `verdict`) on the charts named in `charts`. No bands when the generator was healthy throughout
/// or not measured.
pub(super) fn shading(summary: &Summary, charts: &[(&str, &str, &str)]) -> Value {
    let bands: Vec<Value> = summary
        .generator
        .iter()
        .flat_map(|g| &g.intervals)
        .filter_map(|i| {
            let verdict = i.verdict?;
            let color = color(verdict)?;
            Some(json!({ "from": i.start_s, "to": i.end_s, "verdict": verdict, "color": color }))
        })
        .collect();
    // The phases chart is in milliseconds too, but its axis is the phases, not the run's time.
    let on_the_timeline = |id: &str| id != super::phases::ID;
    let charts: Vec<&str> = charts
        .iter()
        .filter(|(id, _, unit)| *unit == LATENCY_UNIT && on_the_timeline(id))
        .map(|(id, ..)| *id)
        .collect();
    json!({ "bands": bands, "charts": charts })
}

/// The generator's sentence, under the run's verdict, when it was degraded or saturated.
pub(super) fn verdict_note(out: &mut String, summary: &Summary) {
    let Some(g) = &summary.generator else { return };
    let (Some(verdict), Some(why)) = (g.verdict, &g.why) else { return };
    if verdict == GeneratorVerdict::Healthy {
        return;
    }
    let _ =
        writeln!(out, "<p class=\"generator {verdict}\" id=\"generator-verdict\">⚠️ {}</p>", esc(&capitalised(why)));
}

/// The note under the charts saying what the bands mean, when there are any.
pub(super) fn legend(out: &mut String, summary: &Summary) {
    let Some(g) = &summary.generator else { return };
    let has = |v| g.intervals.iter().any(|i| i.verdict == Some(v));
    let (degraded, saturated) = (has(GeneratorVerdict::Degraded), has(GeneratorVerdict::Saturated));
    if !degraded && !saturated {
        return;
    }
    let mut kinds = Vec::new();
    if saturated {
        kinds.push(
            "<span class=\"swatch saturated\"></span> red: the generator was saturated (its own waiting is a \
                    visible part of the latencies: they are upper bounds there)",
        );
    }
    if degraded {
        kinds.push(
            "<span class=\"swatch degraded\"></span> amber: the generator was degraded (short of CPU; its \
                    figures hold)",
        );
    }
    let _ = writeln!(
        out,
        "<p class=\"note\" id=\"generator-shading\">Shaded on the latency charts: {}. See the verdict at the top.</p>",
        kinds.join("; ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::generator::judged;
    use crate::summary::tests::sample;

    const CHARTS: [(&str, &str, &str); 4] = [
        ("a", "rate", "tasks/s"),
        ("b", "latency", "ms"),
        ("c", "service", "ms"),
        (super::super::phases::ID, "phases", "ms"),
    ];

    #[test]
    fn saturated_and_degraded_intervals_are_bands_on_every_latency_chart() {
        use GeneratorVerdict::*;
        let s = judged(&[Some(Healthy), Some(Saturated), Some(Saturated), Some(Degraded), None], Some("the x"));
        let shading = shading(&s, &CHARTS);
        assert_eq!(
            shading["charts"],
            json!(["b", "c"]),
            "the charts of times on the timeline, not the rate, not the phases"
        );
        let bands = shading["bands"].as_array().unwrap();
        let spans: Vec<(f64, f64, &str)> = bands
            .iter()
            .map(|b| (b["from"].as_f64().unwrap(), b["to"].as_f64().unwrap(), b["verdict"].as_str().unwrap()))
            .collect();
        assert_eq!(spans, [(1.0, 2.0, "saturated"), (2.0, 3.0, "saturated"), (3.0, 4.0, "degraded")]);
        assert_eq!(bands[0]["color"], RED);
        assert_eq!(bands[2]["color"], AMBER);
        let mut out = String::new();
        legend(&mut out, &s);
        assert!(out.contains("red: the generator was saturated") && out.contains("amber: the generator was degraded"));
        let mut out = String::new();
        verdict_note(&mut out, &s);
        assert!(out.contains("id=\"generator-verdict\">⚠️ The x</p>"), "{out}");
    }

    #[test]
    fn a_healthy_or_unmeasured_generator_shades_and_says_nothing() {
        use GeneratorVerdict::*;
        for s in [judged(&[Some(Healthy), Some(Healthy), None], None), sample()] {
            assert_eq!(shading(&s, &CHARTS)["bands"], json!([]));
            let mut out = String::new();
            legend(&mut out, &s);
            verdict_note(&mut out, &s);
            assert_eq!(out, "");
        }
    }
}
