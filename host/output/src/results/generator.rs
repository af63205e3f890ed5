//! Each part's generator, for a merge: a distributed run has one generator per process, so the
//! merged run is not judged as one; each part's intervals (their `generator` figures, judged as
//! the run judged them) make that part's [`GeneratorReport`], and the outputs name the segment
//! whose generator was degraded or saturated (see `summary::generator_segments`).

use loadhost_engine::Segment;
use loadhost_metrics::{GeneratorReport, MeasuredInterval};

use super::format::RunResults;

/// One part's generator over its run.
#[derive(Debug, Clone, PartialEq)]
pub struct PartGenerator {
    /// The part's label (its file name in `loadhost merge`).
    pub label: String,
    /// Its segment, when the plan was split.
    pub segment: Option<Segment>,
    /// Its figures and verdicts, interval by interval.
    pub report: GeneratorReport,
}

/// The generator of the part labelled `label`, from its intervals as (scenario, figures); `None`
/// when none was measured (a virtual clock, or a file written before the figures were kept).
/// Every scenario's rows carry the same process's figures, so the first scenario's are taken.
pub(super) fn of_part<'a>(
    label: &str,
    results: &RunResults,
    intervals: impl Iterator<Item = (&'a str, Option<&'a MeasuredInterval>)>,
) -> Option<PartGenerator> {
    let mut scenario = None;
    let mut measured = Vec::new();
    for (name, interval) in intervals {
        let Some(interval) = interval else { continue };
        if *scenario.get_or_insert(name) == name {
            measured.push(interval.clone());
        }
    }
    measured.sort_by_key(|i| i.start);
    (!measured.is_empty()).then(|| PartGenerator {
        label: label.to_owned(),
        segment: results.segment,
        report: GeneratorReport { cores_allowed: results.cores_allowed.unwrap_or(0.0), intervals: measured },
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadhost_metrics::{GeneratorHealth, GeneratorTally, Threshold, Window};

    use super::*;
    use crate::results::testkit::*;
    use crate::results::{CutFiles, IntervalRecord, merge, merge_files, read_for_merge, write};

    #[test]
    fn results_files_carry_the_figures_and_a_merge_judges_each_segment() {
        let parts: Vec<RunResults> =
            (0..2u32).map(|i| synthetic(u64::from(i), Some(seg(i, 2)), Duration::ZERO, 5, 20)).collect();
        let back: Vec<RunResults> = parts.iter().map(write_read).collect();
        for (part, back) in parts.iter().zip(&back) {
            assert_eq!(back.cores_allowed, Some(2.0));
            let figures = |r: &RunResults| r.intervals.iter().map(|i| i.generator).collect::<Vec<_>>();
            assert_eq!(figures(back), figures(part), "the figures round-trip");
            assert!(figures(back).iter().all(GeneratorHealth::is_measured));
        }
        let merged = merge(back).unwrap();
        assert_eq!(merged.generators.len(), 2);
        assert_eq!(merged.generators[1].segment, Some(seg(1, 2)));
        assert_eq!(merged.generators[1].report.intervals.len(), 5);
        // Each interval judged again from the file as the run judged it (the synthetic windows
        // counted the same verdicts).
        let mut tally = GeneratorTally::default();
        for g in &merged.generators {
            g.report.intervals.iter().filter_map(|i| i.judgement.as_ref()).for_each(|j| tally.count(j.verdict));
        }
        assert_eq!(merged.report.totals.generator, tally, "the merged totals hold every segment's verdicts");
        assert_eq!(tally.judged, 10);
        // The threshold a CI sets reads the merged totals: the share of intervals saturated.
        let threshold: Threshold = "generator_saturated:rate==0".parse().unwrap();
        let verdict = threshold.evaluate(&merged.report).unwrap();
        assert_eq!(verdict.value, tally.saturated as f64 / 10.0);
        assert_eq!(verdict.passed, tally.saturated == 0);
        assert!(tally.saturated > 0, "the synthetic figures have saturated intervals: {tally:?}");
    }

    #[test]
    fn files_without_figures_still_read_and_merge_with_nothing_judged() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<(String, crate::results::ResultsFile)> = (0..2u32)
            .map(|i| {
                let mut part = synthetic(u64::from(i), Some(seg(i, 2)), Duration::ZERO, 3, 10);
                // As a file written before the figures were kept.
                part.cores_allowed = None;
                part.report.totals.generator = GeneratorTally::default();
                part.intervals = part
                    .intervals
                    .into_iter()
                    .map(|r| IntervalRecord {
                        generator: GeneratorHealth::default(),
                        window: Window { generator: GeneratorTally::default(), ..r.window },
                        ..r
                    })
                    .collect();
                let path = dir.path().join(format!("old-{i}.lhr"));
                write(&path, &part).unwrap();
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(!text.contains("\"generator\":{") && !text.contains("cores_allowed"), "nothing written");
                (format!("old-{i}.lhr"), read_for_merge(&path, CutFiles::Refuse).unwrap())
            })
            .collect();
        let merged = merge_files(files).unwrap();
        assert!(merged.generators.is_empty());
        assert_eq!(crate::summary::Generator::of_segments(&merged.generators), None);
    }
}
