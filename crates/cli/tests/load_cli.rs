//! `protobench load` as a user runs it: exact stderr and exit codes.
//!
//! - invalid flag combinations name both flags (exit 2)
//! - unknown workload lists the valid names (exit 2)
//! - unreachable target fails within the connect timeout, naming the address (exit 3)
//! - a run against the built-in server prints JSON that parses, CSV, and an .hgrm file

mod common;
use common::{protobench, serve, stderr};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn http1_connections_must_equal_concurrency_naming_both_flags() {
    let o = protobench(&[
        "load",
        "--protocol",
        "rest",
        "--target",
        "127.0.0.1:9",
        "--workload",
        "tasks.int",
        "--concurrency",
        "8",
        "--connections",
        "2",
    ]);
    assert_eq!(
        stderr(&o),
        "error: --connections (2) must equal --concurrency (8) for --protocol rest: HTTP/1.1 carries one call at a time per connection\n"
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn more_connections_than_concurrency_is_refused() {
    let o = protobench(&[
        "load",
        "--protocol",
        "grpc",
        "--target",
        "127.0.0.1:9",
        "--workload",
        "tasks.int",
        "--concurrency",
        "2",
        "--connections",
        "4",
    ]);
    assert_eq!(
        stderr(&o),
        "error: --connections (4) cannot be greater than --concurrency (2)\n"
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn duration_and_requests_together_are_refused() {
    let o = protobench(&[
        "load",
        "--protocol",
        "grpc",
        "--target",
        "127.0.0.1:9",
        "--workload",
        "tasks.int",
        "--duration",
        "1s",
        "--requests",
        "10",
    ]);
    assert_eq!(stderr(&o), "error: --duration and --requests cannot be used together\n");
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn unknown_workload_lists_valid_names() {
    let o = protobench(&[
        "load",
        "--protocol",
        "grpc",
        "--target",
        "127.0.0.1:9",
        "--workload",
        "nope",
    ]);
    assert_eq!(
        stderr(&o),
        format!("error: {}\n", protobench_contract::workload::unknown("nope"))
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn unreachable_target_fails_within_the_connect_timeout_naming_the_address() {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let started = Instant::now();
    let o = protobench(&[
        "load",
        "--protocol",
        "grpc",
        "--target",
        &addr.to_string(),
        "--workload",
        "tasks.int",
        "--connect-timeout",
        "1s",
    ]);
    assert!(started.elapsed() < Duration::from_secs(3));
    let err = stderr(&o);
    assert!(
        err.starts_with(&format!("error: cannot connect to {addr}: connecting to {addr}: ")),
        "{err}"
    );
    assert_eq!(o.status.code(), Some(3));
}

#[test]
fn a_run_prints_json_csv_and_writes_an_hgrm_file() {
    let (mut server, addr) = serve("grpc", &[]);
    let dir = std::env::temp_dir().join(format!("protobench-load-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hgrm = dir.join("latency.hgrm");
    let o = protobench(&[
        "load",
        "--protocol",
        "grpc",
        "--target",
        &addr,
        "--workload",
        "inventory.s",
        "--concurrency",
        "4",
        "--connections",
        "1",
        "--requests",
        "200",
        "--output",
        "json",
        "--histogram",
        hgrm.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["successes"], 200);
    assert_eq!(v["end_reason"], "requests");
    assert!(std::fs::read_to_string(&hgrm).unwrap().contains("Percentile"));
    let o = protobench(&[
        "load",
        "--protocol",
        "grpc",
        "--target",
        &addr,
        "--workload",
        "tasks.int",
        "--requests",
        "50",
        "--output",
        "csv",
    ]);
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("protocol,target,workload,"));
    assert!(lines[1].starts_with(&format!("grpc,{addr},tasks.int,")));
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The flags of a run against a port nothing listens on (every check here
/// must refuse the plan before any connection).
fn load_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "load",
        "--protocol",
        "rest",
        "--target",
        "127.0.0.1:9",
        "--workload",
        "tasks.int",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn durations_and_rates_out_of_range_are_refused_naming_the_flag_and_the_range() {
    let clap = |value: &str, flag: &str, rule: &str| {
        format!("error: invalid value '{value}' for '{flag}': {rule}\n\nFor more information, try '--help'.\n")
    };
    let max = "must be at most 1000000s (11.6 days)";
    let cases: Vec<(Vec<&str>, String)> = vec![
        // Used to panic (exit 101).
        (
            vec!["--duration", "100000000000000000000000s"],
            clap("100000000000000000000000s", "--duration <DURATION>", max),
        ),
        (
            vec!["--warmup", "100000000000000000000000s"],
            clap("100000000000000000000000s", "--warmup <WARMUP>", max),
        ),
        // Used to wrap past 2^64 ns and run 0.29 s.
        (
            vec!["--duration", "18446744074s"],
            clap("18446744074s", "--duration <DURATION>", max),
        ),
        (
            vec!["--timeout", "1000001s"],
            clap("1000001s", "--timeout <TIMEOUT>", max),
        ),
        (
            vec!["--connect-timeout", "300h"],
            clap("300h", "--connect-timeout <CONNECT_TIMEOUT>", max),
        ),
        (
            vec!["--rate", "1e30"],
            "error: --rate must be between 0.001 and 10000000 calls/s, got 1000000000000000000000000000000\n".into(),
        ),
        (
            vec!["--rate", "0.0001"],
            "error: --rate must be between 0.001 and 10000000 calls/s, got 0.0001\n".into(),
        ),
    ];
    for (extra, want) in cases {
        let o = protobench(&load_args(&extra));
        assert_eq!(stderr(&o), want, "{extra:?}");
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
    }
}

#[test]
fn an_unwritable_histogram_file_fails_before_any_connection() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let dir = std::env::temp_dir().join(format!("protobench-load-cli-nodir-{}", std::process::id()));
    let path = dir.join("latency.hgrm");
    let o = protobench(&[
        "load",
        "--protocol",
        "grpc",
        "--target",
        &addr,
        "--workload",
        "tasks.int",
        "--histogram",
        path.to_str().unwrap(),
    ]);
    assert_eq!(
        stderr(&o),
        format!(
            "error: cannot write --histogram {}: No such file or directory (os error 2)\n",
            path.display()
        )
    );
    assert_eq!(o.status.code(), Some(3));
    assert!(o.stdout.is_empty());
    let err = listener.accept().expect_err("no connection was made");
    assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
}

#[test]
fn a_histogram_that_fails_to_write_after_the_run_still_prints_the_result() {
    let (mut server, addr) = serve("grpc", &[]);
    let o = protobench(&[
        "load",
        "--protocol",
        "grpc",
        "--target",
        &addr,
        "--workload",
        "tasks.int",
        "--requests",
        "20",
        "--output",
        "json",
        "--histogram",
        "/dev/full",
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        stderr(&o),
        "error: cannot write --histogram /dev/full: No space left on device (os error 28); the result is printed above\n"
    );
    assert_eq!(o.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["successes"], 20);
}

#[test]
fn cr_lf_in_a_header_value_is_refused_for_every_protocol_before_any_connection() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    for protocol in ["rest", "soap", "rest-h2", "grpc"] {
        let mut args = vec![
            "load",
            "--protocol",
            protocol,
            "--target",
            &addr,
            "--workload",
            "tasks.int",
        ];
        if protocol == "rest" || protocol == "soap" {
            args.extend_from_slice(&["--concurrency", "1"]);
        }
        args.extend_from_slice(&["-H", "X-A: 1\r\nX-Injected: 2"]);
        let o = protobench(&args);
        assert_eq!(
            stderr(&o),
            "error: -H \"X-A\": the value contains CR, LF or another control character\n",
            "{protocol}"
        );
        assert_eq!(o.status.code(), Some(2), "{protocol}");
    }
    let err = listener.accept().expect_err("no connection was made");
    assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
}

#[test]
fn ctrl_c_while_connecting_exits_130_at_once() {
    // Accepts TCP and never answers: the TLS handshake hangs until
    // --connect-timeout (60 s) unless Ctrl-C ends it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (accepted_tx, accepted_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
            let _ = accepted_tx.send(());
        }
    });
    let mut child = Command::new(env!("CARGO_BIN_EXE_protobench"))
        .args([
            "load",
            "--protocol",
            "grpc",
            "--target",
            &addr,
            "--workload",
            "tasks.int",
            "--insecure",
            "--connect-timeout",
            "60s",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    accepted_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the engine connects");
    std::thread::sleep(Duration::from_millis(300));
    let signalled = Instant::now();
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if signalled.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still connecting 10 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let waited = signalled.elapsed();
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        stderr(&o),
        format!("error: interrupted while connecting to {addr}: no call was made\n")
    );
    assert_eq!(status.code(), Some(130));
    assert!(waited < Duration::from_secs(2), "exited {waited:?} after SIGINT");
}

#[test]
fn grpc_against_an_http2_rest_port_counts_the_http_status() {
    let (mut server, addr) = serve("rest-h2", &[]);
    let o = protobench(&[
        "load",
        "--protocol",
        "grpc",
        "--target",
        &addr,
        "--workload",
        "tasks.int",
        "--requests",
        "5",
        "--output",
        "json",
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["errors"],
        serde_json::json!([{"kind": "http_status", "count": 5, "sample": "http status 404 (expected 200)"}])
    );
}

#[test]
fn generator_cpu_covers_the_measured_window_and_short_windows_are_not_judged() {
    let (mut server, addr) = serve("grpc", &[]);
    let run = |extra: &[&str]| {
        let mut args = vec![
            "load",
            "--protocol",
            "grpc",
            "--target",
            &addr,
            "--workload",
            "tasks.int",
            "--concurrency",
            "8",
            "--connections",
            "8",
            "--threads",
            "2",
            "--output",
            "json",
        ];
        args.extend_from_slice(extra);
        let o = protobench(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    // Used to print "185% busy, generator-bound" with 0 calls.
    let v = run(&["--duration", "1ns"]);
    let g = &v["generator"];
    assert_eq!(g["generator_bound"], false);
    let reason = g["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("window too short to judge (") && reason.ends_with("; needs at least 1 s and 100 calls)"),
        "{reason}"
    );
    assert!(g["cpu_utilization"].as_f64().unwrap() <= 1.0, "{g}");
    // With a warm-up: the per-call figure is the total over the measured calls.
    let v = run(&["--requests", "150", "--warmup", "300ms"]);
    let g = &v["generator"];
    assert_eq!(v["calls"], 150);
    let (cpu, per_call) = (g["cpu_ns"].as_f64().unwrap(), g["cpu_ns_per_call"].as_f64().unwrap());
    assert!(cpu > 0.0);
    assert!((per_call * 150.0 - cpu).abs() <= 1.0, "{g}");
    assert!(g["cpu_utilization"].as_f64().unwrap() <= 1.0, "{g}");
    let _ = server.kill();
    let _ = server.wait();
}
