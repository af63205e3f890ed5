//! loadhost's run options: the command-line flags and the TOML file share one definition
//! ([`RunOptions`]), so a key in `-c run.toml` is always spelled like its flag, and flags win.
//!
//! # Layout
//! - [`units`]: durations (`500ms`, `1m30s`), rates (`2000`, `120/m`), stages (`30s:1000`), `KEY=VALUE`.
//! - [`merge`]: the macro that makes one list of options into the flags, the TOML keys, the
//!   `[[scenario]]` block and their merges ([`merge::Merge`]).
//! - [`options`]: that list, [`RunOptions`] with each option's `--help`: the one place a flag is added.
//! - [`criteria`]: `--threshold` with its abort options, `--metric` declarations, `--out json=FILE`.
//! - [`distributed`]: `--segment I/N`, `--segments N`, `--start-at` for one plan run by many processes.
//! - [`feed`]: reading `--data` (JSON lines or CSV) into one shared feed.
//! - [`file`](mod@file): reading a TOML file with errors that name the file, line and key.
//! - [`resolve`](mod@resolve): checking the combination and turning it into [`RunSettings`], the run's
//!   list of engine [`Plan`](loadhost_engine::Plan)s (one for a single run, one per scenario).
//! - [`spacing`]: `--think` (`--pace` is a duration).
//! - [`secrets`]: the plugin's environment (`-e`, `--env-file`) and the control token, never echoed.

#![deny(missing_docs)]

/// Serialize each type as its display string (the flag's own spelling).
macro_rules! display_serialize {
    ($($ty:ty),*) => {$(
        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    )*};
}

/// Serialize each type as its display string and deserialize it by parsing a string, so a TOML
/// value is spelled as the flag's and refused with the flag's message.
macro_rules! text_serde {
    ($($ty:ty),*) => {
        display_serialize!($($ty),*);
        $(
            impl<'de> ::serde::Deserialize<'de> for $ty {
                fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    <String as ::serde::Deserialize>::deserialize(d)?.parse().map_err(::serde::de::Error::custom)
                }
            }
        )*
    };
}

pub mod criteria;
pub mod distributed;
pub mod feed;
pub mod file;
#[macro_use]
pub mod merge;
pub mod options;
pub mod resolve;
pub mod secrets;
pub mod spacing;
pub mod units;

pub use options::RunOptions;
pub use resolve::{ConfigError, RunSettings, check_plugin_metrics, resolve};
