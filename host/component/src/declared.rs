//! The metrics a plugin declares it records, read from its `loadhost:metrics` custom sections
//! without running it, so `loadhost inspect` can list them and thresholds on them need no
//! `--metric`.
//!
//! The section holds one declaration a line, `NAME[{TAG,…}]:KIND`: the `--metric NAME:KIND` syntax
//! with the tag keys the plugin records it with (`orders{tier}:counter`, `journey_ms:trend`,
//! `status is 200:check`). KIND is `trend`, `counter`, `gauge`, or `rate` (also spelled `check`: a
//! check is how a plugin records a rate). Lines, not one document, because a linker concatenates
//! the sections of the same name that several objects carry, and wit-component keeps a core
//! module's sections inside the component; blank lines and NUL padding are ignored. Every section
//! of that name in the file counts, at any depth (the component, or a core module inside it).

use std::fmt;

use loadhost_metrics::catalogue::built_in_kind;
use loadhost_metrics::plugin::{MAX_TAGS, valid_key};
use loadhost_metrics::{MetricKind, SeriesKey};
use thiserror::Error;

/// The custom section's name.
pub const SECTION: &str = "loadhost:metrics";

/// The most metrics one plugin may declare: the run's bound on distinct series.
pub const MAX_DECLARED: usize = 1_000;

/// One metric a plugin says it records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredMetric {
    /// The name it records the metric under.
    pub name: String,
    /// Its kind (a check is a `rate`).
    pub kind: MetricKind,
    /// The tag keys it records it with, in the order declared.
    pub tags: Vec<String>,
}

impl fmt::Display for DeclaredMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if !self.tags.is_empty() {
            write!(f, "{{{}}}", self.tags.join(","))?;
        }
        write!(f, ":{}", self.kind.name())
    }
}

/// Why a plugin's declarations cannot be used. Each message says what is wrong with which
/// declaration; the caller names the file.
#[derive(Debug, Clone, Error, PartialEq)]
#[non_exhaustive]
pub enum DeclaredError {
    /// The WebAssembly itself does not parse.
    #[error("the WebAssembly does not parse: {0}")]
    Parse(String),
    /// The section's bytes are not text.
    #[error("its {SECTION} section is not UTF-8 text")]
    NotText,
    /// A line that is not `NAME[{TAG,…}]:KIND`.
    #[error("its {SECTION} section declares '{line}': {why}")]
    Line {
        /// The line as written (cut at 100 characters).
        line: String,
        /// What is wrong with it.
        why: String,
    },
    /// One name declared with two kinds.
    #[error("its {SECTION} section declares {name} as both a {first} and a {second}")]
    Conflict {
        /// The metric's name.
        name: String,
        /// The kind declared first.
        first: &'static str,
        /// The other kind.
        second: &'static str,
    },
    /// More declarations than a run keeps series.
    #[error("its {SECTION} section declares more than {MAX_DECLARED} metrics")]
    TooMany,
}

/// The metrics declared in every `loadhost:metrics` section of `bytes` (a component or a core
/// module), each name once: declarations repeated with the same kind merge their tags.
pub fn declared_metrics(bytes: &[u8]) -> Result<Vec<DeclaredMetric>, DeclaredError> {
    let text = sections_text(bytes, SECTION).map_err(DeclaredError::Parse)?;
    let text = std::str::from_utf8(&text).map_err(|_| DeclaredError::NotText)?;
    parse(text)
}

/// The payloads of every custom section named `name` in `bytes`, at any depth, one after the
/// other, each ended by a newline (sections from different modules may not end their last line);
/// or why the WebAssembly does not parse.
pub(crate) fn sections_text(bytes: &[u8], name: &str) -> Result<Vec<u8>, String> {
    let mut text = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        if let wasmparser::Payload::CustomSection(section) = payload.map_err(|err| err.to_string())?
            && section.name() == name
        {
            text.extend_from_slice(section.data());
            text.push(b'\n');
        }
    }
    Ok(text)
}

/// The declarations in a section's text.
pub fn parse(text: &str) -> Result<Vec<DeclaredMetric>, DeclaredError> {
    let mut out: Vec<DeclaredMetric> = Vec::new();
    for line in text.split(['\n', '\0']).map(str::trim).filter(|l| !l.is_empty()) {
        let metric = parse_line(line).map_err(|why| DeclaredError::Line { line: cut(line), why })?;
        let full = out.len() == MAX_DECLARED;
        match out.iter_mut().find(|m| m.name == metric.name) {
            Some(known) if known.kind != metric.kind => {
                return Err(DeclaredError::Conflict {
                    name: metric.name,
                    first: known.kind.name(),
                    second: metric.kind.name(),
                });
            }
            Some(known) => {
                for tag in metric.tags {
                    if !known.tags.contains(&tag) {
                        known.tags.push(tag);
                    }
                }
            }
            None if full => return Err(DeclaredError::TooMany),
            None => out.push(metric),
        }
    }
    Ok(out)
}

/// `line` cut at 100 characters, for a message that quotes it.
pub(crate) fn cut(line: &str) -> String {
    match line.char_indices().nth(100) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

/// One `NAME[{TAG,…}]:KIND`, checked by the rules the host applies to samples (so a declared
/// metric is one the plugin can record).
fn parse_line(line: &str) -> Result<DeclaredMetric, String> {
    let (head, kind) = line.rsplit_once(':').ok_or("expected NAME[{TAG,…}]:KIND, such as orders{tier}:counter")?;
    let kind = match kind.trim() {
        "trend" => MetricKind::Trend,
        "counter" => MetricKind::Counter,
        "gauge" => MetricKind::Gauge,
        "rate" | "check" => MetricKind::Rate,
        other => return Err(format!("unknown kind '{other}' (trend, counter, gauge, or check/rate)")),
    };
    let head = head.trim();
    let (name, tags) = match head.strip_suffix('}').and_then(|h| h.rsplit_once('{')) {
        Some((name, tags)) => {
            let tags: Vec<String> =
                tags.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned).collect();
            (name.trim(), tags)
        }
        None => (head, Vec::new()),
    };
    if tags.len() > MAX_TAGS {
        return Err(format!("more than {MAX_TAGS} tags"));
    }
    // Tag values do not matter here: "v" stands in for each.
    let key = SeriesKey::new(name.to_owned(), tags.iter().map(|t| (t.clone(), "v".to_owned())).collect());
    if !valid_key(&key, kind == MetricKind::Rate) {
        return Err(if kind == MetricKind::Rate {
            "a check's name is 1 to 128 characters without control characters, and tag keys letters, digits, '_', '.' or '-'".to_owned()
        } else {
            "a metric name is 1 to 128 letters, digits, '_' or '.', not starting with a digit, and tag keys the same or '-'".to_owned()
        });
    }
    if built_in_kind(name).is_some() {
        return Err(format!("{name} is a built-in metric's name"));
    }
    Ok(DeclaredMetric { name: name.to_owned(), kind, tags })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Result<DeclaredMetric, DeclaredError> {
        parse(line).map(|mut all| all.remove(0))
    }

    #[test]
    fn lines_read_as_the_metric_flag_with_tag_keys() {
        let all =
            parse("orders{tier, region}:counter\n\njourney_ms:trend\0\0status is 200:check\nqueue:gauge").unwrap();
        let shown: Vec<String> = all.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["orders{tier,region}:counter", "journey_ms:trend", "status is 200:rate", "queue:gauge"]);
        assert_eq!(all[0].tags, ["tier", "region"]);
        assert_eq!(one("even:rate").unwrap().kind, MetricKind::Rate);
    }

    #[test]
    fn repeats_merge_and_conflicts_are_named() {
        let all = parse("orders{tier}:counter\norders{region}:counter\norders:counter").unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].tags, ["tier", "region"]);
        let err = parse("orders:counter\norders:trend").unwrap_err().to_string();
        assert_eq!(err, "its loadhost:metrics section declares orders as both a counter and a trend");
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        for (line, says) in [
            ("orders", "expected NAME[{TAG,…}]:KIND"),
            ("orders:histogram", "unknown kind 'histogram'"),
            ("9lives:counter", "not starting with a digit"),
            ("or ders:counter", "a metric name is"),
            ("orders{ti er}:counter", "tag keys"),
            ("latency_ms:trend", "latency_ms is a built-in metric's name"),
            (":trend", "a metric name is"),
        ] {
            let err = one(line).unwrap_err().to_string();
            assert!(err.starts_with(&format!("its loadhost:metrics section declares '{line}': ")), "{err}");
            assert!(err.contains(says), "{line}: {err}");
        }
        let many: String = (0..=MAX_DECLARED).map(|i| format!("m{i}:counter\n")).collect();
        assert_eq!(parse(&many), Err(DeclaredError::TooMany));
    }

    #[test]
    fn every_section_of_the_name_counts() {
        // Two sections, as two linked objects leave them (the first without a final newline). The
        // e2e suite reads them from inside real components.
        let module = wat::parse_str(
            r#"(module (@custom "loadhost:metrics" "orders{tier}:counter") (@custom "loadhost:metrics" "size:trend\n"))"#,
        )
        .unwrap();
        let all = declared_metrics(&module).unwrap();
        assert_eq!(all.iter().map(ToString::to_string).collect::<Vec<_>>(), ["orders{tier}:counter", "size:trend"]);
        let plain = wat::parse_str("(module)").unwrap();
        assert_eq!(declared_metrics(&plain), Ok(Vec::new()), "a plugin built before declarations declares none");
    }
}
