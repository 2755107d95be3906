//! TLS for `https` upstreams: rustls (ring) trusting the system's roots,
//! read once per process, plus a provider's `ca_file`.
//!
//! Built once per endpoint when a provider is built; nothing here runs on
//! the request path except the handshake of a new connection.

use super::error::EndpointError;
use std::sync::{Arc, OnceLock};
use tokio_rustls::rustls;

/// The system's trusted roots, read once per process.
fn native_roots() -> &'static [rustls::pki_types::CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<rustls::pki_types::CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        if found.certs.is_empty() {
            tracing::warn!(errors = ?found.errors, "No system CA certificates found; https upstreams need a ca_file.");
        }
        found.certs
    })
}

/// A TLS connector trusting the system's roots plus `ca_file`.
pub(super) fn tls_connector(ca_file: Option<&std::path::Path>) -> Result<tokio_rustls::TlsConnector, EndpointError> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    let (_added, _ignored) = roots.add_parsable_certificates(native_roots().iter().cloned());
    if let Some(path) = ca_file {
        let pem =
            std::fs::read(path).map_err(|e| EndpointError(format!("cannot read ca_file {}: {e}", path.display())))?;
        let mut found = 0;
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| EndpointError(format!("ca_file {} is not PEM: {e}", path.display())))?;
            roots.add(cert).map_err(|e| EndpointError(format!("ca_file {}: {e}", path.display())))?;
            found += 1;
        }
        if found == 0 {
            return Err(EndpointError(format!("ca_file {} holds no certificate", path.display())));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| EndpointError(format!("TLS setup: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}
