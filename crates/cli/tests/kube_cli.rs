//! `protobench kube manifests`, validated against the Kubernetes API types
//! by `deploy/kube/validate` (strict decode with the official Go types of
//! k8s.io/api, and the rules between the objects), and broken manifests
//! refused by the same validator. There is no cluster here: this is as far
//! as the cluster path is tested (docs/distributed.md).
//!
//! Needs Go; without it the test skips with a printed reason, and fails
//! when `PROTOBENCH_REQUIRE_PEERS` is set (as `.ci/run` does).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The validator, built once (the first build downloads its modules).
fn validator() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if Command::new("go").arg("version").output().is_err() {
                assert!(
                    std::env::var_os("PROTOBENCH_REQUIRE_PEERS").is_none(),
                    "go is needed (PROTOBENCH_REQUIRE_PEERS is set)"
                );
                eprintln!("skipped: the manifest validator needs go");
                return None;
            }
            let out = std::env::temp_dir().join(format!("protobench-kube-validate-{}", std::process::id()));
            let status = Command::new("go")
                .args(["build", "-o"])
                .arg(&out)
                .arg(".")
                .current_dir(repo().join("deploy/kube/validate"))
                .status()
                .unwrap();
            assert!(status.success(), "building deploy/kube/validate");
            Some(out)
        })
        .clone()
}

fn manifests(dir: &Path, agents: &str, extra: &[&str]) -> PathBuf {
    let file = dir.join(format!("bench-{agents}.yaml"));
    let mut args = vec!["kube", "manifests", "--agents", agents, "-o", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[
        "--",
        "--protocol",
        "grpc",
        "server.bench.svc:50051",
        "--workload",
        "inventory.s",
        "-c",
        "300",
        "-z",
        "60s",
    ]);
    let out = Command::new(env!("CARGO_BIN_EXE_protobench"))
        .args(&args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    file
}

fn validate(v: &Path, file: &Path, agents: &str) -> (bool, String) {
    let out = Command::new(v).arg(file).arg(agents).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Breaks the manifests of 3 agents `good` once (`from` -> `to`) and checks
/// the validator refuses them, saying `expect`.
fn refused_when_broken(v: &Path, dir: &Path, good: &str, from: &str, to: &str, expect: &str) {
    assert!(good.contains(from), "{from}");
    let broken = dir.join("broken.yaml");
    std::fs::write(&broken, good.replacen(from, to, 1)).unwrap();
    let (ok, text) = validate(v, &broken, "3");
    assert!(!ok && text.contains(expect), "{from} -> {to}: {text}");
}

#[test]
fn manifests_pass_the_api_type_validation_and_broken_ones_do_not() {
    let Some(v) = validator() else { return };
    let dir = tempfile::tempdir().unwrap();
    for n in ["1", "3", "16"] {
        let file = manifests(
            dir.path(),
            n,
            &["--namespace", "bench", "--image", "registry.example/protobench:0.1.0"],
        );
        let (ok, text) = validate(&v, &file, n);
        assert!(ok, "{n} agents: {text}");
        assert!(text.contains(&format!("({n} agents)")), "{text}");
        let yaml = std::fs::read_to_string(&file).unwrap();
        assert!(yaml.contains("completionMode: Indexed") && yaml.contains("clusterIP: None"));
        assert!(yaml.contains("registry.example/protobench:0.1.0"));
    }
    // Each break is one the validator must catch.
    let good = std::fs::read_to_string(manifests(dir.path(), "3", &[])).unwrap();
    for (from, to, expect) in [
        ("completionMode: Indexed", "completionMod: Indexed", "strict decode"),
        ("clusterIP: None", "clusterIP: \"\"", "headless"),
        ("cpu: \"2\"", "cpu: \"two\"", "strict decode"),
        (
            "subdomain: protobench-agents",
            "subdomain: elsewhere",
            "names no Service",
        ),
        ("parallelism: 3", "parallelism: 2", "parallelism must equal"),
        (
            "name: protobench-token\n  namespace",
            "name: other-token\n  namespace",
            "no Secret",
        ),
        (
            "protobench-agents-2.protobench-agents",
            "protobench-agents-7.protobench-agents",
            "agent 2 is",
        ),
    ] {
        refused_when_broken(&v, dir.path(), &good, from, to, expect);
    }
    // A count other than asked.
    let (ok, text) = validate(&v, &dir.path().join("bench-3.yaml"), "4");
    assert!(!ok && text.contains("3 completions, 4 expected"), "{text}");
}

#[test]
fn tls_dir_puts_the_certificates_in_a_secret_both_pods_mount() {
    let dir = tempfile::tempdir().unwrap();
    let tls = dir.path().join("tls");
    std::fs::create_dir(&tls).unwrap();
    let ca = common::pki::ca(&tls, "ca");
    let server = rcgen::ExtendedKeyUsagePurpose::ServerAuth;
    let client = rcgen::ExtendedKeyUsagePurpose::ClientAuth;
    common::pki::leaf(&tls, &ca, "agent", &["*.protobench-agents.bench.svc"], server);
    common::pki::leaf(&tls, &ca, "coordinator", &["coordinator"], client);
    let file = manifests(
        dir.path(),
        "3",
        &["--namespace", "bench", "--tls-dir", tls.to_str().unwrap()],
    );
    let yaml = std::fs::read_to_string(&file).unwrap();
    assert!(yaml.contains("name: protobench-tls"), "{yaml}");
    for arg in [
        "\"--tls-cert\", \"/tls/agent.pem\"",
        "\"--client-ca\", \"/tls/ca.pem\"",
        "- \"--agent-cert\"\n            - \"/tls/coordinator.pem\"",
    ] {
        assert!(yaml.contains(arg), "{arg}: {yaml}");
    }
    // The files as they were, in the Secret (JSON-quoted YAML strings).
    let key = std::fs::read_to_string(tls.join("coordinator.key")).unwrap();
    assert!(yaml.contains(&serde_json::to_string(&key).unwrap()));
    let Some(v) = validator() else { return };
    let (ok, text) = validate(&v, &file, "3");
    assert!(ok, "{text}");
    // A file the arguments name that the Secret lacks; a Secret that is not there.
    for (from, to, expect) in [
        (
            "\n  coordinator.key:",
            "\n  coordinator-key:",
            "has no key \"coordinator.key\"",
        ),
        (
            "secretName: protobench-tls",
            "secretName: other-tls",
            "no Secret \"other-tls\"",
        ),
    ] {
        refused_when_broken(&v, dir.path(), &yaml, from, to, expect);
    }
}

#[test]
fn bad_input_is_refused_with_the_flag_named() {
    // (flags before `--`, load arguments after it, what stderr must say)
    let cases: [(&[&str], &[&str], &str); 6] = [
        (
            &["--agents", "2", "--tls-dir", "/nonexistent-tls-dir"],
            &["127.0.0.1:1"],
            "--tls-dir /nonexistent-tls-dir: /nonexistent-tls-dir/agent.pem: cannot read",
        ),
        (
            &["--agents", "2", "--tls-dir", "/tmp"],
            &["127.0.0.1:1", "--agent-ca", "ca.pem"],
            "must not hold --agent-ca with --tls-dir",
        ),
        (
            &["--agents", "2", "--name", "Bad_Name"],
            &["127.0.0.1:1"],
            "--name \"Bad_Name\"",
        ),
        (
            &["--agents", "2"],
            &["127.0.0.1:1", "--agents", "x:1"],
            "must not hold --agents",
        ),
        (
            &["--agents", "2"],
            &["127.0.0.1:1", "--no-such-flag"],
            "not valid `protobench load` arguments",
        ),
        (&["--agents", "0"], &["127.0.0.1:1"], "--agents"),
    ];
    for (flags, load, expect) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_protobench"))
            .args(["kube", "manifests"])
            .args(flags)
            .arg("--")
            .args(load)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?} {load:?}: {err}");
        assert!(err.contains(expect), "{flags:?} {load:?}: {err}");
    }
}
