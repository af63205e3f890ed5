//! The local content-addressed store: `BASE/oci/blobs/sha256/HEX` (manifests, configs and layers,
//! each written atomically and checked against its name before use), `BASE/oci/tags/REGISTRY/REPO/TAG`
//! (the manifest digest a tag last resolved to) and `BASE/oci/refs/HEX` (the references a manifest
//! was pulled or pushed as, for `loadhost cache ls`) and `BASE/oci/signatures/REGISTRY/REPO/HEX` (the
//! signature manifests that verified for a manifest, kept as blobs).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::error::RegistryError;

/// The store under a cache base folder.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// One stored manifest, as `loadhost cache ls` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreEntry {
    /// The manifest digest (`sha256:…`).
    pub digest: String,
    /// The references it was pulled or pushed as.
    pub references: Vec<String>,
    /// The bytes of the manifest and every blob it names that are in the store.
    pub size: u64,
    /// The manifest's file in the store.
    pub path: PathBuf,
}

/// `sha256:HEX` of `bytes`.
pub(crate) fn sha256_digest(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn store_err(path: &Path, why: impl std::fmt::Display) -> RegistryError {
    RegistryError::Store { path: path.display().to_string(), why: why.to_string() }
}

/// The hex part of a `sha256:` digest, refusing anything that could escape the folder.
fn hex_of(digest: &str) -> Option<&str> {
    let hex = digest.strip_prefix("sha256:")?;
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hex)
}

impl Store {
    /// The store in `base/oci` (`base` is the cache base folder); created 0700 when first written.
    pub fn new(base: &Path) -> Self {
        Self { root: base.join("oci") }
    }

    /// Create the store's folder (0700) and refuse it, and the cache base above it, when another
    /// user owns either or may write to it: blobs are checked against their digests, but a tag's
    /// record could be pointed at another plugin the store holds.
    pub fn ensure_private(&self) -> Result<(), RegistryError> {
        use std::os::unix::fs::MetadataExt as _;
        create_private_dir(&self.root).map_err(|err| store_err(&self.root, err))?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        for dir in self.root.parent().into_iter().chain([self.root.as_path()]) {
            let meta = std::fs::metadata(dir).map_err(|err| store_err(dir, err))?;
            if meta.uid() != me {
                return Err(store_err(
                    dir,
                    format!("belongs to another user (uid {}); use your own LOADHOST_CACHE_DIR", meta.uid()),
                ));
            }
            if meta.mode() & 0o022 != 0 {
                return Err(store_err(
                    dir,
                    format!("is writable by other users (mode {:o}); chmod go-w it", meta.mode() & 0o777),
                ));
            }
        }
        Ok(())
    }

    /// The store's folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the blob with `digest` is (or would be) stored.
    pub fn blob_path(&self, digest: &str) -> Option<PathBuf> {
        hex_of(digest).map(|hex| self.root.join("blobs").join("sha256").join(hex))
    }

    /// The stored blob's bytes, when present and matching its digest. A mismatching blob is
    /// removed (so the next pull fetches it again) and reported.
    pub fn read_verified(&self, digest: &str, reference: &str) -> Result<Option<Vec<u8>>, RegistryError> {
        let Some(path) = self.blob_path(digest) else {
            return Err(RegistryError::Input(format!("{reference}: unsupported digest {digest}")));
        };
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(store_err(&path, err)),
        };
        let actual = sha256_digest(&bytes);
        if actual != digest {
            // A blob that does not match its name is never used; removing it lets a pull repair it.
            let _ = std::fs::remove_file(&path);
            return Err(RegistryError::DigestMismatch {
                reference: reference.to_owned(),
                expected: digest.to_owned(),
                actual,
            });
        }
        Ok(Some(bytes))
    }

    /// Store `bytes` as the blob `digest`, refusing them when they do not match it.
    pub fn write_blob(&self, digest: &str, bytes: &[u8], reference: &str) -> Result<PathBuf, RegistryError> {
        let actual = sha256_digest(bytes);
        if actual != digest {
            return Err(RegistryError::DigestMismatch {
                reference: reference.to_owned(),
                expected: digest.to_owned(),
                actual,
            });
        }
        let path = self
            .blob_path(digest)
            .ok_or_else(|| RegistryError::Input(format!("{reference}: unsupported digest {digest}")))?;
        self.write_atomic(&path, bytes)?;
        Ok(path)
    }

    /// Record that `tag_ref` (registry/repo:tag) resolved to `digest`.
    pub(crate) fn write_tag(
        &self,
        registry: &str,
        repository: &str,
        tag: &str,
        digest: &str,
    ) -> Result<(), RegistryError> {
        let path = self.tag_path(registry, repository, tag);
        self.write_atomic(&path, digest.as_bytes())
    }

    /// The digest a tag last resolved to, when recorded.
    pub(crate) fn read_tag(&self, registry: &str, repository: &str, tag: &str) -> Option<String> {
        let text = std::fs::read_to_string(self.tag_path(registry, repository, tag)).ok()?;
        let digest = text.trim().to_owned();
        hex_of(&digest).is_some().then_some(digest)
    }

    /// Add `reference` to the references recorded for the manifest `digest`.
    pub(crate) fn note_reference(&self, digest: &str, reference: &str) -> Result<(), RegistryError> {
        let Some(hex) = hex_of(digest) else { return Ok(()) };
        let path = self.root.join("refs").join(hex);
        let mut lines: Vec<String> =
            std::fs::read_to_string(&path).unwrap_or_default().lines().map(str::to_owned).collect();
        if !lines.iter().any(|l| l == reference) {
            lines.push(reference.to_owned());
        }
        self.write_atomic(&path, format!("{}\n", lines.join("\n")).as_bytes())
    }

    /// The signature manifests kept for the manifest `digest` of a repository (each verified
    /// when it was kept).
    pub(crate) fn signatures(&self, registry: &str, repository: &str, digest: &str) -> Vec<String> {
        let Some(path) = self.signatures_path(registry, repository, digest) else { return Vec::new() };
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines().filter(|l| hex_of(l).is_some()).map(str::to_owned).collect()
    }

    /// Keep the signature manifest `signature` (already a blob) for the manifest `digest` of a
    /// repository.
    pub(crate) fn note_signature(
        &self,
        registry: &str,
        repository: &str,
        digest: &str,
        signature: &str,
    ) -> Result<(), RegistryError> {
        let Some(path) = self.signatures_path(registry, repository, digest) else { return Ok(()) };
        let mut lines = self.signatures(registry, repository, digest);
        if !lines.iter().any(|l| l == signature) {
            lines.push(signature.to_owned());
        }
        self.write_atomic(&path, format!("{}\n", lines.join("\n")).as_bytes())
    }

    /// `BASE/oci/signatures/REGISTRY/REPO/HEX`: a signature names its repository, so it is kept
    /// by it.
    fn signatures_path(&self, registry: &str, repository: &str, digest: &str) -> Option<PathBuf> {
        let hex = hex_of(digest)?;
        Some(self.repository_path("signatures", registry, repository).join(hex))
    }

    fn tag_path(&self, registry: &str, repository: &str, tag: &str) -> PathBuf {
        self.repository_path("tags", registry, repository).join(format!("{tag}.digest"))
    }

    /// `BASE/oci/KIND/REGISTRY/REPO`.
    fn repository_path(&self, kind: &str, registry: &str, repository: &str) -> PathBuf {
        // Registry hosts may hold ':' (ports) and '[' (IPv6): keep the names plain.
        let registry: String =
            registry.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect();
        let mut path = self.root.join(kind).join(registry);
        for part in repository.split('/').filter(|p| !p.is_empty() && *p != "." && *p != "..") {
            path.push(part);
        }
        path
    }

    /// Write `bytes` to `path` through a temporary file in the same folder and a rename, so no
    /// reader ever sees half a file.
    fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<(), RegistryError> {
        let dir = path.parent().unwrap_or(&self.root);
        create_private_dir(dir).map_err(|err| store_err(dir, err))?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|err| store_err(dir, err))?;
        tmp.write_all(bytes).map_err(|err| store_err(path, err))?;
        tmp.persist(path).map_err(|err| store_err(path, err.error))?;
        Ok(())
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// The manifests in the store under the cache base `base`, with the references they were pulled
/// or pushed as and their total size: what `loadhost cache ls` shows about shared plugins.
pub fn store_entries(base: &Path) -> Vec<StoreEntry> {
    let store = Store::new(base);
    let Ok(dir) = std::fs::read_dir(store.root.join("refs")) else { return Vec::new() };
    let mut entries: Vec<StoreEntry> = dir
        .flatten()
        .filter_map(|file| {
            let hex = file.file_name().to_str()?.to_owned();
            let digest = format!("sha256:{hex}");
            let path = store.blob_path(&digest)?;
            let manifest = std::fs::read(&path).ok()?;
            let references = std::fs::read_to_string(file.path()).ok()?.lines().map(str::to_owned).collect();
            let size = manifest.len() as u64 + blobs_size(&store, &manifest);
            Some(StoreEntry { digest, references, size, path })
        })
        .collect();
    entries.sort_by(|a, b| a.digest.cmp(&b.digest));
    entries
}

/// The stored size of the blobs a manifest names.
fn blobs_size(store: &Store, manifest: &[u8]) -> u64 {
    let Ok(m) = serde_json::from_slice::<oci_client::manifest::OciImageManifest>(manifest) else { return 0 };
    std::iter::once(&m.config)
        .chain(m.layers.iter())
        .filter_map(|d| store.blob_path(&d.digest))
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_checked_against_their_digest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::new(dir.path());
        let digest = sha256_digest(b"hello");
        assert!(store.write_blob(&digest, b"hullo", "r").is_err());
        let path = store.write_blob(&digest, b"hello", "r").expect("writes");
        assert_eq!(store.read_verified(&digest, "r").expect("reads"), Some(b"hello".to_vec()));
        std::fs::write(&path, b"jello").expect("corrupts");
        assert!(matches!(store.read_verified(&digest, "r"), Err(RegistryError::DigestMismatch { .. })));
        assert_eq!(store.read_verified(&digest, "r").expect("gone"), None);
        assert!(store.blob_path("sha256:../../etc").is_none());
    }

    #[test]
    fn a_store_others_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::new(dir.path());
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
        store.ensure_private().expect("a private store");
        std::fs::set_permissions(store.root(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let err = store.ensure_private().expect_err("a world-writable store").to_string();
        assert!(err.contains("writable by other users (mode 777)"), "{err}");
    }

    #[test]
    fn tags_and_references_are_recorded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::new(dir.path());
        let digest = sha256_digest(b"{}");
        store.write_tag("127.0.0.1:5000", "team/x", "1.0", &digest).expect("tag");
        assert_eq!(store.read_tag("127.0.0.1:5000", "team/x", "1.0"), Some(digest.clone()));
        store.write_blob(&digest, b"{}", "r").expect("blob");
        store.note_reference(&digest, "127.0.0.1:5000/team/x:1.0").expect("note");
        store.note_reference(&digest, "127.0.0.1:5000/team/x:1.0").expect("note");
        let entries = store_entries(dir.path());
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].references, vec!["127.0.0.1:5000/team/x:1.0".to_owned()]);
    }
}
