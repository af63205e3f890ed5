//! Small artifacts of a distributed run in a registry: each segment's results file, and the
//! arrivals of its barrier. They travel as OCI 1.1 artifacts (an `artifactType`, an empty
//! config, layers of their own media types), so any registry that keeps wasm plugins keeps them
//! and needs no shared volume.

use crate::OCI_MANIFEST_MEDIA_TYPE;
use crate::client::{Registry, descriptor, http_header};
use crate::error::RegistryError;
use crate::limits::{MANIFEST_CAP, TAG_LIST_CAP};
use crate::prune::CREATED_ANNOTATION;
use crate::reference::PluginRef;
use crate::store::sha256_digest;

/// The config of loadhost's artifacts: what the artifact is part of (run, segment). It is never
/// the same two bytes for two parts, which matters: segments pushing one identical blob (such as
/// OCI's empty `{}` config) to one repository at the same moment can make a registry refuse a
/// manifest (distribution answers `DIGEST_INVALID`/`MANIFEST_BLOB_UNKNOWN`).
const PART_CONFIG_MEDIA_TYPE: &str = "application/vnd.loadhost.part.v1+json";

/// How many times a push is tried: registries answer a busy moment with transient errors.
const PUSH_ATTEMPTS: u32 = 3;

/// An artifact as pulled: its type and layers, each verified against its digest.
#[derive(Debug, Clone)]
pub struct Artifact {
    /// The manifest's `artifactType`.
    pub artifact_type: String,
    /// Every layer, as (media type, bytes), in manifest order.
    pub layers: Vec<(String, Vec<u8>)>,
}

impl Registry {
    /// Push `layers` (media type, bytes) as an artifact of `artifact_type` to `r` (a tag), with
    /// `about` (what it is part of) as its config; the manifest's digest. Tried up to three times.
    pub fn push_artifact(
        &self,
        r: &PluginRef,
        artifact_type: &str,
        about: &serde_json::Value,
        layers: Vec<(String, Vec<u8>)>,
    ) -> Result<String, RegistryError> {
        let config = serde_json::to_vec(about).map_err(|err| RegistryError::Input(err.to_string()))?;
        let mut attempt = 1;
        loop {
            match self.push_artifact_once(r, artifact_type, &config, &layers) {
                Err(err) if attempt < PUSH_ATTEMPTS && !matches!(err, RegistryError::Denied { .. }) => {
                    tracing::debug!("pushing {r} (attempt {attempt}): {err}; trying again");
                    std::thread::sleep(std::time::Duration::from_millis(200 * u64::from(attempt)));
                    attempt += 1;
                }
                done => return done,
            }
        }
    }

    fn push_artifact_once(
        &self,
        r: &PluginRef,
        artifact_type: &str,
        config: &[u8],
        layers: &[(String, Vec<u8>)],
    ) -> Result<String, RegistryError> {
        let (client, creds) = self.connect(r)?;
        let descriptors: Vec<serde_json::Value> =
            layers.iter().map(|(media, bytes)| descriptor(media, &sha256_digest(bytes), bytes.len())).collect();
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST_MEDIA_TYPE,
            "artifactType": artifact_type,
            "config": descriptor(PART_CONFIG_MEDIA_TYPE, &sha256_digest(config), config.len()),
            "layers": descriptors,
            // When it was made, so `registry prune --older-than` can date it.
            "annotations": { CREATED_ANNOTATION: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string() },
        }))
        .map_err(|err| RegistryError::Input(err.to_string()))?;
        let digest = sha256_digest(&manifest);
        self.within(r, "push", async {
            client.store_auth_if_needed(r.registry(), &creds.auth).await;
            for bytes in layers.iter().map(|(_, b)| b.as_slice()).chain(std::iter::once(config)) {
                let d = sha256_digest(bytes);
                client.push_blob(r.oci(), bytes.to_vec(), &d).await.map_err(|e| self.map_err(r, &creds, &e))?;
            }
            let content_type = http_header(OCI_MANIFEST_MEDIA_TYPE);
            client.push_manifest_raw(r.oci(), manifest, content_type).await.map_err(|e| self.map_err(r, &creds, &e))?;
            Ok::<_, RegistryError>(())
        })?;
        Ok(digest)
    }

    /// The artifact at `r`, which must be of `artifact_type`; every blob checked against its
    /// digest, none larger than `max_layer` bytes. Nothing goes into the plugin store.
    pub fn pull_artifact(&self, r: &PluginRef, artifact_type: &str, max_layer: u64) -> Result<Artifact, RegistryError> {
        let mut transport = self.transport(r)?;
        let text = r.to_string();
        let name = r.digest().or(r.tag()).unwrap_or("latest").to_owned();
        self.within(r, "pull", async {
            let bytes = transport.manifest(&name, &[OCI_MANIFEST_MEDIA_TYPE], MANIFEST_CAP, "the manifest").await?;
            let manifest: oci_client::manifest::OciImageManifest = serde_json::from_slice(&bytes)
                .map_err(|err| RegistryError::Input(format!("{text}: unreadable manifest: {err}")))?;
            let found = manifest.artifact_type.clone().unwrap_or_default();
            if found != artifact_type {
                return Err(RegistryError::Input(format!(
                    "{text}: an artifact of type {found:?}, not {artifact_type:?}"
                )));
            }
            let mut layers = Vec::with_capacity(manifest.layers.len().min(64));
            for layer in &manifest.layers {
                let out = transport.blob(layer, max_layer, "such an artifact's layer may be").await?;
                layers.push((layer.media_type.clone(), out));
            }
            Ok(Artifact { artifact_type: found, layers })
        })
    }

    /// Every tag of `r`'s repository (paged through, each page at most [`TAG_LIST_CAP`]).
    pub fn tags(&self, r: &PluginRef) -> Result<Vec<String>, RegistryError> {
        let mut transport = self.transport(r)?;
        self.within(r, "listing tags", async {
            let mut all: Vec<String> = Vec::new();
            loop {
                let mut query = vec![("n", "1000")];
                if let Some(last) = all.last() {
                    query.push(("last", last.as_str()));
                }
                let response = transport.get("tags/list", &query, "application/json").await?;
                let bytes = transport.body(response, TAG_LIST_CAP, "the tag list").await?;
                let page: serde_json::Value =
                    serde_json::from_slice(&bytes).map_err(|err| RegistryError::Unreachable {
                        reference: r.to_string(),
                        why: format!("the tag list is not JSON: {err}"),
                    })?;
                let tags: Vec<String> = page["tags"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect();
                let done = tags.len() < 1000 || all.last() == tags.last();
                all.extend(tags);
                if done {
                    return Ok(all);
                }
            }
        })
    }
}
