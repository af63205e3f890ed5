//! The errors table: every failed, retried, trapped, timed-out and aborted attempt, grouped by
//! what it said.
//!
//! Messages are grouped by a normalized form (numbers, hex ids and UUIDs folded), so "order 41"
//! and "order 42" are one row; each group keeps its count, the first and last time it happened
//! and one verbatim example with its iteration. Tables merge exactly (counts add, first and last
//! are wall-clock times), so stripes, intervals, scenarios and the segments of a distributed run
//! all add up to the table one process would have kept.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::count::Tally;
use crate::outcome::ErrorKind;

/// Distinct groups a table keeps; past it, messages of a new kind count in their outcome's
/// overflow row, so a plugin putting a fresh id in every error cannot grow the host's memory.
pub const MAX_GROUPS: usize = 1000;

/// The longest message kept, in bytes (longer ones are cut at a character boundary).
pub const MAX_MESSAGE: usize = 1024;

/// The normalized message of an outcome's overflow row.
pub const OVERFLOW: &str = "(other errors: more than 1000 kinds)";

/// One row of the table: one kind of error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorGroup {
    /// How the attempts ended.
    pub outcome: ErrorKind,
    /// The normalized message the group is keyed by.
    pub message: String,
    /// Attempts that ended so.
    pub count: u64,
    /// One of them, verbatim (the earliest).
    pub example: String,
    /// The iteration of the example.
    pub iteration: u64,
    /// When the first happened (milliseconds since the Unix epoch).
    pub first_ms: u64,
    /// When the last happened (milliseconds since the Unix epoch).
    pub last_ms: u64,
}

impl ErrorGroup {
    fn absorb(&mut self, other: &ErrorGroup, t: &mut Tally) {
        t.add(&mut self.count, other.count, "an error row's count");
        if (other.first_ms, other.iteration) < (self.first_ms, self.iteration) {
            self.first_ms = other.first_ms;
            self.example.clone_from(&other.example);
            self.iteration = other.iteration;
        }
        self.last_ms = self.last_ms.max(other.last_ms);
    }
}

/// Errors grouped by outcome and normalized message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorTable {
    groups: HashMap<(ErrorKind, String), ErrorGroup>,
}

/// The current wall-clock time in milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl ErrorTable {
    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Attempts counted, over every group.
    pub fn total(&self) -> u64 {
        self.groups.values().map(|g| g.count).sum()
    }

    /// Record one attempt that ended as `outcome` saying `message`, at `at_ms`.
    pub fn record(&mut self, outcome: ErrorKind, message: &str, iteration: u64, at_ms: u64) {
        let example = cut(message, MAX_MESSAGE);
        let group = ErrorGroup {
            outcome,
            message: normalize(example),
            count: 1,
            example: example.to_owned(),
            iteration,
            first_ms: at_ms,
            last_ms: at_ms,
        };
        self.add(group, &mut Tally::default());
    }

    /// Fold `other` into this table.
    pub fn merge(&mut self, other: &ErrorTable) {
        self.add_to(other, &mut Tally::default());
    }

    pub(crate) fn add_to(&mut self, other: &ErrorTable, t: &mut Tally) {
        // In a fixed order, so which groups fit under the cap does not depend on hashing.
        for group in other.sorted() {
            self.add(group.clone(), t);
        }
    }

    fn add(&mut self, mut group: ErrorGroup, t: &mut Tally) {
        let full = self.groups.len() >= MAX_GROUPS;
        if full && !self.groups.contains_key(&(group.outcome, group.message.clone())) {
            group.message = OVERFLOW.to_owned();
        }
        match self.groups.get_mut(&(group.outcome, group.message.clone())) {
            Some(kept) => kept.absorb(&group, t),
            None => {
                let (mut count, n) = (0, group.count);
                t.add(&mut count, n, "an error row's count");
                group.count = count;
                self.groups.insert((group.outcome, group.message.clone()), group);
            }
        }
    }

    /// Empty the table, keeping its allocation.
    pub fn clear(&mut self) {
        self.groups.clear();
    }

    /// The groups, most frequent first (then by outcome and message, so the order is stable).
    pub fn sorted(&self) -> Vec<&ErrorGroup> {
        let mut groups: Vec<&ErrorGroup> = self.groups.values().collect();
        groups.sort_by(|a, b| b.count.cmp(&a.count).then(a.outcome.cmp(&b.outcome)).then(a.message.cmp(&b.message)));
        groups
    }
}

impl Serialize for ErrorTable {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.sorted())
    }
}

impl<'de> Deserialize<'de> for ErrorTable {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let groups = Vec::<ErrorGroup>::deserialize(deserializer)?;
        let (mut table, mut t) = (ErrorTable::default(), Tally::default());
        for group in groups {
            table.add(group, &mut t);
        }
        t.result().map_err(serde::de::Error::custom)?;
        Ok(table)
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The message with what varies between occurrences of one error folded: UUIDs become `<uuid>`,
/// hex ids (`0x…`, or 8+ hex digits with a digit and a letter) `<hex>`, and numbers `<n>`.
pub fn normalize(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(c) = rest.chars().next() {
        let word_start = out.chars().next_back().is_none_or(|p| !p.is_alphanumeric() && p != '_');
        if word_start
            && c.is_ascii_alphanumeric()
            && let Some((folded, used)) = fold(rest)
        {
            out.push_str(folded);
            rest = &rest[used..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// What the start of `token` (a word's start, and the rest of the message) folds to, and how many
/// of its bytes that takes.
fn fold(token: &str) -> Option<(&'static str, usize)> {
    let bytes = token.as_bytes();
    if is_uuid(bytes) {
        return Some(("<uuid>", 36));
    }
    let hex_run = |from: usize| bytes[from..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if bytes.len() > 2 && (token.starts_with("0x") || token.starts_with("0X")) && hex_run(2) > 0 {
        return Some(("<hex>", 2 + hex_run(2)));
    }
    let hex = hex_run(0);
    let end_ok = |n: usize| bytes.get(n).is_none_or(|b| !b.is_ascii_alphanumeric());
    let (digit, letter) =
        (bytes[..hex].iter().any(u8::is_ascii_digit), bytes[..hex].iter().any(u8::is_ascii_alphabetic));
    if hex >= 8 && digit && letter && end_ok(hex) {
        return Some(("<hex>", hex));
    }
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits > 0 {
        // A decimal part belongs to the number: "12.5 ms".
        let mut used = digits;
        if bytes.get(used) == Some(&b'.') && bytes.get(used + 1).is_some_and(u8::is_ascii_digit) {
            used += 1 + bytes[used + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
        }
        return Some(("<n>", used));
    }
    None
}

fn is_uuid(b: &[u8]) -> bool {
    b.len() >= 36
        && b[..36].iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
        && b.get(36).is_none_or(|c| !c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_ids_and_uuids_fold_words_stay() {
        assert_eq!(normalize("upstream said 503 for order 41"), "upstream said <n> for order <n>");
        assert_eq!(normalize("took 12.5 ms, limit 10"), "took <n> ms, limit <n>");
        assert_eq!(normalize("object 0x7ffd3a2b missing"), "object <hex> missing");
        assert_eq!(normalize("trace deadbeef42 failed"), "trace <hex> failed");
        assert_eq!(normalize("user 123e4567-e89b-12d3-a456-426614174000 not found"), "user <uuid> not found");
        // Digits inside a word are part of the word: names and versions read the same.
        assert_eq!(normalize("http2 stream reset by h3"), "http2 stream reset by h3");
        assert_eq!(normalize("deadline exceeded"), "deadline exceeded");
        assert_eq!(normalize("é 5 ü"), "é <n> ü");
    }

    #[test]
    fn one_group_per_kind_with_the_earliest_example() {
        let mut t = ErrorTable::default();
        t.record(ErrorKind::Failed, "order 42 refused", 42, 2_000);
        t.record(ErrorKind::Failed, "order 41 refused", 41, 1_000);
        t.record(ErrorKind::Trapped, "order 43 refused", 43, 3_000);
        let rows = t.sorted();
        assert_eq!(rows.len(), 2, "{rows:?}");
        let failed = rows[0];
        assert_eq!((failed.count, failed.iteration, failed.example.as_str()), (2, 41, "order 41 refused"));
        assert_eq!((failed.first_ms, failed.last_ms), (1_000, 2_000));
        assert_eq!(rows[1].outcome, ErrorKind::Trapped);
        assert_eq!(t.total(), 3);
    }

    #[test]
    fn past_the_cap_new_kinds_count_in_the_overflow_row() {
        let mut t = ErrorTable::default();
        for i in 0..MAX_GROUPS + 50 {
            // Letters, not digits, so each message is its own kind.
            let word: String =
                format!("{i:x}").chars().map(|c| (b'g' + c.to_digit(16).unwrap() as u8) as char).collect();
            t.record(ErrorKind::Failed, &format!("kind {word}"), i as u64, 1);
        }
        t.record(ErrorKind::Failed, "kind g", 7, 2);
        let rows = t.sorted();
        assert_eq!(rows.len(), MAX_GROUPS + 1);
        let overflow = rows.iter().find(|g| g.message == OVERFLOW).unwrap();
        assert_eq!(overflow.count, 50);
        assert_eq!(t.total(), MAX_GROUPS as u64 + 51, "nothing is lost");
    }

    #[test]
    fn merging_adds_up_exactly_and_round_trips() {
        let (mut a, mut b) = (ErrorTable::default(), ErrorTable::default());
        a.record(ErrorKind::Failed, "order 1", 1, 500);
        b.record(ErrorKind::Failed, "order 2", 2, 100);
        b.record(ErrorKind::TimedOut, "still running after 5s", 3, 900);
        let mut whole = a.clone();
        whole.merge(&b);
        let rows = whole.sorted();
        assert_eq!((rows[0].count, rows[0].first_ms, rows[0].last_ms, rows[0].iteration), (2, 100, 500, 2));
        let text = serde_json::to_string(&whole).unwrap();
        let back: ErrorTable = serde_json::from_str(&text).unwrap();
        assert_eq!(back, whole);
        assert!(text.contains("\"timed_out\""), "{text}");
    }

    #[test]
    fn long_messages_are_cut_at_a_character_boundary() {
        let mut t = ErrorTable::default();
        t.record(ErrorKind::Failed, &"é".repeat(MAX_MESSAGE), 0, 0);
        let example = &t.sorted()[0].example;
        assert!(example.len() <= MAX_MESSAGE && example.chars().all(|c| c == 'é'));
    }
}
