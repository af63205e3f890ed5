//! Every read from a registry, through reqwest with a cap on each body (see [`crate::limits`]):
//! manifests, indexes, blobs, tag lists, token answers and error bodies. oci-client reads each of
//! those whole (`bytes()`), error bodies included, so it is used for pushes only.
//!
//! Authentication is the registry's own dance: a basic user and password are sent as they are; a
//! `401` with a `WWW-Authenticate: Bearer realm=…,service=…` challenge is answered by asking the
//! realm for a token of the scope `repository:REPO:pull` (or `:delete`), with the basic
//! credentials when there are some, and trying once more. reqwest drops the `Authorization`
//! header on a redirect to another host (a blob served from object storage).

use std::collections::HashMap;
use std::time::Duration;

use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use reqwest::header::{ACCEPT, WWW_AUTHENTICATE};
use reqwest::{Method, StatusCode};

use crate::auth::Credentials;
use crate::client::Registry;
use crate::error::RegistryError;
use crate::limits::{TOKEN_CAP, error_body, read_capped, size};
use crate::reference::PluginRef;
use crate::store::sha256_digest;

/// How long connecting may take, and the longest pause between two reads of one answer; the
/// operation's deadline bounds the whole.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// What a request is for: the token scope asked for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Action {
    Pull,
    Delete,
}

impl Action {
    fn scope(self) -> &'static str {
        match self {
            Action::Pull => "pull",
            Action::Delete => "delete",
        }
    }
}

/// One registry repository, spoken to for one operation.
pub(crate) struct Transport {
    reference: String,
    repository: String,
    /// `http(s)://HOST[:PORT]`.
    base: String,
    creds: Credentials,
    client: reqwest::Client,
    /// Tokens the registry's token service gave, by action.
    tokens: HashMap<Action, String>,
}

impl Registry {
    /// A transport to `r`'s repository, with its credentials.
    pub(crate) fn transport(&self, r: &PluginRef) -> Result<Transport, RegistryError> {
        crate::client::check_host(r)?;
        let creds = self.credentials_for(r)?;
        let scheme = if self.plain_http(r) { "http" } else { "https" };
        let base = format!("{scheme}://{}", r.oci().resolve_registry());
        let mut builder = reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT).read_timeout(READ_TIMEOUT);
        for pem in self.root_certificates()? {
            let cert = reqwest::Certificate::from_pem(&pem).map_err(|err| RegistryError::Input(err.to_string()))?;
            builder = builder.add_root_certificate(cert);
        }
        let client = builder.build().map_err(|err| crate::client::unreachable_err(r, &err))?;
        Ok(Transport {
            reference: r.to_string(),
            repository: r.repository().to_owned(),
            base,
            creds,
            client,
            tokens: HashMap::new(),
        })
    }
}

impl Transport {
    /// The reference the operation is about, for its errors.
    pub fn reference(&self) -> &str {
        &self.reference
    }

    /// `/v2/REPO/KIND/NAME` on the registry.
    fn url(&self, kind: &str, name: &str) -> String {
        format!("{}/v2/{}/{kind}/{name}", self.base, self.repository)
    }

    /// The manifest (or index) `name` (a tag or a digest), at most `cap` bytes; a digest is checked.
    pub async fn manifest(
        &mut self,
        name: &str,
        accept: &[&str],
        cap: u64,
        what: &str,
    ) -> Result<Vec<u8>, RegistryError> {
        let response = self.send(Method::GET, &self.url("manifests", name), &accept.join(", "), Action::Pull).await?;
        let bytes = self.body(response, cap, what).await?;
        if name.starts_with("sha256:") && sha256_digest(&bytes) != name {
            return Err(RegistryError::DigestMismatch {
                reference: self.reference.clone(),
                expected: name.to_owned(),
                actual: sha256_digest(&bytes),
            });
        }
        Ok(bytes)
    }

    /// The digest the tag (or digest) `name` names, of whatever kind of manifest: the registry's
    /// `Docker-Content-Digest` to a HEAD, else the digest of the manifest itself.
    pub async fn manifest_digest(&mut self, name: &str, accept: &[&str], cap: u64) -> Result<String, RegistryError> {
        let url = self.url("manifests", name);
        let response = self.send(Method::HEAD, &url, &accept.join(", "), Action::Pull).await?;
        if response.status().is_success() {
            let header = response.headers().get("docker-content-digest").and_then(|v| v.to_str().ok());
            if let Some(digest) = header.filter(|d| d.starts_with("sha256:")) {
                return Ok(digest.to_owned());
            }
        } else {
            return Err(self.status_error(response, &format!("the manifest {name}")).await);
        }
        let bytes = self.manifest(name, accept, cap, &format!("the manifest {name}")).await?;
        Ok(sha256_digest(&bytes))
    }

    /// The blob `d` names, at most its descriptor's size, which must be within `cap` (`limit`
    /// says what allows that much); checked against its digest.
    pub async fn blob(&mut self, d: &OciDescriptor, cap: u64, limit: &str) -> Result<Vec<u8>, RegistryError> {
        let what = format!("blob {} ({})", d.digest, d.media_type);
        let reference = self.reference.clone();
        let too_large = |why: String| RegistryError::TooLarge { reference: reference.clone(), what: what.clone(), why };
        let Ok(declared) = u64::try_from(d.size) else {
            return Err(too_large(format!("its descriptor gives a negative size ({})", d.size)));
        };
        if declared > cap {
            return Err(too_large(format!(
                "its descriptor says {declared} bytes, more than {limit} ({}); nothing was read",
                size(cap)
            )));
        }
        let response = self.send(Method::GET, &self.url("blobs", &d.digest), "*/*", Action::Pull).await?;
        if !response.status().is_success() {
            return Err(self.status_error(response, &what).await);
        }
        // The descriptor's size is the cap: a registry that sends more is refused at the first
        // byte past it, whatever its Content-Length said.
        let bytes = read_capped(response, declared).await.map_err(|err| self.unreachable(&err))?.map_err(|over| {
            too_large(format!("the registry sent more than its descriptor's {declared} bytes: {over}"))
        })?;
        let actual = sha256_digest(&bytes);
        if actual != d.digest {
            return Err(RegistryError::DigestMismatch {
                reference: self.reference.clone(),
                expected: d.digest.clone(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// `GET /v2/REPO/PATH?QUERY` (a referrers or tags list), the answer as it is: its status is
    /// the caller's to read (a referrers API that answers 404 is not there).
    pub async fn get(
        &mut self,
        path: &str,
        query: &[(&str, &str)],
        accept: &str,
    ) -> Result<reqwest::Response, RegistryError> {
        let mut url = reqwest::Url::parse(&format!("{}/v2/{}/{path}", self.base, self.repository))
            .map_err(|err| RegistryError::Input(format!("{}: {err}", self.reference)))?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        self.send(Method::GET, url.as_str(), accept, Action::Pull).await
    }

    /// `DELETE /v2/REPO/manifests/DIGEST`, with a token of the `delete` scope when the registry
    /// asks for one.
    pub async fn delete_manifest(&mut self, digest: &str) -> Result<reqwest::Response, RegistryError> {
        self.send(Method::DELETE, &self.url("manifests", digest), "*/*", Action::Delete).await
    }

    /// A 2xx answer's body, at most `cap` bytes; anything else is the error it says.
    pub async fn body(&self, response: reqwest::Response, cap: u64, what: &str) -> Result<Vec<u8>, RegistryError> {
        if !response.status().is_success() {
            return Err(self.status_error(response, what).await);
        }
        read_capped(response, cap).await.map_err(|err| self.unreachable(&err))?.map_err(|over| {
            RegistryError::TooLarge { reference: self.reference.clone(), what: what.to_owned(), why: over.to_string() }
        })
    }

    /// A non-2xx answer as one line: its status and the start of its body ([`ERROR_BODY_CAP`]).
    ///
    /// [`ERROR_BODY_CAP`]: crate::limits::ERROR_BODY_CAP
    pub async fn status_error(&self, response: reqwest::Response, what: &str) -> RegistryError {
        let status = response.status();
        let body = error_body(response).await;
        let reference = self.reference.clone();
        let why = format!("HTTP {status} for {what}: {body}");
        let codes: Vec<String> = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["errors"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|e| e["code"].as_str().map(str::to_owned))
            .collect();
        let has = |names: &[&str]| codes.iter().any(|c| names.contains(&c.as_str()));
        match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => self.denied(why),
            _ if has(&["UNAUTHORIZED", "DENIED"]) => self.denied(why),
            StatusCode::NOT_FOUND => RegistryError::NotFound { reference, why },
            _ if has(&["MANIFEST_UNKNOWN", "NAME_UNKNOWN", "BLOB_UNKNOWN"]) => {
                RegistryError::NotFound { reference, why }
            }
            _ => RegistryError::Unreachable { reference, why },
        }
    }

    fn denied(&self, why: String) -> RegistryError {
        RegistryError::Denied { reference: self.reference.clone(), why, source_tried: self.creds.source.to_string() }
    }

    fn unreachable(&self, err: &reqwest::Error) -> RegistryError {
        RegistryError::Unreachable { reference: self.reference.clone(), why: crate::client::with_sources(err) }
    }

    /// Send a request with the credentials in hand; a bearer challenge is answered once.
    async fn send(
        &mut self,
        method: Method,
        url: &str,
        accept: &str,
        action: Action,
    ) -> Result<reqwest::Response, RegistryError> {
        let response = self.attempt(method.clone(), url, accept, action).await?;
        if response.status() != StatusCode::UNAUTHORIZED || self.tokens.contains_key(&action) {
            return Ok(response);
        }
        let challenge = response.headers().get(WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).and_then(Bearer::parse);
        let Some(challenge) = challenge else { return Ok(response) };
        let token = self.token(&challenge, action).await?;
        self.tokens.insert(action, token);
        self.attempt(method, url, accept, action).await
    }

    async fn attempt(
        &self,
        method: Method,
        url: &str,
        accept: &str,
        action: Action,
    ) -> Result<reqwest::Response, RegistryError> {
        let request = self.client.request(method, url).header(ACCEPT, accept);
        let request = match (self.tokens.get(&action), &self.creds.auth) {
            (Some(token), _) | (None, RegistryAuth::Bearer(token)) => request.bearer_auth(token),
            (None, RegistryAuth::Basic(user, password)) => request.basic_auth(user, Some(password)),
            (None, RegistryAuth::Anonymous) => request,
        };
        request.send().await.map_err(|err| self.unreachable(&err))
    }

    /// A token of `action`'s scope in this repository, asked with the credentials in hand.
    async fn token(&self, challenge: &Bearer, action: Action) -> Result<String, RegistryError> {
        let scope = format!("repository:{}:{}", self.repository, action.scope());
        let mut query = vec![("scope", scope.as_str())];
        if let Some(service) = &challenge.service {
            query.push(("service", service));
        }
        let request = self.client.get(&challenge.realm).query(&query);
        let request = match &self.creds.auth {
            RegistryAuth::Basic(user, password) => request.basic_auth(user, Some(password)),
            _ => request,
        };
        let response = request.send().await.map_err(|err| self.unreachable(&err))?;
        let status = response.status();
        if !status.is_success() {
            let body = error_body(response).await;
            return Err(self.denied(format!("the token service answered HTTP {status} for scope {scope}: {body}")));
        }
        let bytes = read_capped(response, TOKEN_CAP).await.map_err(|err| self.unreachable(&err))?.map_err(|over| {
            RegistryError::TooLarge {
                reference: self.reference.clone(),
                what: "the token service's answer".to_owned(),
                why: over.to_string(),
            }
        })?;
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        body["token"]
            .as_str()
            .or_else(|| body["access_token"].as_str())
            .map(str::to_owned)
            .ok_or_else(|| self.denied(format!("the token service gave no token for scope {scope}")))
    }
}

/// A `WWW-Authenticate: Bearer realm="…",service="…"` challenge.
#[derive(Debug, PartialEq, Eq)]
struct Bearer {
    realm: String,
    service: Option<String>,
}

impl Bearer {
    fn parse(header: &str) -> Option<Self> {
        let (scheme, params) = header.trim().split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let mut realm = None;
        let mut service = None;
        for param in split_params(params) {
            let Some((key, value)) = param.split_once('=') else { continue };
            let value = value.trim().trim_matches('"').to_owned();
            match key.trim().to_ascii_lowercase().as_str() {
                "realm" => realm = Some(value),
                "service" => service = Some(value),
                _ => {}
            }
        }
        Some(Self { realm: realm?, service })
    }
}

/// The comma-separated parameters of a challenge, commas inside quotes kept.
fn split_params(params: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in params.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&params[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&params[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead as _, Write as _};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use crate::client::RegistryOptions;

    /// A registry on 127.0.0.1 that answers every request with `status` and a body of at most
    /// `limit` bytes written in 64 KiB pieces, `pause` between them; the bytes it got written.
    fn hostile(status: &'static str, limit: u64, pause: Duration) -> (String, Arc<AtomicU64>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let sent = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&sent);
        std::thread::spawn(move || {
            for stream in listener.incoming().take(8).flatten() {
                let counter = Arc::clone(&counter);
                std::thread::spawn(move || {
                    let mut reader = std::io::BufReader::new(stream.try_clone().expect("clone"));
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                        line.clear();
                    }
                    let mut stream = stream;
                    let head =
                        format!("HTTP/1.1 {status}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n");
                    let piece = vec![b' '; 64 << 10];
                    let mut ok = stream.write_all(head.as_bytes()).is_ok();
                    while ok && counter.load(Ordering::Relaxed) < limit {
                        ok = stream.write_all(&piece).is_ok();
                        counter.fetch_add(piece.len() as u64, Ordering::Relaxed);
                        std::thread::sleep(pause);
                    }
                });
            }
        });
        (addr, sent)
    }

    fn registry(dir: &std::path::Path, deadline: Option<Duration>) -> Registry {
        let options =
            RegistryOptions { credentials: Some(Credentials::anonymous()), deadline, ..RegistryOptions::default() };
        Registry::new(dir, options).expect("a registry client")
    }

    #[test]
    fn an_endless_manifest_is_read_no_further_than_its_cap() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (addr, sent) = hostile("200 OK", 256 << 20, Duration::ZERO);
        let r: PluginRef = format!("{addr}/endless:1").parse().expect("a reference");
        let err = registry(dir.path(), None).pin(&r).expect_err("refused");
        assert!(matches!(err, RegistryError::TooLarge { .. }), "{err}");
        assert!(err.to_string().contains("the manifest is refused") && err.to_string().contains("4 MiB"), "{err}");
        // What the server got written past the cap sits in socket buffers: nowhere near 256 MiB.
        std::thread::sleep(Duration::from_millis(200));
        assert!(sent.load(Ordering::Relaxed) < 64 << 20, "read on: {} bytes", sent.load(Ordering::Relaxed));
    }

    #[test]
    fn an_endless_error_body_is_read_to_a_few_kib() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (addr, sent) = hostile("500 Internal Server Error", 256 << 20, Duration::ZERO);
        let r: PluginRef = format!("{addr}/error:1").parse().expect("a reference");
        let err = registry(dir.path(), None).pin(&r).expect_err("refused");
        assert!(matches!(err, RegistryError::Unreachable { .. }), "{err}");
        assert!(err.to_string().contains("HTTP 500") && err.to_string().len() < 600, "{err}");
        std::thread::sleep(Duration::from_millis(200));
        assert!(sent.load(Ordering::Relaxed) < 64 << 20, "read on: {} bytes", sent.load(Ordering::Relaxed));
    }

    #[test]
    fn a_dripping_manifest_meets_the_deadline() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (addr, _) = hostile("200 OK", 1 << 20, Duration::from_millis(500));
        let r: PluginRef = format!("{addr}/drip:1").parse().expect("a reference");
        let began = std::time::Instant::now();
        let err = registry(dir.path(), Some(Duration::from_secs(1))).pin(&r).expect_err("refused");
        assert!(matches!(err, RegistryError::Deadline { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains(&addr) && text.contains("pull") && text.contains("deadline of 1 s"), "{text}");
        assert!(began.elapsed() < Duration::from_secs(5), "{:?}", began.elapsed());
    }

    #[test]
    fn a_bearer_challenge_gives_its_realm_and_service() {
        let header = r#"Bearer realm="https://auth.example.test/token",service="registry.example.test",scope="repository:a/b:pull,push""#;
        assert_eq!(
            Bearer::parse(header),
            Some(Bearer {
                realm: "https://auth.example.test/token".to_owned(),
                service: Some("registry.example.test".to_owned())
            })
        );
        assert_eq!(Bearer::parse(r#"Basic realm="x""#), None);
        assert_eq!(Bearer::parse("Bearer service=\"s\""), None, "no realm, no token to ask for");
    }
}
