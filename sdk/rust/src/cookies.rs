//! The worker's cookie jar: the host keeps one per worker (plugin instance), sends its cookies with
//! every request of [`crate::http`] and keeps every `Set-Cookie` (RFC 6265), unless the request says
//! [`no_cookies`](crate::http::Request::no_cookies) or the run `--no-cookies`. A replaced instance
//! starts with an empty jar.
//!
//! The jar is per worker, so it belongs to sync plugins: an async plugin's instance serves many
//! workers, and its requests ([`send_async`](crate::http::Request::send_async)) have no jar; they
//! neither send these cookies nor keep theirs. Send a `cookie` header there instead.
//!
//! ```ignore
//! use loadhost_sdk::cookies;
//!
//! cookies::set("http://127.0.0.1:8080/", "session=abc; Path=/")?;
//! assert_eq!(cookies::get("http://127.0.0.1:8080/account")?, vec![("session".into(), "abc".into())]);
//! cookies::clear();
//! ```

use crate::bindings::loadhost::plugin::http as host;
use crate::http::{HttpError, from_host};

/// The name and value of each cookie a request to `url` would carry (none under `--no-cookies`).
pub fn get(url: &str) -> Result<Vec<(String, String)>, HttpError> {
    host::cookies_for(url).map_err(from_host)
}

/// Store a cookie as a response from `url` with this `Set-Cookie` value would
/// (`name=value; Path=/; Max-Age=60`…); fails under `--no-cookies`.
pub fn set(url: &str, set_cookie: &str) -> Result<(), HttpError> {
    host::add_cookie(url, set_cookie).map_err(from_host)
}

/// Forget every cookie of the worker's jar.
pub fn clear() {
    host::clear_cookies();
}
