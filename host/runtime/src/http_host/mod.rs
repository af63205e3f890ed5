//! The `loadhost:plugin/http` import: one call per request (see `wit/plugin.wit`).

use std::time::Duration;

use bytes::Bytes;
use loadhost_metrics::ExpectedStatuses;

mod concurrent;

use crate::bindings::loadhost::plugin::http;
use crate::ctx::DoerCtx;
use crate::http::{Connections, DEFAULT_REDIRECTS, FetchError, FetchOptions, Followed, Outgoing, WholeResponse};
use crate::output::HttpDebug;

/// What `--http-debug` shows of a request and its response, in the style of k6's.
mod debug {
    use std::fmt::Write as _;
    use std::time::Duration;

    use crate::http::{FetchError, WholeResponse};
    use crate::output::HttpDebug;

    /// The most of a body shown.
    const BODY: usize = 1024;

    /// Whether a header carries a credential, whose value is never shown.
    fn secret(name: &str) -> bool {
        name.eq_ignore_ascii_case("authorization") || name.eq_ignore_ascii_case("proxy-authorization")
    }

    fn header(out: &mut String, name: &str, value: &[u8]) {
        let value = if secret(name) { "[redacted]".into() } else { String::from_utf8_lossy(value) };
        let _ = write!(out, "\n  {name}: {value}");
    }

    fn body(out: &mut String, body: &[u8]) {
        if body.is_empty() {
            return;
        }
        let shown = String::from_utf8_lossy(&body[..body.len().min(BODY)]);
        let more = if body.len() > BODY { format!(" … ({} bytes in all)", body.len()) } else { String::new() };
        let _ = write!(out, "\n\n  {}{more}", shown.replace('\n', "\n  "));
    }

    /// The request as the plugin asked for it.
    pub(super) fn request(
        level: HttpDebug,
        method: &str,
        url: &str,
        headers: &[(String, Vec<u8>)],
        payload: &[u8],
    ) -> String {
        let mut out = format!("> {method} {url}");
        for (name, value) in headers {
            header(&mut out, name, value);
        }
        if level == HttpDebug::Full {
            body(&mut out, payload);
        }
        out
    }

    /// The response, or why there was none.
    pub(super) fn response(
        level: HttpDebug,
        url: &str,
        fetched: Result<&WholeResponse, &FetchError>,
        took: Duration,
    ) -> String {
        let response = match fetched {
            Ok(response) => response,
            Err(FetchError::Invalid(why) | FetchError::Network(why)) => return format!("< {url}: no response: {why}"),
            Err(FetchError::Denied(_)) => return format!("< {url}: denied by the allow-list"),
        };
        let mut out = format!("< {} {url} ({:.1} ms)", response.status, took.as_secs_f64() * 1000.0);
        for (name, value) in &response.headers {
            header(&mut out, name.as_str(), value.as_bytes());
        }
        if level == HttpDebug::Full {
            body(&mut out, &response.body);
        }
        out
    }
}

impl http::Host for DoerCtx {
    async fn send(&mut self, request: http::Request) -> Result<http::Response, http::Error> {
        self.send_parts(request, http::ResponseParts { headers: true, body: true }).await
    }

    async fn send_with(
        &mut self,
        request: http::Request,
        parts: http::ResponseParts,
    ) -> Result<http::Response, http::Error> {
        self.send_parts(request, parts).await
    }

    async fn send_opts(
        &mut self,
        request: http::Request,
        options: http::RequestOptions,
    ) -> Result<http::ResponseInfo, http::Error> {
        let expected = self.expected_statuses();
        self.send_options(request, options, expected).await
    }

    async fn send_expecting(
        &mut self,
        request: http::Request,
        options: http::RequestOptions,
        statuses: http::StatusRanges,
    ) -> Result<http::ResponseInfo, http::Error> {
        self.send_options(request, options, ExpectedStatuses::from_ranges(&statuses)).await
    }

    fn set_expected_statuses(&mut self, statuses: http::StatusRanges) {
        self.expect_statuses(ExpectedStatuses::from_ranges(&statuses));
    }

    fn last_timings(&mut self) -> Option<http::Timings> {
        let phases = self.last_timings?;
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        Some(http::Timings {
            blocked: ms(phases.blocked),
            connecting: phases.connecting.map_or(0.0, ms),
            tls_handshaking: phases.tls_handshaking.map_or(0.0, ms),
            sending: ms(phases.sending),
            waiting: ms(phases.waiting),
            receiving: ms(phases.receiving),
            duration: ms(phases.duration()),
        })
    }

    fn cookies_for(&mut self, url: String) -> Result<Vec<(String, String)>, http::Error> {
        match &self.cookies {
            Some(jar) => crate::http::cookies_for(jar, &url).map_err(wit_error),
            None => Ok(Vec::new()),
        }
    }

    fn add_cookie(&mut self, url: String, set_cookie: String) -> Result<(), http::Error> {
        match &mut self.cookies {
            Some(jar) => crate::http::add_cookie(jar, &url, &set_cookie).map_err(wit_error),
            None => Err(http::Error::InvalidRequest("cookies are off for this run (--no-cookies)".to_owned())),
        }
    }

    fn clear_cookies(&mut self) {
        if let Some(jar) = &mut self.cookies {
            jar.clear();
        }
    }
}

/// The response as the plugin gets it: only the `parts` asked for.
fn to_wit(response: WholeResponse, parts: http::ResponseParts) -> http::Response {
    http::Response {
        status: response.status,
        headers: if parts.headers {
            response.headers.iter().map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec())).collect()
        } else {
            Vec::new()
        },
        body: if parts.body { Vec::from(response.body) } else { Vec::new() },
    }
}

fn wit_error(err: FetchError) -> http::Error {
    match err {
        FetchError::Invalid(why) => http::Error::InvalidRequest(why),
        FetchError::Denied(url) => http::Error::Denied(url),
        FetchError::Network(why) => http::Error::Network(why),
    }
}

/// A one-call request made ready in the store: what it needs while it waits, owned, so that it
/// waits off the store (off the fiber for a `doer` plugin, with no borrow of the store in an async
/// task).
struct Ready {
    client: std::sync::Arc<crate::http::WorkerHttp>,
    metrics: loadhost_engine::MetricsHandle,
    /// `--http-debug`, and when the request started (timed only for it: the host's HTTP metrics
    /// time the request themselves).
    debug: Option<(HttpDebug, std::time::Instant)>,
}

impl DoerCtx {
    /// Make a request ready, telling `--http-debug` of it.
    fn ready(&mut self, method: &str, url: &str, headers: &[(String, Vec<u8>)], body: &[u8]) -> Ready {
        let debug = self.capture.http_debug();
        if let Some(level) = debug {
            self.capture.http_note(&debug::request(level, method, url, headers, body));
        }
        Ready {
            client: self.http_client.clone(),
            metrics: self.metrics.clone(),
            debug: debug.map(|level| (level, std::time::Instant::now())),
        }
    }

    /// Tell `--http-debug` of the response to a request made `ready`.
    fn answered(&mut self, ready: &Ready, url: &str, fetched: Result<&WholeResponse, &FetchError>) {
        self.last_timings = fetched.ok().and_then(|response| response.phases);
        if let Some((level, started)) = ready.debug {
            self.capture.http_note(&debug::response(level, url, fetched, started.elapsed()));
        }
    }
}

impl Ready {
    /// `send` and `send-with`: the response whole, each hop judged by `expected`.
    async fn fetch(
        &self,
        connections: &mut Connections,
        request: http::Request,
        expected: ExpectedStatuses,
    ) -> (Result<WholeResponse, FetchError>, String) {
        let http::Request { method, url, headers, body, timeout_ms } = request;
        let timeout = timeout_ms.map(|ms| Duration::from_millis(u64::from(ms)));
        let hop = crate::http::Hop { expected: Some(&expected), ..Default::default() };
        let fetched = self
            .client
            .fetch(connections, &method, &url, headers, Bytes::from(body), timeout, &self.metrics, hop)
            .await;
        (fetched, url)
    }

    /// `send-opts` and `send-expecting`: redirects, `jar` (the worker's cookies, when asked and
    /// there is one), decoding.
    async fn fetch_following(
        &self,
        connections: &mut Connections,
        jar: Option<&mut cookie_store::CookieStore>,
        request: http::Request,
        options: &FetchOptions,
    ) -> Result<Followed, FetchError> {
        let http::Request { method, url, headers, body, timeout_ms } = request;
        let outgoing = Outgoing {
            method,
            url,
            headers,
            body: Bytes::from(body),
            timeout: timeout_ms.map(|ms| Duration::from_millis(u64::from(ms))),
        };
        self.client.fetch_following(connections, jar, outgoing, options, &self.metrics).await
    }
}

/// `send-opts`'s options as the client takes them, each hop judged by `expected`; and the parts
/// of the response asked for, and whether cookies were.
fn fetch_options(
    options: http::RequestOptions,
    expected: ExpectedStatuses,
) -> (FetchOptions, http::ResponseParts, bool) {
    let http::RequestOptions { parts, redirects, cookies, decompress, name } = options;
    (FetchOptions { redirects: redirects.unwrap_or(DEFAULT_REDIRECTS), decompress, name, expected }, parts, cookies)
}

/// What a followed request's response is to the plugin, told to `--http-debug` first.
fn response_info(
    ctx: &mut DoerCtx,
    ready: &Ready,
    asked: &str,
    fetched: Result<Followed, FetchError>,
    parts: http::ResponseParts,
) -> Result<http::ResponseInfo, http::Error> {
    let url = fetched.as_ref().map_or(asked, |f| f.final_url.as_str());
    ctx.answered(ready, url, fetched.as_ref().map(|f| &f.response));
    let followed = fetched.map_err(wit_error)?;
    Ok(http::ResponseInfo {
        response: to_wit(followed.response, parts),
        final_url: followed.final_url,
        redirects: followed.redirects,
    })
}

impl DoerCtx {
    /// One request; the response carries only `parts` (lowering each header is two allocations in
    /// the host and two in the plugin, so a plugin that reads none should not pay for them).
    async fn send_parts(
        &mut self,
        request: http::Request,
        parts: http::ResponseParts,
    ) -> Result<http::Response, http::Error> {
        let _entered = self.under_way.enter(format_args!("{} {}", request.method, request.url));
        let ready = self.ready(&request.method, &request.url, &request.headers, &request.body);
        let (expected, mut connections) = (self.expected_statuses(), self.connections.lend());
        // The connection is polled off the fiber (see `off_fiber`): its futures are kilobytes deep.
        let fetch = async move {
            let (fetched, url) = ready.fetch(&mut connections, request, expected).await;
            (fetched, url, connections, ready)
        };
        let (fetched, url, connections, ready) = self.side.run(fetch).await;
        self.connections = connections;
        self.answered(&ready, &url, fetched.as_ref());
        fetched.map(|response| to_wit(response, parts)).map_err(wit_error)
    }

    /// One request with `send-opts`'s options: redirects, the worker's cookies, decoding; each
    /// hop judged by `expected`.
    async fn send_options(
        &mut self,
        request: http::Request,
        options: http::RequestOptions,
        expected: ExpectedStatuses,
    ) -> Result<http::ResponseInfo, http::Error> {
        let _entered = self.under_way.enter(format_args!("{} {}", request.method, request.url));
        let ready = self.ready(&request.method, &request.url, &request.headers, &request.body);
        let (options, parts, cookies) = fetch_options(options, expected);
        let asked = request.url.clone();
        let mut connections = self.connections.lend();
        let mut jar = if cookies { self.cookies.take() } else { None };
        let fetch = async move {
            let fetched = ready.fetch_following(&mut connections, jar.as_mut(), request, &options).await;
            (fetched, connections, jar, ready)
        };
        let (fetched, connections, jar, ready) = self.side.run(fetch).await;
        self.connections = connections;
        if jar.is_some() {
            self.cookies = jar;
        }
        response_info(self, &ready, &asked, fetched, parts)
    }
}
