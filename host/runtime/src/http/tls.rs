//! TLS for https targets: the system's roots plus `--ca-cert` files, or no verification at all
//! with `--insecure` (self-signed test targets only); and the client certificate presented to
//! servers that ask for one (mTLS: `--client-cert`/`--client-key`, for every host or per host).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use rustls::client::WantsClientCert;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ConfigBuilder, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// Who to trust, and who to be.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// PEM files whose certificates are trusted in addition to the system's roots.
    pub ca_certs: Vec<PathBuf>,
    /// Trust any certificate (for self-signed test targets).
    pub insecure: bool,
    /// Client certificates for servers that ask for one: at most one for every host, one per host.
    pub client_certs: Vec<ClientCert>,
}

/// A client certificate and its key (PEM files), for one host or (no host) every other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCert {
    /// The host it is presented to (the URL's host, exactly, any case); `None`: every host.
    pub host: Option<String>,
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// Its private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// `--client-cert`/`--client-key` values that do not pair up.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ClientCertError {
    /// A certificate without a key for the same host, or a key without a certificate.
    #[error("--{flag} {value}: no --{other} {wanted} to go with it")]
    Unpaired {
        /// The flag given.
        flag: &'static str,
        /// Its value.
        value: String,
        /// The flag missing.
        other: &'static str,
        /// What the missing flag would take: `FILE`, or `HOST=FILE` for a host.
        wanted: String,
    },
    /// Two values of one flag for the same host (or two for every host).
    #[error("--{flag} {value}: a second one for {whom}; give one per host")]
    Twice {
        /// The flag.
        flag: &'static str,
        /// The second value.
        value: String,
        /// `every host` or `HOST`.
        whom: String,
    },
    /// `HOST=` with no file after it, or an empty host.
    #[error("--{flag} {value}: expected FILE or HOST=FILE")]
    Malformed {
        /// The flag.
        flag: &'static str,
        /// Its value.
        value: String,
    },
}

/// One `[HOST=]FILE` value: a host when there is an `=` with no `/` before it (so a file whose name
/// has an `=` is written with a directory, `./a=b.pem`).
fn host_and_file(flag: &'static str, value: &str) -> Result<(Option<String>, PathBuf), ClientCertError> {
    let malformed = || ClientCertError::Malformed { flag, value: value.to_owned() };
    match value.split_once('=') {
        Some((host, file)) if !host.contains('/') => {
            if host.is_empty() || file.is_empty() {
                return Err(malformed());
            }
            Ok((Some(host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase()), file.into()))
        }
        _ if value.is_empty() => Err(malformed()),
        _ => Ok((None, value.into())),
    }
}

/// Parse one flag's values, refusing two for the same host.
fn by_host(flag: &'static str, values: &[String]) -> Result<Vec<(Option<String>, PathBuf, String)>, ClientCertError> {
    let mut seen: Vec<(Option<String>, PathBuf, String)> = Vec::new();
    for value in values {
        let (host, file) = host_and_file(flag, value)?;
        if seen.iter().any(|(h, _, _)| *h == host) {
            let whom = host.unwrap_or_else(|| "every host".to_owned());
            return Err(ClientCertError::Twice { flag, value: value.clone(), whom });
        }
        seen.push((host, file, value.clone()));
    }
    Ok(seen)
}

impl ClientCert {
    /// Pair `--client-cert [HOST=]CERT.pem` values with `--client-key [HOST=]KEY.pem` ones, by host.
    pub fn pair(certs: &[String], keys: &[String]) -> Result<Vec<ClientCert>, ClientCertError> {
        let certs = by_host("client-cert", certs)?;
        let mut keys = by_host("client-key", keys)?;
        let unpaired = |flag, value: &str, other, host: &Option<String>| ClientCertError::Unpaired {
            flag,
            value: value.to_owned(),
            other,
            wanted: host.as_ref().map_or_else(|| "FILE".to_owned(), |h| format!("{h}=FILE")),
        };
        let mut paired = Vec::with_capacity(certs.len());
        for (host, cert, value) in certs {
            let at = keys.iter().position(|(h, _, _)| *h == host);
            let Some(at) = at else { return Err(unpaired("client-cert", &value, "client-key", &host)) };
            let (_, key, _) = keys.swap_remove(at);
            paired.push(ClientCert { host, cert, key });
        }
        if let Some((host, _, value)) = keys.first() {
            return Err(unpaired("client-key", value, "client-cert", host));
        }
        Ok(paired)
    }
}

/// The client configurations of a run: the default one, and one per host with a certificate of
/// its own (rustls picks a client certificate without knowing the server's name).
#[derive(Debug, Clone)]
pub struct ClientTls {
    /// For every host without one of its own.
    pub default: rustls::ClientConfig,
    /// Per host (lowercase), with that host's certificate.
    pub per_host: Vec<(String, rustls::ClientConfig)>,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client configurations for `options`: files that cannot be read or used are errors naming
/// the flag and the file.
pub fn client_tls(options: &TlsOptions) -> anyhow::Result<ClientTls> {
    let base = verifying(options)?;
    let with = |cert: &ClientCert| -> anyhow::Result<rustls::ClientConfig> {
        let chain = read_certs("--client-cert", &cert.cert)?;
        let key = read_key(&cert.key)?;
        base.clone().with_client_auth_cert(chain, key).map_err(|err| {
            anyhow::anyhow!(
                "--client-cert {} / --client-key {}: unusable pair: {err}",
                cert.cert.display(),
                cert.key.display()
            )
        })
    };
    let mut default = None;
    let mut per_host = Vec::new();
    for cert in &options.client_certs {
        match &cert.host {
            Some(host) => per_host.push((host.clone(), with(cert)?)),
            None => default = Some(with(cert)?),
        }
    }
    Ok(ClientTls { default: default.unwrap_or_else(|| base.with_no_client_auth()), per_host })
}

/// A builder that verifies servers as `options` says, waiting for the client certificate.
fn verifying(options: &TlsOptions) -> anyhow::Result<ConfigBuilder<rustls::ClientConfig, WantsClientCert>> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    if options.insecure {
        return Ok(builder.dangerous().with_custom_certificate_verifier(Arc::new(AcceptAnything)));
    }
    let mut roots = RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        // A system store may hold certificates rustls cannot use; skipping them is what browsers do.
        let _ = roots.add(cert);
    }
    for path in &options.ca_certs {
        for cert in read_certs("--ca-cert", path)? {
            roots.add(cert).with_context(|| format!("--ca-cert {}: unusable certificate", path.display()))?;
        }
    }
    Ok(builder.with_root_certificates(roots))
}

/// A PEM file's bytes: a regular file, at most 16 MiB (`--ca-cert /dev/zero` is refused).
fn read_pem(flag: &str, path: &Path) -> anyhow::Result<Vec<u8>> {
    loadhost_input::read(path, loadhost_input::PEM)
        .map_err(|err| anyhow::anyhow!("{flag} {}: cannot read it: {err}", path.display()))
}

/// The certificates of a PEM file, at least one.
fn read_certs(flag: &str, path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let pem = read_pem(flag, path)?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|err| anyhow::anyhow!("{flag} {}: not a PEM certificate file: {err}", path.display()))?;
    if certs.is_empty() {
        anyhow::bail!("{flag} {}: no certificate in the file", path.display());
    }
    Ok(certs)
}

/// The private key of a PEM file.
fn read_key(path: &Path) -> anyhow::Result<PrivateKeyDer<'static>> {
    let pem = read_pem("--client-key", path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|err| {
        anyhow::anyhow!(
            "--client-key {}: not a PEM private key file (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY): {err}",
            path.display()
        )
    })
}

/// `--insecure`: accepts every certificate. Signatures are still checked by the handshake code
/// paths rustls requires, but nothing about who the server is.
#[derive(Debug)]
struct AcceptAnything;

impl ServerCertVerifier for AcceptAnything {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        provider().signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| (*v).to_owned()).collect()
    }

    fn cert(host: Option<&str>, cert: &str, key: &str) -> ClientCert {
        ClientCert { host: host.map(str::to_owned), cert: cert.into(), key: key.into() }
    }

    #[test]
    fn certificates_pair_with_keys_by_host() {
        let certs = strings(&["c.pem", "API.example=api.pem", "[::1]=six.pem", "./dir/a=b.pem"]);
        let keys = strings(&["api.example=api-key.pem", "k.pem", "::1=six-key.pem"]);
        let err = ClientCert::pair(&certs, &keys).unwrap_err();
        assert_eq!(
            err,
            ClientCertError::Twice { flag: "client-cert", value: "./dir/a=b.pem".into(), whom: "every host".into() },
            "a path with a / before its = is a file for every host"
        );
        let paired = ClientCert::pair(&certs[..3], &keys).unwrap();
        assert_eq!(
            paired,
            [
                cert(None, "c.pem", "k.pem"),
                cert(Some("api.example"), "api.pem", "api-key.pem"),
                cert(Some("::1"), "six.pem", "six-key.pem"),
            ]
        );
        assert!(ClientCert::pair(&[], &[]).unwrap().is_empty());
    }

    #[test]
    fn unpaired_or_malformed_values_name_the_flag() {
        let err = ClientCert::pair(&strings(&["h=c.pem"]), &strings(&["k.pem"])).unwrap_err().to_string();
        assert_eq!(err, "--client-cert h=c.pem: no --client-key h=FILE to go with it");
        let err = ClientCert::pair(&[], &strings(&["k.pem"])).unwrap_err().to_string();
        assert_eq!(err, "--client-key k.pem: no --client-cert FILE to go with it");
        let err = ClientCert::pair(&strings(&["h="]), &[]).unwrap_err().to_string();
        assert_eq!(err, "--client-cert h=: expected FILE or HOST=FILE");
        let err = ClientCert::pair(&strings(&["=c.pem"]), &[]).unwrap_err().to_string();
        assert!(err.contains("expected FILE or HOST=FILE"), "{err}");
    }

    #[test]
    fn bad_files_are_one_line_errors_naming_the_flag_and_file() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not pem\n").unwrap();
        let missing = dir.path().join("missing.pem");
        let with = |cert: &Path, key: &Path| TlsOptions {
            client_certs: vec![ClientCert { host: None, cert: cert.into(), key: key.into() }],
            ..TlsOptions::default()
        };
        let err = client_tls(&with(&missing, &junk)).unwrap_err().to_string();
        assert!(err.starts_with(&format!("--client-cert {}: ", missing.display())), "{err}");
        let err = client_tls(&with(&junk, &junk)).unwrap_err().to_string();
        assert_eq!(err, format!("--client-cert {}: no certificate in the file", junk.display()));
        assert!(!err.contains('\n'));
    }
}
