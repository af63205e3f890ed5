//! Bytes from peers (a registry, a metrics receiver) that only make an error message: the start of
//! a body kept up to a cap, and that text as one short line. A peer's error page may be endless
//! or hostile; what is kept of it is bounded, and it reaches a summary as one line.

use std::ops::ControlFlow;

/// The start of a body, kept chunk by chunk up to a cap; the rest is never kept, and the caller
/// stops reading once [`Prefix::push`] says so.
#[derive(Debug)]
pub struct Prefix {
    bytes: Vec<u8>,
    cap: usize,
    /// Whether a chunk brought bytes past the cap (they were not kept).
    over: bool,
}

impl Prefix {
    /// An empty body that keeps at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self { bytes: Vec::new(), cap, over: false }
    }

    /// Keep what of `chunk` fits; `Break` once the cap is reached (the caller stops reading).
    pub fn push(&mut self, chunk: &[u8]) -> ControlFlow<()> {
        let room = self.cap - self.bytes.len();
        let kept = chunk.len().min(room);
        self.bytes.extend_from_slice(&chunk[..kept]);
        self.over |= kept < chunk.len();
        if self.bytes.len() >= self.cap { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    }

    /// The bytes kept (never more than the cap).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether bytes past the cap were seen.
    pub fn over(&self) -> bool {
        self.over
    }
}

/// `text` as one line: control characters (newlines too) and whitespace as single spaces, at
/// most `max` characters; and whether it was cut there.
pub fn one_line(text: &str, max: usize) -> (String, bool) {
    let mut out = String::new();
    for word in text.split(|c: char| c.is_whitespace() || c.is_control()).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    match out.char_indices().nth(max) {
        Some((end, _)) => {
            out.truncate(end);
            (out, true)
        }
        None => (out, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_of_exactly_the_cap_is_kept_whole_and_not_over() {
        let mut body = Prefix::new(4);
        assert!(body.push(b"ab").is_continue());
        assert!(body.push(b"cd").is_break(), "full: stop reading");
        assert_eq!((body.bytes(), body.over()), (&b"abcd"[..], false));
        let mut body = Prefix::new(4);
        assert!(body.push(b"abcde").is_break());
        assert_eq!((body.bytes(), body.over()), (&b"abcd"[..], true));
        let mut body = Prefix::new(4);
        assert!(body.push(b"").is_continue(), "an empty chunk is no end");
        assert_eq!(body.bytes(), b"");
    }

    #[test]
    fn text_becomes_one_line_cut_at_its_limit() {
        assert_eq!(one_line("  bad\r\nrequest\t\u{1b}[31m \n", 100), ("bad request [31m".to_owned(), false));
        assert_eq!(one_line(&"é".repeat(10), 4), ("éééé".to_owned(), true));
        assert_eq!(one_line("", 4), (String::new(), false));
    }
}
