//! Deleting manifests from a registry, for `loadhost registry prune` (a distributed run's results
//! and barrier arrivals). oci-client speaks no DELETE, so this is the one exchange made with
//! reqwest directly: `DELETE /v2/REPO/manifests/DIGEST`, the OCI distribution spec's portable
//! deletion (deleting a tag is optional in the spec and docker-registry 2 refuses it). It removes
//! the manifest and every tag that points at it; the blobs stay until the registry's own garbage
//! collection (`registry garbage-collect` for docker-registry) reclaims them.

use std::time::{Duration, SystemTime};

use oci_client::secrets::RegistryAuth;
use reqwest::StatusCode;
use reqwest::header::WWW_AUTHENTICATE;

use crate::OCI_MANIFEST_MEDIA_TYPE;
use crate::auth::Credentials;
use crate::client::Registry;
use crate::error::RegistryError;
use crate::reference::PluginRef;
use crate::store::sha256_digest;

/// The OCI annotation with an artifact's creation time (RFC 3339), which loadhost's own artifacts
/// carry so that `prune --older-than` can date them.
pub(crate) const CREATED_ANNOTATION: &str = "org.opencontainers.image.created";

/// A manifest as `prune` needs it: its digest, and when it was made if it says.
#[derive(Debug, Clone)]
pub struct Described {
    /// The manifest's digest (`sha256:…`), of the bytes the registry served.
    pub digest: String,
    /// Its `org.opencontainers.image.created` annotation, when it has a readable one.
    pub created: Option<SystemTime>,
}

impl Registry {
    /// The digest and creation time of the manifest `r` names.
    pub fn describe(&self, r: &PluginRef) -> Result<Described, RegistryError> {
        let (client, creds) = self.connect(r)?;
        self.block_on(async {
            let (bytes, _) = client
                .pull_manifest_raw(r.oci(), &creds.auth, &[OCI_MANIFEST_MEDIA_TYPE])
                .await
                .map_err(|e| self.map_err(r, &creds, &e))?;
            let manifest: serde_json::Value = serde_json::from_slice(&bytes)
                .map_err(|err| RegistryError::Input(format!("{r}: unreadable manifest: {err}")))?;
            let created = manifest["annotations"][CREATED_ANNOTATION]
                .as_str()
                .and_then(|text| humantime::parse_rfc3339_weak(text).ok());
            Ok(Described { digest: sha256_digest(&bytes), created })
        })
    }

    /// Delete the manifest `digest` from `r`'s repository (and with it every tag naming it);
    /// `false` when the registry no longer had it.
    pub fn delete_manifest(&self, r: &PluginRef, digest: &str) -> Result<bool, RegistryError> {
        crate::client::check_host(r)?;
        let creds = self.credentials_for(r)?;
        let scheme = if self.plain_http(r) { "http" } else { "https" };
        let registry = r.oci().resolve_registry().to_owned();
        let url = format!("{scheme}://{registry}/v2/{}/manifests/{digest}", r.repository());
        let mut builder = reqwest::Client::builder().connect_timeout(Duration::from_secs(10)).timeout(TIMEOUT);
        for pem in self.root_certificates()? {
            let cert = reqwest::Certificate::from_pem(&pem).map_err(|err| RegistryError::Input(err.to_string()))?;
            builder = builder.add_root_certificate(cert);
        }
        let client = builder.build().map_err(|err| unreachable(r, &err))?;
        self.block_on(async {
            let mut response = send(&client, &url, &creds.auth, None).await.map_err(|err| unreachable(r, &err))?;
            // A token registry answers 401 with where to get a token; ask it for the `delete`
            // scope (the pull/push tokens oci-client gets do not carry it) and try once more.
            if response.status() == StatusCode::UNAUTHORIZED
                && let Some(challenge) = response.headers().get(WWW_AUTHENTICATE).and_then(|v| v.to_str().ok())
                && let Some(challenge) = Bearer::parse(challenge)
            {
                let token = challenge.token(&client, r, &creds).await?;
                response = send(&client, &url, &creds.auth, Some(&token)).await.map_err(|err| unreachable(r, &err))?;
            }
            let status = response.status();
            let body = response.text().await.unwrap_or_default();
            match status {
                s if s.is_success() => Ok(true),
                StatusCode::NOT_FOUND => Ok(false),
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(RegistryError::Denied {
                    reference: r.to_string(),
                    why: format!("HTTP {status} to DELETE {digest}: {}", one_line(&body)),
                    source_tried: creds.source.to_string(),
                }),
                StatusCode::METHOD_NOT_ALLOWED | StatusCode::BAD_REQUEST => Err(RegistryError::DeleteRefused {
                    registry: registry.clone(),
                    why: format!("HTTP {status}: {}", one_line(&body)),
                }),
                _ => Err(RegistryError::Unreachable {
                    reference: r.to_string(),
                    why: format!("HTTP {status} to DELETE {digest}: {}", one_line(&body)),
                }),
            }
        })
    }
}

const TIMEOUT: Duration = Duration::from_secs(60);

async fn send(
    client: &reqwest::Client,
    url: &str,
    auth: &RegistryAuth,
    token: Option<&str>,
) -> Result<reqwest::Response, reqwest::Error> {
    let request = client.delete(url);
    let request = match (token, auth) {
        (Some(token), _) => request.bearer_auth(token),
        (None, RegistryAuth::Bearer(token)) => request.bearer_auth(token),
        (None, RegistryAuth::Basic(user, password)) => request.basic_auth(user, Some(password)),
        (None, RegistryAuth::Anonymous) => request,
    };
    request.send().await
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

    /// A token for deleting in `r`'s repository, asked with the credentials in hand.
    async fn token(
        &self,
        client: &reqwest::Client,
        r: &PluginRef,
        creds: &Credentials,
    ) -> Result<String, RegistryError> {
        let scope = format!("repository:{}:delete", r.repository());
        let mut query = vec![("scope", scope.as_str())];
        if let Some(service) = &self.service {
            query.push(("service", service));
        }
        let request = client.get(&self.realm).query(&query);
        let request = match &creds.auth {
            RegistryAuth::Basic(user, password) => request.basic_auth(user, Some(password)),
            _ => request,
        };
        let denied = |why: String| RegistryError::Denied {
            reference: r.to_string(),
            why,
            source_tried: creds.source.to_string(),
        };
        let response = request.send().await.map_err(|err| unreachable(r, &err))?;
        let status = response.status();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        if !status.is_success() {
            return Err(denied(format!("the token service answered HTTP {status} for scope {scope}")));
        }
        body["token"]
            .as_str()
            .or_else(|| body["access_token"].as_str())
            .map(str::to_owned)
            .ok_or_else(|| denied(format!("the token service gave no token for scope {scope}")))
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

fn one_line(body: &str) -> String {
    let line = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() { "(no body)".to_owned() } else { line.chars().take(300).collect() }
}

fn unreachable(r: &PluginRef, err: &dyn std::error::Error) -> RegistryError {
    crate::client::unreachable_err(r, err)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_long_body_becomes_one_short_line() {
        assert_eq!(one_line("{\"errors\":\n  [1]}\n"), "{\"errors\": [1]}");
        assert_eq!(one_line(""), "(no body)");
        assert_eq!(one_line(&"x".repeat(1000)).len(), 300);
    }
}
