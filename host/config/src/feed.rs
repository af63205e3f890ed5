//! Reading `--data FILE`: JSON lines (`.jsonl`, `.ndjson`) or CSV with a header (`.csv`), one row
//! per task. A CSV row reaches the plugin as a JSON object keyed by the header, so plugins parse
//! one format whichever the user had.

use std::fs::File;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};

use loadhost_engine::Feed;
use loadhost_input::Capped;
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

/// Load a feed, choosing the format by extension. The file is read as it is parsed (only its rows
/// are kept): a regular file of at most 1 GiB.
pub fn load(path: &Path) -> Result<Feed, FeedError> {
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or_default().to_ascii_lowercase();
    let read_error = |error| FeedError::Read { path: path.to_owned(), error };
    let format = match extension.as_str() {
        "jsonl" | "ndjson" => json_lines,
        "csv" => csv_rows,
        _ => return Err(FeedError::Format { path: path.to_owned() }),
    };
    let file = loadhost_input::reader(path, loadhost_input::DATA).map_err(read_error)?;
    let feed = format(path, BufReader::new(file))?;
    if feed.is_empty() {
        return Err(FeedError::Empty { path: path.to_owned() });
    }
    Ok(feed)
}

fn json_lines(path: &Path, mut text: BufReader<Capped<File>>) -> Result<Feed, FeedError> {
    let mut feed = Feed::default();
    let mut line = Vec::new();
    for i in 0.. {
        line.clear();
        if text.read_until(b'\n', &mut line).map_err(|error| FeedError::Read { path: path.to_owned(), error })? == 0 {
            break;
        }
        let row = line.strip_suffix(b"\n").unwrap_or(&line);
        let row = row.strip_suffix(b"\r").unwrap_or(row);
        if row.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Err(err) = serde_json::from_slice::<serde::de::IgnoredAny>(row) {
            return Err(FeedError::Row { path: path.to_owned(), line: i + 1, message: format!("not JSON: {err}") });
        }
        feed.push(row);
    }
    Ok(feed)
}

fn csv_rows(path: &Path, text: BufReader<Capped<File>>) -> Result<Feed, FeedError> {
    let mut reader = csv::Reader::from_reader(text);
    let row_error = |err: csv::Error| {
        let (line, message) = (err.position().map_or(1, |p| p.line()), err.to_string());
        match err.into_kind() {
            // The file past its cap, or one that could not be read.
            csv::ErrorKind::Io(error) => FeedError::Read { path: path.to_owned(), error },
            _ => FeedError::Row { path: path.to_owned(), line, message },
        }
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
