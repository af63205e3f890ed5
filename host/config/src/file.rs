//! Reading `loadhost run -c FILE`: TOML whose keys are the long flag names.

use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::options::RunOptions;

/// Why a config file could not be used; the message is one line naming the file and the place.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FileError {
    /// It could not be read.
    #[error("{path}: cannot read the config file: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// It is not valid TOML or has a key or value loadhost does not accept.
    #[error("{path}:{line}:{column}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// What is wrong.
        message: String,
    },
}

/// Read and parse a config file.
pub fn load(path: &Path) -> Result<RunOptions, FileError> {
    // A regular file of at most 4 MiB: `-c /dev/zero` is refused, not read without end.
    let text = loadhost_input::read_to_string(path, loadhost_input::CONFIG)
        .map_err(|error| FileError::Read { path: path.to_owned(), error })?;
    parse(path, &text)
}

/// Parse config text; `path` is only used in messages.
pub fn parse(path: &Path, text: &str) -> Result<RunOptions, FileError> {
    toml::from_str(text).map_err(|err| {
        let (line, column) = err.span().map_or((1, 1), |span| line_column(text, span.start));
        // toml's own message can span lines (it quotes the source); keep the first.
        let message = err.message().lines().next().unwrap_or("invalid TOML").trim().to_owned();
        FileError::Invalid { path: path.to_owned(), line, column, message }
    })
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;

    fn parse_str(text: &str) -> Result<RunOptions, FileError> {
        parse(Path::new("run.toml"), text)
    }

    #[test]
    fn keys_are_the_long_flag_names() {
        let opts = parse_str("rate = \"120/m\"\nmax-workers = 7\nduration = \"5s\"\nstage = [\"10s:50\"]\nenv = [\"A=1\"]\noverload = \"queue\"\n").unwrap();
        assert_eq!(opts.rate, Some(Rate(2.0)));
        assert_eq!(opts.max_workers, Some(7));
        assert_eq!(opts.stage.len(), 1);
        assert_eq!(opts.env[0].key, "A");
        assert!(matches!(opts.overload, Some(crate::options::OverloadArg::Queue)));
        assert_eq!(parse_str("rate = 2000").unwrap().rate, Some(Rate(2000.0)));
    }

    #[test]
    fn an_unknown_key_names_the_file_line_and_key() {
        let err = parse_str("rate = 10\nratez = 5\n").unwrap_err().to_string();
        assert!(err.starts_with("run.toml:2:1: unknown field `ratez`"), "{err}");
        assert!(!err.contains('\n'), "one line: {err}");
    }

    #[test]
    fn a_bad_value_says_what_was_expected() {
        let err = parse_str("duration = \"5x\"\n").unwrap_err().to_string();
        assert!(err.starts_with("run.toml:1:12:"), "{err}");
        assert!(err.contains("expected a duration"), "{err}");
        let err = parse_str("workers = -1\n").unwrap_err().to_string();
        assert!(err.contains("run.toml:1:"), "{err}");
    }

    #[test]
    fn thresholds_take_the_flag_string_or_a_table() {
        let text =
            "threshold = [\"latency_ms:p(99)<200\"]\nmetric = [\"login_ms:trend\"]\nout = [\"json=run.jsonl\"]\n";
        let opts = parse_str(text).unwrap();
        assert_eq!(opts.threshold[0].threshold.metric, "latency_ms");
        assert_eq!(opts.metric[0].name, "login_ms");
        let table = "[[threshold]]\nthreshold = \"http_req_failed:rate<0.01\"\nabort_on_fail = true\ndelay = \"10s\"\n";
        let opts = parse_str(table).unwrap();
        assert!(opts.threshold[0].abort_on_fail);
        assert_eq!(opts.threshold[0].delay, std::time::Duration::from_secs(10));
        let err = parse_str("threshold = [\"latency_ms:p(99)<<1\"]\n").unwrap_err().to_string();
        assert!(err.contains("run.toml:1:") && err.contains("is not a number"), "{err}");
    }
}
