//! Values that must never reach an output: the plugin's environment (`-e`, `--env-file`) and the
//! control API's token (`--control-token`, `$LOADHOST_CONTROL_TOKEN`, `--control-token-file`).
//! Outputs echo the options with these values redacted (see [`crate::units::REDACTED`]).

use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::options::RunOptions;
use crate::units::EnvPair;

/// A secret that cannot be read.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecretError {
    /// An `--env-file` that cannot be read.
    #[error("--env-file {}: cannot read it: {why}", path.display())]
    EnvFileUnreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// A line of an `--env-file` that is not `KEY=VALUE`.
    #[error("--env-file {}: line {line}: {why}", path.display())]
    EnvFileLine {
        /// The file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// A `--control-token-file` (or `--metrics-token-file`) that cannot be read or holds no token.
    #[error("--{flag}-file {}: {why}", path.display())]
    TokenFile {
        /// `control-token` or `metrics-token`.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// Two sources for one token.
    #[error("--{flag}-file and --{flag} (or its environment variable) both give a token: use one")]
    TwoTokens {
        /// `control-token` or `metrics-token`.
        flag: &'static str,
    },
    /// An empty token.
    #[error("--{flag}: the token is empty")]
    EmptyToken {
        /// `control-token` or `metrics-token`.
        flag: &'static str,
    },
}

/// The variables of one `--env-file`: `KEY=VALUE` lines (a value may be empty or contain `=`),
/// with `#` comments and blank lines skipped, as `docker run --env-file` reads them.
fn env_file(path: &Path) -> Result<Vec<EnvPair>, SecretError> {
    let text = loadhost_input::read_to_string(path, loadhost_input::TEXT)
        .map_err(|err| SecretError::EnvFileUnreadable { path: path.to_owned(), why: err.to_string() })?;
    let mut pairs = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| SecretError::EnvFileLine { path: path.to_owned(), line: n + 1, why: why.to_owned() };
        let (key, value) = line.split_once('=').ok_or_else(|| bad("expected KEY=VALUE"))?;
        let key = key.trim_end();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(bad("expected KEY=VALUE with a name before '=' and no spaces in it"));
        }
        pairs.push(EnvPair { key: key.to_owned(), value: value.to_owned() });
    }
    Ok(pairs)
}

/// The plugin's whole environment: every `--env-file` in order, then `-e`; for a name given more
/// than once, the last one wins.
pub fn plugin_env(options: &RunOptions) -> Result<Vec<(String, String)>, SecretError> {
    let mut env: Vec<(String, String)> = Vec::new();
    let from_files = options.env_file.iter().map(|path| env_file(path)).collect::<Result<Vec<_>, _>>()?;
    for pair in from_files.into_iter().flatten().chain(options.env.iter().cloned()) {
        env.retain(|(key, _)| *key != pair.key);
        env.push((pair.key, pair.value));
    }
    Ok(env)
}

/// The control token from whichever source gave one (the flag or the environment, or a file).
pub fn control_token(options: &RunOptions) -> Result<Option<String>, SecretError> {
    token("control-token", options.control_token.as_ref(), options.control_token_file.as_ref())
}

/// The OpenMetrics endpoint's token: `--metrics-token` (or `$LOADHOST_METRICS_TOKEN`), or the
/// first line of `--metrics-token-file`; one source only.
pub fn metrics_token(options: &RunOptions) -> Result<Option<String>, SecretError> {
    token("metrics-token", options.metrics_token.as_ref(), options.metrics_token_file.as_ref())
}

/// The push receivers' token: `--out-token` (or `$LOADHOST_OUT_TOKEN`), or the first line of
/// `--out-token-file`; one source only.
pub fn out_token(options: &RunOptions) -> Result<Option<String>, SecretError> {
    token("out-token", options.out_token.as_ref(), options.out_token_file.as_ref())
}

fn token(flag: &'static str, direct: Option<&String>, file: Option<&PathBuf>) -> Result<Option<String>, SecretError> {
    let from_file = match file {
        Some(path) => {
            let text = loadhost_input::read_to_string(path, loadhost_input::TEXT).map_err(|err| {
                SecretError::TokenFile { flag, path: path.clone(), why: format!("cannot read it: {err}") }
            })?;
            let token = text.lines().next().unwrap_or_default().trim().to_owned();
            if token.is_empty() {
                return Err(SecretError::TokenFile { flag, path: path.clone(), why: "its first line is empty".into() });
            }
            Some(token)
        }
        None => None,
    };
    match (direct, from_file) {
        (Some(_), Some(_)) => Err(SecretError::TwoTokens { flag }),
        (Some(token), None) if token.trim().is_empty() => Err(SecretError::EmptyToken { flag }),
        (Some(token), None) => Ok(Some(token.clone())),
        (None, file) => Ok(file),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(text: &str) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), text).unwrap();
        file
    }

    #[test]
    fn env_files_take_key_value_lines_and_flags_win() {
        let file = written("# secrets\nAPI_TOKEN=s3cret\n\nEMPTY=\nURL=http://x/?a=b\nSHARED=file\n");
        let options = RunOptions {
            env_file: vec![file.path().to_owned()],
            env: vec!["SHARED=flag".parse().unwrap()],
            ..RunOptions::default()
        };
        let env = plugin_env(&options).unwrap();
        assert_eq!(
            env,
            [("API_TOKEN", "s3cret"), ("EMPTY", ""), ("URL", "http://x/?a=b"), ("SHARED", "flag")]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
    }

    #[test]
    fn a_bad_env_file_names_the_file_and_the_line() {
        let file = written("A=1\nnot a pair\n");
        let options = RunOptions { env_file: vec![file.path().to_owned()], ..RunOptions::default() };
        let err = plugin_env(&options).unwrap_err().to_string();
        assert!(err.contains(&file.path().display().to_string()) && err.contains("line 2"), "{err}");
        let missing = RunOptions { env_file: vec!["/no/such/file.env".into()], ..RunOptions::default() };
        assert!(plugin_env(&missing).unwrap_err().to_string().contains("/no/such/file.env: cannot read it"));
    }

    #[test]
    fn the_control_token_comes_from_one_source() {
        let file = written("t0ken\nignored\n");
        let by_file = RunOptions { control_token_file: Some(file.path().to_owned()), ..RunOptions::default() };
        assert_eq!(control_token(&by_file), Ok(Some("t0ken".to_owned())));
        let both = RunOptions { control_token: Some("x".into()), ..by_file.clone() };
        assert_eq!(control_token(&both), Err(SecretError::TwoTokens { flag: "control-token" }));
        let empty = written("\n");
        let empty = RunOptions { control_token_file: Some(empty.path().to_owned()), ..RunOptions::default() };
        assert!(control_token(&empty).unwrap_err().to_string().contains("first line is empty"));
        let serialized = serde_json::to_value(&both).unwrap();
        assert_eq!(serialized["control-token"], "[redacted]", "the token never reaches an output");
    }
}
