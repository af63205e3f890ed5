//! Text a plugin makes, on its way into the host: task and lifecycle errors, trap reports, printed
//! lines, `--http-debug` notes, metric and check names, tag values and endpoint names. Two rules
//! hold for all of it, whatever the plugin does:
//!
//! - **No secret reaches an output.** Every `-e`/`--env-file` value and every token is replaced by
//!   `[redacted]` wherever it appears (one pass over the text for all of them). A value shorter
//!   than [`MIN_SECRET`] characters is redacted only where it appears as `KEY=VALUE`: short
//!   values are settings (`-e N=1`, `-e MODE=ping`), and redacting them bare turned every digit,
//!   or a plugin's own words, into `[redacted]`, while tokens and passwords are longer.
//! - **No text is unbounded.** A message is cut at [`MAX_TEXT`] bytes with a note of how much was
//!   cut (a plugin's 100 MiB error once went whole to stderr and into every output); printed lines
//!   are cut at their own limit (`output::MAX_LINE`), names and tags at the metrics' limits.
//!
//! A long message is redacted before it is cut, so a secret straddling the limit is never left
//! half visible (only [`MAX_TEXT`] plus the longest secret is scanned, whatever the message's size).

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// The longest message kept, in bytes, its note included: the errors table's own limit, so the
/// note survives into every output.
pub const MAX_TEXT: usize = loadhost_metrics::errors::MAX_MESSAGE;

/// Values this short are redacted only as `KEY=VALUE` (see the module's docs).
pub const MIN_SECRET: usize = 8;

/// The secrets of a run, ready to be taken out of any text.
#[derive(Debug, Default)]
pub struct PluginText {
    /// `None` when there is nothing to redact: most runs pay nothing.
    finder: Option<AhoCorasick>,
    /// What each pattern becomes.
    replacements: Vec<String>,
    /// The longest pattern, in bytes.
    longest: usize,
}

impl PluginText {
    /// The secrets of a run: the plugin's environment (`KEY`, `VALUE`) and other values (tokens).
    pub fn new<'a>(
        env: impl IntoIterator<Item = (&'a str, &'a str)>,
        tokens: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut patterns = Vec::new();
        let mut replacements = Vec::new();
        for (key, value) in env {
            if value.is_empty() {
                continue;
            }
            if value.chars().count() >= MIN_SECRET {
                patterns.push(value.to_owned());
                replacements.push(REDACTED.to_owned());
            }
            // Matched from its key, so it wins over the bare value starting later.
            patterns.push(format!("{key}={value}"));
            replacements.push(format!("{key}={REDACTED}"));
        }
        for token in tokens.into_iter().filter(|t| !t.is_empty()) {
            patterns.push(token.to_owned());
            replacements.push(REDACTED.to_owned());
        }
        if patterns.is_empty() {
            return Self::default();
        }
        let longest = patterns.iter().map(String::len).max().unwrap_or(0);
        // Leftmost-longest: of two secrets starting at the same place, the longer goes whole.
        let finder = AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(&patterns).ok();
        Self { finder, replacements, longest }
    }

    /// `text` with every secret replaced (borrowed back when there was none).
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match &self.finder {
            Some(finder) if finder.is_match(text) => Cow::Owned(finder.replace_all(text, &self.replacements)),
            _ => Cow::Borrowed(text),
        }
    }

    /// [`PluginText::redact`] of an owned string, reusing it when nothing was found.
    pub fn redact_owned(&self, text: String) -> String {
        match self.redact(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(redacted) => redacted,
        }
    }

    /// A message of the plugin's, as outputs may carry it: redacted, and cut at [`MAX_TEXT`] with
    /// a note of its whole length.
    pub fn message(&self, mut text: String) -> String {
        let whole = text.len();
        if whole <= MAX_TEXT {
            return self.redact_owned(text);
        }
        // Only what can still show, plus room for a secret that starts before the limit.
        truncate(&mut text, MAX_TEXT + self.longest);
        bounded_of(self.redact_owned(text), whole)
    }
}

/// A message the host made around the plugin's words (a trap's report, whose printed line was
/// redacted as it was printed), cut at [`MAX_TEXT`] with a note of its whole length: the host's
/// own words are not searched for secrets, so "memory limit" survives `-e MODE=memory`.
pub fn bounded(text: String) -> String {
    let whole = text.len();
    if whole <= MAX_TEXT { text } else { bounded_of(text, whole) }
}

/// `text` cut to [`MAX_TEXT`] bytes with the note that it was `whole` bytes.
fn bounded_of(mut text: String, whole: usize) -> String {
    let note = format!("… [cut: {whole} bytes]");
    truncate(&mut text, MAX_TEXT - note.len());
    text.push_str(&note);
    text
}

/// Cut `text` to at most `max` bytes, at a character boundary.
fn truncate(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text() -> PluginText {
        PluginText::new([("API_TOKEN", "s3cr3t-value"), ("BLOB_BYTES", "64k"), ("N", "1")], ["ctl-token"])
    }

    #[test]
    fn every_value_and_token_is_redacted_wherever_it_appears() {
        let t = text();
        assert_eq!(t.redact("token s3cr3t-value in a URL ?t=s3cr3t-value"), "token [redacted] in a URL ?t=[redacted]");
        assert_eq!(t.redact("BLOB_BYTES=64k: expected an integer"), "BLOB_BYTES=[redacted]: expected an integer");
        assert_eq!(t.redact("s3cr3t-v"), "s3cr3t-v", "a part of a secret is not the secret");
        assert_eq!(t.redact("Bearer ctl-token"), "Bearer [redacted]");
    }

    #[test]
    fn a_short_value_is_redacted_only_after_its_key() {
        let t = text();
        assert_eq!(t.redact("N=1 then 1 2 10"), "N=[redacted] then 1 2 10");
        assert_eq!(t.redact("BLOB_BYTES=64k; 64k read"), "BLOB_BYTES=[redacted]; 64k read");
    }

    #[test]
    fn text_without_secrets_is_not_copied() {
        assert!(matches!(text().redact("nothing here"), Cow::Borrowed(_)));
        assert!(matches!(PluginText::default().redact("s3cr3t-value"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_long_message_is_cut_with_a_note_of_how_much() {
        let long = "é".repeat(3000); // 6,000 bytes
        let kept = text().message(long);
        assert!(kept.starts_with("éé"));
        assert!(kept.ends_with("… [cut: 6000 bytes]"), "{}", &kept[kept.len() - 40..]);
        assert!(kept.len() <= MAX_TEXT);
        // A secret straddling the limit is redacted before the cut: no half of it survives.
        // (The cut falls about 20 bytes before the limit, where the note begins.)
        let straddling = format!("{}s3cr3t-value and more", "x".repeat(MAX_TEXT - 25));
        let kept = text().message(straddling);
        assert!(!kept.contains("s3cr"), "{}", &kept[kept.len() - 60..]);
        assert!(kept.contains("xxxx[red"), "{}", &kept[kept.len() - 60..]);
    }
}
