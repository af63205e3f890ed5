//! loadhost's outputs. They see measurements only ([`RunReport`], [`IntervalRow`]) and the plan's
//! segment, never the running engine, so an output cannot change what a run does.
//!
//! # Layout
//! - [`summary`]: the typed [`Summary`] of a finished run, built once; every output below that
//!   shows the end of a run shows it.
//! - [`terminal`]: the end-of-run text on the terminal.
//! - [`json`]: `--summary-json`, with the keys of docs/outputs.md.
//! - [`csv`]: `--csv`: a config comment, a header, a row per interval, a closing footer.
//! - [`html`]: `--html`: one self-contained page with the summary, the thresholds and charts over time.
//! - [`jsonl`]: `--out json=FILE`: a JSON line per interval and per plugin-metric batch, then the summary.
//! - [`junit`]: `--junit`: JUnit XML for CI systems, a case per threshold, check and accounting.
//! - [`markdown`]: `--markdown`: a compact Markdown summary for pull requests and job summaries.
//! - [`progress`]: the live progress line (only when stderr is a terminal).
//! - [`results`]: `--results FILE`, everything a run measured, exactly, and `loadhost merge`'s merge of such files.
//!
//! [`RunReport`]: loadhost_metrics::RunReport
//! [`IntervalRow`]: loadhost_metrics::IntervalRow
//! [`Summary`]: summary::Summary

#![deny(missing_docs)]

pub mod csv;
pub mod html;
pub mod json;
pub mod jsonl;
pub mod junit;
pub mod markdown;
pub mod progress;
pub mod results;
pub mod summary;
pub mod terminal;

/// What outputs say about the run besides its measurements.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// The plugin file as the user named it.
    pub plugin_path: String,
    /// Hex sha256 of the plugin file.
    pub plugin_sha256: String,
    /// The registry reference the plugin was pulled as, when it came from a registry.
    pub plugin_ref: Option<String>,
    /// The manifest digest of that reference (`sha256:…`).
    pub plugin_digest: Option<String>,
    /// The scenarios that name a plugin of their own (`[[scenario]] plugin = …`), with it.
    pub scenario_plugins: std::collections::BTreeMap<String, summary::PluginFile>,
    /// The options in effect.
    pub config: serde_json::Value,
    /// One line describing the load model, for people.
    pub model: String,
    /// The host process's peak resident memory, in bytes, once the run is over (when known).
    pub peak_rss: Option<u64>,
    /// The run's labels (`--tag KEY=VALUE`), in order.
    pub tags: Vec<(String, String)>,
}

impl RunInfo {
    /// The tags as a JSON object (`{"team": "checkout", …}`), as every output writes them.
    pub fn tags_json(&self) -> serde_json::Value {
        self.tags.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect()
    }
}

/// `1 worker`, `2 workers`: the plural for every count but one.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The loadhost version, in every output.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `text` on one line and at most `max` characters (an ellipsis marks a cut), for tables.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    let flat: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Milliseconds with microsecond precision, as outputs print them.
pub(crate) fn round_ms(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}
