//! A data feed (as k6's SharedArray): one row per task as `task.input`, held
//! once for the whole run and lent to every worker, never copied per worker.
//!
//! Task `k` gets row `k` (a retry keeps its row). With [`FeedMode::Once`] the run schedules no
//! more tasks than there are rows and ends cleanly when they run out; with [`FeedMode::Loop`] row
//! numbers wrap around.

/// What happens when the rows run out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FeedMode {
    /// Each row once: the run ends when they run out (tasks already released still finish).
    Once,
    /// Start again from the first row.
    #[default]
    Loop,
}

/// The rows of a data feed, stored back to back in one buffer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Feed {
    bytes: Vec<u8>,
    /// End offset of each row in `bytes`.
    ends: Vec<usize>,
}

impl Feed {
    /// A feed of `rows`.
    pub fn new<I, R>(rows: I) -> Self
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[u8]>,
    {
        let mut feed = Feed::default();
        for row in rows {
            feed.push(row.as_ref());
        }
        feed
    }

    /// Append a row.
    pub fn push(&mut self, row: &[u8]) {
        self.bytes.extend_from_slice(row);
        self.ends.push(self.bytes.len());
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The row for task `iteration` (wrapping around); empty for an empty feed.
    pub fn row(&self, iteration: u64) -> &[u8] {
        if self.ends.is_empty() {
            return &[];
        }
        let i = (iteration % self.ends.len() as u64) as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_back_in_order_and_wrap() {
        let feed = Feed::new(["a", "", "ccc"]);
        assert_eq!(feed.len(), 3);
        assert_eq!(feed.row(0), b"a");
        assert_eq!(feed.row(1), b"");
        assert_eq!(feed.row(2), b"ccc");
        assert_eq!(feed.row(3), b"a");
        assert_eq!(Feed::default().row(7), b"");
    }
}
