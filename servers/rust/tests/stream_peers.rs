//! Stock third-party clients against the streaming operations, each result
//! judged by the contract's checker or its vectors:
//!
//! - grpcurl (server reflection only) calls the server-streaming
//!   `Subscribe`, clear text and TLS;
//! - `curl -N` reads the SSE subscription over HTTP/1.1 and h2c;
//! - Python's `websockets` runs the echo stream (`contract/tests/ws_echo.py`) in text
//!   and binary frames against the vectors.
//!
//! A tool that is missing is skipped with a printed reason and how to
//! install it (scripts/setup.sh installs all three), unless
//! `PROTOBENCH_REQUIRE_PEERS` is set (CI sets it), in which case the test
//! fails. grpcurl is looked up as in tests/peers.rs.

mod common;

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::Duration;

use protobench_contract::Protocol;
use protobench_contract::pb::bench::FeedEvent;
use protobench_contract::stream::check::{Received, StreamEnd, check_feed};
use protobench_contract::stream::{self, workload};

use common::{config, dataset, parse_sse, start};

/// `name` on `PATH` (or `$env`, or `target/peers/bin/name`), or `None` after
/// printing why the test is skipped.
fn tool_or_skip(name: &str, env: &str, install: &str) -> Option<PathBuf> {
    let found = std::env::var_os(env).map(PathBuf::from).or_else(|| {
        let local = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/peers/bin")
            .join(name);
        if local.is_file() {
            return Some(local);
        }
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        let reason = format!("{name} not found (${env}, target/peers/bin, PATH)");
        assert!(
            std::env::var_os("PROTOBENCH_REQUIRE_PEERS").is_none(),
            "{reason} and PROTOBENCH_REQUIRE_PEERS is set"
        );
        eprintln!("skipped: {reason}; install it with: {install}");
    }
    found
}

/// Runs a command to its end (bounded: 60 s).
async fn run(mut command: tokio::process::Command) -> Output {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = command.spawn().expect("the tool starts");
    tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the tool finishes within 60 s")
        .expect("the tool runs")
}

/// grpcurl with the flags for the listener: `-plaintext`, or the test CA.
fn grpcurl_command(grpcurl: &PathBuf, tls: bool) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(grpcurl);
    if tls {
        command.arg("-cacert").arg(&common::certificate().cert);
    } else {
        command.arg("-plaintext");
    }
    command
}

fn judge_feed(name: &str, events: Vec<FeedEvent>, end: StreamEnd, who: &str) {
    let request = workload::find(name).unwrap().subscribe_request().unwrap();
    let received = Received { messages: events, end };
    if let Err(mismatch) = check_feed(&request, &dataset(), &received) {
        panic!("{name} through {who}: {mismatch}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcurl_reads_a_subscription_found_by_reflection() {
    let Some(grpcurl) = tool_or_skip(
        "grpcurl",
        "PROTOBENCH_GRPCURL",
        "GOBIN=$PWD/target/peers/bin go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3",
    ) else {
        return;
    };
    for tls in [false, true] {
        let server = start(config(&[Protocol::Grpc], tls)).await;
        let listener = *server.listener(Protocol::Grpc).unwrap();
        for name in ["stream.sub.1k", "stream.sub.1k.r1000"] {
            let request = workload::find(name).unwrap().subscribe_request().unwrap();
            let mut command = grpcurl_command(&grpcurl, tls);
            command
                .args(["-emit-defaults", "-d"])
                .arg(String::from_utf8(stream::to_json(&request)).unwrap())
                .arg(listener.addr.to_string())
                .arg("protobench.v1.Streams/Subscribe");
            let out = run(command).await;
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "grpcurl failed: {stderr}");
            // grpcurl prints each message as a JSON object, one after another.
            let events: Vec<FeedEvent> = serde_json::Deserializer::from_slice(&out.stdout)
                .into_iter::<serde_json::Value>()
                .map(|v| {
                    let bytes = serde_json::to_vec(&v.expect("grpcurl prints JSON")).unwrap();
                    stream::from_json::<FeedEvent>(&bytes).expect("a feed event in the canonical JSON form")
                })
                .collect();
            judge_feed(name, events, StreamEnd::Clean, &format!("grpcurl tls={tls}"));
        }
        // A subscription over the limit: grpcurl reports InvalidArgument.
        let mut command = grpcurl_command(&grpcurl, tls);
        command
            .args(["-d", r#"{"count":2000000}"#])
            .arg(listener.addr.to_string())
            .arg("protobench.v1.Streams/Subscribe");
        let out = run(command).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains("InvalidArgument") && stderr.contains("count is 2000000, expected 1..=1000000"),
            "{stderr}"
        );
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_reads_the_sse_subscription_over_http1_and_h2c() {
    let Some(curl) = tool_or_skip("curl", "PROTOBENCH_CURL", "apt-get install curl") else {
        return;
    };
    let server = start(config(&[Protocol::Rest, Protocol::RestH2], false)).await;
    for (protocol, flags) in [
        (Protocol::Rest, &["--http1.1"][..]),
        (Protocol::RestH2, &["--http2-prior-knowledge"][..]),
    ] {
        let addr = server.listener(protocol).unwrap().addr;
        for name in ["stream.sub.8k", "stream.sub.1k.r1000"] {
            let request = workload::find(name).unwrap().subscribe_request().unwrap();
            let mut command = tokio::process::Command::new(&curl);
            command
                .args(["-sS", "-N", "--fail", "-D", "-"])
                .args(flags)
                .arg(format!(
                    "http://{addr}{}?{}",
                    stream::SSE_PATH,
                    stream::subscribe_query(&request)
                ));
            let out = run(command).await;
            let text = String::from_utf8(out.stdout).expect("UTF-8");
            assert!(
                out.status.success(),
                "curl failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let (head, body) = text.split_once("\r\n\r\n").expect("headers, then the body");
            assert!(
                head.to_ascii_lowercase().contains("content-type: text/event-stream"),
                "{head}"
            );
            let (received, ids) = parse_sse(body, request.count);
            let expected: Vec<String> = (1..=request.count).map(|s| s.to_string()).collect();
            assert_eq!(ids, expected);
            judge_feed(name, received.messages, received.end, &format!("curl {protocol}"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_websockets_runs_the_echo_stream_against_the_vectors() {
    let Some(python) = tool_or_skip("python3", "PROTOBENCH_PYTHON", "apt-get install python3") else {
        return;
    };
    let probe = run({
        let mut c = tokio::process::Command::new(&python);
        c.args(["-c", "import websockets"]);
        c
    })
    .await;
    if !probe.status.success() {
        let reason = "Python's websockets is not installed";
        assert!(
            std::env::var_os("PROTOBENCH_REQUIRE_PEERS").is_none(),
            "{reason} and PROTOBENCH_REQUIRE_PEERS is set"
        );
        eprintln!("skipped: {reason}; install it with: python3 -m pip install websockets==17.4");
        return;
    }
    let server = start(config(&[Protocol::Rest], false)).await;
    let addr = server.listener(Protocol::Rest).unwrap().addr;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../contract/tests/ws_echo.py");
    for name in ["stream.echo.64b", "stream.echo.64k"] {
        let mut command = tokio::process::Command::new(&python);
        command
            .arg(&script)
            .arg(format!("ws://{addr}{}", stream::WS_ECHO_PATH))
            .arg(common::contract_dir().join("stream-vectors").join(name));
        let out = run(command).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let n = workload::find(name).unwrap().messages().len();
        assert_eq!(
            stdout.trim(),
            format!("ok: {n} text and {n} binary messages echoed"),
            "{name}"
        );
    }
}
