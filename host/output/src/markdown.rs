//! `--markdown FILE`: a compact Markdown summary for a pull-request comment or a CI job summary:
//! the verdict, the thresholds with their values, tasks by outcome, the rate, the latency views,
//! the checks and the most frequent errors. A degraded or saturated generator is a warning under
//! the verdict (its sentence) and a line of its own beside the rate; a healthy one is not mentioned.
//! A partial merge (segments missing, files cut off) is never a clean ✅: its headline is ⚠️ (❌
//! when it failed), its first line says what is missing, and the rate is stated against the whole
//! plan with the missing share.

use std::fmt::Write as _;

use loadhost_metrics::{GeneratorVerdict, Outcome};

use crate::summary::Summary;
use crate::terminal::rate_text;

/// Error kinds listed.
const TOP_ERRORS: usize = 5;

/// Text for a Markdown table cell: pipes escaped, on one line.
fn cell(text: &str) -> String {
    crate::shorten(text, 200).replace('|', "\\|")
}

fn ms(v: f64) -> String {
    if v >= 100.0 { format!("{v:.0}") } else { format!("{v:.2}") }
}

/// The whole Markdown text.
pub fn render(s: &Summary) -> String {
    let mut out = String::new();
    let partial = s.partial();
    let mark = if s.failed() {
        "❌"
    } else if partial.is_some() {
        "⚠️"
    } else {
        "✅"
    };
    let _ = writeln!(out, "### {mark} loadhost · `{}`\n", cell(&s.plugin.path));
    if let Some(partial) = partial {
        let _ = writeln!(out, "> ⚠️ {partial}\n");
    }
    let _ = writeln!(out, "**Verdict:** {}\n", cell(&s.verdict_sentence()));
    if let Some((_, why)) = generator_warning(s) {
        // Whole, unlike a table cell: the sentence ends with what to do.
        let _ = writeln!(out, "> ⚠️ {}\n", why.replace('\n', " "));
    }
    thresholds(&mut out, s);
    tasks(&mut out, s);
    generator(&mut out, s);
    views(&mut out, s);
    checks(&mut out, s);
    errors(&mut out, s);
    out
}

fn thresholds(out: &mut String, s: &Summary) {
    if s.thresholds.is_empty() {
        return;
    }
    out.push_str("| | threshold | value |\n|---|---|---|\n");
    for (expr, t) in s.thresholds.iter() {
        let mark = if t.ok { "✓" } else { "✗" };
        let value = t.value.map_or_else(|| "no samples".to_owned(), |v| format!("{v}"));
        let _ = writeln!(out, "| {mark} | `{}` | {value} |", cell(expr));
    }
    out.push('\n');
}

fn tasks(out: &mut String, s: &Summary) {
    let t = &s.tasks;
    let outcomes: Vec<String> = Outcome::ALL
        .iter()
        .filter(|&&o| o != Outcome::Passed && t.count(o) > 0)
        .map(|&o| format!("{} {}", t.count(o), o.name().replace('_', " ")))
        .collect();
    let others = if outcomes.is_empty() { String::new() } else { format!(" · {}", outcomes.join(" · ")) };
    let _ = writeln!(out, "**Tasks:** {} scheduled · {} passed{others}  ", t.scheduled, t.passed);
    let rate = rate_text(t.started, s.rate.achieved_per_s).unwrap_or_else(|| "too few tasks for a rate".to_owned());
    let missing = s.merged.as_ref().and_then(|m| m.missing_rate_note()).map(|n| format!(" ({n})")).unwrap_or_default();
    let planned = s.rate.target_per_s.map(|r| format!(" of {r:.1}/s planned{missing}")).unwrap_or_default();
    let _ = writeln!(out, "**Rate:** {rate}{planned} · **Duration:** {:.1} s\n", s.duration_s);
}

/// The generator's verdict and sentence, when it was degraded or saturated.
fn generator_warning(s: &Summary) -> Option<(GeneratorVerdict, &str)> {
    let g = s.generator.as_ref()?;
    let verdict = g.verdict.filter(|v| *v != GeneratorVerdict::Healthy)?;
    Some((verdict, g.why.as_deref()?))
}

/// The generator's line: its verdict and how many intervals were degraded or saturated.
fn generator(out: &mut String, s: &Summary) {
    let (Some((verdict, _)), Some(g)) = (generator_warning(s), &s.generator) else { return };
    let n = &g.verdicts;
    let cpu =
        g.cpu_p50().map(|c| format!(" · CPU p50 {:.0}% of {} cores", c * 100.0, g.cores_allowed)).unwrap_or_default();
    let _ = writeln!(
        out,
        "**Generator:** {verdict} · {} saturated, {} degraded of {} intervals{cpu}\n",
        n.saturated, n.degraded, n.judged
    );
}

fn views(out: &mut String, s: &Summary) {
    out.push_str("| ms | p50 | p90 | p95 | p99 | max |\n|---|---|---|---|---|---|\n");
    for timing in s.timings() {
        let (name, v) = (timing.stem(), s.timing_view(timing));
        let _ =
            writeln!(out, "| {name} | {} | {} | {} | {} | {} |", ms(v.p50), ms(v.p90), ms(v.p95), ms(v.p99), ms(v.max));
    }
    out.push('\n');
}

fn checks(out: &mut String, s: &Summary) {
    if s.checks.is_empty() {
        return;
    }
    out.push_str("| | check | pass rate |\n|---|---|---|\n");
    for (name, c) in &s.checks {
        let mark = if c.fails == 0 { "✓" } else { "✗" };
        let rate = c.rate().map_or_else(|| "–".to_owned(), |r| format!("{:.2}% ({} failed)", r * 100.0, c.fails));
        let _ = writeln!(out, "| {mark} | {} | {rate} |", cell(name));
        // A compact comment: of the tagged cases, only those that failed.
        for case in c.cases.iter().filter(|case| case.fails > 0) {
            let rate = case.rate().unwrap_or(0.0) * 100.0;
            let label = format!("{name} {}", case.label());
            let _ = writeln!(out, "| ✗ | {} | {rate:.2}% ({} failed) |", cell(&label), case.fails);
        }
    }
    out.push('\n');
}

fn errors(out: &mut String, s: &Summary) {
    if s.errors.is_empty() {
        return;
    }
    let _ = writeln!(out, "**Top errors** ({} kinds)\n", s.errors.len());
    out.push_str("| count | outcome | example |\n|---|---|---|\n");
    for e in s.errors.iter().take(TOP_ERRORS) {
        let _ = writeln!(out, "| {} | {} | `{}` |", e.count, e.outcome.as_str(), cell(&e.example).replace('`', "'"));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tests::sample;

    #[test]
    fn the_facts_of_the_run_in_tables() {
        let text = render(&sample());
        for needle in [
            "### ❌ loadhost · `noop.wasm`",
            "**Verdict:** limited by the target: size:p(99)<1 broke",
            "| ✗ | `size:p(99)<1` | 3.5 |",
            "| ✗ | `login_ms:max<1` | no samples |",
            "**Tasks:** 10 scheduled · 4 passed · 3 failed · 2 dropped · 1 trapped",
            "| latency |",
            "| ✓ | ok | 100.00% (0 failed) |",
            "| 3 | failed | `order 0 refused` |",
        ] {
            assert!(text.contains(needle), "{needle} missing in\n{text}");
        }
    }

    #[test]
    fn a_checks_failed_cases_get_a_row_each() {
        use crate::summary::{CheckCase, CheckCounts};
        let mut s = sample();
        let case = |tier: &str, passes, fails| CheckCase { fails, passes, tags: [("tier".into(), tier.into())].into() };
        let cases = vec![case("gold", 10, 0), case("silver", 3, 1)];
        s.checks.insert("status is 200".into(), CheckCounts { cases, fails: 1, passes: 13 });
        let text = render(&s);
        assert!(
            text.contains(
                "| ✗ | status is 200 | 92.86% (1 failed) |\n| ✗ | status is 200 {tier:silver} | 75.00% (1 failed) |\n"
            ),
            "{text}"
        );
        assert!(!text.contains("tier:gold"), "a case that held is left out: {text}");
    }

    /// The timings come from the catalogue's list: the gate wait shows when a gate was used, as
    /// in the terminal, and not otherwise.
    #[test]
    fn the_gate_wait_row_shows_only_when_a_gate_was_used() {
        let mut s = sample();
        assert!(s.gate_was_used(), "the sample run had a gate");
        assert!(render(&s).contains("| gate_wait |"));
        s.notes.gate_waits = 0;
        s.gate_wait_ms = Default::default();
        let text = render(&s);
        assert!(text.contains("| wait |") && !text.contains("| gate_wait |"), "{text}");
    }

    /// A partial merge is never a clean ✅: ⚠️, the missing segment named on the first line, and
    /// the rate against the whole plan with the missing share.
    #[test]
    fn a_partial_merge_warns_at_the_top_and_states_the_rate_against_the_whole_plan() {
        let mut s = sample();
        s.thresholds.0.retain(|(_, t)| t.ok);
        (s.tasks.failed, s.tasks.trapped) = (0, 0);
        assert!(render(&s).starts_with("### ✅ loadhost"), "the sample passes");
        s.merged = Some(crate::summary::tests::partial());
        s.rate.target_per_s = Some(6.0);
        let text = render(&s);
        assert!(
            text.starts_with(
                "### ⚠️ loadhost · `noop.wasm`\n\n> ⚠️ partial: 1 of 3 segments missing (segment 2/3): 33% of the plan did not run\n"
            ),
            "{text}"
        );
        assert!(text.contains("of 6.0/s planned (33% of the plan was in the missing segment 2/3)"), "{text}");
        assert!(render(&sample()).starts_with("### ❌"), "a failed run stays ❌");
    }

    #[test]
    fn pipes_in_names_do_not_break_the_table() {
        assert_eq!(cell("a|b"), "a\\|b");
    }

    #[test]
    fn a_degraded_or_saturated_generator_is_a_warning_and_a_line() {
        use crate::summary::generator::judged;
        use loadhost_metrics::GeneratorVerdict::{Degraded, Healthy, Saturated};
        let why = "the generator was saturated from 1 s to 2 s (1 of 3 intervals): x";
        let text = render(&judged(&[Some(Healthy), Some(Saturated), Some(Degraded)], Some(why)));
        assert!(text.contains(&format!("> ⚠️ {why}\n")), "{text}");
        let warning = text.find("> ⚠️").unwrap();
        assert!(text.find("**Verdict:**").unwrap() < warning && warning < text.find("**Tasks:**").unwrap());
        assert!(text.contains("**Generator:** saturated · 1 saturated, 1 degraded of 3 intervals"), "{text}");
        for quiet in [judged(&[Some(Healthy), None], None), sample()] {
            let text = render(&quiet);
            assert!(!text.contains("⚠️") && !text.contains("**Generator:**"), "{text}");
        }
    }
}
