//! The options a plugin declares: the `-e` settings it reads, each with a type, a default or `!`
//! (required) and a one-line help. [`declare_options!`](crate::declare_options) writes them into
//! the component's `loadhost:options` section, so `loadhost inspect` lists them and `loadhost run`
//! refuses, before any load, a run that lacks a required one or gives one a value of the wrong type,
//! and warns about an `-e` that no option has (`BLOB_BYTE`: did you mean BLOB_BYTES?). It also
//! makes a static through which the plugin reads each one, typed, its default from the declaration:
//!
//! ```ignore
//! loadhost_sdk::declare_options!(
//!     static OPTIONS =
//!         "TARGET_URL:url=http://127.0.0.1:8080/ 'the page to GET'",
//!         "USERS:int! 'how many users'",
//!         "PAUSE:duration=250ms 'the pause between two requests'",
//! );
//!
//! let url: String = OPTIONS.get("TARGET_URL");
//! let users: u32 = OPTIONS.get("USERS");
//! let pause: std::time::Duration = OPTIONS.get("PAUSE");
//! ```
//!
//! A declaration is `NAME:TYPE[!][=DEFAULT] [HELP]` (docs/options.md has the whole syntax). Each
//! TYPE reads as these Rust types (and any as a `String`, the value as given):
//!
//! | TYPE       | read as                        | a value such as          |
//! |------------|--------------------------------|--------------------------|
//! | `string`   | `String`                       | anything                 |
//! | `int`      | any integer type, `f64`, `f32` | `-3`, `10000`            |
//! | `float`    | `f64`, `f32`                   | `0.5`, `1e3`             |
//! | `bool`     | `bool`                         | true/false, 1/0, yes/no, on/off |
//! | `duration` | `std::time::Duration`          | `500ms`, `5s`, `1m30s`   |
//! | `url`      | `String`                       | `http://127.0.0.1:8080/` |
//!
//! An option with neither a default nor `!` is read as an `Option<T>` (`None` when not given). A
//! value that does not read as its type (which `loadhost run` refuses before any load, but an older
//! host does not) aborts the run as [`env_or`](crate::config::env_or) does: `USERS=ten: expected an
//! integer`; so does a required option that is missing.

use std::time::Duration;

use crate::config::{BOOLEAN, expected, parse, remember_bad_setting};

/// The options a plugin declares, made by [`declare_options!`](crate::declare_options).
#[derive(Debug, Clone, Copy)]
pub struct Options {
    text: &'static str,
}

impl Options {
    #[doc(hidden)]
    pub const fn __new(text: &'static str) -> Self {
        Self { text }
    }

    /// The value of the declared option `name` as `T`: the `-e` value given, else the declared
    /// default. Panics when `name` is not declared, when `T` does not fit the declared type, and
    /// when the option has neither a default nor `!` and `T` is not an `Option`; these are the
    /// plugin's mistakes, not the user's.
    #[track_caller]
    pub fn get<T: OptionValue>(&self, name: &str) -> T {
        let Some(declared) = self.text.lines().filter_map(declaration).find(|d| d.name == name) else {
            panic!("OPTIONS.get({name:?}): no option {name} is declared in declare_options!");
        };
        let given = match std::env::var(name) {
            Ok(value) => Some(value),
            Err(std::env::VarError::NotPresent) => None,
            Err(std::env::VarError::NotUnicode(_)) => {
                remember_bad_setting(format!("-e {name}: expected {} in UTF-8", declared.kind.expected()));
                return T::default();
            }
        };
        let type_name = short_type_name(std::any::type_name::<T>());
        let unfit = || -> ! {
            panic!(
                "OPTIONS.get::<{type_name}>({name:?}): {name} is declared {}, which reads as {} (or a String)",
                declared.kind.name(),
                declared.kind.rust_types()
            )
        };
        match (given, declared.default) {
            (Some(raw), _) => match T::read(declared.kind, &raw) {
                Ok(value) => value,
                Err(Unfit::Type) => unfit(),
                Err(Unfit::Value(expected)) => {
                    remember_bad_setting(format!("{name}={raw}: expected {expected}"));
                    T::default()
                }
            },
            (None, Some(default)) => match T::read(declared.kind, default) {
                Ok(value) => value,
                Err(Unfit::Type) => unfit(),
                Err(Unfit::Value(expected)) => {
                    panic!("declare_options!: the default of {name}, {default}, is not {expected}")
                }
            },
            (None, None) if declared.required => {
                let about = match declared.help {
                    "" => declared.kind.name().to_owned(),
                    help => format!("{}: {help}", declared.kind.name()),
                };
                remember_bad_setting(format!("-e {name} is required ({about})"));
                T::default()
            }
            (None, None) => T::absent().unwrap_or_else(|| {
                panic!(
                    "OPTIONS.get::<{type_name}>({name:?}): {name} has no default and is not required ('!'): read it as an Option<{type_name}>"
                )
            }),
        }
    }
}

/// `core::option::Option<alloc::string::String>` as a plugin writes it: `Option<String>`.
fn short_type_name(full: &str) -> String {
    let mut out = String::new();
    let mut path = String::new();
    for c in full.chars().chain(['\0']) {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            path.push(c);
        } else {
            out.push_str(path.rsplit("::").next().unwrap_or_default());
            path.clear();
            if c != '\0' {
                out.push(c);
            }
        }
    }
    out
}

/// Why a value cannot be read as a type.
#[doc(hidden)]
#[derive(Debug)]
pub enum Unfit {
    /// The Rust type does not fit the declared type (the plugin's mistake).
    Type,
    /// The value is not one of the declared type: what was expected (the user's mistake).
    Value(String),
}

/// The type of an option's value, as the section names it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Int,
    Float,
    Bool,
    Duration,
    Url,
}

impl Kind {
    const ALL: [Kind; 6] = [Kind::String, Kind::Int, Kind::Float, Kind::Bool, Kind::Duration, Kind::Url];

    fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Int => "int",
            Kind::Float => "float",
            Kind::Bool => "bool",
            Kind::Duration => "duration",
            Kind::Url => "url",
        }
    }

    /// What a value of it looks like, in the words every SDK and the host use.
    fn expected(self) -> &'static str {
        match self {
            Kind::String => "a text",
            Kind::Int => "an integer",
            Kind::Float => "a number",
            Kind::Bool => BOOLEAN,
            Kind::Duration => "a duration such as 500ms, 5s, 1.5m, 2h or 1m30s",
            Kind::Url => "an absolute URL such as http://127.0.0.1:8080/",
        }
    }

    fn rust_types(self) -> &'static str {
        match self {
            Kind::String | Kind::Url => "a String",
            Kind::Int => "an integer type, f64 or f32",
            Kind::Float => "f64 or f32",
            Kind::Bool => "a bool",
            Kind::Duration => "a std::time::Duration",
        }
    }

    /// The value's text if it is one of this type (trimmed, but for a `string`).
    fn check(self, raw: &str) -> Result<&str, Unfit> {
        let text = raw.trim();
        let fine = match self {
            Kind::String => return Ok(raw),
            Kind::Int => {
                let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
                !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
            }
            Kind::Float => text.parse::<f64>().is_ok_and(f64::is_finite),
            Kind::Bool => parse::<bool>(text).is_some(),
            Kind::Duration => duration(text).is_some(),
            Kind::Url => is_url(text),
        };
        if fine { Ok(text) } else { Err(Unfit::Value(self.expected().to_owned())) }
    }
}

mod sealed {
    pub trait Sealed: Sized + Default {
        /// `raw` (the value given, or the declared default) as this type, for an option of `kind`.
        fn read(kind: super::Kind, raw: &str) -> Result<Self, super::Unfit>;

        /// The value of an option that is not given and has no default: only an `Option` has one.
        fn absent() -> Option<Self> {
            None
        }
    }
}

/// A Rust type an option's value can be read as (see the table in [`crate::options`]).
pub trait OptionValue: sealed::Sealed {}

impl<T: sealed::Sealed> OptionValue for T {}

impl sealed::Sealed for String {
    fn read(kind: Kind, raw: &str) -> Result<Self, Unfit> {
        kind.check(raw).map(str::to_owned)
    }
}

impl sealed::Sealed for bool {
    fn read(kind: Kind, raw: &str) -> Result<Self, Unfit> {
        match kind {
            Kind::Bool => parse(kind.check(raw)?).ok_or(Unfit::Value(BOOLEAN.to_owned())),
            _ => Err(Unfit::Type),
        }
    }
}

impl sealed::Sealed for Duration {
    fn read(kind: Kind, raw: &str) -> Result<Self, Unfit> {
        match kind {
            Kind::Duration => duration(kind.check(raw)?).ok_or(Unfit::Value(kind.expected().to_owned())),
            _ => Err(Unfit::Type),
        }
    }
}

/// Floats take an `int` as well as a `float`.
macro_rules! floats {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {
            fn read(kind: Kind, raw: &str) -> Result<Self, Unfit> {
                match kind {
                    Kind::Float | Kind::Int => {
                        let text = kind.check(raw)?;
                        parse::<$t>(text).ok_or_else(|| Unfit::Value(expected(stringify!($t), text)))
                    }
                    _ => Err(Unfit::Type),
                }
            }
        }
    )*};
}
floats!(f32, f64);

/// Integers take an `int` in their own range.
macro_rules! integers {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {
            fn read(kind: Kind, raw: &str) -> Result<Self, Unfit> {
                match kind {
                    Kind::Int => {
                        let text = kind.check(raw)?;
                        parse::<$t>(text).ok_or_else(|| Unfit::Value(expected(stringify!($t), text)))
                    }
                    _ => Err(Unfit::Type),
                }
            }
        }
    )*};
}
integers!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);

impl<T: sealed::Sealed> sealed::Sealed for Option<T> {
    fn read(kind: Kind, raw: &str) -> Result<Self, Unfit> {
        T::read(kind, raw).map(Some)
    }

    fn absent() -> Option<Self> {
        Some(None)
    }
}

/// A duration as loadhost's flags take it: one or more `<number><unit>` parts with units `ms`,
/// `s`, `m`, `h` (`500ms`, `1.5m`, `1m30s`), at most 10⁹ seconds.
fn duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    let mut seconds = 0f64;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        seconds += number
            * match &rest[..unit] {
                "ms" => 0.001,
                "s" => 1.0,
                "m" => 60.0,
                "h" => 3600.0,
                _ => return None,
            };
        rest = &rest[unit..];
    }
    (seconds.is_finite() && seconds <= 1e9).then(|| Duration::from_secs_f64(seconds))
}

/// `SCHEME://HOST…` without white space: the shape the host's URL check agrees with.
fn is_url(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once("://") else { return false };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let host = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    scheme_ok && host > 0 && !text.contains(char::is_whitespace)
}

/// One declaration as the SDK needs it (the host reads the rest).
struct Declared<'a> {
    name: &'a str,
    kind: Kind,
    required: bool,
    default: Option<&'a str>,
    help: &'a str,
}

/// `NAME:TYPE[!][=DEFAULT] [HELP]`, which [`__check_declarations`] let through at build time.
fn declaration(line: &str) -> Option<Declared<'_>> {
    let (name, rest) = line.split_once(':')?;
    let rest = rest.trim_start();
    let end = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
    let kind = Kind::ALL.into_iter().find(|k| k.name() == &rest[..end])?;
    let mut rest = rest[end..].trim_start();
    let required = rest.starts_with('!');
    rest = rest.trim_start_matches('!').trim_start();
    let default = match rest.strip_prefix('=') {
        Some(after) => {
            let (value, after) = word_or_quoted(after.trim_start())?;
            rest = after.trim_start();
            Some(value)
        }
        None => None,
    };
    let help = word_or_quoted(rest).map_or("", |(help, _)| help.trim());
    Some(Declared { name: name.trim(), kind, required, default, help })
}

/// The quoted text or the word `text` starts with, and what follows it.
fn word_or_quoted(text: &str) -> Option<(&str, &str)> {
    match text.chars().next()? {
        quote @ ('"' | '\'') => {
            let end = text[1..].find(quote)? + 1;
            Some((&text[1..end], &text[end + 1..]))
        }
        _ => {
            let end = text.find(char::is_whitespace).unwrap_or(text.len());
            Some((&text[..end], &text[end..]))
        }
    }
}

/// Declare the `-e` options the plugin reads, and make a static to read them with (see
/// [`crate::options`]):
///
/// ```ignore
/// loadhost_sdk::declare_options!(
///     static OPTIONS =
///         "TARGET_URL:url=http://127.0.0.1:8080/ 'the page to GET'",
///         "USERS:int! 'how many users'",
/// );
/// ```
///
/// Each declaration is `NAME:TYPE[!][=DEFAULT] [HELP]`: TYPE is string, int, float, bool,
/// duration or url; `!` makes it required; DEFAULT is a word or quoted; HELP is quoted, `'…'` or
/// `"…"`. They go into a `loadhost:options` custom section of the core module, which
/// wit-component keeps inside the component, so loadhost reads them without running the plugin. A
/// malformed one fails the build (name, type, quotes) or the load (a default not of its type).
#[macro_export]
macro_rules! declare_options {
    ($vis:vis static $name:ident = $($declaration:literal),+ $(,)?) => {
        $vis static $name: $crate::options::Options = {
            const TEXT: &str = ::core::concat!($($declaration, "\n"),+);
            const _: () = $crate::options::__check_declarations(TEXT);
            #[used]
            #[cfg_attr(target_family = "wasm", unsafe(link_section = "loadhost:options"))]
            static DECLARED: [u8; TEXT.len()] = {
                let text = TEXT.as_bytes();
                let mut bytes = [0u8; TEXT.len()];
                let mut i = 0;
                while i < text.len() {
                    bytes[i] = text[i];
                    i += 1;
                }
                bytes
            };
            $crate::options::Options::__new(TEXT)
        };
    };
}

/// Panics (at compile time, in [`declare_options!`](crate::declare_options)) unless every line of
/// `text` is `NAME:TYPE[!][=DEFAULT] [HELP]` with a name, a known type, closed quotes and the help
/// last; the host checks the rest (a default of the type).
#[doc(hidden)]
pub const fn __check_declarations(text: &str) {
    let text = text.as_bytes();
    let mut start = 0;
    while start < text.len() {
        let mut end = start;
        while end < text.len() && text[end] != b'\n' {
            end += 1;
        }
        check_line(text, start, end);
        start = end + 1;
    }
}

const fn check_line(text: &[u8], start: usize, end: usize) {
    let mut i = skip_spaces(text, start, end);
    if i == end {
        return;
    }
    let name = i;
    while i < end && (text[i].is_ascii_alphanumeric() || text[i] == b'_') {
        i += 1;
    }
    if i == name || text[name].is_ascii_digit() {
        panic!("declare_options!: an option's name is letters, digits or '_', not starting with a digit");
    }
    i = skip_spaces(text, i, end);
    if i == end || text[i] != b':' {
        panic!(
            "declare_options!: a declaration is NAME:TYPE[!][=DEFAULT] ['HELP'], such as \"USERS:int=10 'how many users'\""
        );
    }
    i = skip_spaces(text, i + 1, end);
    let word = i;
    while i < end && text[i].is_ascii_alphabetic() {
        i += 1;
    }
    let kind = text.split_at(word).1.split_at(i - word).0;
    if !is_any(kind, &[b"string", b"int", b"float", b"bool", b"duration", b"url"]) {
        panic!("declare_options!: the type after ':' is string, int, float, bool, duration or url");
    }
    i = skip_spaces(text, i, end);
    let required = i < end && text[i] == b'!';
    if required {
        i = skip_spaces(text, i + 1, end);
    }
    if i < end && text[i] == b'=' {
        if required {
            panic!("declare_options!: a required option ('!') has no default");
        }
        i = skip_spaces(text, i + 1, end);
        if i < end && (text[i] == b'"' || text[i] == b'\'') {
            i = after_quote(text, i, end);
        } else {
            let word = i;
            while i < end && text[i] != b' ' && text[i] != b'\t' {
                if text[i] == b'"' || text[i] == b'\'' {
                    panic!("declare_options!: a default with a quote in it is quoted as a whole");
                }
                i += 1;
            }
            if i == word {
                panic!("declare_options!: nothing after '=': write the default, or \"\" for an empty one");
            }
        }
        i = skip_spaces(text, i, end);
    }
    if i < end {
        if text[i] != b'"' && text[i] != b'\'' {
            panic!("declare_options!: the help goes last, in quotes ('…' or \"…\"), after the type or the default");
        }
        i = skip_spaces(text, after_quote(text, i, end), end);
        if i < end {
            panic!("declare_options!: the help goes last");
        }
    }
}

const fn skip_spaces(text: &[u8], mut i: usize, end: usize) -> usize {
    while i < end && (text[i] == b' ' || text[i] == b'\t' || text[i] == b'\r') {
        i += 1;
    }
    i
}

/// Where the quoted text starting at `i` ends (after its closing quote).
const fn after_quote(text: &[u8], i: usize, end: usize) -> usize {
    let quote = text[i];
    let mut j = i + 1;
    while j < end && text[j] != quote {
        j += 1;
    }
    if j == end {
        panic!("declare_options!: a quote is not closed");
    }
    j + 1
}

/// Whether `word` is one of `words` (a `const` string comparison).
const fn is_any(word: &[u8], words: &[&[u8]]) -> bool {
    let mut w = 0;
    while w < words.len() {
        let candidate = words[w];
        let mut same = candidate.len() == word.len();
        let mut i = 0;
        while same && i < word.len() {
            same = word[i] == candidate[i];
            i += 1;
        }
        if same {
            return true;
        }
        w += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::declare_options!(
        static OPTIONS =
            "TARGET_URL:url=http://127.0.0.1:8080/ 'the page to GET'",
            "USERS:int! 'how many users'",
            "PAUSE:duration=1m30s",
            "RATIO:float=0.5",
            "VERBOSE:bool=off \"it's chatty\"",
            "GREETING:string='hello world'",
            "TOKEN:string",
            "SMALL:int=300",
    );

    /// `OPTIONS.get(name)` with `name` set to `value` (or unset), and the message it left.
    fn read<T: OptionValue>(name: &str, value: Option<&str>) -> (T, Option<String>) {
        // Options have fixed names: the tests that set one hold this lock.
        static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _held = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        crate::config::take_bad_setting();
        // SAFETY: every test that touches these variables holds the lock.
        unsafe {
            match value {
                Some(v) => std::env::set_var(name, v),
                None => std::env::remove_var(name),
            }
        }
        let got = OPTIONS.get::<T>(name);
        let message = crate::config::take_bad_setting();
        // SAFETY: as above.
        unsafe { std::env::remove_var(name) };
        (got, message)
    }

    fn message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let payload = std::panic::catch_unwind(f).expect_err("the call panics");
        payload.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    #[test]
    fn defaults_come_from_the_declaration_and_values_read_by_its_type() {
        assert_eq!(read::<String>("TARGET_URL", None), ("http://127.0.0.1:8080/".to_owned(), None));
        assert_eq!(read::<String>("TARGET_URL", Some(" ws://h/echo ")), ("ws://h/echo".to_owned(), None));
        assert_eq!(read::<Duration>("PAUSE", None), (Duration::from_secs(90), None));
        assert_eq!(read::<Duration>("PAUSE", Some("250ms")), (Duration::from_millis(250), None));
        assert_eq!(read::<f64>("RATIO", None), (0.5, None));
        assert_eq!(read::<bool>("VERBOSE", Some("Yes")), (true, None));
        assert_eq!(read::<bool>("VERBOSE", None), (false, None));
        assert_eq!(read::<String>("GREETING", None), ("hello world".to_owned(), None));
        assert_eq!(read::<Option<String>>("TOKEN", None), (None, None));
        assert_eq!(read::<Option<String>>("TOKEN", Some(" x ")), (Some(" x ".to_owned()), None), "a string as given");
        assert_eq!(read::<u32>("USERS", Some("12")), (12, None));
        assert_eq!(read::<f64>("USERS", Some("12")), (12.0, None), "an int reads as a float too");
        assert_eq!(read::<String>("USERS", Some(" 12 ")), ("12".to_owned(), None), "any type reads as a String");
    }

    #[test]
    fn the_users_mistakes_abort_the_call_with_the_message_every_sdk_gives() {
        assert_eq!(read::<u32>("USERS", None), (0, Some("-e USERS is required (int: how many users)".to_owned())));
        assert_eq!(read::<u32>("USERS", Some("ten")), (0, Some("USERS=ten: expected an integer".to_owned())));
        assert_eq!(read::<u8>("USERS", Some("300")).1.as_deref(), Some("USERS=300: expected an integer from 0 to 255"));
        assert_eq!(
            read::<Duration>("PAUSE", Some("5")).1.as_deref(),
            Some("PAUSE=5: expected a duration such as 500ms, 5s, 1.5m, 2h or 1m30s")
        );
        assert_eq!(
            read::<String>("TARGET_URL", Some("127.0.0.1:8080")).1.as_deref(),
            Some("TARGET_URL=127.0.0.1:8080: expected an absolute URL such as http://127.0.0.1:8080/")
        );
        assert_eq!(
            read::<bool>("VERBOSE", Some("maybe")).1.as_deref(),
            Some(format!("VERBOSE=maybe: expected {BOOLEAN}").as_str())
        );
        assert_eq!(read::<f64>("RATIO", Some("inf")).1.as_deref(), Some("RATIO=inf: expected a number"));
    }

    #[test]
    fn the_plugins_mistakes_panic_naming_them() {
        assert_eq!(
            message(|| {
                OPTIONS.get::<u64>("NOPE");
            }),
            "OPTIONS.get(\"NOPE\"): no option NOPE is declared in declare_options!"
        );
        assert_eq!(
            message(|| {
                OPTIONS.get::<u64>("PAUSE");
            }),
            "OPTIONS.get::<u64>(\"PAUSE\"): PAUSE is declared duration, which reads as a std::time::Duration (or a String)"
        );
        assert_eq!(
            message(|| drop(read::<String>("TOKEN", None))),
            "OPTIONS.get::<String>(\"TOKEN\"): TOKEN has no default and is not required ('!'): read it as an Option<String>"
        );
        assert_eq!(
            message(|| drop(read::<u8>("SMALL", None))),
            "declare_options!: the default of SMALL, 300, is not an integer from 0 to 255"
        );
    }

    #[test]
    fn declarations_are_checked_when_the_plugin_builds() {
        __check_declarations("A:int\nB_2:url! 'x'\n  C : string = 'a b' \"it's\"\n\nD:bool=on\n");
        for (bad, says) in [
            ("USERS\n", "a declaration is NAME:TYPE"),
            (":int\n", "an option's name"),
            ("9X:int\n", "an option's name"),
            ("MY-VAR:int\n", "a declaration is NAME:TYPE"),
            ("USERS:integer\n", "the type after ':'"),
            ("USERS:int!=5\n", "a required option ('!') has no default"),
            ("USERS:int=\n", "nothing after '='"),
            ("NAME:string=it's\n", "quoted as a whole"),
            ("USERS:int='5\n", "a quote is not closed"),
            ("USERS:int how many\n", "the help goes last, in quotes"),
            ("USERS:int 'how' many\n", "the help goes last"),
        ] {
            let payload = std::panic::catch_unwind(|| __check_declarations(bad)).expect_err(bad);
            let message = payload.downcast_ref::<&str>().copied().unwrap_or_default();
            assert!(message.contains(says), "{bad:?}: {message}");
        }
    }

    #[test]
    fn durations_and_urls_read_as_the_host_reads_them() {
        for (text, ms) in [("500ms", 500), ("5s", 5000), ("1.5m", 90_000), ("2h", 7_200_000), ("1m30s", 90_000)] {
            assert_eq!(duration(text), Some(Duration::from_millis(ms)), "{text}");
        }
        for text in ["", "5", "5x", "1 s", "-1s", "1e3s", "99999999999h"] {
            assert_eq!(duration(text), None, "{text}");
        }
        for (text, ok) in [
            ("http://127.0.0.1:8080/", true),
            ("ws://h/echo", true),
            ("127.0.0.1:8080", false),
            ("http://", false),
            ("/p", false),
            ("http://a b/", false),
        ] {
            assert_eq!(is_url(text), ok, "{text}");
        }
    }
}
