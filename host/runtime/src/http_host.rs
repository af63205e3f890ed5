//! The `loadhost:plugin/http` import: one call per request (see `wit/plugin.wit`).

use std::time::Duration;

use crate::bindings::loadhost::plugin::http;
use crate::ctx::DoerCtx;
use crate::http::FetchError;

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
        fetched: &Result<WholeResponse, FetchError>,
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
}

impl DoerCtx {
    /// One request; the response carries only `parts` (lowering each header is two allocations in
    /// the host and two in the plugin, so a plugin that reads none should not pay for them).
    async fn send_parts(
        &mut self,
        request: http::Request,
        parts: http::ResponseParts,
    ) -> Result<http::Response, http::Error> {
        let http::Request { method, url, headers, body, timeout_ms } = request;
        let timeout = timeout_ms.map(|ms| Duration::from_millis(u64::from(ms)));
        let client = self.http_client.clone();
        let debug = self.capture.http_debug();
        if let Some(level) = debug {
            self.capture.http_note(&debug::request(level, &method, &url, &headers, &body));
        }
        // Timed only for --http-debug: the host's HTTP metrics time the request themselves.
        let started = debug.map(|_| std::time::Instant::now());
        // wasmtime boxes a host call's future, copying all of it; boxed here, only a pointer is
        // copied there (the request's future is kilobytes: the largest memcpy per request).
        let fetch = Box::pin(client.fetch(&mut self.connections, &method, &url, headers, body, timeout, &self.metrics));
        let fetched = fetch.await;
        if let (Some(level), Some(started)) = (debug, started) {
            self.capture.http_note(&debug::response(level, &url, &fetched, started.elapsed()));
        }
        match fetched {
            Ok(response) => Ok(http::Response {
                status: response.status,
                headers: if parts.headers {
                    response
                        .headers
                        .iter()
                        .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
                        .collect()
                } else {
                    Vec::new()
                },
                body: if parts.body { Vec::from(response.body) } else { Vec::new() },
            }),
            Err(FetchError::Invalid(why)) => Err(http::Error::InvalidRequest(why)),
            Err(FetchError::Denied(url)) => Err(http::Error::Denied(url)),
            Err(FetchError::Network(why)) => Err(http::Error::Network(why)),
        }
    }
}
