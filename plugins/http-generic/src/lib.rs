//! The plugin behind `loadhost http URL`: one HTTP request per task, described by the plugin's
//! environment or, when the task has a feed row, by the row. `loadhost http` embeds it and sets
//! its environment from the command line, so a first test needs no plugin of one's own.
//!
//! The environment (each read once per instance):
//! - `LOADHOST_HTTP_URL`: the request's URL (needed unless every task has a row).
//! - `LOADHOST_HTTP_METHOD`: its method (default `GET`).
//! - `LOADHOST_HTTP_HEADERS`: headers added to every request, rows' included: a JSON object
//!   (`{"K": "v"}` or `{"K": ["v1", "v2"]}`) or `K: V` lines.
//! - `LOADHOST_HTTP_BODY` (text) or `LOADHOST_HTTP_BODY_B64` (base64): the body.
//! - `LOADHOST_HTTP_EXPECT_STATUS`: the one status that passes (default: any 2xx or 3xx).
//!
//! A row is vegeta's JSON target format, `{"method":"GET","url":"…","header":{"K":["v"]},
//! "body":"BASE64"}`. A status that is not the expected one fails the task, naming the status (a
//! 5xx, or no response at all, fails it as retryable, so `--retries` may try again).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use base64::Engine as _;
use loadhost_sdk::http::{self, HttpError, Method};
use loadhost_sdk::{Doer, Task, TaskResult, abort, failed, retryable};
use serde::Deserialize;

struct HttpGeneric;

// For `loadhost inspect` and `loadhost run`'s checks of -e; `loadhost http` sets them. The plugin
// reads them itself (`from_env`), so that its tests can hand it a map.
loadhost_sdk::declare_options!(
    static _OPTIONS =
        "LOADHOST_HTTP_URL:url 'the URL of a task without a feed row'",
        "LOADHOST_HTTP_METHOD:string 'its method (none: GET)'",
        "LOADHOST_HTTP_HEADERS:string 'headers for every request: K: V lines or a JSON object'",
        "LOADHOST_HTTP_BODY:string 'the body, as text'",
        "LOADHOST_HTTP_BODY_B64:string 'the body, in base64'",
        "LOADHOST_HTTP_EXPECT_STATUS:int 'the one status that passes (none: any 2xx or 3xx)'",
);

/// One request to send.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// What the environment says, read once per instance.
#[derive(Debug)]
struct Settings {
    /// The request of a task without a row; `None` when `LOADHOST_HTTP_URL` is unset.
    request: Option<Target>,
    /// Added to every request.
    headers: Vec<(String, String)>,
    /// The one status that passes; `None`: any 2xx or 3xx.
    expect: Option<u16>,
}

/// A header's value in JSON: one string, or several (vegeta writes arrays).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Values {
    One(String),
    Many(Vec<String>),
}

/// A feed row: vegeta's JSON target format.
#[derive(Debug, Deserialize)]
struct Row {
    #[serde(default)]
    method: Option<String>,
    url: String,
    #[serde(default)]
    header: BTreeMap<String, Values>,
    /// Base64, as vegeta writes it.
    #[serde(default)]
    body: String,
}

impl Doer for HttpGeneric {
    fn do_task(task: Task) -> TaskResult {
        // A setting that does not parse is the user's mistake in every task alike: stop the run.
        let settings = settings().as_ref().map_err(|why| abort(why.clone()))?;
        let row;
        let target = if task.input.is_empty() {
            settings.request.as_ref().ok_or_else(|| {
                abort("LOADHOST_HTTP_URL is not set and the task has no feed row: there is nothing to request")
            })?
        } else {
            row = from_row(&task.input).map_err(|why| failed(format!("feed row of task {}: {why}", task.iteration)))?;
            &row
        };
        send(target, &settings.headers, settings.expect)
    }
}

loadhost_sdk::export!(HttpGeneric);

fn settings() -> &'static Result<Settings, String> {
    static SETTINGS: OnceLock<Result<Settings, String>> = OnceLock::new();
    SETTINGS.get_or_init(|| from_env(|key| std::env::var(key).ok()))
}

/// The settings from `var` (the environment, or a test's map).
fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Settings, String> {
    let headers = match var("LOADHOST_HTTP_HEADERS") {
        Some(text) => parse_headers(&text).map_err(|why| format!("LOADHOST_HTTP_HEADERS: {why}"))?,
        None => Vec::new(),
    };
    let expect = match var("LOADHOST_HTTP_EXPECT_STATUS") {
        Some(text) => Some(
            text.trim()
                .parse::<u16>()
                .ok()
                .filter(|code| (100..=999).contains(code))
                .ok_or_else(|| format!("LOADHOST_HTTP_EXPECT_STATUS={text}: expected a status from 100 to 999"))?,
        ),
        None => None,
    };
    let body = match (var("LOADHOST_HTTP_BODY"), var("LOADHOST_HTTP_BODY_B64")) {
        (Some(text), None) => text.into_bytes(),
        (None, Some(encoded)) => decode(&encoded).map_err(|why| format!("LOADHOST_HTTP_BODY_B64: {why}"))?,
        (None, None) => Vec::new(),
        (Some(_), Some(_)) => return Err("LOADHOST_HTTP_BODY and LOADHOST_HTTP_BODY_B64 are both set".to_owned()),
    };
    let request = var("LOADHOST_HTTP_URL").map(|url| Target {
        method: var("LOADHOST_HTTP_METHOD").unwrap_or_else(|| "GET".to_owned()),
        url,
        headers: Vec::new(),
        body,
    });
    Ok(Settings { request, headers, expect })
}

/// `K: V` lines, or a JSON object of strings or arrays of strings.
fn parse_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    if text.trim_start().starts_with('{') {
        let map: BTreeMap<String, Values> =
            serde_json::from_str(text).map_err(|err| format!("not a JSON object of header values: {err}"))?;
        return Ok(flatten(map));
    }
    let mut headers = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').ok_or_else(|| format!("'{line}' is not 'Name: value'"))?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    Ok(headers)
}

fn flatten(map: BTreeMap<String, Values>) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    for (name, values) in map {
        match values {
            Values::One(value) => headers.push((name, value)),
            Values::Many(values) => headers.extend(values.into_iter().map(|v| (name.clone(), v))),
        }
    }
    headers
}

fn decode(encoded: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD.decode(encoded.trim()).map_err(|err| format!("not base64: {err}"))
}

/// The request a feed row describes.
fn from_row(input: &[u8]) -> Result<Target, String> {
    let row: Row = serde_json::from_slice(input).map_err(|err| format!("not a JSON target: {err}"))?;
    let body = decode(&row.body).map_err(|why| format!("body: {why}"))?;
    Ok(Target {
        method: row.method.filter(|m| !m.is_empty()).unwrap_or_else(|| "GET".to_owned()),
        url: row.url,
        headers: flatten(row.header),
        body,
    })
}

fn method(name: &str) -> Method {
    match name {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "CONNECT" => Method::Connect,
        "OPTIONS" => Method::Options,
        "TRACE" => Method::Trace,
        "PATCH" => Method::Patch,
        other => Method::Other(other.to_owned()),
    }
}

/// Send `target` with `extra` headers and judge its status. Only the status is read, so the
/// response's headers and body stay in the host (which still counts them).
fn send(target: &Target, extra: &[(String, String)], expect: Option<u16>) -> TaskResult {
    let mut request = http::request(method(&target.method), &target.url).without_headers().discard_body();
    for (name, value) in target.headers.iter().chain(extra) {
        request = request.header(name, value);
    }
    if !target.body.is_empty() {
        request = request.body(target.body.clone());
    }
    let response = request.send().map_err(|err| {
        let message = format!("{} {}: {err}", target.method, target.url);
        // No response may be the network's passing trouble; a denied or malformed request is not.
        if matches!(err, HttpError::Network(_)) { retryable(message) } else { failed(message) }
    })?;
    judge(target, response.status, expect)
}

/// Whether `status` passes: the expected one, or else any 2xx or 3xx.
fn passes(status: u16, expect: Option<u16>) -> bool {
    expect.map_or((200..400).contains(&status), |code| status == code)
}

fn judge(target: &Target, status: u16, expect: Option<u16>) -> TaskResult {
    if passes(status, expect) {
        return Ok(());
    }
    let wanted = expect.map_or_else(|| "2xx or 3xx".to_owned(), |code| code.to_string());
    let message = format!("{} {} answered {status} (expected {wanted})", target.method, target.url);
    if status >= 500 { Err(retryable(message)) } else { Err(failed(message)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Result<Settings, String> {
        let map: BTreeMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        from_env(|key| map.get(key).cloned())
    }

    #[test]
    fn the_environment_describes_one_request() {
        let s = env(&[
            ("LOADHOST_HTTP_URL", "http://127.0.0.1:1/x"),
            ("LOADHOST_HTTP_METHOD", "POST"),
            ("LOADHOST_HTTP_HEADERS", "A: 1\nB:two words\n"),
            ("LOADHOST_HTTP_BODY_B64", "aGk="),
            ("LOADHOST_HTTP_EXPECT_STATUS", "201"),
        ])
        .unwrap();
        let request = s.request.unwrap();
        assert_eq!((request.method.as_str(), request.body.as_slice()), ("POST", b"hi".as_slice()));
        assert_eq!(s.headers, vec![("A".into(), "1".into()), ("B".into(), "two words".into())]);
        assert_eq!(s.expect, Some(201));
        assert!(env(&[]).unwrap().request.is_none());
    }

    #[test]
    fn bad_settings_say_which() {
        assert!(env(&[("LOADHOST_HTTP_EXPECT_STATUS", "2xx")]).unwrap_err().contains("expected a status"));
        assert!(env(&[("LOADHOST_HTTP_HEADERS", "nocolon")]).unwrap_err().contains("'nocolon' is not 'Name: value'"));
        assert!(env(&[("LOADHOST_HTTP_BODY_B64", "***")]).unwrap_err().contains("not base64"));
    }

    #[test]
    fn json_headers_take_strings_or_arrays() {
        let headers = parse_headers(r#"{"A": "1", "B": ["2", "3"]}"#).unwrap();
        assert_eq!(headers, vec![("A".into(), "1".into()), ("B".into(), "2".into()), ("B".into(), "3".into())]);
    }

    #[test]
    fn a_row_is_a_vegeta_json_target() {
        let target = from_row(br#"{"method":"PUT","url":"http://h/p","header":{"K":["v"]},"body":"eyJhIjoxfQ=="}"#);
        let target = target.unwrap();
        assert_eq!((target.method.as_str(), target.url.as_str()), ("PUT", "http://h/p"));
        assert_eq!((target.headers, target.body), (vec![("K".into(), "v".into())], br#"{"a":1}"#.to_vec()));
        assert_eq!(from_row(br#"{"url":"http://h/"}"#).unwrap().method, "GET");
        assert!(from_row(b"{}").unwrap_err().contains("missing field `url`"));
    }

    #[test]
    fn statuses_pass_by_class_or_exactly() {
        assert!(passes(204, None) && passes(302, None) && !passes(404, None) && !passes(500, None));
        assert!(passes(201, Some(201)) && !passes(200, Some(201)));
        let target = Target { method: "GET".into(), url: "http://h/".into(), headers: Vec::new(), body: Vec::new() };
        let err = judge(&target, 404, Some(200)).unwrap_err();
        assert!(matches!(&err, loadhost_sdk::TaskError::Failed(m) if m == "GET http://h/ answered 404 (expected 200)"));
        assert!(matches!(judge(&target, 503, None), Err(loadhost_sdk::TaskError::Retryable(_))));
    }
}
