//! `protobench load` on `graphql`, `connect`, `connect-json`, `grpc-web`
//! and `grpc-web-text` against the built-in server: every call checked,
//! injected failures counted under each protocol's error kind (the draw
//! fails exactly the calls the contract's formula picks, so the count is
//! known in advance), and a GraphQL-only workload refused on the other
//! protocols; `graphql-get` registering its document once, then sending
//! only the hash. (`verify` on every protocol, clear and TLS: verify_cli.rs.)

use std::process::Child;

mod common;

use common::{protobench, stderr};

const CALLS: u64 = 400;
const RATE: f64 = 0.25;

/// `protobench serve --<protocol>` with a failure rate.
#[allow(clippy::zombie_processes, reason = "the caller kills and waits for the child")]
fn serve_failing(protocol: &str, rate: f64) -> (Child, String) {
    let rate = rate.to_string();
    common::serve_with_env(
        protocol,
        &[],
        &[("PROTOBENCH_FAILURE_RATE", &rate), ("PROTOBENCH_FAILURE_SEED", "7")],
    )
}

/// How many of the first `n` calls the contract's draw fails.
fn expected_failures(seed: u64, n: u64, rate: f64) -> u64 {
    (0..n)
        .filter(|k| {
            let z = protobench_contract::data::splitmix64(seed.wrapping_add(*k));
            ((z >> 11) as f64) * 2f64.powi(-53) < rate
        })
        .count() as u64
}

fn load_json(protocol: &str, addr: &str, workload: &str) -> serde_json::Value {
    let n = CALLS.to_string();
    let o = protobench(&[
        "load",
        "--protocol",
        protocol,
        "--target",
        addr,
        "--workload",
        workload,
        "--requests",
        &n,
        "--concurrency",
        "2",
        "--output",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{protocol}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn injected_failures_are_counted_under_each_protocols_error_kind() {
    let expected = expected_failures(7, CALLS, RATE);
    assert!((60..=140).contains(&expected), "the seed gives {expected}");
    for (protocol, kind, sample) in [
        ("graphql", "graphql_error", "graphql error: injected failure"),
        ("connect", "http_status", "http status 503 (expected 200)"),
        ("connect-json", "http_status", "http status 503 (expected 200)"),
        (
            "grpc-web",
            "grpc_status",
            "grpc status 14 (UNAVAILABLE): injected failure",
        ),
        (
            "grpc-web-text",
            "grpc_status",
            "grpc status 14 (UNAVAILABLE): injected failure",
        ),
    ] {
        let (mut server, addr) = serve_failing(protocol, RATE);
        let v = load_json(protocol, &addr, "inventory.s");
        let _ = server.kill();
        let _ = server.wait();
        assert_eq!(
            v["errors"],
            serde_json::json!([{"kind": kind, "count": expected, "sample": sample}]),
            "{protocol}"
        );
        assert_eq!(v["successes"], serde_json::json!(CALLS - expected), "{protocol}: {v}");
    }
}

#[test]
fn every_call_of_a_clean_run_succeeds_and_a_wrong_server_fails_every_call() {
    for protocol in ["graphql", "connect", "connect-json", "grpc-web", "grpc-web-text"] {
        let (mut server, addr) = serve_failing(protocol, 0.0);
        let v = load_json(protocol, &addr, "tasks.objects");
        assert_eq!(v["errors"], serde_json::json!([]), "{protocol}");
        assert_eq!(v["successes"], serde_json::json!(CALLS), "{protocol}");
        let _ = server.kill();
        let _ = server.wait();
    }
    // A GraphQL client against a Connect server: nothing counts as success.
    let (mut server, addr) = serve_failing("connect", 0.0);
    let v = load_json("graphql", &addr, "tasks.int");
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(v["successes"], serde_json::json!(0), "{v}");
}

#[test]
fn graphql_only_workloads_load_on_graphql_and_are_refused_elsewhere() {
    let (mut server, addr) = serve_failing("graphql", 0.0);
    for workload in ["graphql.items-ids", "graphql.dashboard"] {
        let v = load_json("graphql", &addr, workload);
        assert_eq!(v["errors"], serde_json::json!([]), "{workload}");
        assert_eq!(v["successes"], serde_json::json!(CALLS), "{workload}");
    }
    let _ = server.kill();
    let _ = server.wait();
    // Against a server answering every call with an injected failure: no
    // GraphQL-only call counts as a success.
    let (mut server, addr) = serve_failing("graphql", 1.0);
    let v = load_json("graphql", &addr, "graphql.dashboard-slim");
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(v["successes"], serde_json::json!(0), "{v}");
    let o = protobench(&[
        "load",
        "--protocol",
        "rest",
        "--target",
        "127.0.0.1:9",
        "--workload",
        "graphql.items-ids",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is GraphQL-only"), "{}", stderr(&o));
}

/// `graphql-get`: the engine registers the document once (one POST, which
/// takes the failure draw's first call), then every call is a GET naming it
/// by hash, checked like `graphql`'s; mutations are refused before any
/// call; a server that does not register says so.
#[test]
fn graphql_get_registers_once_then_sends_only_the_hash() {
    // failures among draws 1..=CALLS: draw 0 was the registering POST
    let expected = expected_failures(7, CALLS + 1, RATE) - expected_failures(7, 1, RATE);
    let (mut server, addr) = serve_failing("graphql-get", RATE);
    let v = load_json("graphql-get", &addr, "inventory.s");
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        v["errors"],
        serde_json::json!([{"kind": "graphql_error", "count": expected, "sample": "graphql error: injected failure"}]),
        "{v}"
    );
    let (mut server, addr) = serve_failing("graphql-get", 0.0);
    for workload in ["tasks.objects", "graphql.dashboard-slim"] {
        let v = load_json("graphql-get", &addr, workload);
        assert_eq!(v["errors"], serde_json::json!([]), "{workload}");
        assert_eq!(v["successes"], serde_json::json!(CALLS), "{workload}");
        // a GET with no body: the request line and headers only
        let sent = v["bytes_sent"].as_u64().unwrap() / CALLS;
        assert!((150..400).contains(&sent), "{workload}: {sent} bytes per call");
    }
    let _ = server.kill();
    let _ = server.wait();
    let o = protobench(&[
        "load",
        "--protocol",
        "graphql-get",
        "--target",
        "127.0.0.1:9",
        "--workload",
        "echo.1k",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("workload \"echo.1k\" is a GraphQL mutation; graphql-get sends queries only"),
        "{}",
        stderr(&o)
    );
    // A Connect server cannot register the document.
    let (mut server, addr) = serve_failing("connect", 0.0);
    let o = protobench(&[
        "load",
        "--protocol",
        "graphql-get",
        "--target",
        &addr,
        "--workload",
        "tasks.int",
        "--requests",
        "10",
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot register the persisted query with"),
        "{}",
        stderr(&o)
    );
}
