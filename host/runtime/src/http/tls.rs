//! TLS for https targets: the system's roots plus `--ca-cert` files, or no verification at all
//! with `--insecure` (self-signed test targets only).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// Who to trust.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// PEM files whose certificates are trusted in addition to the system's roots.
    pub ca_certs: Vec<PathBuf>,
    /// Trust any certificate (for self-signed test targets).
    pub insecure: bool,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client configuration for `options`.
pub fn client_config(options: &TlsOptions) -> anyhow::Result<rustls::ClientConfig> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    if options.insecure {
        return Ok(builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnything))
            .with_no_client_auth());
    }
    let mut roots = RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        // A system store may hold certificates rustls cannot use; skipping them is what browsers do.
        let _ = roots.add(cert);
    }
    for path in &options.ca_certs {
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(path)
                .and_then(|iter| iter.collect())
                .map_err(|err| anyhow::anyhow!("--ca-cert {}: not a PEM certificate file: {err}", path.display()))?;
        if certs.is_empty() {
            anyhow::bail!("--ca-cert {}: no certificate in the file", path.display());
        }
        for cert in certs {
            roots.add(cert).with_context(|| format!("--ca-cert {}: unusable certificate", path.display()))?;
        }
    }
    Ok(builder.with_root_certificates(roots).with_no_client_auth())
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
