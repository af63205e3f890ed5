//! Deleting manifests from a registry, for `loadhost registry prune` (a distributed run's results
//! and barrier arrivals). oci-client speaks no DELETE; it goes, as every read, through
//! [`crate::transport`]: `DELETE /v2/REPO/manifests/DIGEST`, the OCI distribution spec's portable
//! deletion (deleting a tag is optional in the spec and docker-registry 2 refuses it). It removes
//! the manifest and every tag that points at it, which is why `prune` first asks every other tag
//! of the repository for its digest ([`Registry::tag_digests`]) and spares a manifest a kept tag
//! names; the blobs stay until the registry's own garbage collection (`registry garbage-collect`
//! for docker-registry) reclaims them.

use std::time::SystemTime;

use reqwest::StatusCode;

use crate::OCI_MANIFEST_MEDIA_TYPE;
use crate::client::Registry;
use crate::error::RegistryError;
use crate::limits::{MANIFEST_CAP, error_body};
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

/// Every kind of manifest a tag may name, so that the registry answers the digest of what the
/// tag names whatever it is (a plugin, an index, a docker image).
const ANY_MANIFEST: [&str; 4] = [
    OCI_MANIFEST_MEDIA_TYPE,
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];

impl Registry {
    /// The digest and creation time of the manifest `r` names.
    pub fn describe(&self, r: &PluginRef) -> Result<Described, RegistryError> {
        let mut transport = self.transport(r)?;
        let name = r.digest().or(r.tag()).unwrap_or("latest").to_owned();
        self.within(r, "prune (reading a manifest)", async {
            let bytes = transport.manifest(&name, &[OCI_MANIFEST_MEDIA_TYPE], MANIFEST_CAP, "the manifest").await?;
            let manifest: serde_json::Value = serde_json::from_slice(&bytes)
                .map_err(|err| RegistryError::Input(format!("{r}: unreadable manifest: {err}")))?;
            let created = manifest["annotations"][CREATED_ANNOTATION]
                .as_str()
                .and_then(|text| humantime::parse_rfc3339_weak(text).ok());
            Ok(Described { digest: sha256_digest(&bytes), created })
        })
    }

    /// The manifest digest each of `tags` of `r`'s repository names, whatever kind of manifest it
    /// is; a tag gone meanwhile is left out.
    pub fn tag_digests(&self, r: &PluginRef, tags: &[String]) -> Result<Vec<(String, String)>, RegistryError> {
        let mut transport = self.transport(r)?;
        self.within(r, "prune (reading the tags' digests)", async {
            let mut digests = Vec::with_capacity(tags.len());
            for tag in tags {
                match transport.manifest_digest(tag, &ANY_MANIFEST, MANIFEST_CAP).await {
                    Ok(digest) => digests.push((tag.clone(), digest)),
                    Err(RegistryError::NotFound { .. }) => {}
                    Err(err) => return Err(err),
                }
            }
            Ok(digests)
        })
    }

    /// Delete the manifest `digest` from `r`'s repository (and with it every tag naming it);
    /// `false` when the registry no longer had it.
    pub fn delete_manifest(&self, r: &PluginRef, digest: &str) -> Result<bool, RegistryError> {
        let mut transport = self.transport(r)?;
        let registry = r.registry().to_owned();
        self.within(r, "prune (deleting)", async {
            let response = transport.delete_manifest(digest).await?;
            let status = response.status();
            match status {
                s if s.is_success() => Ok(true),
                StatusCode::NOT_FOUND => Ok(false),
                StatusCode::METHOD_NOT_ALLOWED | StatusCode::BAD_REQUEST => Err(RegistryError::DeleteRefused {
                    registry,
                    why: format!("HTTP {status}: {}", error_body(response).await),
                }),
                _ => Err(transport.status_error(response, &format!("DELETE {digest}")).await),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_body_becomes_one_short_line() {
        use crate::limits::one_line;
        assert_eq!(one_line("{\"errors\":\n  [1]}\n"), "{\"errors\": [1]}");
        assert_eq!(one_line(""), "(no body)");
        assert_eq!(one_line(&"x".repeat(1000)).len(), 300);
        assert_eq!(ANY_MANIFEST[0], OCI_MANIFEST_MEDIA_TYPE);
    }
}
