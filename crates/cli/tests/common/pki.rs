//! Certificates for TLS tests, made with rcgen: a CA and the leaves it signs.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};

/// A CA: its certificate file and what signs with it.
pub struct Ca {
    /// Its certificate (PEM).
    pub cert: PathBuf,
    /// Signs leaves.
    pub issuer: Issuer<'static, KeyPair>,
}

/// A new CA named `name`, its certificate written to `dir/<name>.pem`.
pub fn ca(dir: &Path, name: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    let cert = dir.join(format!("{name}.pem"));
    std::fs::write(&cert, params.self_signed(&key).unwrap().pem()).unwrap();
    Ca {
        cert,
        issuer: Issuer::new(params, key),
    }
}

/// A certificate `ca` signs for `names`, for a server or a client; returns
/// (certificate file, key file).
pub fn leaf(dir: &Path, ca: &Ca, name: &str, names: &[&str], usage: ExtendedKeyUsagePurpose) -> (PathBuf, PathBuf) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    let (c, k) = (dir.join(format!("{name}.pem")), dir.join(format!("{name}.key")));
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    (c, k)
}
