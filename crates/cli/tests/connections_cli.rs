//! `protobench load --connections N|per-caller|per-call` as a user runs it.

mod common;
use common::{protobench, serve};
use std::process::Output;

fn load(protocol: &str, addr: &str, connections: &str, output: &str) -> Output {
    protobench(&[
        "load",
        "--protocol",
        protocol,
        "--target",
        addr,
        "--workload",
        "inventory.xs",
        "--concurrency",
        "4",
        "--connections",
        connections,
        "--requests",
        "60",
        "--output",
        output,
    ])
}

#[test]
fn per_call_per_caller_and_a_count_reach_the_engine() {
    let (mut server, addr) = serve("rest-h2", &[]);
    for (written, per_call, opened) in [("per-call", true, 60), ("per-caller", false, 4), ("1", false, 1)] {
        let o = load("rest-h2", &addr, written, "json");
        assert_eq!(
            o.status.code(),
            Some(0),
            "{written}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["plan"]["per_call"].as_bool().unwrap_or(false), per_call, "{written}");
        assert_eq!(v["connections_opened"], opened, "{written}");
    }
    let o = load("rest-h2", &addr, "per-call", "text");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("over a new connection per call"), "{text}");
    assert!(
        text.contains("connects/s") && text.contains("% of latency spent connecting (60 opened)"),
        "{text}"
    );
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn a_bad_connections_value_names_the_flag_and_the_forms() {
    let o = load("grpc", "127.0.0.1:1", "per-host", "json");
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("invalid value 'per-host' for '--connections <N|per-caller|per-call>'")
            && e.contains("expected \"per-caller\", \"per-call\" or a number of connections of at least 1"),
        "{e}"
    );
    // HTTP/1.1 cannot share: the engine's rule names both flags.
    let o = load("rest", "127.0.0.1:1", "2", "json");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--connections (2) must equal --concurrency (4) for --protocol rest")
    );
}
