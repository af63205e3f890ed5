//! The requests of `loadhost http`: one from the command line, or many from a targets file in
//! either of vegeta's formats, each checked before any load and written as the plugin's feed rows
//! (vegeta's JSON target format, the body base64-encoded).
//!
//! The text format, as vegeta reads it: a `METHOD URL` line, then `Name: value` header lines, then
//! an optional `@FILE` line whose file is the body (a path relative to the working directory);
//! blank lines and `#` comments between targets.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// The largest request body `loadhost http` sends: each worker holds a copy (write a plugin for
/// larger uploads).
pub const MAX_BODY: u64 = 1 << 20;

/// One request, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Its method, upper-case.
    pub method: String,
    /// `http://…` or `https://…`.
    pub url: String,
    /// Header names and their values, in order.
    pub headers: Vec<(String, String)>,
    /// The body (empty: none).
    pub body: Vec<u8>,
}

impl Target {
    /// A request from its parts, or why it cannot be sent.
    pub fn new(method: &str, url: &str, headers: Vec<(String, String)>, body: Vec<u8>) -> Result<Self, String> {
        let method = method.trim().to_ascii_uppercase();
        http::Method::from_bytes(method.as_bytes()).map_err(|_| format!("'{method}' is not an HTTP method"))?;
        authority(url)?;
        if body.len() as u64 > MAX_BODY {
            return Err(format!("a body of {} bytes is over the {MAX_BODY} bytes loadhost http sends", body.len()));
        }
        Ok(Self { method, url: url.to_owned(), headers, body })
    }

    /// The `HOST:PORT` it reaches, as `--allow-host` takes it.
    pub fn authority(&self) -> String {
        authority(&self.url).unwrap_or_default()
    }

    /// The plugin's feed row: vegeta's JSON target format.
    fn row(&self) -> String {
        let mut header: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (name, value) in &self.headers {
            header.entry(name).or_default().push(value);
        }
        let row = Row {
            method: &self.method,
            url: &self.url,
            header,
            body: base64::engine::general_purpose::STANDARD.encode(&self.body),
        };
        serde_json::to_string(&row).unwrap_or_default()
    }
}

/// What the plugin reads from a feed row.
#[derive(Serialize)]
struct Row<'a> {
    method: &'a str,
    url: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    header: BTreeMap<&'a str, Vec<&'a str>>,
    #[serde(skip_serializing_if = "String::is_empty")]
    body: String,
}

/// A line of vegeta's JSON format (header values may also be single strings).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonTarget {
    #[serde(default)]
    method: Option<String>,
    url: String,
    #[serde(default)]
    header: BTreeMap<String, Values>,
    #[serde(default)]
    body: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Values {
    One(String),
    Many(Vec<String>),
}

/// The `HOST:PORT` an `http://` or `https://` URL reaches (its scheme's port when it names none).
pub fn authority(url: &str) -> Result<String, String> {
    let bad = |why: &str| {
        format!("'{url}' is not a URL loadhost can request ({why}): expected http://HOST[:PORT]/PATH or https://…")
    };
    let uri: http::Uri = url.parse().map_err(|_| bad("it does not parse"))?;
    let default_port = match uri.scheme_str() {
        Some("http") => 80,
        Some("https") => 443,
        Some(_) => return Err(bad("the scheme is neither http nor https")),
        None => return Err(bad("no scheme")),
    };
    let host = uri.host().filter(|h| !h.is_empty()).ok_or_else(|| bad("no host"))?;
    match uri.port_u16().unwrap_or(default_port) {
        0 => Err(bad("port 0")),
        port => Ok(format!("{host}:{port}")),
    }
}

/// A `Name: value` header, checked.
pub fn header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text.split_once(':').ok_or_else(|| format!("'{text}' is not 'Name: value'"))?;
    let (name, value) = (name.trim(), value.trim());
    http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| format!("'{name}' is not a header name"))?;
    http::HeaderValue::from_str(value).map_err(|_| format!("the value of header '{name}' is not valid"))?;
    Ok((name.to_owned(), value.to_owned()))
}

/// The distinct `HOST:PORT`s of `targets`.
pub fn authorities<'a>(targets: impl IntoIterator<Item = &'a Target>) -> BTreeSet<String> {
    targets.into_iter().map(Target::authority).collect()
}

/// Read a targets file in either format (JSON lines when its first target starts with `{`).
/// Errors say `FILE:LINE: what`.
pub fn load(path: &Path) -> Result<Vec<Target>, String> {
    let shown = path.display();
    let text = loadhost_input::read_to_string(path, loadhost_input::TARGETS)
        .map_err(|err| format!("{shown}: cannot read it: {err}"))?;
    let json =
        text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')).is_some_and(|l| l.starts_with('{'));
    let targets = if json { json_lines(&text) } else { text_format(&text) }
        .map_err(|(line, why)| format!("{shown}:{line}: {why}"))?;
    if targets.is_empty() {
        return Err(format!("{shown}: no targets"));
    }
    Ok(targets)
}

/// Write `targets` as JSON lines, the plugin's feed.
pub fn write_rows(targets: &[Target], path: &Path) -> std::io::Result<()> {
    let mut text = String::new();
    for target in targets {
        text.push_str(&target.row());
        text.push('\n');
    }
    std::fs::write(path, text)
}

/// A line number and what is wrong there.
type LineError = (usize, String);

fn json_lines(text: &str) -> Result<Vec<Target>, LineError> {
    let mut targets = Vec::new();
    for (i, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parsed: JsonTarget = serde_json::from_str(line).map_err(|err| (i, format!("not a JSON target: {err}")))?;
        targets.push(from_json(parsed).map_err(|why| (i, why))?);
    }
    Ok(targets)
}

fn from_json(parsed: JsonTarget) -> Result<Target, String> {
    let mut headers = Vec::new();
    for (name, values) in parsed.header {
        let values = match values {
            Values::One(value) => vec![value],
            Values::Many(values) => values,
        };
        for value in values {
            headers.push(header(&format!("{name}: {value}"))?);
        }
    }
    let body = match parsed.body {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|_| "body: not base64 (vegeta's JSON targets carry the body base64-encoded)".to_owned())?,
        None => Vec::new(),
    };
    Target::new(parsed.method.as_deref().unwrap_or("GET"), &parsed.url, headers, body)
}

/// A target of the text format being read: its parts and the line it started on.
struct Pending {
    line: usize,
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Pending {
    fn finish(self) -> Result<Target, LineError> {
        let line = self.line;
        Target::new(&self.method, &self.url, self.headers, self.body).map_err(|why| (line, why))
    }
}

fn text_format(text: &str) -> Result<Vec<Target>, LineError> {
    let mut targets = Vec::new();
    let mut pending: Option<Pending> = None;
    for (i, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some((method, url)) = request_line(line) {
            if let Some(done) = pending.take() {
                targets.push(done.finish()?);
            }
            let (method, url) = (method.to_owned(), url.to_owned());
            pending = Some(Pending { line: i, method, url, headers: Vec::new(), body: Vec::new() });
            continue;
        }
        let Some(current) = pending.as_mut() else {
            return Err((i, format!("expected a `METHOD URL` line first, got '{line}'")));
        };
        if let Some(file) = line.strip_prefix('@') {
            current.body = read_body(Path::new(file.trim())).map_err(|why| (i, why))?;
        } else {
            current
                .headers
                .push(header(line).map_err(|why| (i, format!("{why} (expected `Name: value` or `@body-file`)")))?);
        }
    }
    if let Some(done) = pending {
        targets.push(done.finish()?);
    }
    Ok(targets)
}

/// `METHOD URL`: a method token, then an http(s) URL.
fn request_line(line: &str) -> Option<(&str, &str)> {
    let (method, url) = line.split_once(char::is_whitespace)?;
    let url = url.trim();
    let web = ["http://", "https://"].iter().any(|s| url.get(..s.len()).is_some_and(|p| p.eq_ignore_ascii_case(s)));
    (web && !method.is_empty() && method.bytes().all(|b| b.is_ascii_alphabetic())).then_some((method, url))
}

/// A body file, read whole (at most [`MAX_BODY`] bytes).
pub fn read_body(path: &Path) -> Result<Vec<u8>, String> {
    let cap = loadhost_input::Cap::new(MAX_BODY, "a body loadhost http sends");
    loadhost_input::read(path, cap).map_err(|err| format!("{}: cannot read it: {err}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_the_host_and_port_to_allow() {
        assert_eq!(authority("http://127.0.0.1:8080/x?y=1"), Ok("127.0.0.1:8080".to_owned()));
        assert_eq!(authority("https://example.test"), Ok("example.test:443".to_owned()));
        assert_eq!(authority("http://[::1]/"), Ok("[::1]:80".to_owned()));
        for bad in ["127.0.0.1:8080", "ftp://h/", "http://", "not a url", "http://h:0/"] {
            assert!(authority(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn headers_are_checked() {
        assert_eq!(header(" X-A :  1 "), Ok(("X-A".to_owned(), "1".to_owned())));
        assert!(header("nocolon").unwrap_err().contains("is not 'Name: value'"));
        assert!(header("bad name: 1").unwrap_err().contains("is not a header name"));
    }

    #[test]
    fn the_text_format_reads_like_vegeta() {
        let text = "# two targets\nGET http://127.0.0.1:1/a\nX-A: 1\nX-A: 2\n\npost http://127.0.0.1:1/b\nContent-Type: text/plain\n";
        let targets = text_format(text).unwrap();
        assert_eq!(targets.len(), 2);
        assert_eq!(targets[0].headers, vec![("X-A".into(), "1".into()), ("X-A".into(), "2".into())]);
        assert_eq!((targets[1].method.as_str(), targets[1].url.as_str()), ("POST", "http://127.0.0.1:1/b"));
        assert_eq!(text_format("X-A: 1\n").unwrap_err().0, 1);
        assert_eq!(text_format("GET http://h/\nnonsense\n").unwrap_err().0, 2);
        assert!(text_format("GET http://h/\n@/no/such/file\n").unwrap_err().1.contains("cannot read it"));
    }

    #[test]
    fn json_lines_round_trip_through_the_plugins_rows() {
        let text = r#"{"method":"POST","url":"http://h/p","header":{"K":"v","L":["1","2"]},"body":"aGk="}"#;
        let targets = json_lines(text).unwrap();
        assert_eq!(targets[0].body, b"hi");
        assert_eq!(
            targets[0].row(),
            r#"{"method":"POST","url":"http://h/p","header":{"K":["v"],"L":["1","2"]},"body":"aGk="}"#
        );
        assert!(json_lines(r#"{"url":"http://h/","body":"not base64!"}"#).unwrap_err().1.contains("not base64"));
        assert!(json_lines(r#"{"url":"http://h/","headers":{}}"#).unwrap_err().1.contains("unknown field `headers`"));
        assert!(json_lines(r#"{"url":"h/"}"#).unwrap_err().1.contains("is not a URL"));
    }
}
