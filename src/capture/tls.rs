//! `--ca-cert PEM` / `RANKPROF_CA_CERT`: certificate authorities to trust for https targets
//! besides the Mozilla roots of `webpki-roots` (a router or workers behind a private CA). The
//! PEM file is read and checked once, when the option is parsed ([`CaCert::load`]); the
//! [`rustls::ClientConfig`] it gives is what [`super::http::Http`] hands to ureq.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};

/// The certificates of one PEM file, checked as trust anchors. `Debug` shows the path and the
/// count only.
#[derive(Clone)]
pub struct CaCert {
    path: PathBuf,
    config: Arc<ClientConfig>,
    count: usize,
}

impl CaCert {
    /// Reads every `CERTIFICATE` block of `path`. Fails, saying why, for a file that cannot be
    /// read, holds no certificate, or holds one that is not a usable trust anchor.
    pub fn load(path: &Path) -> Result<CaCert, String> {
        let shown = path.display();
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
        let certs = CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{shown} is not a valid PEM file: {e}"))?;
        if certs.is_empty() {
            return Err(format!(
                "{shown} holds no certificate (no -----BEGIN CERTIFICATE----- block)"
            ));
        }
        let mut roots = RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let count = certs.len();
        for (i, c) in certs.into_iter().enumerate() {
            roots
                .add(c)
                .map_err(|e| format!("certificate {} of {shown} is not usable: {e}", i + 1))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS set-up: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(CaCert {
            path: path.to_path_buf(),
            config: Arc::new(config),
            count,
        })
    }

    /// The TLS client configuration: the Mozilla roots plus these certificates.
    pub fn client_config(&self) -> Arc<ClientConfig> {
        Arc::clone(&self.config)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::fmt::Debug for CaCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CaCert({}, {} certificate(s))",
            self.path.display(),
            self.count
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_certificates_is_refused_with_the_reason() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("empty.pem");
        std::fs::write(&p, "not a certificate\n").unwrap();
        let e = CaCert::load(&p).unwrap_err();
        assert!(e.contains("holds no certificate"), "{e}");
        let e = CaCert::load(&d.path().join("missing.pem")).unwrap_err();
        assert!(e.contains("cannot read"), "{e}");
        // a CERTIFICATE block whose content is not a certificate
        std::fs::write(
            &p,
            "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let e = CaCert::load(&p).unwrap_err();
        assert!(e.contains("is not usable"), "{e}");
    }
}
