//! k6's `export const options = { … }` in a script, read as flags (issue 42): `vus`, `duration`,
//! `iterations`, `stages` and `thresholds`, when the object is a literal (numbers, strings,
//! arrays and objects, as most scripts write it). Flags win, as in k6; with a `-c` file the
//! options are not read (which of the two would win is not obvious). An object computed at run
//! time (`__ENV.VUS || 10`, a spread, a function call) is not read, and the run says so.
//!
//! The literal is read here, without running the script: the host must know the plan before any
//! instance exists. An object the text does not give is computed by the script's own init code
//! ([`computed`]), as k6 computes it.

use std::path::Path;

use loadhost_config::RunOptions;
use loadhost_config::units::EnvPair;
use serde_json::{Map, Value};

mod computed;
mod imports;
mod scenarios;

pub use computed::apply_computed;
pub use imports::{handle_summary, unloadable_import};

/// The largest script read for its options (the scripts' own cap).
const CAP: u64 = loadhost_component::script::MAX_BYTES;

/// What a script's `options` gave.
#[derive(Debug, Default, PartialEq)]
pub struct Applied {
    /// Where the object is: `FILE:LINE`.
    pub at: String,
    /// Keys read into the run's flags.
    pub read: Vec<String>,
    /// Keys loadhost does not read (`scenarios`, `discardResponseBodies`, …).
    pub unread: Vec<String>,
    /// Keys a flag already gave (flags win).
    pub overridden: Vec<String>,
}

/// Why a script's `options` were not read.
#[derive(Debug, PartialEq)]
pub enum NotRead {
    /// The object is not a literal (at `FILE:LINE`, with why).
    NotLiteral { at: String, why: String },
    /// A key's value is not what k6 takes (at `FILE:LINE`, with why): a usage error.
    Invalid { at: String, why: String },
}

/// The file name and text of `entry` when it is a script in `language` that can be read (within
/// the scripts' cap); `None` otherwise, left to the run to say.
pub fn script_text(entry: &Path, language: loadhost_component::script::Language) -> Option<(String, String)> {
    if loadhost_component::script::Language::of(entry) != Some(language) {
        return None;
    }
    let text = loadhost_input::read_to_string(entry, loadhost_input::Cap::new(CAP, "a script")).ok()?;
    let name = entry.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Some((name, text))
}

/// Apply the literal k6 `options` of the JavaScript script `entry` to `options` (fields a flag
/// set are kept). `Ok(None)` when the script sets no options (or is no JavaScript).
pub fn apply(entry: &Path, options: &mut RunOptions) -> Result<Option<Applied>, NotRead> {
    let Some((name, text)) = script_text(entry, loadhost_component::script::Language::JavaScript) else {
        return Ok(None);
    };
    apply_text(&name, &text, options)
}

fn apply_text(name: &str, text: &str, options: &mut RunOptions) -> Result<Option<Applied>, NotRead> {
    let Some((line, start)) = find(text) else { return Ok(None) };
    let at = format!("{name}:{line}");
    let value = Parser { text: text.as_bytes(), at: start, env: &options.env }
        .value()
        .map_err(|why| NotRead::NotLiteral { at: at.clone(), why })?;
    let Value::Object(object) = value else {
        return Err(NotRead::NotLiteral { at, why: "it is not an object".into() });
    };
    if let Some(line) = assigned_later(text) {
        return Err(NotRead::NotLiteral { at, why: format!("line {line} assigns to it") });
    }
    let mut applied = Applied { at: at.clone(), ..Applied::default() };
    map(&object, options, &mut applied).map_err(|why| NotRead::Invalid { at, why })?;
    Ok(Some(applied))
}

/// The line of `export const options =` (or `let`/`var`) and the offset just after its `=`.
fn find(text: &str) -> Option<(usize, usize)> {
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if let Some(rest) = trimmed.strip_prefix("export") {
            let after_export = rest.trim_start();
            for kw in ["const", "let", "var"] {
                if let Some(rest) = after_export.strip_prefix(kw).map(str::trim_start)
                    && let Some(rest) = rest.strip_prefix("options")
                    && let Some(value) = rest.trim_start().strip_prefix('=')
                {
                    return Some((i + 1, offset + indent + trimmed.len() - value.len()));
                }
            }
        }
        offset += line.len();
    }
    None
}

/// The line of a statement that changes the options after the literal (`options.vus = 5;`,
/// `options['thresholds'] = …`, `Object.assign(options, …)`): the literal is then not the whole.
fn assigned_later(text: &str) -> Option<usize> {
    text.lines().enumerate().find_map(|(i, line)| {
        let line = line.trim_start();
        let member = line.strip_prefix("options.").or_else(|| line.strip_prefix("options["));
        let assigns = member.is_some_and(|rest| rest.split_once('=').is_some_and(|(_, after)| !after.starts_with('=')));
        (assigns || line.starts_with("Object.assign(options")).then_some(i + 1)
    })
}

/// The flags that give the load in place of the script's scenarios (k6's `--duration`,
/// `--iterations`, `--stage`; `--rate` is loadhost's own).
fn load_flags(options: &RunOptions) -> bool {
    options.duration.is_some() || options.iterations.is_some() || !options.stage.is_empty() || options.rate.is_some()
}

/// Read the options' keys into `options`.
fn map(object: &Map<String, Value>, options: &mut RunOptions, applied: &mut Applied) -> Result<(), String> {
    let with_scenarios = object.contains_key("scenarios");
    if with_scenarios
        && let Some(key) = ["duration", "iterations", "stages"].into_iter().find(|k| object.contains_key(*k))
    {
        // As k6: the shortcut and the scenarios would describe two loads.
        return Err(format!("`{key}` and `scenarios` cannot both be given: the scenarios set the load"));
    }
    let lifecycle_flag = options.lifecycle_timeout.is_some();
    for (key, value) in object {
        let read = match key.as_str() {
            // As k6's command line: a load given by flags replaces the scenarios entirely.
            "scenarios" if load_flags(options) => Ok(false),
            "scenarios" => {
                let (blocks, unread) = scenarios::scenarios(value)?;
                options.scenarios = blocks;
                applied.unread.extend(unread);
                Ok(true)
            }
            // With scenarios, k6 ignores a top-level `vus`: each scenario sets its own.
            "vus" if with_scenarios => {
                applied.unread.push(key.clone());
                continue;
            }
            "vus" => set(&mut options.workers, || {
                count(key, value).and_then(|n| u32::try_from(n).map_err(|e| e.to_string()))
            }),
            "iterations" => set(&mut options.iterations, || count(key, value)),
            "duration" => set(&mut options.duration, || parsed(key, value)),
            "stages" => {
                if options.stage.is_empty() {
                    options.stage = scenarios::stage_list(value, 1.0)?;
                    Ok(true)
                } else {
                    Ok(false)
                }
            }
            "thresholds" => {
                options.threshold.extend(thresholds(value)?);
                Ok(true)
            }
            // Read by the JavaScript runner itself, request by request (sdk/js/runner/k6.js).
            "discardResponseBodies" | "userAgent" | "noConnectionReuse" | "maxRedirects" => Ok(true),
            // As k6: any https certificate is accepted (the run says so, as for --insecure).
            "insecureSkipTLSVerify" => {
                options.insecure |= truthy(value);
                Ok(true)
            }
            // One bound for setup, init and teardown here: the longer of the two k6 gives.
            "setupTimeout" | "teardownTimeout" => {
                let limit = parsed::<loadhost_config::units::Dur>(key, value)?;
                if lifecycle_flag {
                    Ok(false)
                } else {
                    let longer = options.lifecycle_timeout.filter(|d| d.0 > limit.0).unwrap_or(limit);
                    options.lifecycle_timeout = Some(longer);
                    Ok(true)
                }
            }
            _ => {
                applied.unread.push(key.clone());
                continue;
            }
        }?;
        if read { applied.read.push(key.clone()) } else { applied.overridden.push(key.clone()) }
    }
    Ok(())
}

/// Set `field` from `value()` unless a flag set it; whether it was set.
fn set<T>(field: &mut Option<T>, value: impl FnOnce() -> Result<T, String>) -> Result<bool, String> {
    if field.is_some() {
        return Ok(false);
    }
    *field = Some(value()?);
    Ok(true)
}

fn count(key: &str, value: &Value) -> Result<u64, String> {
    // A value from `-e` is a string: `vus: __ENV.VUS || 10` with `-e VUS=20` is 20, as in k6.
    value
        .as_u64()
        .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
        .ok_or_else(|| format!("{key}: expected a whole number, got {value}"))
}

/// A string value parsed as loadhost parses the flag.
fn parsed<T: std::str::FromStr>(key: &str, value: &Value) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    let text = value.as_str().ok_or_else(|| format!("{key}: expected a string such as '30s', got {value}"))?;
    text.parse().map_err(|e| format!("{key}: '{text}': {e}"))
}

/// k6's `thresholds: { METRIC: ['EXPR', { threshold, abortOnFail, delayAbortEval }] }` as
/// `--threshold METRIC:EXPR[;abort_on_fail][;delay=D]`.
fn thresholds(value: &Value) -> Result<Vec<loadhost_config::criteria::ThresholdSpec>, String> {
    let object = value.as_object().ok_or("thresholds: expected an object of metric: [expressions]")?;
    let mut out = Vec::new();
    for (metric, list) in object {
        let items = list.as_array().map(Vec::as_slice).unwrap_or(std::slice::from_ref(list));
        for item in items {
            let spec = match item {
                Value::String(expr) => format!("{metric}:{expr}"),
                Value::Object(o) => {
                    let expr =
                        o["threshold"].as_str().ok_or(format!("thresholds.{metric}: an object needs 'threshold'"))?;
                    let mut spec = format!("{metric}:{expr}");
                    if o.get("abortOnFail").and_then(Value::as_bool) == Some(true) {
                        spec.push_str(";abort_on_fail");
                    }
                    if let Some(delay) = o.get("delayAbortEval").and_then(Value::as_str) {
                        spec.push_str(&format!(";delay={delay}"));
                    }
                    spec
                }
                other => return Err(format!("thresholds.{metric}: expected strings or objects, got {other}")),
            };
            out.push(spec.parse().map_err(|e| format!("thresholds: '{spec}': {e}"))?);
        }
    }
    Ok(out)
}

/// A reader of the JavaScript literal subset k6's options are written in: objects (keys as
/// identifiers or quoted), arrays, strings ('…', "…", `…` without `${`), numbers, true, false,
/// null, comments and trailing commas. Anything else is "not a literal".
/// JavaScript's truthiness of a value read here.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// The offset just after `=` of a top-level `const NAME =` (or `let`, `var`) in `text`.
fn binding(text: &str, name: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        // Top level only: a binding inside a function is not the one the options see.
        if !line.starts_with(' ') && !line.starts_with('\t') {
            let trimmed = line.strip_prefix("export ").unwrap_or(line);
            for kw in ["const ", "let ", "var "] {
                if let Some(rest) = trimmed.strip_prefix(kw)
                    && let Some(rest) = rest.trim_start().strip_prefix(name)
                    && let Some(value) = rest.trim_start().strip_prefix('=')
                    && !value.starts_with('=')
                {
                    return Some(offset + line.len() - value.len());
                }
            }
        }
        offset += line.len();
    }
    None
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
    /// The run's `-e` values, which `__ENV.NAME` reads.
    env: &'a [EnvPair],
}

/// Nesting deeper than this is not an options object.
const MAX_DEPTH: usize = 32;

impl Parser<'_> {
    fn value(&mut self) -> Result<Value, String> {
        self.nested(0)
    }

    /// A value, or `A || B` and `A ?? B` over values (JavaScript's truthiness; an unset
    /// `__ENV.NAME` is `undefined`, read here as null).
    fn nested(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("nested too deep".into());
        }
        let mut value = self.primary(depth)?;
        loop {
            self.space();
            let rest = &self.text[self.at.min(self.text.len())..];
            let either = if rest.starts_with(b"||") {
                truthy(&value)
            } else if rest.starts_with(b"??") {
                !value.is_null()
            } else {
                return Ok(value);
            };
            self.at += 2;
            let other = self.primary(depth + 1)?;
            if !either {
                value = other;
            }
        }
    }

    fn primary(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("nested too deep".into());
        }
        self.space();
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(q @ (b'\'' | b'"' | b'`')) => self.string(q).map(Value::String),
            Some(b'-' | b'0'..=b'9' | b'.') => self.number(),
            Some(_) => {
                let word = self.word();
                match word.as_str() {
                    "true" => Ok(Value::Bool(true)),
                    "false" => Ok(Value::Bool(false)),
                    "null" | "undefined" => Ok(Value::Null),
                    "" => Err(format!("unexpected '{}'", self.rest_snippet())),
                    "__ENV" => self.env_value(),
                    "parseInt" | "parseFloat" | "Number" => self.number_of(&word, depth),
                    _ => self.constant(&word, depth),
                }
            }
            None => Err("it ends too soon".into()),
        }
    }

    /// `__ENV.NAME` or `__ENV['NAME']`: the `-e` value, or null when it is not given.
    fn env_value(&mut self) -> Result<Value, String> {
        let name = match self.peek() {
            Some(b'.') => {
                self.at += 1;
                self.word()
            }
            Some(b'[') => {
                self.at += 1;
                self.space();
                let quote = self.peek().filter(|q| matches!(q, b'\'' | b'"')).ok_or("__ENV[…] needs a quoted name")?;
                let name = self.string(quote)?;
                self.space();
                if self.peek() != Some(b']') {
                    return Err("__ENV[…] needs a closing ']'".into());
                }
                self.at += 1;
                name
            }
            _ => return Err("__ENV alone is computed when the script runs".into()),
        };
        Ok(self
            .env
            .iter()
            .rev()
            .find(|pair| pair.key == name)
            .map_or(Value::Null, |pair| Value::String(pair.value.clone())))
    }

    /// `parseInt(x)`, `parseFloat(x)`, `Number(x)` of a value: a number, or null where JavaScript
    /// makes NaN (which is falsy, so `parseInt(__ENV.VUS) || 10` is 10 without VUS).
    fn number_of(&mut self, function: &str, depth: usize) -> Result<Value, String> {
        self.space();
        if self.peek() != Some(b'(') {
            return Err(format!("'{function}' is computed when the script runs"));
        }
        self.at += 1;
        let argument = self.nested(depth + 1)?;
        self.space();
        if self.peek() == Some(b',') {
            // parseInt's radix: only 10 is read.
            self.at += 1;
            if self.nested(depth + 1)? != 10u64 {
                return Err(format!("{function}(…) with a radix other than 10 is computed when the script runs"));
            }
            self.space();
        }
        if self.peek() != Some(b')') {
            return Err(format!("{function}(…) needs a closing ')'"));
        }
        self.at += 1;
        let text = match &argument {
            Value::String(text) => text.trim().to_owned(),
            Value::Number(n) => n.to_string(),
            _ => return Ok(Value::Null),
        };
        let number = match function {
            "parseInt" => {
                let digits: String = text
                    .chars()
                    .enumerate()
                    .take_while(|(i, c)| c.is_ascii_digit() || (*i == 0 && *c == '-'))
                    .map(|(_, c)| c)
                    .collect();
                digits.parse::<i64>().ok().map(Value::from)
            }
            _ => text.parse::<f64>().ok().and_then(|f| {
                if f.fract() == 0.0 && f >= 0.0 && f < 2f64.powi(53) {
                    Some(Value::from(f as u64))
                } else {
                    serde_json::Number::from_f64(f).map(Value::Number)
                }
            }),
        };
        Ok(number.unwrap_or(Value::Null))
    }

    /// A name bound at the top of the script, `const NAME = …;` (or `let`, `var`): its value.
    fn constant(&mut self, name: &str, depth: usize) -> Result<Value, String> {
        let computed = || format!("'{name}…' is computed when the script runs");
        let text = std::str::from_utf8(self.text).map_err(|_| computed())?;
        let Some(start) = binding(text, name) else { return Err(computed()) };
        let mut inner = Parser { text: self.text, at: start, env: self.env };
        inner.nested(depth + 4).map_err(|why| format!("{name}: {why}"))
    }

    fn object(&mut self, depth: usize) -> Result<Value, String> {
        self.at += 1;
        let mut map = Map::new();
        loop {
            self.space();
            match self.peek() {
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Value::Object(map));
                }
                Some(q @ (b'\'' | b'"')) => {
                    let key = self.string(q)?;
                    map.insert(key, self.member(depth)?);
                }
                Some(b'.') => return Err("a spread ('...') is computed when the script runs".into()),
                Some(_) => {
                    let key = self.word();
                    if key.is_empty() {
                        return Err(format!("unexpected '{}'", self.rest_snippet()));
                    }
                    map.insert(key, self.member(depth)?);
                }
                None => return Err("it ends too soon".into()),
            }
            self.after_item(b'}')?;
        }
    }

    /// After an item of an object or array closed by `close`: a comma (passed), or `close` (left
    /// for the loop to take).
    fn after_item(&mut self, close: u8) -> Result<(), String> {
        self.space();
        match self.peek() {
            Some(b',') => self.at += 1,
            Some(c) if c == close => {}
            None => return Err("it ends too soon".into()),
            _ => return Err(format!("expected ',' or '{}' before '{}'", close as char, self.rest_snippet())),
        }
        Ok(())
    }

    /// `: value` after a key.
    fn member(&mut self, depth: usize) -> Result<Value, String> {
        self.space();
        if self.peek() != Some(b':') {
            return Err(format!("expected ':' before '{}'", self.rest_snippet()));
        }
        self.at += 1;
        self.nested(depth + 1)
    }

    fn array(&mut self, depth: usize) -> Result<Value, String> {
        self.at += 1;
        let mut list = Vec::new();
        loop {
            self.space();
            if self.peek() == Some(b']') {
                self.at += 1;
                return Ok(Value::Array(list));
            }
            list.push(self.nested(depth + 1)?);
            self.after_item(b']')?;
        }
    }

    fn string(&mut self, quote: u8) -> Result<String, String> {
        self.at += 1;
        let mut out = Vec::new();
        while let Some(&c) = self.text.get(self.at) {
            self.at += 1;
            match c {
                c if c == quote => return String::from_utf8(out).map_err(|e| e.to_string()),
                b'$' if quote == b'`' && self.peek() == Some(b'{') => {
                    return Err("a template with ${…} is computed when the script runs".into());
                }
                b'\\' => {
                    let escaped = self.text.get(self.at).copied().ok_or("it ends too soon")?;
                    self.at += 1;
                    out.push(match escaped {
                        b'n' => b'\n',
                        b't' => b'\t',
                        other => other,
                    });
                }
                b'\n' if quote != b'`' => return Err("a string runs past its line".into()),
                other => out.push(other),
            }
        }
        Err("a string is not closed".into())
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.at;
        while matches!(self.peek(), Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'_' | b'0'..=b'9')) {
            self.at += 1;
        }
        let text: String = String::from_utf8_lossy(&self.text[start..self.at]).replace('_', "");
        if let Ok(n) = text.parse::<u64>() {
            return Ok(Value::from(n));
        }
        text.parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or(format!("'{text}' is not a number"))
    }

    /// An identifier (or keyword) at the cursor.
    fn word(&mut self) -> String {
        let start = self.at;
        while matches!(self.peek(), Some(b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'$')) {
            self.at += 1;
        }
        String::from_utf8_lossy(&self.text[start..self.at]).into_owned()
    }

    /// Skip white space and comments.
    fn space(&mut self) {
        loop {
            match (self.peek(), self.text.get(self.at + 1)) {
                (Some(b' ' | b'\t' | b'\n' | b'\r'), _) => self.at += 1,
                (Some(b'/'), Some(b'/')) => {
                    while !matches!(self.peek(), Some(b'\n') | None) {
                        self.at += 1;
                    }
                }
                (Some(b'/'), Some(b'*')) => {
                    self.at += 2;
                    while self.peek().is_some() && !self.text[self.at..].starts_with(b"*/") {
                        self.at += 1;
                    }
                    self.at = (self.at + 2).min(self.text.len());
                }
                _ => return,
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn rest_snippet(&self) -> String {
        let end = (self.at + 20).min(self.text.len());
        String::from_utf8_lossy(&self.text[self.at..end]).lines().next().unwrap_or_default().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(script: &str) -> (Result<Option<Applied>, NotRead>, RunOptions) {
        let mut options = RunOptions::default();
        (apply_text("s.js", script, &mut options), options)
    }

    fn read_with(script: &str, env: &[(&str, &str)]) -> (Result<Option<Applied>, NotRead>, RunOptions) {
        let env = env.iter().map(|(k, v)| EnvPair { key: (*k).into(), value: (*v).into() }).collect();
        let mut options = RunOptions { env, ..RunOptions::default() };
        (apply_text("s.js", script, &mut options), options)
    }

    #[test]
    fn options_computed_from_env_read_the_runs_e_values() {
        let script = "const VUS = parseInt(__ENV.VUS) || 3;\nconst BASE = __ENV.BASE || 'http://x';\n\
            export const options = {\n  vus: VUS,\n  duration: __ENV.DURATION ?? '10s',\n\
            iterations: Number(__ENV['ITERS'] || '7'),\n  thresholds: { http_req_duration: [`p(95)<${1}`] },\n};\n";
        let (applied, _) = read_with(script, &[]);
        assert!(matches!(applied, Err(NotRead::NotLiteral { .. })), "a template is still refused: {applied:?}");
        let script = script.replace("`p(95)<${1}`", "'p(95)<500'");
        let (applied, options) = read_with(&script, &[]);
        assert!(applied.is_ok(), "{applied:?}");
        assert_eq!((options.workers, options.iterations), (Some(3), Some(7)));
        assert_eq!(options.duration.map(|d| d.0), Some(std::time::Duration::from_secs(10)));
        let (_, options) = read_with(&script, &[("VUS", "20"), ("DURATION", "1m"), ("ITERS", "40")]);
        assert_eq!((options.workers, options.iterations), (Some(20), Some(40)));
        assert_eq!(options.duration.map(|d| d.0), Some(std::time::Duration::from_secs(60)));
        // `||` passes over an empty value, `??` keeps it (and an empty duration is refused).
        let (applied, _) = read_with(&script, &[("DURATION", "")]);
        assert!(matches!(applied, Err(NotRead::Invalid { .. })), "{applied:?}");
        let (_, options) = read_with("export const options = { vus: __ENV.VUS || 4 };\n", &[("VUS", "")]);
        assert_eq!(options.workers, Some(4));
        // A value of the script's own making is still said to be computed.
        let (applied, _) = read_with("export const options = { vus: count() };\n", &[]);
        assert!(matches!(applied, Err(NotRead::NotLiteral { ref why, .. }) if why.contains("computed")), "{applied:?}");
        let (applied, _) = read_with("function f() {\n  const N = 5;\n}\nexport const options = { vus: N };\n", &[]);
        assert!(matches!(applied, Err(NotRead::NotLiteral { .. })), "a name bound inside a function: {applied:?}");
    }

    #[test]
    fn a_literal_object_becomes_flags_and_says_what_it_did_not_read() {
        let script = "import http from 'k6/http';\n\n\
            export const options = {\n  vus: 10, // ten\n  duration: '30s',\n  /* the gate */\n\
            thresholds: {\n    http_req_failed: ['rate<0.01'],\n    'http_req_duration{name:home}': [\n\
            { threshold: 'p(95)<500', abortOnFail: true, delayAbortEval: '10s' },\n    ],\n  },\n\
            summaryTrendStats: ['avg'],\n};\nexport default function () {}\n";
        let (applied, options) = read(script);
        let applied = applied.unwrap().unwrap();
        assert_eq!(applied.at, "s.js:3");
        assert_eq!(applied.read, ["duration", "thresholds", "vus"]);
        assert_eq!(applied.unread, ["summaryTrendStats"]);
        assert_eq!(options.workers, Some(10));
        assert_eq!(options.duration.map(|d| d.0), Some(std::time::Duration::from_secs(30)));
        let specs: Vec<String> = options.threshold.iter().map(|t| t.to_string()).collect();
        assert_eq!(specs.len(), 2, "{specs:?}");
        assert!(specs[0].starts_with("http_req_duration{name:home}:p(95)<500"), "{specs:?}");
    }

    #[test]
    fn request_options_are_read_and_timeouts_bound_the_lifecycle() {
        let script = "export const options = { insecureSkipTLSVerify: true, setupTimeout: '2m', teardownTimeout: '90s', \
            discardResponseBodies: true, userAgent: 'me', noConnectionReuse: true, maxRedirects: 2, hosts: {} };";
        let (applied, options) = read(script);
        let applied = applied.unwrap().unwrap();
        assert_eq!(applied.unread, ["hosts"]);
        assert!(options.insecure);
        assert_eq!(options.lifecycle_timeout.map(|d| d.0), Some(std::time::Duration::from_secs(120)), "the longer");
        // --lifecycle-timeout on the command line wins over both.
        let mut options = RunOptions { lifecycle_timeout: Some("5s".parse().unwrap()), ..RunOptions::default() };
        let applied = apply_text("s.js", script, &mut options).unwrap().unwrap();
        assert_eq!(applied.overridden, ["setupTimeout", "teardownTimeout"]);
        assert_eq!(options.lifecycle_timeout.map(|d| d.0), Some(std::time::Duration::from_secs(5)));
    }

    #[test]
    fn flags_win_and_stages_ramp_the_workers() {
        let mut options = RunOptions { workers: Some(3), ..RunOptions::default() };
        let script = "export const options = { vus: 50, stages: [{ duration: '10s', target: 20 }, { duration: \"5s\", target: 0 },] };";
        let applied = apply_text("s.js", script, &mut options).unwrap().unwrap();
        assert_eq!(options.workers, Some(3));
        assert_eq!(applied.overridden, ["vus"]);
        assert_eq!(options.stage.len(), 2);
    }

    #[test]
    fn scenarios_become_blocks_unless_flags_give_the_load() {
        let script = "export const options = {\n  vus: 9,\n  scenarios: {\n    a: { executor: 'shared-iterations', vus: 2, iterations: 6, gracefulStop: '1s' },\n  },\n};\n";
        let (applied, options) = read(script);
        let applied = applied.unwrap().unwrap();
        assert_eq!(applied.read, ["scenarios"]);
        assert_eq!(applied.unread, ["scenarios.a.gracefulStop", "vus"], "k6 ignores a top-level vus beside scenarios");
        assert_eq!((options.scenarios.len(), options.scenarios[0].iterations, options.workers), (1, Some(6), None));
        // A load given by flags replaces the scenarios, as k6's command line does.
        let mut options = RunOptions { duration: Some("5s".parse().unwrap()), ..RunOptions::default() };
        let applied = apply_text("s.js", script, &mut options).unwrap().unwrap();
        assert_eq!((applied.overridden, options.scenarios.len()), (vec!["scenarios".to_owned()], 0));
        // As k6: a shortcut beside scenarios is refused, naming it.
        let script = "export const options = { duration: '1s', scenarios: { a: { executor: 'constant-vus', duration: '1s' } } };";
        assert!(
            matches!(read(script).0, Err(NotRead::Invalid { ref why, .. }) if why.contains("`duration` and `scenarios`"))
        );
        let script = "export const options = { scenarios: { a: { executor: 'externally-controlled' } } };";
        assert!(
            matches!(read(script).0, Err(NotRead::Invalid { ref why, .. }) if why.contains("scenarios.a: k6's externally-controlled"))
        );
    }

    #[test]
    fn computed_options_are_not_read_and_bad_values_are_named() {
        for (script, why) in [
            ("export const options = { vus: vusFor(__ENV.PROFILE) };", "'vusFor…' is computed"),
            ("export const options = { ...base, vus: 2 };", "a spread"),
            ("export const options = { duration: `${d}s` };", "a template"),
            ("export const options = { vus: 2", "ends too soon"),
            ("export const options = { vus: 2 };\noptions.iterations = 10;", "line 2 assigns to it"),
            ("export const options = {};\nObject.assign(options, profile);", "line 2 assigns to it"),
        ] {
            match read(script).0 {
                Err(NotRead::NotLiteral { at, why: said }) => {
                    assert_eq!(at, "s.js:1");
                    assert!(said.contains(why), "{script}: {said}");
                }
                other => panic!("{script}: {other:?}"),
            }
        }
        for (script, why) in [
            ("export const options = { vus: 'ten' };", "vus: expected a whole number"),
            ("export const options = { duration: '30 parsecs' };", "duration: '30 parsecs'"),
            ("export const options = { thresholds: { http_reqs: ['count<<1'] } };", "thresholds: 'http_reqs:count<<1'"),
        ] {
            match read(script).0 {
                Err(NotRead::Invalid { why: said, .. }) => assert!(said.contains(why), "{script}: {said}"),
                other => panic!("{script}: {other:?}"),
            }
        }
        assert_eq!(read("export default function () {}").0, Ok(None));
        // Deep nesting is refused, not recursed into without bound.
        let deep = format!("export const options = {{ a: {}1{} }};", "[".repeat(100), "]".repeat(100));
        assert!(matches!(read(&deep).0, Err(NotRead::NotLiteral { .. })));
    }
}
