//! Reading `--data FILE`: JSON lines (`.jsonl`, `.ndjson`) or CSV with a header (`.csv`), one row
//! per task. A CSV row reaches the plugin as a JSON object keyed by the header, so plugins parse
//! one format whichever the user had.

use std::path::{Path, PathBuf};

use loadhost_engine::Feed;
use thiserror::Error;

/// Why a data file cannot be used; one line naming the file (and line) and what was expected.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FeedError {
    /// It could not be read.
    #[error("--data {path}: cannot read the file: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The extension says neither JSON lines nor CSV.
    #[error("--data {path}: unknown format: expected a .jsonl/.ndjson (JSON lines) or .csv file")]
    Format {
        /// The file.
        path: PathBuf,
    },
    /// A row is not what the format says.
    #[error("--data {path}:{line}: {message}")]
    Row {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// Nothing to feed.
    #[error("--data {path}: no rows")]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// Load a feed, choosing the format by extension.
pub fn load(path: &Path) -> Result<Feed, FeedError> {
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or_default().to_ascii_lowercase();
    let text = std::fs::read(path).map_err(|error| FeedError::Read { path: path.to_owned(), error })?;
    let feed = match extension.as_str() {
        "jsonl" | "ndjson" => json_lines(path, &text)?,
        "csv" => csv_rows(path, &text)?,
        _ => return Err(FeedError::Format { path: path.to_owned() }),
    };
    if feed.is_empty() {
        return Err(FeedError::Empty { path: path.to_owned() });
    }
    Ok(feed)
}

fn json_lines(path: &Path, text: &[u8]) -> Result<Feed, FeedError> {
    let mut feed = Feed::default();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Err(err) = serde_json::from_slice::<serde::de::IgnoredAny>(line) {
            return Err(FeedError::Row {
                path: path.to_owned(),
                line: i as u64 + 1,
                message: format!("not JSON: {err}"),
            });
        }
        feed.push(line);
    }
    Ok(feed)
}

fn csv_rows(path: &Path, text: &[u8]) -> Result<Feed, FeedError> {
    let mut reader = csv::Reader::from_reader(text);
    let row_error = |err: csv::Error| FeedError::Row {
        path: path.to_owned(),
        line: err.position().map_or(1, |p| p.line()),
        message: err.to_string(),
    };
    let header: Vec<String> = reader.headers().map_err(row_error)?.iter().map(str::to_owned).collect();
    let mut feed = Feed::default();
    for record in reader.records() {
        let record = record.map_err(row_error)?;
        let object: serde_json::Map<String, serde_json::Value> =
            header.iter().cloned().zip(record.iter().map(|v| serde_json::Value::String(v.to_owned()))).collect();
        let row = serde_json::to_vec(&object).map_err(|err| FeedError::Row {
            path: path.to_owned(),
            line: record.position().map_or(1, |p| p.line()),
            message: err.to_string(),
        })?;
        feed.push(&row);
    }
    Ok(feed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn json_lines_keep_each_line_and_skip_blank_ones() {
        let (_dir, path) = write("rows.jsonl", "{\"n\":1}\n\n{\"n\":2}\r\n");
        let feed = load(&path).unwrap();
        assert_eq!(feed.len(), 2);
        assert_eq!(feed.row(1), br#"{"n":2}"#);
    }

    #[test]
    fn csv_rows_become_json_objects_keyed_by_the_header() {
        let (_dir, path) = write("users.csv", "name,id\n\"Ann, Jr\",7\nbob,8\n");
        let feed = load(&path).unwrap();
        assert_eq!(feed.len(), 2);
        assert_eq!(feed.row(0), br#"{"id":"7","name":"Ann, Jr"}"#);
    }

    #[test]
    fn bad_files_say_where_and_what() {
        let (_dir, path) = write("rows.jsonl", "{\"n\":1}\n{oops\n");
        let err = load(&path).unwrap_err().to_string();
        assert!(err.contains("rows.jsonl:2: not JSON"), "{err}");
        let (_dir, path) = write("rows.txt", "x");
        assert!(load(&path).unwrap_err().to_string().contains("unknown format"));
        let (_dir, path) = write("rows.jsonl", "\n\n");
        assert!(load(&path).unwrap_err().to_string().ends_with("no rows"));
        let (_dir, path) = write("rows.csv", "a,b\n1,2,3\n");
        assert!(load(&path).unwrap_err().to_string().contains("rows.csv:2:"), "a short/long row names its line");
    }
}
