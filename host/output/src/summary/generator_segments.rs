//! A merged run's `generator` section: a distributed run has a generator per process, so each
//! segment is judged on its own (`segments`), and the section's verdict and sentence are the worst
//! segment's, naming it ("segment 1/3: the generator was saturated from …"). The figures are summed
//! up over every segment's intervals; the per-interval series stays in each segment's own run
//! (the merged `intervals` is empty: the segments' intervals do not share one generator).

use loadhost_metrics::{GeneratorReport, GeneratorTally, GeneratorVerdict};
use serde::{Deserialize, Serialize};

use super::generator::Generator;
use crate::results::{PartGenerator, segment_name};

/// One segment's generator in a merged run. Keys sorted, as the summary's are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratorSegment {
    /// The results file it came from (as `merge` was given it).
    pub file: String,
    /// Its segment, `I/N` (null when the parts ran whole plans).
    pub segment: Option<String>,
    /// Its worst interval's verdict (null: nothing judged).
    pub verdict: Option<GeneratorVerdict>,
    /// How many of its intervals were judged, degraded and saturated.
    pub verdicts: GeneratorTally,
    /// Its sentence, naming it (null when every judged interval was healthy).
    pub why: Option<String>,
}

impl GeneratorSegment {
    /// How outputs name it: `segment I/N`, or its file.
    fn name(&self) -> String {
        self.segment.as_ref().map_or_else(|| self.file.clone(), |s| format!("segment {s}"))
    }
}

impl Generator {
    /// The section of a merged run whose parts' generators are `parts`; `None` when no part's
    /// figures were measured (results files written before they were kept).
    pub fn of_segments(parts: &[PartGenerator]) -> Option<Generator> {
        if parts.is_empty() {
            return None;
        }
        let all = GeneratorReport {
            cores_allowed: parts.iter().map(|p| p.report.cores_allowed).sum(),
            intervals: parts.iter().flat_map(|p| p.report.intervals.iter().cloned()).collect(),
        };
        let mut merged = Generator::new(&all);
        merged.intervals.clear();
        merged.segments = parts
            .iter()
            .map(|p| {
                let one = Generator::new(&p.report);
                let mut segment = GeneratorSegment {
                    file: p.label.clone(),
                    segment: p.segment.as_ref().map(segment_name),
                    verdict: one.verdict,
                    verdicts: one.verdicts,
                    why: None,
                };
                segment.why = one.why.map(|why| format!("{}: {why}", segment.name()));
                segment
            })
            .collect();
        merged.why = worst_why(&merged.segments);
        Some(merged)
    }
}

/// The worst segment's sentence (the first at the worst verdict), and the others at that verdict.
fn worst_why(segments: &[GeneratorSegment]) -> Option<String> {
    let worst = segments.iter().filter_map(|s| s.verdict).max()?;
    let mut at_worst = segments.iter().filter(|s| s.verdict == Some(worst) && s.why.is_some());
    let first = at_worst.next()?;
    let others: Vec<String> = at_worst.map(GeneratorSegment::name).collect();
    let why = first.why.clone()?;
    Some(if others.is_empty() { why } else { format!("{why} (as was {}: see `segments`)", others.join(", ")) })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadhost_engine::Segment;
    use loadhost_metrics::generator_verdict::judge;
    use loadhost_metrics::{GeneratorHealth, MeasuredInterval};

    use super::*;

    /// A part whose generator's loops waited `run_queue` of each of three intervals.
    fn part(index: u32, run_queue: f64) -> PartGenerator {
        let health = GeneratorHealth { cpu: Some(0.3), run_queue_max: Some(run_queue), ..Default::default() };
        let intervals = (0..3u64)
            .map(|s| MeasuredInterval {
                start: Duration::from_secs(s),
                end: Duration::from_secs(s + 1),
                health,
                judgement: judge(&health, Some(2.0)),
            })
            .collect();
        PartGenerator {
            label: format!("seg{index}.res"),
            segment: Segment::new(index, 3).ok(),
            report: GeneratorReport { cores_allowed: 1.0, intervals },
        }
    }

    #[test]
    fn the_merged_verdict_names_the_segment_that_was_saturated() {
        let g = Generator::of_segments(&[part(0, 0.01), part(1, 0.4), part(2, 0.06)]).unwrap();
        assert_eq!(g.verdict, Some(GeneratorVerdict::Saturated));
        assert_eq!((g.verdicts.judged, g.verdicts.saturated, g.verdicts.degraded), (9, 3, 3));
        assert_eq!(g.cores_allowed, 3.0);
        assert!(g.intervals.is_empty(), "the segments' intervals stay in their own runs");
        let why = g.why.as_deref().unwrap();
        assert!(why.starts_with("segment 1/3: the generator was saturated from 0 s to 3 s"), "{why}");
        let verdicts: Vec<_> = g.segments.iter().map(|s| (s.segment.as_deref(), s.verdict)).collect();
        assert_eq!(
            verdicts,
            [
                (Some("0/3"), Some(GeneratorVerdict::Healthy)),
                (Some("1/3"), Some(GeneratorVerdict::Saturated)),
                (Some("2/3"), Some(GeneratorVerdict::Degraded))
            ]
        );
        assert!(g.segments[2].why.as_deref().is_some_and(|w| w.starts_with("segment 2/3: the generator was degraded")));
        let json = serde_json::to_value(&g).unwrap();
        assert_eq!(json["segments"][1]["file"], "seg1.res");
        assert_eq!(json["segments"][1]["verdict"], "saturated");
    }

    #[test]
    fn parts_without_figures_make_no_section_and_healthy_ones_no_sentence() {
        assert_eq!(Generator::of_segments(&[]), None);
        let g = Generator::of_segments(&[part(0, 0.0), part(1, 0.01)]).unwrap();
        assert_eq!((g.verdict, g.why), (Some(GeneratorVerdict::Healthy), None));
    }
}
