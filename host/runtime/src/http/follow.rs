//! The one-call path's request options (`send-opts`): following redirects, the worker's cookie
//! jar and decoding compressed bodies, as browsers, k6 and reqwest do. Each hop is one request of
//! its own: judged by the allow-list, sent on the worker's connections and counted in `http_reqs`.

use std::time::Duration;

use bytes::Bytes;
use cookie_store::CookieStore;
use loadhost_engine::MetricsHandle;

use super::{FetchError, WholeResponse, WorkerHttp};

/// k6's `maxRedirects` default, and browsers' order of magnitude.
pub(crate) const DEFAULT_REDIRECTS: u32 = 10;

/// A request as the plugin gave it.
pub(crate) struct Outgoing {
    pub(crate) method: String,
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, Vec<u8>)>,
    pub(crate) body: Bytes,
    pub(crate) timeout: Option<Duration>,
}

/// What the host does beyond sending the request.
#[derive(Debug, Clone)]
pub(crate) struct FetchOptions {
    /// The most redirects followed; 0: none.
    pub(crate) redirects: u32,
    /// Ask for and decode compressed bodies.
    pub(crate) decompress: bool,
    /// The endpoint's name for per-endpoint metrics.
    pub(crate) name: Option<String>,
    /// The statuses every hop expects (the request's, or the instance's).
    pub(crate) expected: loadhost_metrics::ExpectedStatuses,
}

/// The last response, and how it was reached.
pub(crate) struct Followed {
    pub(crate) response: WholeResponse,
    pub(crate) final_url: String,
    pub(crate) redirects: u32,
}

/// Headers that must not follow a request to another origin: they are credentials for the first.
const CREDENTIALS: [&str; 4] = ["authorization", "proxy-authorization", "cookie", "host"];

/// Headers that described the body a redirect to GET drops.
const BODY_HEADERS: [&str; 4] = ["content-type", "content-length", "content-encoding", "transfer-encoding"];

impl WorkerHttp {
    /// Send `request` with `options`, following redirects up to the limit, through `jar` (the
    /// worker's cookies, when the request and the run want them).
    pub(crate) async fn fetch_following(
        &self,
        conns: &mut super::Connections,
        mut jar: Option<&mut CookieStore>,
        request: Outgoing,
        options: &FetchOptions,
        metrics: &MetricsHandle,
    ) -> Result<Followed, FetchError> {
        let Outgoing { mut method, mut url, mut headers, mut body, timeout } = request;
        let mut hops = 0;
        loop {
            // The URL is parsed only when it is needed (cookies to send or keep, a redirect): a
            // plain request to a site that sets no cookie costs no more than `send-with`.
            let has_cookies = jar.as_deref().is_some_and(|jar| jar.iter_any().next().is_some());
            let mut parsed = if has_cookies { url::Url::parse(&url).ok() } else { None };
            let mut sent = headers.clone();
            if let (Some(jar), Some(parsed)) = (jar.as_deref(), &parsed) {
                add_cookies(jar, parsed, &mut sent);
            }
            // Not boxed again: the caller boxes this whole future once.
            let hop = super::Hop {
                decompress: options.decompress,
                name: options.name.as_deref(),
                expected: Some(&options.expected),
            };
            let response = self.fetch(conns, &method, &url, sent, body.clone(), timeout, metrics, hop).await?;
            let sets_cookies = jar.is_some() && response.headers.contains_key(http::header::SET_COOKIE);
            if parsed.is_none() && (sets_cookies || is_redirect(response.status)) {
                parsed = url::Url::parse(&url).ok();
            }
            if let (Some(jar), Some(parsed)) = (jar.as_deref_mut(), &parsed) {
                keep_cookies(jar, parsed, &response.headers);
            }
            let next = match (options.redirects, parsed.as_ref().and_then(|from| location(&response, from))) {
                (0, _) | (_, None) => None,
                (_, Some(next)) => Some(next),
            };
            let Some(next) = next else {
                return Ok(Followed { response, final_url: url, redirects: hops });
            };
            if hops == options.redirects {
                return Err(FetchError::Network(format!(
                    "{url}: stopped after {hops} redirects (the limit; set redirects to raise it)"
                )));
            }
            hops += 1;
            if becomes_get(response.status, &method) {
                method = "GET".to_owned();
                body = Bytes::new();
                headers.retain(|(name, _)| !BODY_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h)));
            }
            if parsed.as_ref().is_some_and(|from| from.origin() != next.origin()) {
                headers.retain(|(name, _)| !CREDENTIALS.iter().any(|h| name.eq_ignore_ascii_case(h)));
            }
            url = next.into();
        }
    }
}

/// Where a redirect response points, resolved against the URL that answered it.
fn location(response: &WholeResponse, from: &url::Url) -> Option<url::Url> {
    if !is_redirect(response.status) {
        return None;
    }
    let location = response.headers.get(http::header::LOCATION)?.to_str().ok()?;
    from.join(location.trim()).ok().filter(|next| matches!(next.scheme(), "http" | "https"))
}

fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// Browsers' rule: a 303 turns anything but HEAD into a GET, and a 301 or 302 turns a POST into
/// one; 307 and 308 keep the method and the body.
fn becomes_get(status: u16, method: &str) -> bool {
    match status {
        303 => !method.eq_ignore_ascii_case("HEAD") && !method.eq_ignore_ascii_case("GET"),
        301 | 302 => method.eq_ignore_ascii_case("POST"),
        _ => false,
    }
}

/// Add the jar's cookies for `url` to the request's own `cookie` header (or as a new one).
fn add_cookies(jar: &CookieStore, url: &url::Url, headers: &mut Vec<(String, Vec<u8>)>) {
    let mut values = String::new();
    for (name, value) in jar.get_request_values(url) {
        if !values.is_empty() {
            values.push_str("; ");
        }
        values.push_str(name);
        values.push('=');
        values.push_str(value);
    }
    if values.is_empty() {
        return;
    }
    match headers.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case("cookie")) {
        Some((_, own)) => {
            own.extend_from_slice(b"; ");
            own.extend_from_slice(values.as_bytes());
        }
        None => headers.push(("cookie".to_owned(), values.into_bytes())),
    }
}

/// Keep the response's `Set-Cookie`s (the jar applies RFC 6265: a cookie for another domain, or a
/// malformed one, is ignored).
fn keep_cookies(jar: &mut CookieStore, url: &url::Url, headers: &http::HeaderMap) {
    for value in headers.get_all(http::header::SET_COOKIE) {
        if let Ok(text) = value.to_str() {
            let _ = jar.parse(text, url);
        }
    }
}

/// The jar's cookies a request to `url` would carry.
pub(crate) fn cookies_for(jar: &CookieStore, url: &str) -> Result<Vec<(String, String)>, FetchError> {
    let url = parse(url)?;
    Ok(jar.get_request_values(&url).map(|(n, v)| (n.to_owned(), v.to_owned())).collect())
}

/// Store `set_cookie` as a response from `url` would.
pub(crate) fn add_cookie(jar: &mut CookieStore, url: &str, set_cookie: &str) -> Result<(), FetchError> {
    let parsed = parse(url)?;
    jar.parse(set_cookie, &parsed).map(|_| ()).map_err(|err| FetchError::Invalid(format!("{set_cookie:?}: {err}")))
}

fn parse(url: &str) -> Result<url::Url, FetchError> {
    url::Url::parse(url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| FetchError::Invalid(format!("{url:?}: expected an http:// or https:// URL")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn methods_change_as_browsers_change_them() {
        assert!(becomes_get(303, "POST") && becomes_get(303, "PUT") && !becomes_get(303, "HEAD"));
        assert!(becomes_get(302, "POST") && becomes_get(301, "post") && !becomes_get(302, "PUT"));
        assert!(!becomes_get(307, "POST") && !becomes_get(308, "POST"));
    }

    #[test]
    fn the_jar_follows_rfc_6265() {
        let mut jar = CookieStore::new();
        add_cookie(&mut jar, "http://127.0.0.1:8080/login", "sid=1; Path=/").ok().unwrap();
        add_cookie(&mut jar, "http://127.0.0.1:8080/a/b", "deep=2").ok().unwrap();
        let at = |url: &str| cookies_for(&jar, url).ok().unwrap();
        assert_eq!(at("http://127.0.0.1:8080/"), vec![("sid".to_owned(), "1".to_owned())]);
        assert_eq!(at("http://127.0.0.1:8080/a/c").len(), 2, "deep's default path is /a");
        assert!(at("http://127.0.0.2:8080/").is_empty(), "another host gets none");
        let mut headers = vec![("Cookie".to_owned(), b"own=0".to_vec())];
        add_cookies(&jar, &url::Url::parse("http://127.0.0.1:8080/").unwrap(), &mut headers);
        assert_eq!(headers[0].1, b"own=0; sid=1");
        assert!(add_cookie(&mut jar, "ftp://x/", "a=b").is_err());
    }
}
