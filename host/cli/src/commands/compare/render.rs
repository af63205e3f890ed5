//! The comparison as text: the terminal and the Markdown (a pull-request comment or a job
//! summary), from one [`Report`]; numbers as the run summary prints them.

use std::fmt::Write as _;

use loadhost_metrics::compare::Change;

use super::report::{MetricRow, Report, Shown, TEST};

/// A number with precision that shrinks as it grows (as the run summary prints milliseconds).
fn number(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

pub(super) fn value(v: f64, unit: Shown) -> String {
    match unit {
        Shown::Ms => format!("{} ms", number(v)),
        Shown::PerS => format!("{v:.1}/s"),
        Shown::Share => format!("{:.2}%", v * 100.0),
        Shown::Count => format!("{v:.0}"),
        Shown::Plain => number(v),
    }
}

pub(super) fn delta(d: f64, unit: Shown) -> String {
    let sign = if d < 0.0 { "-" } else { "+" };
    match unit {
        Shown::Share => format!("{d:+.2}pp", d = d * 100.0),
        _ => format!("{sign}{}", value(d.abs(), unit)),
    }
}

pub(super) fn relative(change: &Change) -> String {
    match change.relative {
        Some(r) => format!("{:+.1}%", r * 100.0),
        None if change.delta == 0.0 => "+0.0%".to_owned(),
        None => format!("{} from 0", delta(change.delta, Shown::Plain)),
    }
}

/// `p=0.0003`, `p<0.0001`.
pub(super) fn p_value(p: f64) -> String {
    if p < 1e-4 { "p<0.0001".to_owned() } else { format!("p={}", short(p)) }
}

/// A probability to four decimals at most, without trailing zeros: `0.005`, `0.0033`, `1`.
pub(super) fn short(p: f64) -> String {
    let text = format!("{p:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn cells(row: &MetricRow) -> [String; 5] {
    let shown = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), |v| value(v, row.unit));
    [
        row.metric.clone(),
        shown(row.base),
        shown(row.new),
        row.delta.map_or_else(|| "—".to_owned(), |d| delta(d, row.unit)),
        row.relative.map_or_else(|| "—".to_owned(), |r| format!("{:+.1}%", r * 100.0)),
    ]
}

/// The terminal text: the files, the notes, the table, the rules, and the verdict last.
pub(super) fn terminal(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n  compare");
    let _ = writeln!(out, "  base: {} ({})", r.base.path, r.base.describe);
    let _ = writeln!(out, "  new:  {} ({})", r.new.path, r.new.describe);
    for note in &r.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    let header = ["metric", "base", "new", "change", "change %"].map(str::to_owned);
    let rows: Vec<[String; 5]> = std::iter::once(header).chain(r.metrics.iter().map(cells)).collect();
    let widths: Vec<usize> = (0..5).map(|i| rows.iter().map(|row| row[i].chars().count()).max().unwrap_or(0)).collect();
    out.push('\n');
    for row in &rows {
        let _ = write!(out, "  {:<w$}", row[0], w = widths[0]);
        for (cell, w) in row.iter().zip(&widths).skip(1) {
            let _ = write!(out, "  {cell:>w$}");
        }
        out.push('\n');
    }
    if !r.rules.is_empty() {
        let _ = writeln!(
            out,
            "\n  rules ({TEST}; α = {} over {} rules: {} each)",
            short(r.method.alpha),
            r.rules.len(),
            short(r.method.alpha_per_rule)
        );
        for rule in &r.rules {
            let mark = match rule.verdict {
                "failed" => "✗",
                "held" => "✓",
                _ => "~",
            };
            let judged = match (rule.verdict, rule.significant) {
                ("failed", Some(_)) => format!("past {} and significant: FAILED", rule.tolerance),
                ("failed", None) => format!("past {}: FAILED", rule.tolerance),
                ("held", _) => format!("within {}", rule.tolerance),
                _ => format!("past {} but not significant: no failure", rule.tolerance),
            };
            let _ = writeln!(out, "  {mark} {}: {}; {judged}; {}", rule.rule, rule.moved(), rule.evidence());
        }
    }
    let _ = writeln!(out, "\n{}", r.verdict);
    out
}

/// The same facts in Markdown, for a pull-request comment or a job summary; the verdict last.
pub(super) fn markdown(r: &Report) -> String {
    let mut out = String::new();
    let title = if r.rules.is_empty() {
        "no rules".to_owned()
    } else if r.failed > 0 {
        format!("{} of {} failed", r.failed, loadhost_output::plural(r.rules.len() as u64, "rule", "rules"))
    } else {
        "every rule held".to_owned()
    };
    let _ = writeln!(out, "### loadhost compare: {title}\n");
    let _ = writeln!(
        out,
        "**base** `{}` ({}) · **new** `{}` ({})\n",
        r.base.path, r.base.describe, r.new.path, r.new.describe
    );
    for note in &r.notes {
        let _ = writeln!(out, "> note: {note}\n");
    }
    if !r.rules.is_empty() {
        let _ = writeln!(out, "| | rule | base | new | change | tolerance | test |\n|---|---|---:|---:|---:|---:|---|");
        for rule in &r.rules {
            let mark = match rule.verdict {
                "failed" => "✗",
                "held" => "✓",
                _ => "~",
            };
            let _ = writeln!(
                out,
                "| {mark} | `{}` | {} | {} | {} | {} | {} |",
                rule.rule,
                value(rule.change.base, rule.unit),
                value(rule.change.new, rule.unit),
                rule.change_text,
                rule.tolerance,
                rule.evidence()
            );
        }
        let _ = writeln!(
            out,
            "\n{TEST}; α = {} over {} rules ({} each). A rule fails only when the change is past its tolerance and significant.\n",
            short(r.method.alpha),
            r.rules.len(),
            short(r.method.alpha_per_rule)
        );
    }
    let _ = writeln!(out, "<details><summary>Every metric</summary>\n");
    let _ = writeln!(out, "| metric | base | new | change | change % |\n|---|---:|---:|---:|---:|");
    for row in &r.metrics {
        let [m, b, n, d, p] = cells(row);
        let _ = writeln!(out, "| `{m}` | {b} | {n} | {d} | {p} |");
    }
    let _ = writeln!(out, "\n</details>\n");
    let _ = writeln!(out, "{}", r.verdict);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(value(5.25, Shown::Ms), "5.25 ms");
        assert_eq!(value(0.0025, Shown::Share), "0.25%");
        assert_eq!(delta(0.005, Shown::Share), "+0.50pp");
        assert_eq!(delta(-3.02, Shown::Ms), "-3.02 ms");
        assert_eq!(value(199.84, Shown::PerS), "199.8/s");
        assert_eq!(relative(&Change::new(5.0, 8.0)), "+60.0%");
        assert_eq!(relative(&Change::new(0.0, 0.0)), "+0.0%");
        assert_eq!(relative(&Change::new(0.0, 2.0)), "+2.00 from 0");
        assert_eq!(p_value(0.00031), "p=0.0003");
        assert_eq!(p_value(0.21), "p=0.21");
        assert_eq!(p_value(2e-9), "p<0.0001");
        assert_eq!(short(0.01 / 3.0), "0.0033");
        assert_eq!(short(1.0), "1");
    }
}
