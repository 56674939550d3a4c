//! Mutual TLS between a coordinator and its agents (docs/distributed.md).
//!
//! The agent serves TLS with its certificate and, given a client CA,
//! requires every coordinator to present a certificate that CA signed
//! (rustls's [`WebPkiClientVerifier`]). The coordinator checks the agent's
//! certificate against its own CA file only (no system roots: an agent is
//! one of ours, not a public site) and the agent's name as the coordinator
//! dials it. Both sides speak HTTP/2 (ALPN `h2`). The shared token is still
//! checked inside: a stolen client certificate alone does not drive an
//! agent, nor a leaked token alone.
//!
//! Errors name the flag and the file, so a user knows which of the six
//! files is unreadable or unfit.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::server::WebPkiClientVerifier;

/// A coordinator's TLS settings, ready to dial agents with.
pub type ClientTls = Arc<rustls::ClientConfig>;
/// An agent's TLS settings, ready to serve with.
pub type ServerTls = Arc<rustls::ServerConfig>;

/// The only application protocol spoken: HTTP/2.
const ALPN_H2: &[u8] = b"h2";

/// An agent's TLS files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTlsFiles {
    /// Its certificate chain (PEM), `--tls-cert`.
    pub cert: PathBuf,
    /// Its private key (PEM), `--tls-key`.
    pub key: PathBuf,
    /// The CA that signs coordinators' certificates (PEM), `--client-ca`;
    /// `None`: no client certificate asked for (the token alone
    /// authenticates the coordinator).
    pub client_ca: Option<PathBuf>,
}

/// A coordinator's TLS files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordinatorTlsFiles {
    /// The CA that signs the agents' certificates (PEM), `--agent-ca`.
    pub agent_ca: PathBuf,
    /// The coordinator's client certificate and key (PEM), `--agent-cert`
    /// and `--agent-key`; `None`: none presented.
    pub client: Option<(PathBuf, PathBuf)>,
}

/// A TLS file that cannot be used, named by its flag.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {}", path.display())]
pub struct TlsFileError {
    /// The flag that gave the file.
    pub flag: &'static str,
    /// The file.
    pub path: PathBuf,
    /// Why it cannot be used.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

fn file_error(
    flag: &'static str,
    path: &Path,
    source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> TlsFileError {
    TlsFileError {
        flag,
        path: path.to_owned(),
        source: source.into(),
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The CA certificates of a file as a root store.
fn roots(flag: &'static str, path: &Path) -> Result<Arc<rustls::RootCertStore>, TlsFileError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in protobench_load::pem_certs(path).map_err(|e| file_error(flag, path, e))? {
        roots.add(cert).map_err(|e| file_error(flag, path, e))?;
    }
    Ok(Arc::new(roots))
}

/// The agent's server settings from its files.
pub fn server_config(files: &AgentTlsFiles) -> Result<rustls::ServerConfig, TlsFileError> {
    let chain = protobench_load::pem_certs(&files.cert).map_err(|e| file_error("--tls-cert", &files.cert, e))?;
    let key = protobench_load::pem_private_key(&files.key).map_err(|e| file_error("--tls-key", &files.key, e))?;
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| file_error("--tls-cert", &files.cert, e))?;
    let builder = match &files.client_ca {
        Some(ca) => {
            let verifier = WebPkiClientVerifier::builder_with_provider(roots("--client-ca", ca)?, provider())
                .build()
                .map_err(|e| file_error("--client-ca", ca, e))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    // A key that does not match the certificate is refused here.
    let mut config = builder.with_single_cert(chain, key).map_err(|e| {
        file_error(
            "--tls-cert",
            &files.cert,
            format!("with --tls-key {}: {e}", files.key.display()),
        )
    })?;
    config.alpn_protocols = vec![ALPN_H2.to_vec()];
    Ok(config)
}

/// The coordinator's client settings from its files.
pub fn client_config(files: &CoordinatorTlsFiles) -> Result<rustls::ClientConfig, TlsFileError> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| file_error("--agent-ca", &files.agent_ca, e))?
        .with_root_certificates(roots("--agent-ca", &files.agent_ca)?);
    let mut config = match &files.client {
        Some((cert, key)) => {
            let chain = protobench_load::pem_certs(cert).map_err(|e| file_error("--agent-cert", cert, e))?;
            let private = protobench_load::pem_private_key(key).map_err(|e| file_error("--agent-key", key, e))?;
            builder
                .with_client_auth_cert(chain, private)
                .map_err(|e| file_error("--agent-cert", cert, format!("with --agent-key {}: {e}", key.display())))?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![ALPN_H2.to_vec()];
    Ok(config)
}

/// The name an agent's certificate must carry: the host of `host:port`
/// (a DNS name or an IP address, brackets off).
pub fn server_name(addr: &str) -> Result<ServerName<'static>, String> {
    let host = match addr.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => addr.rsplit_once(':').map_or(addr, |(h, _)| h),
    };
    ServerName::try_from(host.to_owned()).map_err(|_| format!("{host:?} is not a DNS name or an IP address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_name_is_the_host_it_is_dialled_by() {
        // (address as in --agents, the name its certificate must carry)
        let rows = [
            ("10.0.0.2:7070", "10.0.0.2"),
            ("[::1]:7070", "::1"),
            (
                "protobench-agents-0.protobench-agents.bench.svc:7070",
                "protobench-agents-0.protobench-agents.bench.svc",
            ),
        ];
        for (addr, name) in rows {
            let want = ServerName::try_from(name.to_owned()).unwrap();
            assert_eq!(server_name(addr).unwrap(), want, "{addr}");
        }
        assert_eq!(
            server_name("bad_name!:7070").unwrap_err(),
            "\"bad_name!\" is not a DNS name or an IP address"
        );
    }

    #[test]
    fn a_missing_file_is_named_with_its_flag() {
        let files = CoordinatorTlsFiles {
            agent_ca: PathBuf::from("/nonexistent/ca.pem"),
            client: None,
        };
        let e = client_config(&files).unwrap_err();
        assert_eq!(e.flag, "--agent-ca");
        assert!(
            protobench_model::format::error_chain(&e)
                .starts_with("--agent-ca /nonexistent/ca.pem: cannot read /nonexistent/ca.pem"),
            "{e}"
        );
    }
}
