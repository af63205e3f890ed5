//! Registry credentials: `--registry-user` with a password on standard input, else the Docker
//! credentials file (`$REGISTRY_AUTH_FILE`, `$DOCKER_CONFIG/config.json`, `~/.docker/config.json`),
//! else anonymous. Credential helpers (`credsStore`) are not run.

use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;

use crate::error::RegistryError;

/// Where the credentials for a registry came from, as failure messages name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// No credentials.
    Anonymous,
    /// `--registry-user` and `--registry-password-stdin`.
    CommandLine,
    /// A Docker-style credentials file.
    File(PathBuf),
}

impl fmt::Display for CredentialSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Anonymous => f.write_str("none (anonymous; give --registry-user or a docker config.json)"),
            Self::CommandLine => f.write_str("--registry-user"),
            Self::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The credentials for one registry.
#[derive(Clone)]
pub struct Credentials {
    pub(crate) auth: RegistryAuth,
    /// Where they came from.
    pub source: CredentialSource,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials").field("source", &self.source).finish_non_exhaustive()
    }
}

impl Credentials {
    /// No credentials.
    pub fn anonymous() -> Self {
        Self { auth: RegistryAuth::Anonymous, source: CredentialSource::Anonymous }
    }

    /// A user and password given on the command line.
    pub fn basic(user: String, password: String) -> Self {
        Self { auth: RegistryAuth::Basic(user, password), source: CredentialSource::CommandLine }
    }

    /// The credentials for `registry` from the Docker credentials file, else anonymous. A file
    /// that exists but cannot be read or parsed is an error naming it.
    pub fn from_environment(registry: &str) -> Result<Self, RegistryError> {
        let Some(path) = auth_file() else { return Ok(Self::anonymous()) };
        let text = match loadhost_input::read_to_string(&path, loadhost_input::TEXT) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Self::anonymous()),
            Err(err) => return Err(RegistryError::Input(format!("{}: {err}", path.display()))),
        };
        match lookup(&text, registry, &path)? {
            Some((user, password)) => {
                Ok(Self { auth: RegistryAuth::Basic(user, password), source: CredentialSource::File(path) })
            }
            None => Ok(Self::anonymous()),
        }
    }
}

/// `$REGISTRY_AUTH_FILE`, else `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
fn auth_file() -> Option<PathBuf> {
    if let Some(file) = std::env::var_os("REGISTRY_AUTH_FILE") {
        return Some(PathBuf::from(file));
    }
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG") {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker").join("config.json"))
}

/// The user and password for `registry` in a Docker config.json's `auths`.
fn lookup(text: &str, registry: &str, path: &Path) -> Result<Option<(String, String)>, RegistryError> {
    let bad = |why: &str| RegistryError::Input(format!("{}: {why}", path.display()));
    let json: serde_json::Value = serde_json::from_str(text).map_err(|err| bad(&err.to_string()))?;
    let Some(auths) = json.get("auths").and_then(|a| a.as_object()) else { return Ok(None) };
    let entry = auths.iter().find(|(key, _)| {
        let key = key.trim_start_matches("https://").trim_start_matches("http://");
        key.trim_end_matches('/') == registry
    });
    let Some((_, entry)) = entry else { return Ok(None) };
    if let Some(encoded) = entry.get("auth").and_then(|a| a.as_str()) {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|_| bad(&format!("auths.{registry}.auth is not base64")))?;
        let decoded = String::from_utf8(decoded).map_err(|_| bad(&format!("auths.{registry}.auth is not UTF-8")))?;
        let (user, password) =
            decoded.split_once(':').ok_or_else(|| bad(&format!("auths.{registry}.auth is not USER:PASSWORD")))?;
        return Ok(Some((user.to_owned(), password.to_owned())));
    }
    let field = |name: &str| entry.get(name).and_then(|v| v.as_str()).map(str::to_owned);
    Ok(field("username").zip(field("password")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_docker_config_entries() {
        let path = Path::new("config.json");
        let text = r#"{"auths":{"http://127.0.0.1:5000/":{"auth":"dTpw"},"b:1":{"username":"x","password":"y"}}}"#;
        assert_eq!(lookup(text, "127.0.0.1:5000", path).expect("ok"), Some(("u".into(), "p".into())));
        assert_eq!(lookup(text, "b:1", path).expect("ok"), Some(("x".into(), "y".into())));
        assert_eq!(lookup(text, "c", path).expect("ok"), None);
        assert!(lookup("{", "c", path).is_err());
    }
}
