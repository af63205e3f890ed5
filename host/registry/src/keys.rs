//! Signing keys: ECDSA P-256 with SHA-256 (cosign's default algorithm). A private key is a PKCS#8
//! PEM file (`NAME.key`, created 0600), a public key an SPKI PEM file (`NAME.pub`, `PUBLIC KEY`, the
//! form cosign's public keys have). The private key is not encrypted (cosign encrypts its own
//! behind a password prompt): signing runs unattended in CI, where the file's mode and the CI
//! secret store protect it.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use p256::pkcs8::{
    DecodePrivateKey as _, DecodePublicKey as _, EncodePrivateKey as _, EncodePublicKey as _, LineEnding,
};

use crate::error::RegistryError;

/// The largest key file read: a PEM key is a few hundred bytes.
const KEY_CAP: loadhost_input::Cap = loadhost_input::Cap::new(64 << 10, "a key file");

fn key_err(path: &Path, why: impl std::fmt::Display) -> RegistryError {
    RegistryError::Input(format!("{}: {why}", path.display()))
}

/// A private key, read from its PKCS#8 PEM file.
#[derive(Debug)]
pub struct PrivateKey {
    path: PathBuf,
    key: SigningKey,
}

/// A public key, read from its SPKI PEM file.
#[derive(Debug, Clone)]
pub struct PublicKey {
    path: PathBuf,
    key: VerifyingKey,
}

impl PrivateKey {
    /// Read the key at `path` (`-----BEGIN PRIVATE KEY-----`, a P-256 key).
    pub fn read(path: &Path) -> Result<Self, RegistryError> {
        let text = loadhost_input::read_to_string(path, KEY_CAP).map_err(|err| key_err(path, err))?;
        let key = SigningKey::from_pkcs8_pem(&text).map_err(|err| {
            key_err(path, format!("not an ECDSA P-256 private key in PKCS#8 PEM (as `loadhost keygen` writes): {err}"))
        })?;
        warn_if_readable_by_others(path);
        Ok(Self { path: path.to_path_buf(), key })
    }

    /// The key's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The DER-encoded ECDSA signature (SHA-256) of `payload`.
    pub(crate) fn sign(&self, payload: &[u8]) -> Vec<u8> {
        let signature: Signature = self.key.sign(payload);
        signature.to_der().as_bytes().to_vec()
    }
}

impl PublicKey {
    /// Read the key at `path` (`-----BEGIN PUBLIC KEY-----`, a P-256 key).
    pub fn read(path: &Path) -> Result<Self, RegistryError> {
        let text = loadhost_input::read_to_string(path, KEY_CAP).map_err(|err| key_err(path, err))?;
        let key = VerifyingKey::from_public_key_pem(&text).map_err(|err| {
            key_err(path, format!("not an ECDSA P-256 public key in PEM (as `loadhost keygen` writes): {err}"))
        })?;
        Ok(Self { path: path.to_path_buf(), key })
    }

    /// The key's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `signature` (DER) is this key's signature of `payload`.
    pub(crate) fn verifies(&self, payload: &[u8], signature: &[u8]) -> bool {
        Signature::from_der(signature).is_ok_and(|s| self.key.verify(payload, &s).is_ok())
    }
}

/// A private key others may read is still used (a CI runner may have written it so), but said.
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            "{}: a private key readable by others (mode {:o}); chmod 600 it",
            path.display(),
            meta.permissions().mode() & 0o777
        );
    }
}

/// Make a key pair: `NAME.key` (the private key, 0600) and `NAME.pub` (0644). Neither file may
/// exist: a key is never overwritten (signatures made with it would no longer verify).
pub fn keygen(name: &str) -> Result<(PathBuf, PathBuf), RegistryError> {
    let private = PathBuf::from(format!("{name}.key"));
    let public = PathBuf::from(format!("{name}.pub"));
    for path in [&private, &public] {
        if path.symlink_metadata().is_ok() {
            return Err(key_err(
                path,
                "already exists; a key is never overwritten (remove it, or choose another NAME)",
            ));
        }
    }
    let key = SigningKey::random(&mut rand_core_06::OsRng);
    let pem = key.to_pkcs8_pem(LineEnding::LF).map_err(|err| key_err(&private, err))?;
    let public_pem = key.verifying_key().to_public_key_pem(LineEnding::LF).map_err(|err| key_err(&public, err))?;
    write_new(&private, pem.as_bytes(), 0o600)?;
    if let Err(err) = write_new(&public, public_pem.as_bytes(), 0o644) {
        // Half a pair is no use: the private key goes too.
        let _ = std::fs::remove_file(&private);
        return Err(err);
    }
    Ok((private, public))
}

/// Create `path` with `mode`, refusing an existing file (`O_EXCL`: no race with another writer).
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), RegistryError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(path).map_err(|err| {
        match err.kind() {
            std::io::ErrorKind::AlreadyExists => key_err(path, "already exists; a key is never overwritten"),
            _ => key_err(path, err),
        }
    })?;
    file.write_all(bytes).and_then(|()| file.sync_all()).map_err(|err| key_err(path, err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_pair_signs_and_verifies_and_is_never_overwritten() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let name = dir.path().join("team").display().to_string();
        let (private, public) = keygen(&name).expect("keygen");
        assert_eq!(std::fs::metadata(&private).expect("key").permissions().mode() & 0o777, 0o600);
        assert!(std::fs::read_to_string(&public).expect("pub").starts_with("-----BEGIN PUBLIC KEY-----"));
        let signer = PrivateKey::read(&private).expect("reads the private key");
        let verifier = PublicKey::read(&public).expect("reads the public key");
        let signature = signer.sign(b"payload");
        assert!(verifier.verifies(b"payload", &signature));
        assert!(!verifier.verifies(b"payloaD", &signature));
        assert!(!verifier.verifies(b"payload", b"not DER"));
        let err = keygen(&name).expect_err("refuses to overwrite").to_string();
        assert!(err.contains("team.key: already exists"), "{err}");
        assert!(PublicKey::read(&private).is_err() && PrivateKey::read(&public).is_err());
    }
}
