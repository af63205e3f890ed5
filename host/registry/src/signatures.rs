//! Signatures of plugins, in cosign's shape, stored beside them as OCI 1.1 referrers.
//!
//! A signature is an OCI image manifest of `artifactType`
//! `application/vnd.dev.cosign.artifact.sig.v1+json` with the empty config and one layer, cosign's
//! "simple signing" payload (`application/vnd.dev.cosign.simplesigning.v1+json`: the repository
//! and the plugin's manifest digest), whose annotation `dev.cosignproject.cosign/signature` is the
//! base64 of the DER ECDSA P-256 signature of the payload's bytes; its `subject` is the plugin's
//! manifest. It is pushed by digest, and listed in the referrers tag schema's image index (tag
//! `sha256-HEX` of the plugin's digest), so that registries without the referrers API (the CNCF
//! distribution registry up to 2.8, Debian's `docker-registry`) keep it findable too.
//!
//! A signature that verified is kept in the store (`BASE/oci/signatures/REGISTRY/REPO/HEX` lists its manifests;
//! the manifests and payloads are blobs): `--pull never` verifies against those, and a digest in
//! the store is not asked about again while one of them verifies with the policy's keys.

use base64::Engine as _;
use oci_client::manifest::{ImageIndexEntry, OciDescriptor, OciImageIndex, OciImageManifest};

use crate::client::{Registry, descriptor, http_header};
use crate::error::RegistryError;
use crate::keys::{PrivateKey, PublicKey};
use crate::limits::MANIFEST_CAP;
use crate::reference::PluginRef;
use crate::store::sha256_digest;
use crate::transport::Transport;
use crate::{OCI_MANIFEST_MEDIA_TYPE, Pull};

/// The `artifactType` of a cosign signature stored as an OCI 1.1 referrer.
pub const SIGNATURE_ARTIFACT_TYPE: &str = "application/vnd.dev.cosign.artifact.sig.v1+json";
/// The media type of cosign's "simple signing" payload layer.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 DER signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The payload's `critical.type`.
const PAYLOAD_TYPE: &str = "cosign container image signature";
/// OCI's empty descriptor: the config of an artifact that needs none.
const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
const OCI_INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// A payload is a few hundred bytes: anything larger is not one.
const PAYLOAD_MAX: i64 = 64 << 10;
/// How many referrers of the signature type are looked at, at most.
const SIGNATURES_MAX: usize = 64;

/// A signature that verified: the key that made it and the signature's manifest digest.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The public key file it verifies with.
    pub key: std::path::PathBuf,
    /// The signature manifest's digest.
    pub signature: String,
}

/// Why no signature of a plugin verified.
#[derive(Debug, Clone, Default)]
pub struct Unverified {
    /// One note per signature found and refused (another key, another digest…).
    pub refused: Vec<String>,
    /// Only the store was looked at (`--pull never`).
    pub offline: bool,
}

impl std::fmt::Display for Unverified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let offline = if self.offline {
            " (--pull never: only the signatures the local store kept from earlier verifications were looked at)"
        } else {
            ""
        };
        match self.refused.len() {
            0 if self.offline => write!(f, "no signature of it is in the local store{offline}"),
            0 => f.write_str("it has no signature"),
            n => {
                let plural = if n == 1 { "signature" } else { "signatures" };
                write!(f, "{n} {plural} found and none verifies{offline}: {}", self.refused.join("; "))
            }
        }
    }
}

/// Cosign's simple-signing payload for the manifest `digest` of `repository` (`HOST[:PORT]/REPO`).
fn payload(repository: &str, digest: &str) -> Vec<u8> {
    let value = serde_json::json!({
        "critical": {
            "identity": { "docker-reference": repository },
            "image": { "docker-manifest-digest": digest },
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    });
    value.to_string().into_bytes()
}

/// OCI's empty config (`{}`), of [`EMPTY_MEDIA_TYPE`].
const EMPTY_CONFIG: &[u8] = b"{}";

/// The signature artifact's manifest: `payload` signed by `key`, its subject the plugin manifest
/// `subject` (`subject_size` bytes).
fn signature_manifest(subject: &str, subject_size: usize, payload: &[u8], key: &PrivateKey) -> Vec<u8> {
    let signature = base64::engine::general_purpose::STANDARD.encode(key.sign(payload));
    let mut layer = descriptor(SIMPLE_SIGNING_MEDIA_TYPE, &sha256_digest(payload), payload.len());
    layer["annotations"] = serde_json::json!({ SIGNATURE_ANNOTATION: signature });
    serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST_MEDIA_TYPE,
        "artifactType": SIGNATURE_ARTIFACT_TYPE,
        "config": descriptor(EMPTY_MEDIA_TYPE, &sha256_digest(EMPTY_CONFIG), EMPTY_CONFIG.len()),
        "layers": [layer],
        "subject": descriptor(OCI_MANIFEST_MEDIA_TYPE, subject, subject_size),
    })
    .to_string()
    .into_bytes()
}

/// `HOST[:PORT]/REPO`: what a signature names as the plugin's identity.
fn repository_of(r: &PluginRef) -> String {
    format!("{}/{}", r.registry(), r.repository())
}

/// The referrers tag schema's tag for `digest` (`sha256:HEX` → `sha256-HEX`).
fn referrers_tag(digest: &str) -> String {
    digest.replace(':', "-")
}

impl Registry {
    /// Sign the manifest `digest` of `r`'s repository with `key`: push the signature artifact (its
    /// subject the plugin's manifest) and list it in the referrers tag schema's index. The plugin's
    /// manifest must be in the store (a push or a pull puts it there). The signature's digest.
    pub fn sign(&self, r: &PluginRef, digest: &str, key: &PrivateKey) -> Result<String, RegistryError> {
        let text = r.to_string();
        let manifest =
            self.store().read_verified(digest, &text)?.ok_or(RegistryError::NotStored { reference: text })?;
        let payload = payload(&repository_of(r), digest);
        let config = EMPTY_CONFIG.to_vec();
        let signature_manifest = signature_manifest(digest, manifest.len(), &payload, key);
        let signature_digest = sha256_digest(&signature_manifest);
        let (client, creds) = self.connect(r)?;
        let mut transport = self.transport(r)?;
        let at = r.at_digest(&signature_digest);
        let index_ref =
            oci_client::Reference::with_tag(r.registry().to_owned(), r.repository().to_owned(), referrers_tag(digest));
        let index_text = index_ref.to_string();
        self.within(r, "signing", async {
            client.store_auth_if_needed(r.registry(), &creds.auth).await;
            for bytes in [&payload, &config] {
                let d = sha256_digest(bytes);
                client.push_blob(&at, bytes.clone(), &d).await.map_err(|e| self.map_err(r, &creds, &e))?;
            }
            let content_type = http_header(OCI_MANIFEST_MEDIA_TYPE);
            client
                .push_manifest_raw(&at, signature_manifest.clone(), content_type)
                .await
                .map_err(|e| self.map_err(r, &creds, &e))?;
            // oci-client does not hand back the response's `OCI-Subject` header, which would say
            // the registry indexes referrers itself; the tag schema's index is kept either way (on
            // a registry with the referrers API it is one redundant tag). Read, add, put back: two
            // signers of one digest at the same moment could lose one entry (run `sign` again).
            let accepted = [OCI_INDEX_MEDIA_TYPE];
            let what = format!("the referrers index {index_text}");
            let mut index = match transport.manifest(&referrers_tag(digest), &accepted, MANIFEST_CAP, &what).await {
                Ok(bytes) => {
                    serde_json::from_slice::<serde_json::Value>(&bytes).map_err(|err| RegistryError::Unreachable {
                        reference: index_text.clone(),
                        why: format!("the referrers index is not JSON: {err}"),
                    })?
                }
                Err(err) => match err {
                    RegistryError::NotFound { .. } => serde_json::json!({
                        "schemaVersion": 2,
                        "mediaType": OCI_INDEX_MEDIA_TYPE,
                        "manifests": [],
                    }),
                    other => return Err(other),
                },
            };
            let mut entry = descriptor(OCI_MANIFEST_MEDIA_TYPE, &signature_digest, signature_manifest.len());
            entry["artifactType"] = SIGNATURE_ARTIFACT_TYPE.into();
            let Some(entries) = index["manifests"].as_array_mut() else {
                return Err(RegistryError::Unreachable {
                    reference: index_text.clone(),
                    why: "the referrers index has no manifests array".to_owned(),
                });
            };
            if !entries.iter().any(|e| e["digest"] == signature_digest.as_str()) {
                entries.push(entry);
            }
            let bytes = serde_json::to_vec(&index).map_err(|err| RegistryError::Input(err.to_string()))?;
            client
                .push_manifest_raw(&index_ref, bytes, http_header(OCI_INDEX_MEDIA_TYPE))
                .await
                .map_err(|e| self.map_err(r, &creds, &e))?;
            Ok::<_, RegistryError>(())
        })?;
        Ok(signature_digest)
    }

    /// A signature of the manifest `digest` of `r`'s repository that verifies with one of `keys`:
    /// first among those the store kept, then (unless `pull` is `Never`) among the referrers the
    /// registry lists. `Err` says what was found and why none verifies.
    pub fn verify(
        &self,
        r: &PluginRef,
        digest: &str,
        keys: &[PublicKey],
        pull: Pull,
    ) -> Result<Result<Verified, Unverified>, RegistryError> {
        let mut unverified = Unverified::default();
        for signature in self.store().signatures(r.registry(), r.repository(), digest) {
            if let Some(found) = self.stored_signature(r, digest, &signature, keys, &mut unverified) {
                return Ok(Ok(found));
            }
        }
        if pull == Pull::Never {
            unverified.offline = true;
            return Ok(Err(unverified));
        }
        let mut transport = self.transport(r)?;
        let text = r.to_string();
        self.within(r, "signature check", async {
            let index = referrers(&mut transport, digest).await?;
            let entries = index.iter().filter(|e| e.media_type == OCI_MANIFEST_MEDIA_TYPE);
            for entry in entries.take(SIGNATURES_MAX) {
                let fetched = async {
                    let accepted = [OCI_MANIFEST_MEDIA_TYPE];
                    let what = format!("the signature manifest {}", entry.digest);
                    let bytes = transport.manifest(&entry.digest, &accepted, MANIFEST_CAP, &what).await?;
                    let Ok(manifest) = serde_json::from_slice::<OciImageManifest>(&bytes) else {
                        return Ok::<_, RegistryError>((bytes, None));
                    };
                    let Some(layer) = payload_layer(&manifest) else { return Ok((bytes, None)) };
                    if layer.size > PAYLOAD_MAX {
                        return Ok((bytes, None));
                    }
                    let payload =
                        transport.blob(layer, PAYLOAD_MAX.unsigned_abs(), "a signature payload may be").await?;
                    Ok((bytes, Some(payload)))
                };
                let (manifest, payload) = match fetched.await {
                    Ok(fetched) => fetched,
                    Err(err) => {
                        unverified.refused.push(format!("{}: {err}", entry.digest));
                        continue;
                    }
                };
                match check(r, digest, &manifest, payload.as_deref(), keys) {
                    Ok(key) => {
                        // Kept, so that the next run (and --pull never) need not ask the registry.
                        self.store().write_blob(&entry.digest, &manifest, &text)?;
                        if let Some(payload) = &payload {
                            self.store().write_blob(&sha256_digest(payload), payload, &text)?;
                        }
                        self.store().note_signature(r.registry(), r.repository(), digest, &entry.digest)?;
                        return Ok(Ok(Verified { key: key.path().to_path_buf(), signature: entry.digest.clone() }));
                    }
                    Err(why) => unverified.refused.push(format!("{}: {why}", short(&entry.digest))),
                }
            }
            Ok(Err(unverified))
        })
    }

    /// A signature the store kept, checked again with `keys`.
    fn stored_signature(
        &self,
        r: &PluginRef,
        digest: &str,
        signature: &str,
        keys: &[PublicKey],
        unverified: &mut Unverified,
    ) -> Option<Verified> {
        let text = r.to_string();
        let manifest = self.store().read_verified(signature, &text).ok().flatten()?;
        let parsed: OciImageManifest = serde_json::from_slice(&manifest).ok()?;
        let layer = payload_layer(&parsed)?;
        let payload = self.store().read_verified(&layer.digest, &text).ok().flatten()?;
        match check(r, digest, &manifest, Some(&payload), keys) {
            Ok(key) => Some(Verified { key: key.path().to_path_buf(), signature: signature.to_owned() }),
            Err(why) => {
                unverified.refused.push(format!("{} (stored): {why}", short(signature)));
                None
            }
        }
    }
}

/// The signatures listed for the manifest `digest`: the referrers API's answer, or where the
/// registry has none (a 404), the referrers tag schema's index (none when that tag is not there
/// either). Either index is read to at most [`MANIFEST_CAP`] bytes, and filtered here to the
/// signature artifact type (a registry may ignore the filter).
async fn referrers(transport: &mut Transport, digest: &str) -> Result<Vec<ImageIndexEntry>, RegistryError> {
    let accepted = [OCI_INDEX_MEDIA_TYPE];
    let path = format!("referrers/{digest}");
    let response = transport.get(&path, &[("artifactType", SIGNATURE_ARTIFACT_TYPE)], OCI_INDEX_MEDIA_TYPE).await?;
    let bytes = if response.status() == reqwest::StatusCode::NOT_FOUND {
        let what = format!("the referrers index (tag {})", referrers_tag(digest));
        match transport.manifest(&referrers_tag(digest), &accepted, MANIFEST_CAP, &what).await {
            Ok(bytes) => bytes,
            Err(RegistryError::NotFound { .. }) => return Ok(Vec::new()),
            Err(err) => return Err(err),
        }
    } else {
        transport.body(response, MANIFEST_CAP, &format!("the referrers of {digest}")).await?
    };
    let mut index: OciImageIndex = serde_json::from_slice(&bytes).map_err(|err| RegistryError::Unreachable {
        reference: transport.reference().to_owned(),
        why: format!("the referrers index of {digest} is not an OCI image index: {err}"),
    })?;
    index.manifests.retain(|e| e.artifact_type.as_deref() == Some(SIGNATURE_ARTIFACT_TYPE));
    Ok(index.manifests)
}

/// The simple-signing layer of a signature manifest.
fn payload_layer(manifest: &OciImageManifest) -> Option<&OciDescriptor> {
    manifest.layers.iter().find(|l| l.media_type == SIMPLE_SIGNING_MEDIA_TYPE)
}

/// `sha256:` and the first 12 hex digits, for notes that list several signatures.
fn short(digest: &str) -> &str {
    digest.get(..19).unwrap_or(digest)
}

/// Whether the signature manifest (`manifest`, with its payload `payload`) signs the plugin
/// `digest` of `r`'s repository with one of `keys`: the key that verifies it, or why not.
fn check<'k>(
    r: &PluginRef,
    digest: &str,
    manifest: &[u8],
    payload: Option<&[u8]>,
    keys: &'k [PublicKey],
) -> Result<&'k PublicKey, String> {
    let manifest: OciImageManifest =
        serde_json::from_slice(manifest).map_err(|err| format!("an unreadable manifest ({err})"))?;
    if manifest.artifact_type.as_deref() != Some(SIGNATURE_ARTIFACT_TYPE) {
        return Err("not a cosign signature artifact".to_owned());
    }
    let subject = manifest.subject.as_ref().map(|s| s.digest.as_str());
    match subject {
        Some(subject) if subject != digest => return Err(another_manifest("its subject is", subject)),
        None => return Err("it has no subject".to_owned()),
        Some(_) => {}
    }
    let layer = payload_layer(&manifest).ok_or("no simple-signing payload layer")?;
    let payload = payload.ok_or("its payload could not be read (larger than a payload is)")?;
    let value: serde_json::Value =
        serde_json::from_slice(payload).map_err(|err| format!("its payload is not JSON ({err})"))?;
    let critical = &value["critical"];
    if critical["type"] != PAYLOAD_TYPE {
        return Err(format!("its payload's type is {}, not {PAYLOAD_TYPE:?}", critical["type"]));
    }
    let signed = critical["image"]["docker-manifest-digest"].as_str().unwrap_or("nothing");
    if signed != digest {
        return Err(another_manifest("it signs", signed));
    }
    let repository = repository_of(r);
    let identity = critical["identity"]["docker-reference"].as_str().unwrap_or("nothing");
    if identity != repository {
        return Err(format!("it signs the manifest as {identity}, not {repository}"));
    }
    let encoded =
        layer.annotations.as_ref().and_then(|a| a.get(SIGNATURE_ANNOTATION)).ok_or("no signature annotation")?;
    let signature = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|err| format!("its signature is not base64 ({err})"))?;
    keys.iter().find(|k| k.verifies(payload, &signature)).ok_or_else(|| {
        let names: Vec<String> = keys.iter().map(|k| k.path().display().to_string()).collect();
        format!("made by another key than {}", names.join(" or "))
    })
}

/// A signature of another manifest than the one checked.
fn another_manifest(what: &str, digest: &str) -> String {
    format!("{what} {digest}, another manifest (this one was changed after signing, or the signature copied)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_is_cosigns_simple_signing_form() {
        let p: serde_json::Value =
            serde_json::from_slice(&payload("127.0.0.1:5000/team/x", "sha256:ab")).expect("JSON");
        assert_eq!(p["critical"]["identity"]["docker-reference"], "127.0.0.1:5000/team/x");
        assert_eq!(p["critical"]["image"]["docker-manifest-digest"], "sha256:ab");
        assert_eq!(p["critical"]["type"], "cosign container image signature");
        assert!(p["optional"].is_null());
        assert_eq!(referrers_tag("sha256:ab"), "sha256-ab");
    }

    /// A signature manifest of `subject` over `payload`, signed by `key`.
    fn signed(subject: &str, payload: &[u8], key: &PrivateKey) -> Vec<u8> {
        signature_manifest(subject, 10, payload, key)
    }

    #[test]
    fn a_signature_verifies_only_for_its_digest_its_repository_and_its_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let keys: Vec<(PrivateKey, PublicKey)> = ["a", "b"]
            .iter()
            .map(|name| {
                let (private, public) =
                    crate::keys::keygen(&dir.path().join(name).display().to_string()).expect("keygen");
                (PrivateKey::read(&private).expect("private"), PublicKey::read(&public).expect("public"))
            })
            .collect();
        let (a, a_pub) = (&keys[0].0, std::slice::from_ref(&keys[0].1));
        let b_pub = std::slice::from_ref(&keys[1].1);
        let d1 = format!("sha256:{}", "1".repeat(64));
        let d2 = format!("sha256:{}", "2".repeat(64));
        let r: PluginRef = "127.0.0.1:5000/team/x:1".parse().expect("a reference");
        let good = payload("127.0.0.1:5000/team/x", &d1);
        let manifest = signed(&d1, &good, a);
        assert!(check(&r, &d1, &manifest, Some(&good), a_pub).is_ok());
        let why = |result: Result<&PublicKey, String>| result.expect_err("refused");
        assert!(why(check(&r, &d1, &manifest, Some(&good), b_pub)).starts_with("made by another key than"));
        assert!(why(check(&r, &d2, &manifest, Some(&good), a_pub)).starts_with(&format!("its subject is {d1}")));
        // A payload of another digest (its subject forged to match): refused by the payload.
        let other = payload("127.0.0.1:5000/team/x", &d1);
        let forged = signed(&d2, &other, a);
        assert!(why(check(&r, &d2, &forged, Some(&other), a_pub)).starts_with(&format!("it signs {d1}")));
        // The same digest signed for another repository.
        let elsewhere = payload("127.0.0.1:5000/team/y", &d1);
        let copied = signed(&d1, &elsewhere, a);
        assert!(why(check(&r, &d1, &copied, Some(&elsewhere), a_pub)).contains("not 127.0.0.1:5000/team/x"));
        // A payload changed after signing.
        let mut tampered = good.clone();
        tampered.extend_from_slice(b" ");
        assert!(why(check(&r, &d1, &manifest, Some(&tampered), a_pub)).starts_with("made by another key"));
    }
}
