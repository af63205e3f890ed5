//! A self-signed certificate for loopback, so https can be tested with `--ca-cert`.

use std::sync::Arc;

use anyhow::Context as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A freshly generated certificate for `localhost`, `127.0.0.1` and `::1`.
pub struct SelfSigned {
    /// The certificate in PEM, to hand to clients as their CA (`--ca-cert`).
    pub cert_pem: String,
    /// A server configuration using it, offering h2 and http/1.1 by ALPN.
    pub config: Arc<rustls::ServerConfig>,
}

/// Generate a certificate and the server configuration that presents it.
pub fn self_signed() -> anyhow::Result<SelfSigned> {
    let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    let certified = rcgen::generate_simple_self_signed(names).context("generating a self-signed certificate")?;
    let cert_pem = certified.cert.pem();
    let cert = CertificateDer::from(certified.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .context("loading the self-signed certificate")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(SelfSigned { cert_pem, config: Arc::new(config) })
}
