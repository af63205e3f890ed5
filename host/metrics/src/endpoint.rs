//! Per-endpoint HTTP figures: every request carries an [`Endpoint`], a method and a name (k6's
//! `name` tag), so a journey that mixes a fast and a slow URL is not one blended distribution.
//!
//! The default name is the method and the URL's path with ids folded ([`endpoint_name`]):
//! `GET https://h/users/123?x=1` is `GET /users/{id}`. Endpoints are keyed by (method, name): a
//! plugin's explicit name (`login`) used with two methods is two endpoints, and thresholds select
//! them with `{name:…}`, `{method:…}` or both.
//!
//! Recording must not allocate per request (a load tool competes with wrk), so names are interned
//! per thread ([`Endpoint::default_for`], [`Endpoint::named`]): after the first request to a path,
//! a request costs one hash lookup and one reference-count increment.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Serialize};

use crate::histogram::LatencyHistogram;

/// The name of the endpoint that collects requests past the cardinality cap
/// ([`crate::cardinality::MAX_SERIES`] endpoints).
pub const OVERFLOW_NAME: &str = "{overflow}";

/// The method of the overflow endpoint (its requests mix methods).
pub const OVERFLOW_METHOD: &str = "*";

/// Interned names kept per thread before the cache starts over: a plugin whose paths carry ids
/// this module does not recognise (slugs) would otherwise grow it with every request.
const MAX_CACHED: usize = 4096;

/// The endpoint a request counts under: its method and its name. Cloning is a reference-count
/// increment.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint(Arc<EndpointId>);

/// Ordered by name first, so tables list an endpoint's methods together.
#[derive(Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct EndpointId {
    name: Box<str>,
    method: Box<str>,
}

impl Endpoint {
    /// An endpoint from its parts (allocates; the hot path uses [`Endpoint::named`]).
    pub fn new(method: &str, name: &str) -> Self {
        Self(Arc::new(EndpointId { name: name.into(), method: method.into() }))
    }

    /// The endpoint past the cardinality cap (shared: no allocation).
    pub fn overflow() -> Self {
        static OVERFLOW: LazyLock<Endpoint> = LazyLock::new(|| Endpoint::new(OVERFLOW_METHOD, OVERFLOW_NAME));
        OVERFLOW.clone()
    }

    /// The default endpoint of a request: `method` and [`endpoint_name`], interned per thread.
    /// `tidy` makes the name fit for outputs (the runtime redacts secrets) once per new endpoint.
    pub fn default_for(method: &str, url: &str, tidy: impl FnOnce(String) -> String) -> Self {
        intern(Kind::Url, method, url_path(url), || Self::new(method, &tidy(endpoint_name(method, url))))
    }

    /// A plugin-named endpoint, interned per thread; `tidy` as for [`Endpoint::default_for`].
    pub fn named(method: &str, name: &str, tidy: impl FnOnce(String) -> String) -> Self {
        intern(Kind::Named, method, name, || Self::new(method, &tidy(name.to_owned())))
    }

    /// The request method (`GET`), or `*` for the overflow endpoint.
    pub fn method(&self) -> &str {
        &self.0.method
    }

    /// The name (`GET /users/{id}` by default, or the plugin's).
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// Whether this is the endpoint past the cap.
    pub fn is_overflow(&self) -> bool {
        self.name() == OVERFLOW_NAME && self.method() == OVERFLOW_METHOD
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A default name already starts with its method.
        let name = self.name();
        if name.strip_prefix(self.method()).is_some_and(|rest| rest.starts_with(' ')) || self.is_overflow() {
            f.write_str(name)
        } else {
            write!(f, "{} {name}", self.method())
        }
    }
}

/// Which cache a lookup uses: a URL's path (to be folded) or a plugin's name (kept as is).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Url,
    Named,
}

/// Per thread: (kind, method) → raw path or name → endpoint. Methods are few, so the outer level
/// is a short list; the inner map is looked up by `&str`, with no key built per request.
type Cache = Vec<((Kind, Box<str>), HashMap<Box<str>, Endpoint, BuildHasherDefault<FxHasher>>)>;

/// The rustc hasher (multiply and rotate a word at a time): a path is a short trusted-enough key
/// here (a plugin flooding the cache only makes it start over), and SipHash took half the lookup.
#[derive(Default)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(SEED);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

thread_local! {
    static CACHE: RefCell<(Cache, usize)> = const { RefCell::new((Vec::new(), 0)) };
}

fn intern(kind: Kind, method: &str, key: &str, make: impl FnOnce() -> Endpoint) -> Endpoint {
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let (lists, size) = &mut *cache;
        let at = match lists.iter().position(|((k, m), _)| *k == kind && &**m == method) {
            Some(at) => at,
            None => {
                lists.push(((kind, method.into()), HashMap::default()));
                lists.len() - 1
            }
        };
        if let Some(endpoint) = lists[at].1.get(key) {
            return endpoint.clone();
        }
        if *size >= MAX_CACHED {
            lists.iter_mut().for_each(|(_, map)| map.clear());
            *size = 0;
        }
        let endpoint = make();
        lists[at].1.insert(key.into(), endpoint.clone());
        *size += 1;
        endpoint
    })
}

/// The default endpoint name, k6-style: `method`, a space, and the URL's path with ids folded to
/// `{id}` (numbers, UUIDs, hex ids); the scheme, host, query and fragment are dropped.
pub fn endpoint_name(method: &str, url: &str) -> String {
    let path = url_path(url);
    let mut out = String::with_capacity(method.len() + 1 + path.len());
    out.push_str(method);
    out.push(' ');
    if !path.starts_with('/') {
        out.push('/');
    }
    for (i, segment) in path.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(if is_id(segment) { "{id}" } else { segment });
    }
    out
}

/// The path of `url` (absolute or a bare path), without query or fragment.
fn url_path(url: &str) -> &str {
    let rest = match url.find("://") {
        Some(at) => {
            let after = &url[at + 3..];
            match after.find(['/', '?', '#']) {
                Some(end) => &after[end..],
                None => "",
            }
        }
        None => url,
    };
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    &rest[..end]
}

/// Whether a path segment is an id: a number (`123`, `-4`, `12.5`), a UUID, a `0x…` hex number
/// or 8+ hex digits with both a digit and a letter. Words with digits (`v2`, `h3`) stay.
fn is_id(segment: &str) -> bool {
    let b = segment.as_bytes();
    if b.is_empty() {
        return false;
    }
    let digits = b.strip_prefix(b"-").unwrap_or(b);
    let number = !digits.is_empty()
        && digits[0].is_ascii_digit()
        && digits.iter().all(|c| c.is_ascii_digit() || *c == b'.')
        && digits.iter().filter(|c| **c == b'.').count() <= 1
        && digits.last().is_some_and(u8::is_ascii_digit);
    let uuid = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    let prefixed_hex =
        b.len() > 2 && (b.starts_with(b"0x") || b.starts_with(b"0X")) && b[2..].iter().all(u8::is_ascii_hexdigit);
    let hex = b.len() >= 8
        && b.iter().all(u8::is_ascii_hexdigit)
        && b.iter().any(u8::is_ascii_digit)
        && b.iter().any(u8::is_ascii_alphabetic);
    number || uuid || prefixed_hex || hex
}

/// One endpoint's figures.
#[derive(Debug, Clone, Default)]
pub struct EndpointStats {
    /// Requests that got a response or failed trying.
    pub requests: u64,
    /// Of those, failed ones (k6's rule, as `http_req_failed`).
    pub failed: u64,
    /// Request durations.
    pub duration: LatencyHistogram,
    /// Where its requests' time went.
    pub phases: crate::phases::PhaseHistograms,
}

impl EndpointStats {
    /// Fold `other` into this.
    pub fn merge(&mut self, other: &EndpointStats) {
        self.add_to(other, &mut crate::count::Tally::default());
    }

    pub(crate) fn add_to(&mut self, other: &EndpointStats, t: &mut crate::count::Tally) {
        t.add(&mut self.requests, other.requests, "an endpoint's requests");
        t.add(&mut self.failed, other.failed, "an endpoint's failed requests");
        self.duration.add_to(&other.duration, t, "an endpoint's duration histogram's count");
        self.phases.add_to(&other.phases, t);
    }
}

/// Endpoints by (name, method), in that order.
pub type EndpointMap = BTreeMap<Endpoint, EndpointStats>;

/// A row of the serialized endpoint list: results files hold `[{method, name, requests, failed,
/// duration, phases}]`, sorted by name then method (`phases` absent from files written before
/// phases existed, and when none was recorded).
#[derive(Serialize, Deserialize)]
struct Row<H, P> {
    method: String,
    name: String,
    requests: u64,
    failed: u64,
    duration: H,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    phases: Option<P>,
}

/// Serde for [`EndpointMap`] as a list of rows (a JSON map cannot have a pair as its key).
pub(crate) mod rows {
    use super::*;

    /// Serialize as a list of rows.
    pub(crate) fn serialize<S: serde::Serializer>(map: &EndpointMap, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(map.iter().map(|(e, st)| Row {
            method: e.method().to_owned(),
            name: e.name().to_owned(),
            requests: st.requests,
            failed: st.failed,
            duration: &st.duration,
            phases: (!st.phases.is_empty()).then_some(&st.phases),
        }))
    }

    /// Read a list of rows (the same endpoint twice adds up).
    pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<EndpointMap, D::Error> {
        let rows = Vec::<Row<LatencyHistogram, crate::phases::PhaseHistograms>>::deserialize(d)?;
        let (mut map, mut t) = (EndpointMap::new(), crate::count::Tally::default());
        for row in rows {
            let phases = row.phases.unwrap_or_default();
            let stats = EndpointStats { requests: row.requests, failed: row.failed, duration: row.duration, phases };
            map.entry(Endpoint::new(&row.method, &row.name)).or_default().add_to(&stats, &mut t);
        }
        t.result().map_err(serde::de::Error::custom)?;
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_fold_and_words_stay() {
        let cases = [
            ("GET", "http://h:8080/users/123?x=1", "GET /users/{id}"),
            ("GET", "https://h/users/123e4567-e89b-12d3-a456-426614174000/orders", "GET /users/{id}/orders"),
            ("DELETE", "/items/deadbeef42/0x1f", "DELETE /items/{id}/{id}"),
            ("GET", "http://h/v2/h3/price/12.5#frag", "GET /v2/h3/price/{id}"),
            ("GET", "http://h", "GET /"),
            ("GET", "http://h?q=1", "GET /"),
            ("GET", "http://h/delay?ms=20", "GET /delay"),
            ("POST", "/login/", "POST /login/"),
            ("GET", "http://h/beef/cafe/1.2.3", "GET /beef/cafe/1.2.3"),
        ];
        for (method, url, want) in cases {
            assert_eq!(endpoint_name(method, url), want, "{url}");
        }
    }

    #[test]
    fn interned_endpoints_are_shared_and_display_once_the_method() {
        let a = Endpoint::default_for("GET", "http://h/users/1", |n| n);
        let b = Endpoint::default_for("GET", "http://h/users/2?x", |n| n);
        assert_eq!(a.name(), "GET /users/{id}");
        assert_eq!(a, b);
        let same = Endpoint::default_for("GET", "http://h/users/1", |n| n);
        assert!(Arc::ptr_eq(&a.0, &same.0), "a known path costs no allocation");
        assert_eq!(a.to_string(), "GET /users/{id}");
        assert_eq!(Endpoint::named("POST", "login", |n| n).to_string(), "POST login");
        assert_ne!(Endpoint::named("POST", "login", |n| n), Endpoint::named("GET", "login", |n| n));
        assert_eq!(Endpoint::overflow().to_string(), OVERFLOW_NAME);
    }

    #[test]
    fn the_cache_starts_over_when_full() {
        for i in 0..MAX_CACHED + 10 {
            let e = Endpoint::default_for("GET", &format!("/slug-{i}"), |n| n);
            assert_eq!(e.name(), format!("GET /slug-{i}"));
        }
        CACHE.with(|c| assert!(c.borrow().1 <= MAX_CACHED));
    }
}
