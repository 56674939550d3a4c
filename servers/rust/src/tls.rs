//! TLS: loading the PEM files into rustls, and self-signed certificates for
//! `protobench serve --tls` and tests.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::TlsFiles;

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The certificate file holds no certificate.
    #[error("no PEM certificate in {0}")]
    NoCertificate(PathBuf),
    /// The key file holds no private key.
    #[error("no PEM private key (PKCS#8, PKCS#1 or SEC1) in {0}")]
    NoKey(PathBuf),
    /// rustls refused the certificate and key.
    #[error("invalid certificate or key")]
    Rustls(#[from] rustls::Error),
    /// The self-signed certificate could not be made.
    #[error("cannot generate a self-signed certificate")]
    Generate(#[from] rcgen::Error),
    /// A generated file could not be written.
    #[error("cannot write {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The certificate chain and key, read once.
#[derive(Debug)]
pub(crate) struct Identity {
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

impl Identity {
    pub(crate) fn load(files: &TlsFiles) -> Result<Self, TlsError> {
        let read = |path: &Path| {
            std::fs::read(path).map_err(|source| TlsError::Read {
                path: path.to_owned(),
                source,
            })
        };
        let cert_pem = read(&files.cert)?;
        let key_pem = read(&files.key)?;
        let certs = rustls_pemfile::certs(&mut cert_pem.as_slice())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| TlsError::Read {
                path: files.cert.clone(),
                source,
            })?;
        if certs.is_empty() {
            return Err(TlsError::NoCertificate(files.cert.clone()));
        }
        let key = rustls_pemfile::private_key(&mut key_pem.as_slice())
            .map_err(|source| TlsError::Read {
                path: files.key.clone(),
                source,
            })?
            .ok_or_else(|| TlsError::NoKey(files.key.clone()))?;
        Ok(Identity { certs, key })
    }

    /// A rustls server configuration offering exactly `alpn`.
    pub(crate) fn server_config(&self, alpn: &[u8]) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(self.certs.clone(), self.key.clone_key())?;
        config.alpn_protocols = vec![alpn.to_vec()];
        Ok(Arc::new(config))
    }
}

/// Generates a self-signed certificate for `localhost`, `127.0.0.1` and
/// `::1` and writes `cert.pem` and `key.pem` into `dir` (created if needed).
pub fn generate_self_signed(dir: &Path) -> Result<TlsFiles, TlsError> {
    let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    let certified = rcgen::generate_simple_self_signed(names)?;
    let files = TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    std::fs::create_dir_all(dir).map_err(|source| TlsError::Write {
        path: dir.to_owned(),
        source,
    })?;
    std::fs::write(&files.cert, certified.cert.pem()).map_err(|source| TlsError::Write {
        path: files.cert.clone(),
        source,
    })?;
    write_private(&files.key, certified.signing_key.serialize_pem().as_bytes()).map_err(|source| TlsError::Write {
        path: files.key.clone(),
        source,
    })?;
    Ok(files)
}

/// Writes a file readable by its owner only (where the platform has modes).
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(bytes)
}
