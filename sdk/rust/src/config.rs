//! Settings for a plugin come from its environment, which holds only what the user passed with
//! `loadhost run -e KEY=VALUE` (the sandbox grants nothing else).

use std::str::FromStr;

/// The value of `key` parsed as `T`, or `default` when `key` is unset.
///
/// A value that is set but does not parse is a configuration mistake, so it panics with a message
/// naming the key (the host reports the trap and replaces the instance).
pub fn env_or<T: FromStr>(key: &str, default: T) -> T {
    match std::env::var(key) {
        Ok(raw) => match raw.trim().parse() {
            Ok(value) => value,
            Err(_) => panic!("environment variable {key}={raw:?} does not parse"),
        },
        Err(_) => default,
    }
}
