//! Settings for a plugin come from its environment, which holds only what the user passed with
//! `loadhost run -e KEY=VALUE` (the sandbox grants nothing else).
//!
//! A value that is set but does not parse is the user's mistake, and every SDK treats it alike: the
//! run is aborted (exit code 4) with `KEY=VALUE: expected WHAT`, e.g. `DELAY_MS=abc: expected an
//! integer`.

use std::cell::RefCell;
use std::str::FromStr;

thread_local! {
    // The first setting that did not parse during the current export call. A wasm panic cannot be
    // caught, so `env_or` cannot stop the task there and then; the export macros turn this into
    // the call's abort when it returns (see `crate::__private`).
    static BAD_SETTING: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// What a boolean setting may say (case-insensitive, as in the other SDKs).
pub(crate) const BOOLEAN: &str = "a boolean (true/false, 1/0, yes/no, on/off)";

/// The value of `key` parsed as `T`, or `default` when `key` is unset.
///
/// Numbers must be finite; a `bool` also takes 1/0, yes/no and on/off (and an empty value is
/// `false`). A value that is set but does not parse aborts the run: the task carries on with
/// `default`, and when it returns (whatever it returns) the SDK ends it with an abort whose message
/// names the key, the value and what was expected (`DELAY_MS=abc: expected an integer`). In
/// `setup` or `init` the same message fails the step, which stops the run too.
pub fn env_or<T: FromStr>(key: &str, default: T) -> T {
    let Ok(raw) = std::env::var(key) else {
        return default;
    };
    match parse::<T>(&raw) {
        Some(value) => value,
        None => {
            remember_bad_setting(format!("{key}={raw}: expected {}", expected(std::any::type_name::<T>(), &raw)));
            default
        }
    }
}

/// Keep `message` as this call's bad setting, unless one came first: the call then ends in an
/// abort that says it.
pub(crate) fn remember_bad_setting(message: String) {
    BAD_SETTING.with(|bad| {
        bad.borrow_mut().get_or_insert(message);
    });
}

/// `raw` parsed as `T` with the rules every SDK shares: trimmed, finite numbers, boolean words.
pub(crate) fn parse<T: FromStr>(raw: &str) -> Option<T> {
    let text = raw.trim();
    match std::any::type_name::<T>() {
        "bool" => {
            let word = text.to_ascii_lowercase();
            let canonical = match word.as_str() {
                "1" | "true" | "yes" | "on" => "true",
                "0" | "false" | "no" | "off" | "" => "false",
                _ => return None,
            };
            canonical.parse().ok()
        }
        "f32" | "f64" if !text.parse::<f64>().is_ok_and(f64::is_finite) => None,
        _ => text.parse().ok(),
    }
}

/// What a value of the type named `type_name` looks like, for the message about `raw`.
pub(crate) fn expected(type_name: &str, raw: &str) -> String {
    macro_rules! integers {
        ($($t:ty),*) => {
            $(
                if type_name == stringify!($t) {
                    let text = raw.trim();
                    // An integer that does not fit says the range; anything else just "an integer".
                    let integer = text.parse::<i128>().is_ok() || text.parse::<u128>().is_ok();
                    return if integer {
                        format!("an integer from {} to {}", <$t>::MIN, <$t>::MAX)
                    } else {
                        "an integer".to_owned()
                    };
                }
            )*
        };
    }
    integers!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);
    match type_name {
        "f32" | "f64" => "a number".to_owned(),
        "bool" => BOOLEAN.to_owned(),
        "char" => "a single character".to_owned(),
        other => {
            let short = other.split('<').next().unwrap_or(other).rsplit("::").next().unwrap_or(other);
            format!("a value that parses as {short}")
        }
    }
}

/// The setting that did not parse during this call, if any (and forget it).
pub(crate) fn take_bad_setting() -> Option<String> {
    BAD_SETTING.with(|bad| bad.borrow_mut().take())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `env_or(key, default)` with `key` set to `value`, and the message it left.
    fn read<T: FromStr>(value: &str, default: T) -> (T, Option<String>) {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let key = format!("LOADHOST_SDK_TEST_{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        // SAFETY: every read has a key of its own, which no other thread of the tests touches.
        unsafe { std::env::set_var(&key, value) };
        take_bad_setting();
        let got = env_or(&key, default);
        let message = take_bad_setting().map(|m| m.replacen(&key, "KEY", 1));
        // SAFETY: as above.
        unsafe { std::env::remove_var(&key) };
        (got, message)
    }

    #[test]
    fn values_parse_like_the_other_sdks() {
        assert_eq!(read(" 7 ", 1u64), (7, None));
        assert_eq!(read("-3", 1i32), (-3, None));
        assert_eq!(read("0.5", 1.0f64), (0.5, None));
        for (word, value) in [("Yes", true), ("on", true), ("1", true), ("off", false), ("0", false), ("", false)] {
            assert_eq!(read(word, !value), (value, None), "{word}");
        }
        assert_eq!(read("text", String::new()), ("text".to_owned(), None));
        assert_eq!(env_or("LOADHOST_SDK_TEST_UNSET", 9u8), 9);
    }

    #[test]
    fn a_bad_value_keeps_the_default_and_leaves_the_message() {
        assert_eq!(read("abc", 5u64), (5, Some("KEY=abc: expected an integer".to_owned())));
        assert_eq!(read("-1", 5u64).1.as_deref(), Some("KEY=-1: expected an integer from 0 to 18446744073709551615"));
        assert_eq!(read("300", 5u8).1.as_deref(), Some("KEY=300: expected an integer from 0 to 255"));
        assert_eq!(read("1.5x", 0.0f64).1.as_deref(), Some("KEY=1.5x: expected a number"));
        assert_eq!(read("inf", 0.0f64).1.as_deref(), Some("KEY=inf: expected a number"));
        assert_eq!(read("maybe", false).1.as_deref(), Some(format!("KEY=maybe: expected {BOOLEAN}").as_str()));
        let addr = read("nowhere", std::net::SocketAddr::from(([127, 0, 0, 1], 1))).1;
        assert_eq!(addr.as_deref(), Some("KEY=nowhere: expected a value that parses as SocketAddr"));
    }

    #[test]
    fn the_first_bad_setting_of_a_call_wins() {
        take_bad_setting();
        // SAFETY: keys of this test only.
        unsafe {
            std::env::set_var("LOADHOST_SDK_TEST_FIRST", "x");
            std::env::set_var("LOADHOST_SDK_TEST_SECOND", "y");
        }
        let _ = env_or("LOADHOST_SDK_TEST_FIRST", 0u32);
        let _ = env_or("LOADHOST_SDK_TEST_SECOND", 0u32);
        assert_eq!(take_bad_setting().as_deref(), Some("LOADHOST_SDK_TEST_FIRST=x: expected an integer"));
        assert_eq!(take_bad_setting(), None);
    }
}
