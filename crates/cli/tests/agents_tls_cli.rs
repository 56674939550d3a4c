//! Mutual TLS between `load --agents` and `protobench agent`, as processes
//! on loopback with real TLS (docs/distributed.md, "Mutual TLS"):
//!
//! - a coordinator with a client certificate the agent's CA signed runs a
//!   short load through the agent;
//! - one without a client certificate, with one from another CA, or in clear
//!   text is refused, and the error names the agent;
//! - the coordinator checks the agent's certificate (a wrong `--agent-ca`
//!   fails);
//! - an agent with a certificate but no `--client-ca` says so and relies on
//!   the token;
//! - unreadable or unfit PEM files are named with their flag.
//!
//! Certificates are made here with rcgen. Every run is a few seconds.

mod common;

use std::path::{Path, PathBuf};

use common::pki::{ca, leaf};
use common::{Agent, Killed};
use rcgen::ExtendedKeyUsagePurpose;

const TOKEN: &str = "agents-tls-test-token-0123456789";

/// Everything a test needs: two CAs, the agent's certificate (CA 1, for
/// 127.0.0.1), a coordinator's (CA 1) and an intruder's (CA 2).
struct Pki {
    dir: tempfile::TempDir,
    token: PathBuf,
    ca: PathBuf,
    other_ca: PathBuf,
    agent: (PathBuf, PathBuf),
    coordinator: (PathBuf, PathBuf),
    intruder: (PathBuf, PathBuf),
}

fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let token = d.join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let ca1 = ca(d, "ca");
    let ca2 = ca(d, "other-ca");
    Pki {
        agent: leaf(d, &ca1, "agent", &["127.0.0.1"], ExtendedKeyUsagePurpose::ServerAuth),
        coordinator: leaf(
            d,
            &ca1,
            "coordinator",
            &["coordinator"],
            ExtendedKeyUsagePurpose::ClientAuth,
        ),
        intruder: leaf(
            d,
            &ca2,
            "intruder",
            &["coordinator"],
            ExtendedKeyUsagePurpose::ClientAuth,
        ),
        ca: ca1.cert,
        other_ca: ca2.cert,
        token,
        dir,
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The coordinator's flags for `ca` and a client (certificate, key).
fn coordinator_flags<'a>(ca: &'a Path, client: &'a (PathBuf, PathBuf)) -> Vec<&'a str> {
    vec![
        "--agent-ca",
        s(ca),
        "--agent-cert",
        s(&client.0),
        "--agent-key",
        s(&client.1),
    ]
}

/// Starts `protobench agent` on a free loopback port with `extra` flags.
fn agent(pki: &Pki, extra: &[&str]) -> Agent {
    let mut args = vec!["--token-file", s(&pki.token)];
    args.extend_from_slice(extra);
    Agent::start(&args)
}

/// An agent serving mutual TLS: its certificate, and CA 1 for clients.
fn mtls_agent(pki: &Pki) -> Agent {
    agent(
        pki,
        &[
            "--tls-cert",
            s(&pki.agent.0),
            "--tls-key",
            s(&pki.agent.1),
            "--client-ca",
            s(&pki.ca),
        ],
    )
}

/// `protobench load` through `agent` at 100 calls/s for 2 s with the
/// coordinator's TLS flags `tls`.
fn load(pki: &Pki, server: &str, agent: &str, tls: &[&str]) -> std::process::Output {
    let mut extra = vec!["--rate", "100", "-c", "10", "--duration", "2s"];
    extra.extend_from_slice(tls);
    common::protobench(&common::agents_load_args(server, agent, s(&pki.token), &extra))
}

fn json(stdout: &[u8]) -> serde_json::Value {
    serde_json::from_slice(stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(stdout)))
}

#[test]
fn a_coordinator_with_a_certificate_from_the_agents_ca_runs_through_it() {
    let pki = pki();
    let (server, addr) = common::serve("rest", &[]);
    let _server = Killed(server);
    let a = mtls_agent(&pki);
    assert!(a.line.contains("transport=mtls"), "{}", a.line);
    let out = load(&pki, &addr, &a.addr, &coordinator_flags(&pki.ca, &pki.coordinator));
    assert!(out.status.success(), "{}", common::stderr(&out));
    let r = json(&out.stdout);
    let lanes = r["agents"].as_array().unwrap();
    assert_eq!(lanes.len(), 1);
    assert_eq!(lanes[0]["agent"], a.addr.as_str());
    assert!(lanes[0]["failure"].is_null(), "{:?}", lanes[0]);
    // About 200 calls (100/s for 2 s), all answered.
    let calls = r["calls"].as_u64().unwrap();
    assert!((150..=250).contains(&calls), "{calls} calls");
    assert_eq!(r["successes"].as_u64().unwrap(), calls);
}

#[test]
fn coordinators_without_a_certificate_the_agent_trusts_are_refused_by_name() {
    let pki = pki();
    // Refused before any load: the target need not exist.
    let target = "127.0.0.1:9";
    let a = mtls_agent(&pki);
    // (the coordinator's TLS flags, what the error says besides the agent, why).
    // The agent's alert (CertificateRequired, UnknownCA) may or may not
    // reach the coordinator before the connection closes; the hint does.
    let hint = "accepts only a coordinator whose --agent-cert that CA signed";
    let cases: [(Vec<&str>, &str, &str); 3] = [
        (vec!["--agent-ca", s(&pki.ca)], hint, "no client certificate"),
        (
            coordinator_flags(&pki.ca, &pki.intruder),
            hint,
            "a client certificate from another CA",
        ),
        (
            vec![],
            "if the agent serves TLS, give --agent-ca",
            "clear text to a TLS agent",
        ),
    ];
    for (tls, says, why) in cases {
        let out = load(&pki, target, &a.addr, &tls);
        let err = common::stderr(&out);
        assert!(!out.status.success(), "{why}: {err}");
        assert!(out.stdout.is_empty(), "{why}: nothing measured");
        assert!(
            err.contains(&format!("agent {}", a.addr)),
            "{why}: names the agent: {err}"
        );
        assert!(err.contains(says), "{why}: says {says:?}: {err}");
    }
}

#[test]
fn the_coordinator_checks_the_agents_certificate() {
    let pki = pki();
    let a = mtls_agent(&pki);
    // Another CA than the agent's: the agent is not trusted.
    let out = load(
        &pki,
        "127.0.0.1:9",
        &a.addr,
        &coordinator_flags(&pki.other_ca, &pki.coordinator),
    );
    let err = common::stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains(&format!("agent {}", a.addr)), "{err}");
    assert!(err.contains("TLS handshake") && err.contains("UnknownIssuer"), "{err}");
    // The right CA, but the agent dialled by a name its certificate does
    // not carry (it names 127.0.0.1 only).
    let port = a.addr.rsplit_once(':').unwrap().1;
    let by_name = format!("localhost:{port}");
    let out = load(
        &pki,
        "127.0.0.1:9",
        &by_name,
        &coordinator_flags(&pki.ca, &pki.coordinator),
    );
    let err = common::stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("agent {by_name}")) && err.contains("not valid for name \"localhost\""),
        "{err}"
    );
}

#[test]
fn an_agent_without_a_client_ca_says_the_token_alone_authenticates() {
    let pki = pki();
    let (server, addr) = common::serve("rest", &[]);
    let _server = Killed(server);
    let a = agent(&pki, &["--tls-cert", s(&pki.agent.0), "--tls-key", s(&pki.agent.1)]);
    assert!(a.line.contains("transport=tls"), "{}", a.line);
    // TLS without a client certificate: the token lets it in.
    let out = load(&pki, &addr, &a.addr, &["--agent-ca", s(&pki.ca)]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(json(&out.stdout)["successes"].as_u64().unwrap() > 0);
    let err = a.stop();
    assert!(
        err.contains("warning: --tls-cert without --client-ca")
            && err.contains("does not authenticate coordinators by certificate"),
        "{err}"
    );
}

#[test]
fn unusable_pem_files_are_named_with_their_flag() {
    let pki = pki();
    let d = pki.dir.path();
    let missing = d.join("missing.pem");
    let not_pem = d.join("not.pem");
    std::fs::write(&not_pem, "hello\n").unwrap();
    let (cert, key) = (s(&pki.agent.0), s(&pki.agent.1));
    // The agent: (its TLS flags, what stderr says)
    let agent_cases: [(Vec<&str>, String); 4] = [
        (
            vec!["--tls-cert", s(&missing), "--tls-key", key],
            format!("error: --tls-cert {}: cannot read {}", s(&missing), s(&missing)),
        ),
        (
            vec!["--tls-cert", cert, "--tls-key", s(&not_pem)],
            format!("error: --tls-key {}: {} holds no private key", s(&not_pem), s(&not_pem)),
        ),
        (
            // A key where the CA should be.
            vec!["--tls-cert", cert, "--tls-key", key, "--client-ca", key],
            format!("error: --client-ca {key}: {key} holds no certificate"),
        ),
        (
            // The coordinator's key with the agent's certificate.
            vec!["--tls-cert", cert, "--tls-key", s(&pki.coordinator.1)],
            format!("error: --tls-cert {cert}: with --tls-key {}", s(&pki.coordinator.1)),
        ),
    ];
    for (flags, says) in agent_cases {
        let mut args = vec!["agent", "--listen", "127.0.0.1:0", "--token-file", s(&pki.token)];
        args.extend_from_slice(&flags);
        let out = common::protobench(&args);
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.starts_with(&says), "{flags:?}: expected {says:?}, got {err}");
    }
    // The coordinator: refused before it dials anyone.
    let missing_key = (pki.coordinator.0.clone(), missing.clone());
    let coordinator_cases: [(Vec<&str>, String); 2] = [
        (
            vec!["--agent-ca", s(&not_pem)],
            format!("--agent-ca {}: {} holds no certificate", s(&not_pem), s(&not_pem)),
        ),
        (
            coordinator_flags(&pki.ca, &missing_key),
            format!("--agent-key {}: cannot read {}", s(&missing), s(&missing)),
        ),
    ];
    for (flags, says) in coordinator_cases {
        let out = load(&pki, "127.0.0.1:9", "127.0.0.1:1", &flags);
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains(&says), "{flags:?}: expected {says:?}, got {err}");
    }
    // Half a pair is a usage error from the parser.
    let out = common::protobench(&[
        "agent",
        "--listen",
        "127.0.0.1:0",
        "--token-file",
        s(&pki.token),
        "--client-ca",
        s(&pki.ca),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(common::stderr(&out).contains("--tls-cert"), "{}", common::stderr(&out));
}
