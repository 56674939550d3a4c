//! `protobench verify` against the built-in server: every workload x every
//! protocol passes, clear and TLS; a wrong response prints the first
//! difference; exit codes 0 / 1 / 2.

use std::io::{BufRead, Read, Write};
use std::process::{Child, Command, Output, Stdio};

fn protobench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_protobench"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `protobench serve` on every protocol; returns the child, the
/// addresses by protocol and the generated certificate (with `--tls`).
#[allow(clippy::zombie_processes, reason = "the caller kills and waits for the child")]
fn serve_all(tls: bool) -> (Child, Vec<(String, String)>, Option<String>) {
    let mut args = vec!["serve"];
    if tls {
        args.push("--tls");
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_protobench"))
        .args(&args)
        .env("PROTOBENCH_WORKERS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut addrs = Vec::new();
    let mut cert = None;
    while addrs.len() < protobench_contract::Protocol::ALL.len() {
        let line = lines.next().expect("serve prints its listeners").unwrap();
        let field = |name: &str| line.split(' ').find_map(|kv| kv.strip_prefix(name)).map(str::to_owned);
        if line.starts_with("generated certificate") {
            cert = field("cert=");
        } else if line.starts_with("listening ") {
            addrs.push((field("protocol=").unwrap(), field("addr=").unwrap()));
        }
    }
    (child, addrs, cert)
}

fn check_all(tls: bool) {
    let (mut child, addrs, cert) = serve_all(tls);
    for (protocol, addr) in &addrs {
        let mut args = vec!["verify", "--protocol", protocol.as_str(), "--target", addr.as_str()];
        if let Some(cert) = &cert {
            args.extend_from_slice(&["--cacert", cert.as_str()]);
        }
        let o = protobench(&args);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{protocol} tls={tls}:\n{out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        // graphql-get verifies the queries (it carries no mutation); both
        // GraphQL protocols add the GraphQL-only workloads.
        let graphql = protocol.starts_with("graphql");
        let n = protobench_contract::workload::ALL
            .iter()
            .filter(|w| protocol != "graphql-get" || !protobench_contract::graphql::root(w.operation).mutation)
            .count()
            + if graphql {
                protobench_contract::graphql::WORKLOADS.len()
            } else {
                0
            };
        assert!(n >= 9, "{protocol}: {n} workloads");
        assert_eq!(out.contains("graphql.dashboard "), graphql, "{out}");
        assert!(
            out.ends_with(&format!("ok {protocol} {addr}: {n} of {n} workloads passed\n")),
            "{out}"
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn every_workload_passes_on_every_protocol_in_clear_text() {
    check_all(false);
}

#[test]
fn every_workload_passes_on_every_protocol_with_tls() {
    check_all(true);
}

/// A one-shot HTTP/1.1 server answering every request with `body`.
fn wrong_server(body: &'static str) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = s.write_all(resp.as_bytes());
        }
    });
    addr
}

#[test]
fn a_wrong_response_prints_the_first_difference_and_exits_1() {
    let addr = wrong_server(r#"{"value":2147483646}"#);
    let o = protobench(&[
        "verify",
        "--protocol",
        "rest",
        "--target",
        &addr,
        "--workload",
        "tasks.int",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!(
            "tasks.int  FAIL: found 2147483646 at value, expected 2147483647\nFAILED rest {addr}: 0 of 1 workloads passed\n"
        )
    );
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn unknown_workload_is_bad_usage() {
    let o = protobench(&[
        "verify",
        "--protocol",
        "rest",
        "--target",
        "127.0.0.1:9",
        "--workload",
        "nope",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("error: {}\n", protobench_contract::workload::unknown("nope"))
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn timeout_out_of_range_is_refused_naming_the_flag_and_the_range() {
    for (value, rule) in [
        ("100000000000000000000000s", "must be at most 1000000s (11.6 days)"),
        ("18446744074s", "must be at most 1000000s (11.6 days)"),
        ("0s", "must be positive and at most 1000000s (11.6 days)"),
    ] {
        let o = protobench(&[
            "verify",
            "--protocol",
            "rest",
            "--target",
            "127.0.0.1:9",
            "--timeout",
            value,
        ]);
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            format!(
                "error: invalid value '{value}' for '--timeout <TIMEOUT>': {rule}\n\nFor more information, try '--help'.\n"
            )
        );
        assert_eq!(o.status.code(), Some(2));
    }
}

#[test]
fn tls_flags_are_checked_by_the_call_rules_load_uses_naming_each_flag() {
    let existing = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    for (flags, want) in [
        (
            vec!["--insecure", "--cacert", existing],
            "error: --insecure and --cacert cannot be used together\n",
        ),
        (vec!["--cert", existing], "error: --cert requires --key\n"),
        (
            vec!["--cacert", "/nonexistent/ca.pem"],
            "error: --cacert: no file /nonexistent/ca.pem\n",
        ),
    ] {
        let mut args = vec!["verify", "--protocol", "rest", "--target", "127.0.0.1:9"];
        args.extend(flags.iter().copied());
        let o = protobench(&args);
        assert_eq!(String::from_utf8_lossy(&o.stderr), want, "{flags:?}");
        assert_eq!(o.status.code(), Some(2), "{flags:?}");
    }
}
