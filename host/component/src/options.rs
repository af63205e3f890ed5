//! The `-e` options a plugin declares, read from its `loadhost:options` custom sections without
//! running it: `loadhost inspect` lists them, and `loadhost run` checks the run's environment
//! against them before any load ([`check`], [`undeclared`]).
//!
//! The section holds one declaration a line, `NAME:TYPE[!][=DEFAULT] [HELP]`:
//!
//! ```text
//! TARGET_URL:url=http://127.0.0.1:8080/ "the page to GET"
//! USERS:int! "how many users"
//! GREETING:string='hello world' "what each request says"
//! TOKEN:string "an API token (none: requests go without one)"
//! ```
//!
//! - NAME is an environment variable's name: letters, digits and `_`, not starting with a digit.
//! - TYPE is `string`, `int`, `float`, `bool`, `duration` or `url` ([`OptionType`]).
//! - `!` makes the option required: a run without it is refused, so it has no default.
//! - DEFAULT is what the plugin reads when the option is not given: a word without white space or
//!   quotes, or a quoted text; it must be a value of the type. An option neither required nor with a
//!   default is simply unset when not given.
//! - HELP is one line in quotes, `"…"` or `'…'`.
//!
//! Quoted texts have no escapes: each holds no quote of its own kind (so a help with an apostrophe
//! is written in `"…"`). Lines rather than one document for the reason metrics give
//! ([`crate::declared`]): a linker concatenates the sections of one name, so the same declaration
//! may come twice (it counts once); blank lines and NUL padding are ignored.

use std::fmt;
use std::str::FromStr as _;

use thiserror::Error;

/// The custom section's name.
pub const SECTION: &str = "loadhost:options";

/// The most options one plugin may declare.
pub const MAX_OPTIONS: usize = 256;

/// The longest option name: longer is not an environment variable anyone types.
const MAX_NAME: usize = 128;

/// What a boolean value may say (case-insensitive; empty is false), as every SDK reads it.
pub const BOOLEAN_WORDS: [&str; 9] = ["1", "true", "yes", "on", "0", "false", "no", "off", ""];

/// The type of an option's value. Every SDK reads a value of each type by the same rules
/// ([`OptionType::check`]), white space around it ignored but for a `string`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionType {
    /// Any text.
    String,
    /// A decimal integer, optionally signed, from `i64::MIN` to `i64::MAX`.
    Int,
    /// A finite number (`0.5`, `2`, `1e3`).
    Float,
    /// true/false, 1/0, yes/no, on/off, in any case; empty is false.
    Bool,
    /// A duration as loadhost's flags take it: `500ms`, `5s`, `1.5m`, `2h`, `1m30s`.
    Duration,
    /// An absolute URL with a host: `http://127.0.0.1:8080/`, `ws://host/path`.
    Url,
}

impl OptionType {
    /// Every type, in the order the docs list them.
    pub const ALL: [OptionType; 6] = [Self::String, Self::Int, Self::Float, Self::Bool, Self::Duration, Self::Url];

    /// Its name in a declaration: `string`, `int`, `float`, `bool`, `duration` or `url`.
    pub fn name(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Int => "int",
            Self::Float => "float",
            Self::Bool => "bool",
            Self::Duration => "duration",
            Self::Url => "url",
        }
    }

    /// What a value of it looks like, as the SDKs' messages say it (`expected an integer`).
    pub fn expected(self) -> &'static str {
        match self {
            Self::String => "a text",
            Self::Int => "an integer",
            Self::Float => "a number",
            Self::Bool => "a boolean (true/false, 1/0, yes/no, on/off)",
            Self::Duration => "a duration such as 500ms, 5s, 1.5m, 2h or 1m30s",
            Self::Url => "an absolute URL such as http://127.0.0.1:8080/",
        }
    }

    /// Whether `value` is a value of this type; if not, what was expected.
    pub fn check(self, value: &str) -> Result<(), String> {
        let text = value.trim();
        let fine = match self {
            Self::String => true,
            Self::Int => {
                let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
                if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && text.parse::<i64>().is_err() {
                    return Err(format!("an integer from {} to {}", i64::MIN, i64::MAX));
                }
                text.parse::<i64>().is_ok()
            }
            Self::Float => text.parse::<f64>().is_ok_and(f64::is_finite),
            Self::Bool => BOOLEAN_WORDS.contains(&text.to_ascii_lowercase().as_str()),
            Self::Duration => loadhost_config::units::Dur::from_str(text).is_ok(),
            Self::Url => url::Url::parse(text).is_ok_and(|u| u.host_str().is_some_and(|h| !h.is_empty())),
        };
        if fine { Ok(()) } else { Err(self.expected().to_owned()) }
    }

    fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == word)
    }
}

impl fmt::Display for OptionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One option a plugin says it reads from its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredOption {
    /// The environment variable's name.
    pub name: String,
    /// The type of its value.
    pub ty: OptionType,
    /// Whether a run must give it.
    pub required: bool,
    /// What the plugin reads when it is not given (never for a required option).
    pub default: Option<String>,
    /// One line saying what it is for; empty when the plugin gives none.
    pub help: String,
}

impl DeclaredOption {
    /// `USERS (int, required): how many users`, `TARGET_URL (url, default http://…/): the page to
    /// GET`: the name, the type and the default or that it is required, then the help.
    pub fn describe(&self) -> String {
        let mut out = format!("{} ({}", self.name, self.ty);
        if self.required {
            out.push_str(", required");
        }
        if let Some(default) = &self.default {
            out.push_str(&format!(", default {}", quoted_if_needed(default)));
        }
        out.push(')');
        if !self.help.is_empty() {
            out.push_str(": ");
            out.push_str(&self.help);
        }
        out
    }
}

/// The declaration as the section would hold it.
impl fmt::Display for DeclaredOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.name, self.ty)?;
        if self.required {
            f.write_str("!")?;
        }
        if let Some(default) = &self.default {
            write!(f, "={}", quoted_if_needed(default))?;
        }
        if !self.help.is_empty() {
            write!(f, " {}", quote(&self.help))?;
        }
        Ok(())
    }
}

/// `text` in `"…"`, or in `'…'` when it holds a `"`.
fn quote(text: &str) -> String {
    if text.contains('"') { format!("'{text}'") } else { format!("\"{text}\"") }
}

/// A default as a declaration writes it: bare when it can be.
fn quoted_if_needed(text: &str) -> String {
    let bare = !text.is_empty() && !text.contains(char::is_whitespace) && !text.starts_with(['"', '\'']);
    if bare { text.to_owned() } else { quote(text) }
}

/// Why a plugin's option declarations cannot be used. Each message says what is wrong with which
/// declaration; the caller names the file.
#[derive(Debug, Clone, Error, PartialEq)]
#[non_exhaustive]
pub enum OptionsError {
    /// The WebAssembly itself does not parse.
    #[error("the WebAssembly does not parse: {0}")]
    Parse(String),
    /// The section's bytes are not text.
    #[error("its {SECTION} section is not UTF-8 text")]
    NotText,
    /// A line that is not `NAME:TYPE[!][=DEFAULT] [HELP]`.
    #[error("its {SECTION} section declares '{line}': {why}")]
    Line {
        /// The line as written (cut at 100 characters).
        line: String,
        /// What is wrong with it.
        why: String,
    },
    /// One name declared twice, differently.
    #[error("its {SECTION} section declares {name} twice, differently: '{first}' and '{second}'")]
    Conflict {
        /// The option's name.
        name: String,
        /// The first declaration.
        first: String,
        /// The other one.
        second: String,
    },
    /// More declarations than [`MAX_OPTIONS`].
    #[error("its {SECTION} section declares more than {MAX_OPTIONS} options")]
    TooMany,
}

/// The options declared in every `loadhost:options` section of `bytes` (a component or a core
/// module), each name once.
pub fn declared_options(bytes: &[u8]) -> Result<Vec<DeclaredOption>, OptionsError> {
    let text = crate::declared::sections_text(bytes, SECTION).map_err(OptionsError::Parse)?;
    let text = std::str::from_utf8(&text).map_err(|_| OptionsError::NotText)?;
    parse(text)
}

/// The declarations in a section's text.
pub fn parse(text: &str) -> Result<Vec<DeclaredOption>, OptionsError> {
    let mut out: Vec<DeclaredOption> = Vec::new();
    for line in text.split(['\n', '\0']).map(str::trim).filter(|l| !l.is_empty()) {
        let option = parse_line(line).map_err(|why| OptionsError::Line { line: crate::declared::cut(line), why })?;
        match out.iter().find(|o| o.name == option.name) {
            Some(known) if *known == option => {}
            Some(known) => {
                return Err(OptionsError::Conflict {
                    name: option.name.clone(),
                    first: known.to_string(),
                    second: option.to_string(),
                });
            }
            None if out.len() == MAX_OPTIONS => return Err(OptionsError::TooMany),
            None => out.push(option),
        }
    }
    Ok(out)
}

const SYNTAX: &str = "expected NAME:TYPE[!][=DEFAULT] [\"HELP\"], such as USERS:int=10 \"how many users\"";

/// One `NAME:TYPE[!][=DEFAULT] [HELP]`.
fn parse_line(line: &str) -> Result<DeclaredOption, String> {
    let (name, rest) = line.split_once(':').ok_or(SYNTAX)?;
    let name = name.trim();
    let name_ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !name_ok {
        return Err(format!(
            "an option's name is 1 to {MAX_NAME} letters, digits or '_', not starting with a digit (an environment variable's name)"
        ));
    }
    let rest = rest.trim_start();
    let word_end = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
    let ty = OptionType::parse(&rest[..word_end]).ok_or_else(|| {
        let names: Vec<&str> = OptionType::ALL.iter().map(|t| t.name()).collect();
        format!("unknown type '{}' ({})", &rest[..word_end], names.join(", "))
    })?;
    let mut rest = rest[word_end..].trim_start();
    let required = match rest.strip_prefix('!') {
        Some(after) => {
            rest = after.trim_start();
            true
        }
        None => false,
    };
    let default = match rest.strip_prefix('=') {
        Some(_) if required => return Err("a required option ('!') has no default".to_owned()),
        Some(after) => {
            let (value, after) = default_value(after.trim_start())?;
            ty.check(&value).map_err(|expected| format!("its default is not {expected}"))?;
            rest = after.trim_start();
            Some(value)
        }
        None => None,
    };
    let help = match rest {
        "" => String::new(),
        quoted => {
            let (help, after) = quoted_text(quoted)
                .ok_or("the help goes last, in quotes (\"…\" or '…'), after the type or the default")?;
            if !after.trim().is_empty() {
                return Err(format!("'{}' after the help: the help goes last", after.trim()));
            }
            help.trim().to_owned()
        }
    };
    Ok(DeclaredOption { name: name.to_owned(), ty, required, default, help })
}

/// A default at the start of `text`: quoted, or a word up to white space. Returns it and what
/// follows.
fn default_value(text: &str) -> Result<(String, &str), String> {
    if text.starts_with(['"', '\'']) {
        return quoted_text(text)
            .map(|(v, rest)| (v.to_owned(), rest))
            .ok_or_else(|| "a default's quote is not closed".to_owned());
    }
    let end = text.find(char::is_whitespace).unwrap_or(text.len());
    if end == 0 {
        return Err("nothing after '=': write the default, or \"\" for an empty one".to_owned());
    }
    let word = &text[..end];
    if word.contains(['"', '\'']) {
        return Err(format!("'{word}': a default with a quote in it is quoted as a whole"));
    }
    Ok((word.to_owned(), &text[end..]))
}

/// The text inside the quotes `text` starts with, and what follows them.
fn quoted_text(text: &str) -> Option<(&str, &str)> {
    let quote = text.chars().next().filter(|c| matches!(c, '"' | '\''))?;
    let body = &text[1..];
    let end = body.find(quote)?;
    Some((&body[..end], &body[end + 1..]))
}

/// What is wrong with a run's environment for one declared option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem<'a> {
    /// The option.
    pub option: &'a DeclaredOption,
    /// `None`: required and not given; otherwise what its value should have been.
    pub expected: Option<String>,
}

/// `-e USERS is required (int: how many users)`, or `-e USERS: expected an integer (int: how
/// many users)`: the option, its type and its help, and never the value (it may be a secret).
impl fmt::Display for Problem<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = self.option;
        let about = if o.help.is_empty() { o.ty.name().to_owned() } else { format!("{}: {}", o.ty, o.help) };
        match &self.expected {
            None => write!(f, "-e {} is required ({about})", o.name),
            Some(expected) => write!(f, "-e {}: expected {expected} ({about})", o.name),
        }
    }
}

/// Every declared option that `env` (the run's whole environment: `-e`, `--env-file`, the config
/// file) leaves out though it is required, or gives a value of the wrong type, in declaration order.
pub fn check<'a>(declared: &'a [DeclaredOption], env: &[(String, String)]) -> Vec<Problem<'a>> {
    declared
        .iter()
        .filter_map(|option| match env.iter().rev().find(|(key, _)| *key == option.name) {
            None if option.required => Some(Problem { option, expected: None }),
            None => None,
            Some((_, value)) => {
                option.ty.check(value).err().map(|expected| Problem { option, expected: Some(expected) })
            }
        })
        .collect()
}

/// The keys of `keys` that no option of `declared` has, each with the declared name it most
/// likely meant (`BLOB_BYTE` → `BLOB_BYTES`), in the order given.
pub fn undeclared<'a, 'k>(
    declared: &'a [DeclaredOption],
    keys: impl IntoIterator<Item = &'k str>,
) -> Vec<(&'k str, Option<&'a str>)> {
    keys.into_iter()
        .filter(|key| !declared.iter().any(|o| o.name == *key))
        .map(|key| (key, loadhost_metrics::threshold::did_you_mean(key, declared.iter().map(|o| o.name.as_str()))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Result<DeclaredOption, OptionsError> {
        parse(line).map(|mut all| all.remove(0))
    }

    fn why(line: &str) -> String {
        match one(line) {
            Err(OptionsError::Line { why, .. }) => why,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn a_line_gives_name_type_required_default_and_help() {
        let all = parse(concat!(
            "TARGET_URL:url=http://127.0.0.1:8080/ \"the page to GET\"\n",
            "USERS:int! 'how many users'\n\0\0",
            "  GREETING : string = 'hello \"world\"'   \"what it says\"  \n",
            "TOKEN:string\n",
            "EMPTY:string=\"\"\n",
            "PAUSE:duration=1m30s\n",
            "VERBOSE:bool=off \"it's chatty\"\n",
            "RATIO:float=0.5\n",
        ))
        .unwrap();
        assert_eq!(
            all[0],
            DeclaredOption {
                name: "TARGET_URL".into(),
                ty: OptionType::Url,
                required: false,
                default: Some("http://127.0.0.1:8080/".into()),
                help: "the page to GET".into(),
            }
        );
        assert_eq!((all[1].ty, all[1].required, &all[1].default), (OptionType::Int, true, &None));
        assert_eq!((all[2].default.as_deref(), all[2].help.as_str()), (Some("hello \"world\""), "what it says"));
        assert_eq!((&all[3].default, all[3].help.as_str(), all[3].required), (&None, "", false));
        assert_eq!(all[4].default.as_deref(), Some(""));
        // Written back as the section holds them, each reading back the same.
        let shown: Vec<String> = all.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "TARGET_URL:url=http://127.0.0.1:8080/ \"the page to GET\"",
                "USERS:int! \"how many users\"",
                "GREETING:string='hello \"world\"' \"what it says\"",
                "TOKEN:string",
                "EMPTY:string=\"\"",
                "PAUSE:duration=1m30s",
                "VERBOSE:bool=off \"it's chatty\"",
                "RATIO:float=0.5",
            ]
        );
        assert_eq!(parse(&shown.join("\n")).unwrap(), all);
        assert_eq!(all[1].describe(), "USERS (int, required): how many users");
        assert_eq!(all[2].describe(), "GREETING (string, default 'hello \"world\"'): what it says");
        assert_eq!(all[3].describe(), "TOKEN (string)");
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        for (line, says) in [
            ("USERS", "expected NAME:TYPE[!][=DEFAULT]"),
            ("9LIVES:int", "not starting with a digit"),
            ("MY-VAR:int", "letters, digits or '_'"),
            (":int", "an option's name"),
            ("USERS:integer", "unknown type 'integer' (string, int, float, bool, duration, url)"),
            ("USERS:", "unknown type ''"),
            ("USERS:int!=5", "a required option ('!') has no default"),
            ("USERS:int=ten", "its default is not an integer"),
            ("USERS:int=99999999999999999999", "its default is not an integer from -9223372036854775808"),
            ("RATIO:float=inf", "its default is not a number"),
            ("ON:bool=maybe", "its default is not a boolean"),
            ("PAUSE:duration=5", "its default is not a duration such as 500ms"),
            ("URL:url=127.0.0.1:8080", "its default is not an absolute URL"),
            ("URL:url=http://", "its default is not an absolute URL"),
            ("USERS:int=", "nothing after '='"),
            ("USERS:int='5", "a default's quote is not closed"),
            ("NAME:string=it's", "a default with a quote in it is quoted as a whole"),
            ("USERS:int how many", "the help goes last, in quotes"),
            ("USERS:int \"how many", "the help goes last, in quotes"),
            ("USERS:int \"how\" many", "'many' after the help"),
        ] {
            assert!(why(line).contains(says), "{line}: {}", why(line));
        }
        let err = one("USERS:int=ten").unwrap_err().to_string();
        assert_eq!(err, "its loadhost:options section declares 'USERS:int=ten': its default is not an integer");
        let many: String = (0..=MAX_OPTIONS).map(|i| format!("O{i}:int\n")).collect();
        assert_eq!(parse(&many), Err(OptionsError::TooMany));
    }

    #[test]
    fn a_repeat_counts_once_and_a_conflict_is_named() {
        assert_eq!(parse("USERS:int=1 \"n\"\nUSERS:int=1 'n'").unwrap().len(), 1);
        let err = parse("USERS:int=1\nUSERS:int!").unwrap_err().to_string();
        assert_eq!(
            err,
            "its loadhost:options section declares USERS twice, differently: 'USERS:int=1' and 'USERS:int!'"
        );
    }

    #[test]
    fn values_are_checked_by_type() {
        use OptionType::*;
        for (ty, good, bad) in [
            (Int, &[" 7 ", "-3", "+12", "9223372036854775807"][..], &["", "1.5", "ten", "0x10", "1_000"][..]),
            (Float, &["0.5", "2", "1e3", " -.5 "], &["", "inf", "NaN", "1,5"]),
            (Bool, &["true", "Yes", " ON ", "0", "off", ""], &["maybe", "2"]),
            (Duration, &["500ms", "5s", "1.5m", "2h", "1m30s", " 10s "], &["", "5", "5x", "1 s", "-1s"]),
            (
                Url,
                &["http://127.0.0.1:8080/", "ws://h/echo", "https://a.example"],
                &["", "127.0.0.1:8080", "/path", "http://"],
            ),
            (String, &["", "anything at all"], &[]),
        ] {
            for value in good {
                assert_eq!(ty.check(value), Ok(()), "{ty} {value:?}");
            }
            for value in bad {
                assert_eq!(ty.check(value), Err(ty.expected().to_owned()), "{ty} {value:?}");
            }
        }
        assert_eq!(
            Int.check("-99999999999999999999"),
            Err("an integer from -9223372036854775808 to 9223372036854775807".to_owned())
        );
    }

    #[test]
    fn a_run_lacking_a_required_option_or_typing_one_wrong_is_told_each() {
        let declared = parse("USERS:int! \"how many users\"\nPAUSE:duration=1s\nURL:url!\nTOKEN:string").unwrap();
        let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
        };
        let said = |pairs: &[(&str, &str)]| -> Vec<String> {
            check(&declared, &env(pairs)).iter().map(ToString::to_string).collect()
        };
        assert_eq!(said(&[("USERS", "5"), ("URL", "http://h/")]), Vec::<String>::new());
        assert_eq!(
            said(&[("PAUSE", "soon")]),
            [
                "-e USERS is required (int: how many users)",
                "-e PAUSE: expected a duration such as 500ms, 5s, 1.5m, 2h or 1m30s (duration)",
                "-e URL is required (url)",
            ]
        );
        // The last value of a key is the one the plugin sees.
        assert_eq!(said(&[("USERS", "x"), ("USERS", "5"), ("URL", "http://h/")]), Vec::<String>::new());
        assert_eq!(
            said(&[("USERS", "secret-ish"), ("URL", "http://h/")]),
            ["-e USERS: expected an integer (int: how many users)"]
        );
    }

    #[test]
    fn keys_no_option_has_are_found_with_the_name_meant() {
        let declared = parse("BLOB_BYTES:int=1024\nTARGET_URL:url=http://h/").unwrap();
        assert_eq!(
            undeclared(&declared, ["BLOB_BYTE", "TARGET_URL", "target_url", "HOME"]),
            [("BLOB_BYTE", Some("BLOB_BYTES")), ("target_url", Some("TARGET_URL")), ("HOME", None)]
        );
    }

    #[test]
    fn every_section_of_the_name_counts() {
        let module = wat::parse_str(
            r#"(module (@custom "loadhost:options" "USERS:int! \"how many\"") (@custom "loadhost:options" "PAUSE:duration=1s\n"))"#,
        )
        .unwrap();
        let all = declared_options(&module).unwrap();
        assert_eq!(
            all.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["USERS:int! \"how many\"", "PAUSE:duration=1s"]
        );
        let plain = wat::parse_str("(module)").unwrap();
        assert_eq!(declared_options(&plain), Ok(Vec::new()), "a plugin built before declarations declares none");
    }
}
