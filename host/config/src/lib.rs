//! loadhost's run options: the command-line flags and the TOML file share one definition
//! ([`RunOptions`]), so a key in `-c run.toml` is always spelled like its flag, and flags win.
//!
//! # Layout
//! - [`units`]: durations (`500ms`, `1m30s`), rates (`2000`, `120/m`), stages (`30s:1000`), `KEY=VALUE`.
//! - [`options`]: [`RunOptions`], the flags and TOML keys of `loadhost run`, and how they merge.
//! - [`criteria`]: `--threshold` with its abort options, `--metric` declarations, `--out json=FILE`.
//! - [`distributed`]: `--segment I/N`, `--segments N`, `--start-at` for one plan run by many processes.
//! - [`feed`]: reading `--data` (JSON lines or CSV) into one shared feed.
//! - [`file`]: reading a TOML file with errors that name the file, line and key.
//! - [`resolve`]: checking the combination and turning it into an engine [`Plan`](loadhost_engine::Plan).

#![deny(missing_docs)]

pub mod criteria;
pub mod distributed;
pub mod feed;
pub mod file;
pub mod options;
pub mod resolve;
pub mod units;

pub use options::RunOptions;
pub use resolve::{ConfigError, RunSettings, resolve};
