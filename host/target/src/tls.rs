//! A self-signed certificate for loopback, so https can be tested with `--ca-cert`; optionally
//! requiring clients to present a certificate signed by a given CA (mTLS,
//! `--require-client-cert CA.pem`). [`ClientPki`] makes such a CA and a client certificate, for
//! tests and demos.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;

/// A freshly generated certificate for `localhost`, `127.0.0.1` and `::1`.
pub struct SelfSigned {
    /// The certificate in PEM, to hand to clients as their CA (`--ca-cert`).
    pub cert_pem: String,
    /// A server configuration using it, offering h2 and http/1.1 by ALPN.
    pub config: Arc<rustls::ServerConfig>,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Generate a certificate and the server configuration that presents it.
pub fn self_signed() -> anyhow::Result<SelfSigned> {
    serving(None)
}

/// [`self_signed`], refusing clients without a certificate signed by one in the PEM file
/// `client_ca` (errors name `--require-client-cert` and the file).
pub fn self_signed_requiring_client_cert(client_ca: &Path) -> anyhow::Result<SelfSigned> {
    let shown = client_ca.display();
    let pem = loadhost_input::read(client_ca, loadhost_input::PEM)
        .map_err(|err| anyhow::anyhow!("--require-client-cert {shown}: cannot read it: {err}"))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|err| anyhow::anyhow!("--require-client-cert {shown}: not a PEM certificate file: {err}"))?;
    if certs.is_empty() {
        anyhow::bail!("--require-client-cert {shown}: no certificate in the file");
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in certs {
        roots.add(cert).with_context(|| format!("--require-client-cert {shown}: unusable CA certificate"))?;
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .with_context(|| format!("--require-client-cert {shown}: unusable CA"))?;
    serving(Some(verifier))
}

/// A self-signed certificate, and a server configuration presenting it that verifies clients
/// with `clients` (or asks for no certificate).
fn serving(clients: Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>) -> anyhow::Result<SelfSigned> {
    let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    let certified = rcgen::generate_simple_self_signed(names).context("generating a self-signed certificate")?;
    let cert_pem = certified.cert.pem();
    let cert = CertificateDer::from(certified.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der()));
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = match clients {
        Some(verifier) => builder.with_client_cert_verifier(verifier),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(vec![cert], key).context("loading the self-signed certificate")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(SelfSigned { cert_pem, config: Arc::new(config) })
}

/// A certificate authority and one client certificate it signed, in PEM: what an mTLS test needs
/// (the CA for `loadhost target --require-client-cert`, the pair for `--client-cert`/`--client-key`).
pub struct ClientPki {
    /// The CA's certificate.
    pub ca_pem: String,
    /// The client's certificate, signed by the CA.
    pub cert_pem: String,
    /// The client's private key (PKCS#8).
    pub key_pem: String,
}

/// Generate a CA and a client certificate (`CN=loadhost client`, for client authentication).
pub fn client_pki() -> anyhow::Result<ClientPki> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().context("generating the CA key")?;
    let mut ca = CertificateParams::new(Vec::new()).context("CA parameters")?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "loadhost test CA");
    let ca_cert = ca.self_signed(&ca_key).context("signing the CA")?;
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().context("generating the client key")?;
    let mut client = CertificateParams::new(Vec::new()).context("client parameters")?;
    client.distinguished_name.push(DnType::CommonName, "loadhost client");
    client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = client.signed_by(&key, &issuer).context("signing the client certificate")?;
    Ok(ClientPki { ca_pem: ca_cert.pem(), cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn a_bad_client_ca_file_is_one_line_naming_the_flag_and_file() {
        let dir = std::env::temp_dir().join(format!("loadhost-target-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let junk = dir.join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let err = self_signed_requiring_client_cert(&junk).err().unwrap().to_string();
        assert_eq!(err, format!("--require-client-cert {}: no certificate in the file", junk.display()));
        let missing = dir.join("missing.pem");
        let err = format!("{:#}", self_signed_requiring_client_cert(&missing).err().unwrap());
        assert!(err.starts_with(&format!("--require-client-cert {}: ", missing.display())), "{err}");
        let pki = client_pki().unwrap();
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, &pki.ca_pem).unwrap();
        assert!(self_signed_requiring_client_cert(&ca).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
