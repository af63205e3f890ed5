//! Push and pull of plugins, into and out of the local store: pushes through oci-client, pulls
//! through [`crate::transport`] (every body capped), each operation within its deadline.

use std::path::{Path, PathBuf};
use std::time::Duration;

use oci_client::Client;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::OciImageManifest;

use crate::auth::Credentials;
use crate::bundle::{BUNDLE_CONFIG_MEDIA_TYPE, data_extension};
use crate::error::RegistryError;
use crate::limits::{DEFAULT_DEADLINE, MANIFEST_CAP, SMALL_BLOB_CAP};
use crate::moved::{OnMove, SettingsChange, TagMove, diff_settings};
use crate::reference::PluginRef;
use crate::store::{Store, sha256_digest};
use crate::{OCI_MANIFEST_MEDIA_TYPE, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};

/// When to contact the registry (`--pull`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pull {
    /// Always resolve and fetch from the registry.
    Always,
    /// A digest already in the store is used as it is; a tag is resolved against the registry.
    #[default]
    Missing,
    /// Never: digests and previously pulled tags come from the store.
    Never,
}

/// How to reach registries.
#[derive(Debug, Clone, Default)]
pub struct RegistryOptions {
    /// Hosts (`HOST` or `HOST:PORT`) that may be reached over plain http besides loopback.
    pub insecure: Vec<String>,
    /// Extra PEM root certificates for https registries.
    pub ca_certs: Vec<PathBuf>,
    /// Credentials given on the command line; `None` reads the Docker credentials file.
    pub credentials: Option<Credentials>,
    /// The largest component layer pulled (`--max-plugin-size`); `None`: a plugin file's default cap.
    pub max_plugin_size: Option<u64>,
    /// How long one registry operation may take in all; `None`: [`DEFAULT_DEADLINE`].
    pub deadline: Option<Duration>,
}

/// A plugin resolved to files in the store.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The reference as the user wrote it.
    pub reference: String,
    /// The manifest digest (`sha256:…`).
    pub digest: String,
    /// The component (the `application/wasm` layer) in the store.
    pub wasm: PathBuf,
    /// Every layer, as (media type, path in the store), in manifest order.
    pub layers: Vec<(String, PathBuf)>,
    /// The tag resolved to another digest than the store recorded for it (already warned about).
    pub moved: Option<TagMove>,
}

/// The registry client and the local store.
#[derive(Debug)]
pub struct Registry {
    store: Store,
    options: RegistryOptions,
    tokio: tokio::runtime::Runtime,
}

/// Whether a registry host may be reached over plain http without `--insecure-registry`.
pub(crate) fn is_loopback(host: &str) -> bool {
    // In every spelling the trust policy takes for loopback (`LOCALHOST`, `127.1`), not only two.
    host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
        || crate::reference::canonical_registry(host).is_some_and(|c| c.starts_with("localhost:"))
}

impl Registry {
    /// A client whose store is under the cache base folder `base`.
    pub fn new(base: &Path, options: RegistryOptions) -> Result<Self, RegistryError> {
        // reqwest is built without a default crypto provider: use ring, as the rest of the host.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|err| RegistryError::Input(format!("starting the async runtime: {err}")))?;
        let store = Store::new(base);
        store.ensure_private()?;
        Ok(Self { store, options, tokio })
    }

    /// The local store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Whether `r`'s registry is spoken to over plain http: loopback, or `--insecure-registry`.
    pub(crate) fn plain_http(&self, r: &PluginRef) -> bool {
        is_loopback(r.host()) || self.options.insecure.iter().any(|h| h == r.registry() || h == r.host())
    }

    /// The extra PEM roots of `--registry-ca-cert`, read.
    pub(crate) fn root_certificates(&self) -> Result<Vec<Vec<u8>>, RegistryError> {
        let read = |path: &PathBuf| {
            loadhost_input::read(path, loadhost_input::PEM)
                .map_err(|err| RegistryError::Input(format!("--registry-ca-cert {}: {err}", path.display())))
        };
        self.options.ca_certs.iter().map(read).collect()
    }

    fn client(&self, r: &PluginRef) -> Result<Client, RegistryError> {
        check_host(r)?;
        let plain = self.plain_http(r);
        let extra = self
            .root_certificates()?
            .into_iter()
            .map(|data| Certificate { encoding: CertificateEncoding::Pem, data })
            .collect();
        let config = ClientConfig {
            protocol: if plain {
                ClientProtocol::HttpsExcept(vec![r.registry().to_owned()])
            } else {
                ClientProtocol::Https
            },
            extra_root_certificates: extra,
            connect_timeout: Some(Duration::from_secs(10)),
            read_timeout: Some(Duration::from_secs(60)),
            platform_resolver: None,
            ..ClientConfig::default()
        };
        Client::try_from(config).map_err(|err| unreachable_err(r, &err))
    }

    /// A client for `r`'s registry and the credentials to use there.
    pub(crate) fn connect(&self, r: &PluginRef) -> Result<(Client, Credentials), RegistryError> {
        Ok((self.client(r)?, self.credentials_for(r)?))
    }

    /// Run the registry operation `operation` on `r` on the client's own runtime, within the
    /// deadline: a registry that answers slowly, or drips its answer, is given up on with one line
    /// naming it, the operation and the deadline.
    pub(crate) fn within<T>(
        &self,
        r: &PluginRef,
        operation: &'static str,
        work: impl std::future::Future<Output = Result<T, RegistryError>>,
    ) -> Result<T, RegistryError> {
        let deadline = self.options.deadline.unwrap_or(DEFAULT_DEADLINE);
        // The timer is made inside the runtime, which it needs.
        self.tokio.block_on(async { tokio::time::timeout(deadline, work).await }).unwrap_or_else(|_| {
            Err(RegistryError::Deadline {
                reference: r.to_string(),
                registry: r.registry().to_owned(),
                operation,
                deadline,
            })
        })
    }

    /// The most bytes a layer of `media_type` may have, and what sets that.
    fn layer_cap(&self, media_type: &str) -> (u64, &'static str) {
        match media_type {
            WASM_LAYER_MEDIA_TYPE => match self.options.max_plugin_size {
                Some(bytes) => (bytes, "--max-plugin-size allows"),
                None => (loadhost_input::PLUGIN.bytes, "a plugin may be (--max-plugin-size raises it)"),
            },
            BUNDLE_CONFIG_MEDIA_TYPE => (loadhost_input::CONFIG.bytes, "a bundle's TOML may be"),
            m if data_extension(m).is_some() => (loadhost_input::DATA.bytes, "a data feed may be"),
            _ => (SMALL_BLOB_CAP, "a config blob may be"),
        }
    }

    /// One line for an oci-client failure with `r`.
    pub(crate) fn map_err(&self, r: &PluginRef, creds: &Credentials, err: &OciDistributionError) -> RegistryError {
        map_err(r, creds, err)
    }

    /// The credentials for `r`'s registry: the command line's, else the Docker configuration's.
    pub(crate) fn credentials_for(&self, r: &PluginRef) -> Result<Credentials, RegistryError> {
        match &self.options.credentials {
            Some(c) => Ok(c.clone()),
            None => Credentials::from_environment(r.registry()),
        }
    }

    /// Push the component `wasm` (its file name `title`) and `extra` layers (as (media type,
    /// bytes)) to `r`; the pushed manifest's digest. The blobs also go into the local store.
    pub fn push(
        &self,
        r: &PluginRef,
        title: &str,
        wasm: Vec<u8>,
        extra: Vec<(String, Vec<u8>)>,
    ) -> Result<String, RegistryError> {
        let client = self.client(r)?;
        let creds = self.credentials_for(r)?;
        let mut layers = vec![(WASM_LAYER_MEDIA_TYPE.to_owned(), wasm)];
        layers.extend(extra);
        // Each layer named (`org.opencontainers.image.title`), so `oras pull` saves it by that name
        // rather than by its digest.
        let descriptors: Vec<serde_json::Value> = layers
            .iter()
            .map(|(media, bytes)| {
                let mut d = descriptor(media, &sha256_digest(bytes), bytes.len());
                d["annotations"] = serde_json::json!({ TITLE_ANNOTATION: layer_title(media, title) });
                d
            })
            .collect();
        let layer_digests: Vec<String> = layers.iter().map(|(_, b)| sha256_digest(b)).collect();
        let config = serde_json::to_vec(&serde_json::json!({
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": layer_digests,
        }))
        .map_err(|err| RegistryError::Input(err.to_string()))?;
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST_MEDIA_TYPE,
            "artifactType": WASM_CONFIG_MEDIA_TYPE,
            "config": descriptor(WASM_CONFIG_MEDIA_TYPE, &sha256_digest(&config), config.len()),
            "layers": descriptors,
        }))
        .map_err(|err| RegistryError::Input(err.to_string()))?;
        let digest = sha256_digest(&manifest);
        let text = r.to_string();
        self.within(r, "push", async {
            client.store_auth_if_needed(r.registry(), &creds.auth).await;
            for bytes in layers.iter().map(|(_, b)| b).chain(std::iter::once(&config)) {
                let d = sha256_digest(bytes);
                client.push_blob(r.oci(), bytes.clone(), &d).await.map_err(|e| map_err(r, &creds, &e))?;
                self.store.write_blob(&d, bytes, &text)?;
            }
            let content_type = http_header(OCI_MANIFEST_MEDIA_TYPE);
            client
                .push_manifest_raw(r.oci(), manifest.clone(), content_type)
                .await
                .map_err(|e| map_err(r, &creds, &e))?;
            Ok::<_, RegistryError>(())
        })?;
        self.store.write_blob(&digest, &manifest, &text)?;
        self.record(r, &digest)?;
        Ok(digest)
    }

    /// Resolve `r` to files in the store, contacting the registry as `pull` allows; a tag that
    /// resolves to another digest than the store recorded for it is handled as `on_move` says.
    pub fn resolve(&self, r: &PluginRef, pull: Pull, on_move: OnMove) -> Result<Pulled, RegistryError> {
        let text = r.to_string();
        let stored = match (r.digest(), pull) {
            (_, Pull::Always) => None,
            (Some(d), _) => Some(d.to_owned()),
            (None, Pull::Never) => r.tag().and_then(|t| self.store.read_tag(r.registry(), r.repository(), t)),
            (None, Pull::Missing) => None,
        };
        if let Some(digest) = stored {
            match self.stored(&text, &digest) {
                Ok(Some(pulled)) => return Ok(pulled),
                Ok(None) if pull == Pull::Never => return Err(RegistryError::NotStored { reference: text }),
                Ok(None) => {}
                Err(err @ RegistryError::DigestMismatch { .. }) if pull != Pull::Never => {
                    tracing::warn!("{err}; pulling it again");
                }
                Err(err) => return Err(err),
            }
        } else if pull == Pull::Never {
            return Err(RegistryError::NotStored { reference: text });
        }
        self.pull(r, on_move)
    }

    /// The manifest digest `r` resolves to in the registry (checking it is a wasm artifact). The
    /// plugin is stored, and a tag's new digest recorded: pinning is asking for what it is now.
    pub fn pin(&self, r: &PluginRef) -> Result<String, RegistryError> {
        Ok(self.pull(r, OnMove::Accept)?.digest)
    }

    /// The plugin from the store alone; `None` when some blob is missing.
    fn stored(&self, text: &str, digest: &str) -> Result<Option<Pulled>, RegistryError> {
        let Some(bytes) = self.store.read_verified(digest, text)? else { return Ok(None) };
        let manifest = parse_manifest(text, &bytes)?;
        for d in std::iter::once(&manifest.config).chain(&manifest.layers) {
            if self.store.read_verified(&d.digest, text)?.is_none() {
                return Ok(None);
            }
        }
        self.pulled(text, digest, &manifest).map(Some)
    }

    fn pulled(&self, text: &str, digest: &str, manifest: &OciImageManifest) -> Result<Pulled, RegistryError> {
        let mut layers = Vec::new();
        for layer in &manifest.layers {
            let path = self
                .store
                .blob_path(&layer.digest)
                .ok_or_else(|| RegistryError::Input(format!("{text}: unsupported digest {}", layer.digest)))?;
            layers.push((layer.media_type.clone(), path));
        }
        let wasm = layers.iter().find(|(m, _)| m == WASM_LAYER_MEDIA_TYPE).map(|(_, p)| p.clone());
        let wasm = wasm.ok_or_else(|| not_wasm(text, manifest))?;
        Ok(Pulled { reference: text.to_owned(), digest: digest.to_owned(), wasm, layers, moved: None })
    }

    /// Fetch the manifest and every blob it names into the store, verifying each; then compare a
    /// tag's digest with the one recorded for it, and record it unless `on_move` refuses the move.
    fn pull(&self, r: &PluginRef, on_move: OnMove) -> Result<Pulled, RegistryError> {
        let text = r.to_string();
        let previous = self.recorded(r);
        let digest = self.fetch(r)?;
        let moved = previous.filter(|old| *old != digest).map(|old| self.tag_move(r, old, &digest));
        if let Some(moved) = &moved {
            match on_move {
                // Refused before the record is touched: every later run by the tag is refused
                // too, until the user accepts the move (`pull`, `pin`).
                OnMove::Refuse => return Err(RegistryError::TagMoved(Box::new(moved.clone()))),
                OnMove::Warn => tracing::warn!(
                    "{moved}. Running {} now, and recording it for the tag; --pin-tags refuses a moved tag, and a \
                     reference with a digest (`loadhost pin {text}`) never moves",
                    moved.new
                ),
                OnMove::Accept => {
                    tracing::warn!("{moved}. Recorded {} for the tag: runs by it now use that", moved.new);
                }
            }
        }
        self.record(r, &digest)?;
        let mut pulled = self.stored(&text, &digest)?.ok_or(RegistryError::NotStored { reference: text })?;
        pulled.moved = moved;
        Ok(pulled)
    }

    /// The digest the store recorded for `r`'s tag (none for a reference with a digest).
    fn recorded(&self, r: &PluginRef) -> Option<String> {
        match (r.tag(), r.digest()) {
            (Some(tag), None) => self.store.read_tag(r.registry(), r.repository(), tag),
            _ => None,
        }
    }

    /// How the tag of `r` moved from the manifest `old` to `new` (both digests), with the bundle
    /// settings that change when the old manifest is still in the store.
    fn tag_move(&self, r: &PluginRef, old: String, new: &str) -> TagMove {
        let text = r.to_string();
        let settings = match (self.stored_bundle(&text, &old), self.stored_bundle(&text, new)) {
            (Some((old_toml, old_data)), Some((new_toml, new_data))) => SettingsChange::Compared {
                keys: diff_settings(old_toml.as_deref(), new_toml.as_deref()),
                data_changed: old_data != new_data,
            },
            _ => SettingsChange::OldNotStored,
        };
        TagMove { reference: text, old, new: new.to_owned(), settings }
    }

    /// A stored manifest's bundle TOML and data layer digest (each `None` when it has none);
    /// `None` when the manifest or its TOML is not (or no longer, verified) in the store.
    fn stored_bundle(&self, text: &str, digest: &str) -> Option<(Option<String>, Option<String>)> {
        let bytes = self.store.read_verified(digest, text).ok().flatten()?;
        let manifest: OciImageManifest = serde_json::from_slice(&bytes).ok()?;
        let toml = match manifest.layers.iter().find(|l| l.media_type == BUNDLE_CONFIG_MEDIA_TYPE) {
            Some(layer) => {
                let bytes = self.store.read_verified(&layer.digest, text).ok().flatten()?;
                Some(String::from_utf8_lossy(&bytes).into_owned())
            }
            None => None,
        };
        let data = manifest.layers.iter().find(|l| data_extension(&l.media_type).is_some()).map(|l| l.digest.clone());
        Some((toml, data))
    }

    /// Fetch the manifest `r` names and every blob it names into the store, verifying each; its
    /// digest. Each body read is capped (docs/sharing.md): the manifest at [`MANIFEST_CAP`], a blob
    /// at its descriptor's size, which must be within what its kind may be.
    fn fetch(&self, r: &PluginRef) -> Result<String, RegistryError> {
        let mut transport = self.transport(r)?;
        let text = r.to_string();
        let accepted = [OCI_MANIFEST_MEDIA_TYPE, "application/vnd.docker.distribution.manifest.v2+json"];
        let name = r.digest().or(r.tag()).unwrap_or("latest").to_owned();
        self.within(r, "pull", async {
            let bytes = transport.manifest(&name, &accepted, MANIFEST_CAP, "the manifest").await?;
            let digest = sha256_digest(&bytes);
            let manifest = parse_manifest(&text, &bytes)?;
            for d in std::iter::once(&manifest.config).chain(&manifest.layers) {
                if matches!(self.store.read_verified(&d.digest, &text), Ok(Some(_))) {
                    continue;
                }
                // The config has the wasm config media type (parse_manifest checked): a small blob.
                let (cap, limit) = self.layer_cap(&d.media_type);
                let out = transport.blob(d, cap, limit).await?;
                self.store.write_blob(&d.digest, &out, &text)?;
            }
            self.store.write_blob(&digest, &bytes, &text)?;
            Ok(digest)
        })
    }

    fn record(&self, r: &PluginRef, digest: &str) -> Result<(), RegistryError> {
        if let (Some(tag), None) = (r.tag(), r.digest()) {
            self.store.write_tag(r.registry(), r.repository(), tag, digest)?;
        }
        self.store.note_reference(digest, &r.to_string())
    }
}

/// Look the registry's host name up first, so a misspelt host is told as such rather than as a
/// transport error; a `.invalid` name (RFC 6761) is refused without asking any resolver.
pub(crate) fn check_host(r: &PluginRef) -> Result<(), RegistryError> {
    use std::net::ToSocketAddrs as _;
    let host = r.host();
    if host.parse::<std::net::IpAddr>().is_ok() {
        return Ok(());
    }
    let unknown = |why: String| RegistryError::UnknownHost { reference: r.to_string(), host: host.to_owned(), why };
    let lower = host.to_ascii_lowercase();
    if lower == "invalid" || lower.ends_with(".invalid") {
        return Err(unknown("a reserved name that never resolves".to_owned()));
    }
    match (host, 443).to_socket_addrs().map(|mut addrs| addrs.next()) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(unknown("it has no addresses".to_owned())),
        Err(err) => Err(unknown(err.to_string())),
    }
}

pub(crate) fn http_header(value: &'static str) -> http::HeaderValue {
    http::HeaderValue::from_static(value)
}

pub(crate) fn descriptor(media_type: &str, digest: &str, size: usize) -> serde_json::Value {
    serde_json::json!({ "mediaType": media_type, "digest": digest, "size": size })
}

/// The manifest, when it is a wasm artifact (its config has the wasm config media type and one
/// layer is a component).
fn parse_manifest(text: &str, bytes: &[u8]) -> Result<OciImageManifest, RegistryError> {
    let manifest: OciImageManifest = serde_json::from_slice(bytes).map_err(|err| RegistryError::NotWasm {
        reference: text.to_owned(),
        config: format!("(unreadable manifest: {err})"),
        layers: String::new(),
    })?;
    let has_wasm = manifest.layers.iter().any(|l| l.media_type == WASM_LAYER_MEDIA_TYPE);
    if manifest.config.media_type != WASM_CONFIG_MEDIA_TYPE || !has_wasm {
        return Err(not_wasm(text, &manifest));
    }
    if let Some(unknown) = manifest.layers.iter().find(|l| !crate::bundle::known_layer(&l.media_type)) {
        return Err(RegistryError::UnknownLayer { reference: text.to_owned(), media_type: unknown.media_type.clone() });
    }
    // Two components (or two TOMLs, two feeds) would leave which one runs to the order of the
    // layers: refused, never picked.
    for (i, layer) in manifest.layers.iter().enumerate() {
        let count = manifest.layers.iter().filter(|l| l.media_type == layer.media_type).count();
        if count > 1 && manifest.layers[..i].iter().all(|l| l.media_type != layer.media_type) {
            return Err(RegistryError::DuplicateLayer {
                reference: text.to_owned(),
                media_type: layer.media_type.clone(),
                count,
            });
        }
    }
    Ok(manifest)
}

/// The OCI annotation naming a layer's file.
const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

/// A layer's file name: the plugin's own for the component, the bundle's usual names for the rest.
fn layer_title(media_type: &str, plugin: &str) -> String {
    match media_type {
        WASM_LAYER_MEDIA_TYPE => plugin.to_owned(),
        crate::bundle::BUNDLE_CONFIG_MEDIA_TYPE => "run.toml".to_owned(),
        crate::bundle::BUNDLE_DATA_JSONL_MEDIA_TYPE => "data.jsonl".to_owned(),
        crate::bundle::BUNDLE_DATA_CSV_MEDIA_TYPE => "data.csv".to_owned(),
        other => other.replace(['/', '+'], "-"),
    }
}

fn not_wasm(text: &str, manifest: &OciImageManifest) -> RegistryError {
    RegistryError::NotWasm {
        reference: text.to_owned(),
        config: manifest.config.media_type.clone(),
        layers: manifest.layers.iter().map(|l| l.media_type.as_str()).collect::<Vec<_>>().join(", "),
    }
}

/// One line for an oci-client failure.
fn map_err(r: &PluginRef, creds: &Credentials, err: &OciDistributionError) -> RegistryError {
    let reference = r.to_string();
    let denied = |why: String| RegistryError::Denied {
        reference: reference.clone(),
        why,
        source_tried: creds.source.to_string(),
    };
    match err {
        OciDistributionError::AuthenticationFailure(why) => denied(why.clone()),
        OciDistributionError::UnauthorizedError { .. } => denied("401 unauthorized".to_owned()),
        OciDistributionError::ServerError { code: code @ (401 | 403), .. } => denied(format!("HTTP {code}")),
        OciDistributionError::ServerError { code: 404, .. } | OciDistributionError::ImageManifestNotFoundError(_) => {
            RegistryError::NotFound { reference, why: err.to_string() }
        }
        OciDistributionError::RegistryError { envelope, .. } => {
            let codes: Vec<&OciErrorCode> = envelope.errors.iter().map(|e| &e.code).collect();
            if codes.iter().any(|c| matches!(c, OciErrorCode::Unauthorized | OciErrorCode::Denied)) {
                denied(envelope.to_string())
            } else if codes.iter().any(|c| {
                matches!(c, OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown | OciErrorCode::BlobUnknown)
            }) {
                RegistryError::NotFound { reference, why: envelope.to_string() }
            } else {
                RegistryError::Unreachable { reference, why: envelope.to_string() }
            }
        }
        // What the registry served is not what the digest names (a manifest tampered with on its
        // disk): refused as any blob that fails its digest, a plugin problem.
        OciDistributionError::DigestError(oci_client::errors::DigestError::VerificationError { expected, actual }) => {
            RegistryError::DigestMismatch { reference, expected: expected.clone(), actual: actual.clone() }
        }
        _ => unreachable_err(r, err),
    }
}

/// The error with its sources, on one line (reqwest hides "connection refused" in a source).
pub(crate) fn unreachable_err(r: &PluginRef, err: &dyn std::error::Error) -> RegistryError {
    RegistryError::Unreachable { reference: r.to_string(), why: with_sources(err) }
}

/// `err` and each of its sources, on one line.
pub(crate) fn with_sources(err: &dyn std::error::Error) -> String {
    let mut why = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        // An error whose message already quotes its source's would say it twice.
        let said = s.to_string();
        if !why.contains(&said) {
            why.push_str(": ");
            why.push_str(&said);
        }
        source = s.source();
    }
    why.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_is_plain_http_by_default() {
        assert!(is_loopback("127.0.0.1") && is_loopback("::1") && is_loopback("localhost"));
        assert!(!is_loopback("registry.internal") && !is_loopback("10.0.0.1"));
    }
}
