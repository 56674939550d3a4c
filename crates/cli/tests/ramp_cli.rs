//! `protobench load --stage` (issue 10): a concurrency schedule as a user
//! runs it, against the built-in Rust server (`protobench serve`).
//!
//! - users rise on schedule while earlier connections stay open:
//!   `connections_opened` is the final user count, and the JSON (with users
//!   and p95 per second) validates against the published schema
//! - schedule errors name the flag and what was expected (exit 2)

mod common;
use common::{protobench, serve, stderr};

#[test]
fn a_staged_run_keeps_earlier_connections_open_while_users_join() {
    let (mut server, addr) = serve("rest", &[]);
    // 1 user, then to 6 over 1.5 s (one every 0.3 s), then 0.5 s at 6.
    let o = protobench(&[
        "load",
        "--protocol",
        "rest",
        "--target",
        &addr,
        "--workload",
        "tasks.int",
        "--stage",
        "1500ms:6,500ms:6",
        "--start-users",
        "1",
        "--output",
        "json",
        "--quiet",
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let schema_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/schema/load-result.schema.json");
    let schema: serde_json::Value = serde_json::from_slice(&std::fs::read(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(v["plan"]["concurrency"], 6, "the peak becomes the concurrency");
    assert_eq!(v["plan"]["stages"][0]["target"], 6);
    assert_eq!(v["duration_ns"], 2_000_000_000u64, "the stages' total");
    // Not 1 + 2 + ... + 6: each user opened one connection and kept it.
    assert_eq!(v["connections_opened"], 6);
    let users: Vec<u64> = v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["users"].as_u64().unwrap())
        .collect();
    // Joins at 0.3, 0.6, 0.9, 1.2, 1.5 s: 4 users by the end of second 0, 6 in second 1.
    assert_eq!(users[..2], [4, 6], "{users:?}");
    assert!(v["timeline"][1]["p95_ns"].as_u64().unwrap() > 0);
}

#[test]
fn schedule_errors_name_the_flag_and_what_was_expected() {
    let base = [
        "load",
        "--protocol",
        "grpc",
        "--target",
        "127.0.0.1:9",
        "--workload",
        "tasks.int",
    ];
    let cases: [(&[&str], &str); 4] = [
        (
            &["--stage", "1s:10,1s:5"],
            "error: --stage 2 (1s:5) lowers the target from 10 to 5: ramp-down is not supported (callers stay to the end)\n",
        ),
        (
            &["--stage", "10s:5", "--rate", "100"],
            "error: --stage and --rate cannot be used together: a concurrency schedule is closed loop only (open loop sets a rate, not users)\n",
        ),
        (
            &["--stage", "10s:5", "--duration", "3s"],
            "error: --duration (3s) must be left out with --stage, or equal the stages' total (10s)\n",
        ),
        (
            &["--start-users", "3"],
            "error: --start-users (3) requires --stage (a concurrency schedule)\n",
        ),
    ];
    for (extra, want) in cases {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let o = protobench(&args);
        assert_eq!(stderr(&o), want, "{extra:?}");
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
    }
    // A malformed stage is refused by the flag parser, saying the form.
    let mut args = base.to_vec();
    args.extend_from_slice(&["--stage", "100"]);
    let o = protobench(&args);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("expected DURATION:TARGET (e.g. 30s:100), got `100`"),
        "{}",
        stderr(&o)
    );
}
