//! An HTTP client for plugins, on the host's one-call `loadhost:plugin/http` interface (or
//! `wasi:http/outgoing-handler` on request, below). The host does the network work (pooled
//! keep-alive connections, TLS) and records the built-in HTTP metrics (`http_reqs`,
//! `http_req_duration`, …) for every request without plugin code.
//!
//! ```ignore
//! use loadhost_sdk::http;
//!
//! let response = http::get("http://127.0.0.1:8080/").send()?;
//! assert_eq!(response.status, 200);
//! let echoed = http::post("http://127.0.0.1:8080/echo").json(r#"{"id": 7}"#).send()?;
//! ```
//!
//! A host the user did not allow (`loadhost run --allow-host HOST[:PORT]`) answers
//! [`HttpError::Denied`] without any connection being made.
//!
//! As a browser or k6 does, the host follows up to 10 redirects ([`Request::redirects`]), keeps a
//! cookie jar per worker ([`Request::no_cookies`], and [`crate::cookies`] to read or change it)
//! and decodes gzip, deflate and br bodies ([`Request::raw_body`]); [`Response::final_url`] and
//! [`Response::redirects`] say where the response came from. [`Request::name`] names the
//! endpoint in the per-endpoint HTTP metrics.
//!
//! A request whose response has a status of 400 or more counts in `http_req_failed`, as in k6.
//! A request that expects another status (a 404 when checking that something is gone) says so:
//! [`Request::expected_statuses`] for one request, [`set_expected_statuses`] for every request of
//! the worker from then on (k6's `expectedStatuses` and `setResponseCallback`).
//!
//! Requests go through the host's one-call `loadhost:plugin/http` interface: the whole request in,
//! the whole response out, which costs far less than wasi:http's dozen or more host calls per
//! request. Set `LOADHOST_HTTP=wasi` in the plugin's environment (`-e LOADHOST_HTTP=wasi`) to send
//! through `wasi:http/outgoing-handler` instead; both paths share the host's pool, allow-list and
//! metrics, and return the same [`Response`], but wasi:http is raw HTTP: no redirect is followed,
//! no cookie is sent or kept and no body is decoded.
//!
//! # In async tasks
//! [`Request::send`] blocks the instance while it waits. An async task
//! ([`AsyncDoer`](crate::AsyncDoer)) builds the same [`Request`] and awaits
//! [`Request::send_async`]: `loadhost:plugin/http-async`, through the same host call `send` would
//! make, with the same conversions, giving the same [`Response`] and [`HttpError`]. The instance
//! serves many workers, so there is no worker's cookie jar there (the host neither sends nor keeps
//! cookies; [`crate::cookies`] belongs to sync plugins), `LOADHOST_HTTP=wasi` does not apply, and
//! [`set_expected_statuses`] sets the statuses of the whole instance.
//!
//! ```ignore
//! let response = http::get("http://127.0.0.1:8080/").bare().send_async().await?;
//! ```

use std::cell::RefCell;
use std::fmt;
use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use wasip2::http::outgoing_handler;
pub use wasip2::http::types::Method;
use wasip2::http::types::{ErrorCode, Fields, IncomingBody, OutgoingBody, OutgoingRequest, RequestOptions, Scheme};

use crate::bindings::loadhost::plugin::http as host;

/// Why a request got no response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The URL is not `http://…` or `https://…` with a host.
    InvalidUrl(String),
    /// The host is not on the user's allow-list (`--allow-host`); no connection was made.
    Denied(String),
    /// A header name or value was refused.
    InvalidHeader(String),
    /// The request could not be sent or no complete response came back.
    Network(String),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::InvalidUrl(url) => {
                write!(f, "invalid URL {url:?}: expected http://HOST[:PORT]/PATH or https://…")
            }
            HttpError::Denied(url) => {
                write!(f, "request to {url} denied: the host is not allowed (loadhost run --allow-host)")
            }
            HttpError::InvalidHeader(name) => write!(f, "invalid header {name:?}"),
            HttpError::Network(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for HttpError {}

/// A request being built; [`Request::send`] sends it and waits for the whole response, and
/// [`Request::send_async`] awaits it (in an async task).
#[derive(Debug, Clone)]
pub struct Request {
    method: Method,
    url: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    timeout: Option<Duration>,
    /// Whether the response's headers and body come back into the plugin.
    keep_headers: bool,
    keep_body: bool,
    redirects: u32,
    cookies: bool,
    decompress: bool,
    name: Option<String>,
    /// The statuses this request expects, as inclusive ranges; `None`: the worker's.
    expected: Option<Vec<(u16, u16)>>,
}

/// How many redirects a request follows unless told otherwise (k6's `maxRedirects`).
pub const DEFAULT_REDIRECTS: u32 = 10;

/// A `GET` request.
pub fn get(url: &str) -> Request {
    request(Method::Get, url)
}

/// A `POST` request.
pub fn post(url: &str) -> Request {
    request(Method::Post, url)
}

/// A `PUT` request.
pub fn put(url: &str) -> Request {
    request(Method::Put, url)
}

/// A `DELETE` request.
pub fn delete(url: &str) -> Request {
    request(Method::Delete, url)
}

/// A request with any method.
pub fn request(method: Method, url: &str) -> Request {
    Request {
        method,
        url: url.to_owned(),
        headers: Vec::new(),
        body: Vec::new(),
        timeout: None,
        keep_headers: true,
        keep_body: true,
        redirects: DEFAULT_REDIRECTS,
        cookies: true,
        decompress: true,
        name: None,
        expected: None,
    }
}

thread_local! {
    /// The worker's expected statuses as last set (empty: the host's default), put back after a
    /// wasi:http request that expected others.
    static WORKER_EXPECTED: RefCell<Vec<(u16, u16)>> = const { RefCell::new(Vec::new()) };
}

/// The ranges of `statuses` as the host takes them; panics naming `call` on an empty range.
#[track_caller]
fn status_ranges(call: &str, statuses: &[RangeInclusive<u16>]) -> Vec<(u16, u16)> {
    statuses
        .iter()
        .map(|range| {
            if range.is_empty() {
                panic!("{call}: the range {range:?} holds no status (write it low..=high, such as 200..=299)");
            }
            (*range.start(), *range.end())
        })
        .collect()
}

/// Judge every request of this worker from now on by `statuses` (inclusive ranges: `&[200..=299,
/// 404..=404]`): a response with one of them does not count in `http_req_failed`, any other
/// does (k6's `setResponseCallback(expectedStatuses(…))`). `&[]` restores the default, every
/// status below 400. Each worker starts with the default: call it in `init` to set it for all.
/// An empty range (`300..=200`) panics naming the call. In an async plugin the statuses are the
/// instance's, for the tasks of every worker it serves: prefer [`Request::expected_statuses`].
#[track_caller]
pub fn set_expected_statuses(statuses: &[RangeInclusive<u16>]) {
    let ranges = status_ranges("http::set_expected_statuses", statuses);
    host::set_expected_statuses(&ranges);
    WORKER_EXPECTED.with(|expected| *expected.borrow_mut() = ranges);
}

/// A complete response.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names (lower-case) and values.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The whole body.
    pub body: Vec<u8>,
    /// From sending the request to the end of the body, as the plugin saw it.
    pub elapsed: Duration,
    final_url: String,
    redirects: u32,
}

impl Response {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_slice())
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The URL that answered: the request's, or the last redirect's.
    pub fn final_url(&self) -> &str {
        &self.final_url
    }

    /// How many redirects were followed to get this response.
    pub fn redirects(&self) -> u32 {
        self.redirects
    }
}

impl Request {
    /// Add a header.
    pub fn header(mut self, name: &str, value: impl AsRef<[u8]>) -> Self {
        self.headers.push((name.to_owned(), value.as_ref().to_vec()));
        self
    }

    /// Set the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Set a JSON body (and `content-type: application/json`).
    pub fn json(self, json: impl Into<Vec<u8>>) -> Self {
        self.header("content-type", "application/json").body(json)
    }

    /// Give up when no response has started after `limit`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Do not bring the response body into the plugin ([`Response::body`] is empty), as k6's
    /// `discardResponseBodies`: the host still reads it whole and counts it in the HTTP metrics.
    pub fn discard_body(mut self) -> Self {
        self.keep_body = false;
        self
    }

    /// Do not bring the response headers into the plugin ([`Response::headers`] is empty): a
    /// plugin that only checks the status saves copying each header in.
    pub fn without_headers(mut self) -> Self {
        self.keep_headers = false;
        self
    }

    /// Follow at most `n` redirects (default 10); 0 hands back the redirect itself. 303, and a
    /// POST's 301 or 302, become a GET without a body; 307 and 308 keep the method and body.
    pub fn redirects(mut self, n: u32) -> Self {
        self.redirects = n;
        self
    }

    /// Neither send the worker's cookies nor keep the response's `Set-Cookie`s. (An async
    /// task's [`Request::send_async`] has no jar to begin with.)
    pub fn no_cookies(mut self) -> Self {
        self.cookies = false;
        self
    }

    /// Hand the body back as it came: no `Accept-Encoding` is added and a gzip, deflate or br
    /// body is not decoded.
    pub fn raw_body(mut self) -> Self {
        self.decompress = false;
        self
    }

    /// The request alone, as wrk, hey and vegeta send it: no redirect followed, no cookie sent or
    /// kept, no `Accept-Encoding` added and the body handed back as it came. The host then takes
    /// its cheapest path (about a microsecond less per request than with the options).
    pub fn bare(self) -> Self {
        self.redirects(0).no_cookies().raw_body()
    }

    /// Name the endpoint in the per-endpoint HTTP metrics (k6's `name` tag), e.g. `login` for
    /// every `/login?user=…`; without it, the method and the URL's path with ids folded.
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// The statuses this request expects (inclusive ranges: `&[200..=299, 404..=404]`), instead
    /// of the worker's (by default, below 400): a response with one of them does not count in
    /// `http_req_failed`, any other does, each redirect hop too (k6's `responseCallback`). An
    /// empty range (`300..=200`) panics naming the call.
    #[track_caller]
    pub fn expected_statuses(mut self, statuses: &[RangeInclusive<u16>]) -> Self {
        self.expected = Some(status_ranges("Request::expected_statuses", statuses));
        self
    }

    /// HTTP basic authentication: `Authorization: Basic base64(user:password)`.
    pub fn basic_auth(self, user: &str, password: &str) -> Self {
        let credentials = base64(format!("{user}:{password}").as_bytes());
        self.header("authorization", format!("Basic {credentials}"))
    }

    /// Send the request and read the whole response. This blocks the instance while it waits: an
    /// async task ([`AsyncDoer`](crate::AsyncDoer)) awaits [`Request::send_async`] instead.
    pub fn send(self) -> Result<Response, HttpError> {
        if use_wasi_http() { self.send_wasi_http() } else { self.send_one_call() }
    }

    /// Send the request and read the whole response, awaiting it: the instance runs its other
    /// tasks meanwhile. For async tasks ([`AsyncDoer`](crate::AsyncDoer), whose world imports
    /// `loadhost:plugin/http-async`); a sync plugin calls [`Request::send`].
    ///
    /// The same request as [`Request::send`]'s, through the same host client, allow-list and
    /// built-in metrics, with one difference: there is no cookie jar. An async plugin's instance
    /// serves many workers, so the host neither sends nor keeps cookies here, whatever
    /// [`Request::no_cookies`] says; send a `cookie` header yourself when a request needs one.
    /// `LOADHOST_HTTP=wasi` does not apply either (wasi:http would block the instance).
    /// [`Response::elapsed`] is as the task saw it, so it includes any time the instance took to
    /// resume the task; the host's `http_req_duration` is the request's own.
    ///
    /// ```ignore
    /// let response = http::get("http://127.0.0.1:8080/").bare().send_async().await?;
    /// ```
    pub async fn send_async(self) -> Result<Response, HttpError> {
        use crate::async_bindings::loadhost::plugin::http_async as host;
        let started = Instant::now();
        let answer = match self.one_call() {
            OneCall::Expecting(request, options, statuses) => {
                host::send_expecting(request, options, statuses).await.map(Answer::Info)
            }
            OneCall::With(request, parts) => {
                // The async import takes the request whole; `send-with` does not hand the URL back.
                let url = request.url.clone();
                host::send_with(request, parts).await.map(|response| Answer::Bare(response, url))
            }
            OneCall::Opts(request, options) => host::send_opts(request, options).await.map(Answer::Info),
        };
        answer.map(|answer| answer.into_response(started)).map_err(from_host)
    }

    /// Through `loadhost:plugin/http`: one host call.
    fn send_one_call(self) -> Result<Response, HttpError> {
        let started = Instant::now();
        let answer = match self.one_call() {
            OneCall::Expecting(request, options, statuses) => {
                host::send_expecting(&request, &options, &statuses).map(Answer::Info)
            }
            OneCall::With(request, parts) => {
                host::send_with(&request, parts).map(|response| Answer::Bare(response, request.url))
            }
            OneCall::Opts(request, options) => host::send_opts(&request, &options).map(Answer::Info),
        };
        answer.map(|answer| answer.into_response(started)).map_err(from_host)
    }

    /// The request as the one-call imports take it, and the one that sends it with no more than
    /// it needs. The sync and the async path both send what this says.
    fn one_call(self) -> OneCall {
        let options = host::RequestOptions {
            parts: host::ResponseParts { headers: self.keep_headers, body: self.keep_body },
            redirects: Some(self.redirects),
            cookies: self.cookies,
            decompress: self.decompress,
            name: self.name,
        };
        let request = host::Request {
            method: method_name(&self.method).to_owned(),
            url: self.url,
            headers: self.headers,
            body: self.body,
            timeout_ms: crate::millis(self.timeout),
        };
        if let Some(expected) = self.expected {
            return OneCall::Expecting(request, options, expected);
        }
        if options.redirects == Some(0) && !options.cookies && !options.decompress && options.name.is_none() {
            // Nothing beyond the request itself: `send-with` does exactly that, without copying
            // the final URL back.
            return OneCall::With(request, options.parts);
        }
        OneCall::Opts(request, options)
    }

    /// Through `wasi:http/outgoing-handler`, which has no per-request options: a request with
    /// statuses of its own sets them for the worker while it goes, then puts the worker's back.
    fn send_wasi_http(self) -> Result<Response, HttpError> {
        let Some(expected) = self.expected.clone() else { return self.send_wasi_http_as_set() };
        host::set_expected_statuses(&expected);
        let result = self.send_wasi_http_as_set();
        WORKER_EXPECTED.with(|worker| host::set_expected_statuses(&worker.borrow()));
        result
    }

    fn send_wasi_http_as_set(self) -> Result<Response, HttpError> {
        let started = Instant::now();
        let (scheme, authority, path) = split_url(&self.url).ok_or_else(|| HttpError::InvalidUrl(self.url.clone()))?;
        let fields = Fields::from_list(&self.headers).map_err(|_| {
            HttpError::InvalidHeader(self.headers.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(", "))
        })?;
        let request = OutgoingRequest::new(fields);
        let invalid = || HttpError::InvalidUrl(self.url.clone());
        request.set_method(&self.method).map_err(|()| invalid())?;
        request.set_scheme(Some(&scheme)).map_err(|()| invalid())?;
        request.set_authority(Some(authority)).map_err(|()| invalid())?;
        request.set_path_with_query(Some(path)).map_err(|()| invalid())?;
        let options = self.timeout.map(|limit| {
            let options = RequestOptions::new();
            let nanos = u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX);
            let _ = options.set_connect_timeout(Some(nanos));
            let _ = options.set_first_byte_timeout(Some(nanos));
            options
        });
        let outgoing_body = request.body().map_err(|()| HttpError::Network("the request body was taken".into()))?;
        let pending = outgoing_handler::handle(request, options).map_err(|code| self.error(&code))?;
        write_body(outgoing_body, &self.body)?;
        pending.subscribe().block();
        let response = match pending.get() {
            Some(Ok(Ok(response))) => response,
            Some(Ok(Err(code))) => return Err(self.error(&code)),
            Some(Err(())) | None => return Err(HttpError::Network("the response was already taken".into())),
        };
        let status = response.status();
        let headers = if self.keep_headers {
            response.headers().entries().into_iter().collect::<Vec<(String, Vec<u8>)>>()
        } else {
            Vec::new()
        };
        let body = response.consume().map_err(|()| HttpError::Network("the response body was taken".into()))?;
        let mut bytes = read_body(body)?;
        if !self.keep_body {
            bytes = Vec::new();
        }
        let elapsed = started.elapsed();
        Ok(Response { status, headers, body: bytes, elapsed, final_url: self.url, redirects: 0 })
    }

    fn error(&self, code: &ErrorCode) -> HttpError {
        match code {
            ErrorCode::HttpRequestDenied => HttpError::Denied(self.url.clone()),
            other => HttpError::Network(format!("{} {}: {other:?}", method_name(&self.method), self.url)),
        }
    }
}

/// Which one-call import sends a request, with its arguments. The `http-async` imports take the
/// `http` interface's types (the async bindings map them onto [`crate::bindings`]), so one value
/// serves both paths.
#[derive(Debug)]
enum OneCall {
    /// Statuses of its own: `send-expecting`.
    Expecting(host::Request, host::RequestOptions, Vec<(u16, u16)>),
    /// The request alone: `send-with`.
    With(host::Request, host::ResponseParts),
    /// Options (redirects, cookies, decoding, a name): `send-opts`.
    Opts(host::Request, host::RequestOptions),
}

/// What a one-call import answered.
enum Answer {
    /// From `send-opts` or `send-expecting`.
    Info(host::ResponseInfo),
    /// From `send-with`, with the request's URL (the final one: no redirect was followed).
    Bare(host::Response, String),
}

impl Answer {
    /// The SDK's response; `started`: when the request was sent.
    fn into_response(self, started: Instant) -> Response {
        let elapsed = started.elapsed();
        match self {
            Answer::Info(info) => Response {
                status: info.response.status,
                headers: info.response.headers,
                body: info.response.body,
                elapsed,
                final_url: info.final_url,
                redirects: info.redirects,
            },
            Answer::Bare(response, final_url) => Response {
                status: response.status,
                headers: response.headers,
                body: response.body,
                elapsed,
                final_url,
                redirects: 0,
            },
        }
    }
}

/// The SDK's error for one of the host's.
pub(crate) fn from_host(err: host::Error) -> HttpError {
    match err {
        host::Error::Denied(url) => HttpError::Denied(url),
        host::Error::InvalidRequest(why) => HttpError::InvalidUrl(why),
        host::Error::Network(why) => HttpError::Network(why),
    }
}

/// Standard base64 with padding (RFC 4648), for basic authentication.
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `LOADHOST_HTTP=wasi` selects the wasi:http path (read once per instance).
fn use_wasi_http() -> bool {
    static WASI: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WASI.get_or_init(|| std::env::var("LOADHOST_HTTP").is_ok_and(|v| v.eq_ignore_ascii_case("wasi")))
}

fn method_name(method: &Method) -> &str {
    match method {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
        Method::Connect => "CONNECT",
        Method::Options => "OPTIONS",
        Method::Trace => "TRACE",
        Method::Patch => "PATCH",
        Method::Other(name) => name,
    }
}

/// The host accepts at most this much per write.
const WRITE_CHUNK: usize = 4096;

fn write_body(body: OutgoingBody, data: &[u8]) -> Result<(), HttpError> {
    {
        let stream = body.write().map_err(|()| HttpError::Network("the request body stream was taken".into()))?;
        for chunk in data.chunks(WRITE_CHUNK) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|err| HttpError::Network(format!("sending the request body: {err:?}")))?;
        }
        // The stream is a child of the body: it must be dropped before the body is finished.
    }
    OutgoingBody::finish(body, None).map_err(|code| HttpError::Network(format!("finishing the request body: {code:?}")))
}

fn read_body(body: IncomingBody) -> Result<Vec<u8>, HttpError> {
    let mut bytes = Vec::new();
    {
        let stream = body.stream().map_err(|()| HttpError::Network("the response body stream was taken".into()))?;
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(wasip2::io::streams::StreamError::Closed) => break,
                Err(err) => return Err(HttpError::Network(format!("reading the response body: {err:?}"))),
            }
        }
    }
    drop(IncomingBody::finish(body));
    Ok(bytes)
}

/// `http://host:port/path?query` → (scheme, authority, path-with-query).
fn split_url(url: &str) -> Option<(Scheme, &str, &str)> {
    let (scheme, rest) = if let Some(rest) = url.strip_prefix("http://") {
        (Scheme::Http, rest)
    } else if let Some(rest) = url.strip_prefix("https://") {
        (Scheme::Https, rest)
    } else {
        return None;
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.is_empty() {
        return None;
    }
    Some((scheme, authority, if path.is_empty() { "/" } else { path }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_scheme_authority_and_path() {
        let (s, a, p) = split_url("http://127.0.0.1:8080/bytes?n=3").unwrap();
        assert!(matches!(s, Scheme::Http));
        assert_eq!((a, p), ("127.0.0.1:8080", "/bytes?n=3"));
        assert_eq!(split_url("https://example.com").map(|(_, a, p)| (a, p)), Some(("example.com", "/")));
        assert!(split_url("ftp://x/").is_none());
        assert!(split_url("http:///path").is_none());
    }

    #[test]
    #[allow(clippy::reversed_empty_ranges, reason = "the mistake under test")]
    fn expected_statuses_are_inclusive_ranges_and_an_empty_one_panics() {
        let request = get("http://h/").expected_statuses(&[200..=299, 404..=404]);
        assert_eq!(request.expected, Some(vec![(200, 299), (404, 404)]));
        assert_eq!(get("http://h/").expected_statuses(&[]).expected, Some(vec![]), "the default rule");
        let payload = std::panic::catch_unwind(|| get("http://h/").expected_statuses(&[300..=200])).unwrap_err();
        let message = payload.downcast_ref::<String>().cloned().unwrap_or_default();
        assert_eq!(
            message,
            "Request::expected_statuses: the range 300..=200 holds no status (write it low..=high, such as 200..=299)"
        );
    }

    #[test]
    fn a_bare_request_goes_by_send_with_and_keeps_its_url() {
        let OneCall::With(request, parts) = get("http://h/x").bare().without_headers().discard_body().one_call() else {
            panic!("a bare request goes by send-with");
        };
        assert_eq!((request.method.as_str(), request.url.as_str()), ("GET", "http://h/x"));
        assert!(!parts.headers && !parts.body);
        let answer = Answer::Bare(host::Response { status: 204, headers: Vec::new(), body: Vec::new() }, request.url);
        let response = answer.into_response(Instant::now());
        assert_eq!((response.status, response.final_url(), response.redirects()), (204, "http://h/x", 0));
    }

    #[test]
    fn options_go_by_send_opts_and_own_statuses_by_send_expecting() {
        let OneCall::Opts(request, options) = post("http://h/").json("{}").timeout(Duration::from_secs(2)).one_call()
        else {
            panic!("a request with the default options goes by send-opts");
        };
        assert_eq!(
            (request.method.as_str(), request.timeout_ms, request.body.as_slice()),
            ("POST", Some(2000), &b"{}"[..])
        );
        assert_eq!((options.redirects, options.cookies, options.decompress), (Some(10), true, true));
        // Cookies left on (the host ignores them on the async path): still send-opts, as `send` picks.
        assert!(matches!(get("http://h/").redirects(0).raw_body().one_call(), OneCall::Opts(..)));
        assert!(matches!(get("http://h/").bare().name("home").one_call(), OneCall::Opts(..)));
        let OneCall::Expecting(_, options, statuses) =
            get("http://h/").bare().expected_statuses(&[404..=404]).one_call()
        else {
            panic!("statuses of its own go by send-expecting");
        };
        assert_eq!((options.redirects, options.cookies, statuses), (Some(0), false, vec![(404, 404)]));
        let info = host::ResponseInfo {
            response: host::Response { status: 404, headers: Vec::new(), body: b"gone".to_vec() },
            final_url: "http://h/there".into(),
            redirects: 2,
        };
        let response = Answer::Info(info).into_response(Instant::now());
        assert_eq!((response.status, response.final_url(), response.redirects()), (404, "http://h/there", 2));
        assert_eq!(response.text(), "gone");
    }

    #[test]
    fn basic_auth_is_base64() {
        assert_eq!(base64(b"Aladdin:open sesame"), "QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert_eq!(base64(b"a:b"), "YTpi");
        assert_eq!(base64(b"ab:"), "YWI6");
        assert_eq!(base64(b""), "");
    }
}
