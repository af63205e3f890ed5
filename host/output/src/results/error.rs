//! Why a file could not be read as results.

use std::io;
use std::path::PathBuf;

use super::format::{FORMAT_VERSION, MAGIC, OLDEST_VERSION};

/// Why a file could not be read as results.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultsError {
    /// The file cannot be opened or read.
    #[error("{}: cannot read the file: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// It does not start with the results header.
    #[error("{}: not a loadhost results file (it does not start with '{MAGIC}'; `loadhost run --results FILE` writes one)", path.display())]
    NotResults {
        /// The file.
        path: PathBuf,
    },
    /// Another format version.
    #[error("{}: results format version {version} is not supported (this loadhost {} reads versions {OLDEST_VERSION} to {FORMAT_VERSION})", path.display(), crate::VERSION)]
    Version {
        /// The file.
        path: PathBuf,
        /// The version it has.
        version: u32,
    },
    /// The file ends early (the writer was stopped, or a copy was cut short).
    #[error("{}: the results file is truncated ({why}): was the run killed, or the copy cut short?{}", path.display(), partial_hint(*.completed))]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Where it ends.
        why: String,
        /// When the file can be merged as it is (it has its `start` line and a scenario had
        /// started): how many intervals it completed.
        completed: Option<u64>,
    },
    /// A line is not what it should be.
    #[error("{}: the results file is corrupt: line {line}: {why}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        why: String,
    },
}

/// How to merge a results file that lost its end.
fn partial_hint(completed: Option<u64>) -> String {
    match completed {
        Some(n) => {
            format!(" `loadhost merge --partial` merges the {} it completed", crate::plural(n, "interval", "intervals"))
        }
        None => String::new(),
    }
}
