//! A stock third-party client against the server: grpcurl, which knows the
//! services only through server reflection.
//!
//! grpcurl is looked up in `$PROTOBENCH_GRPCURL`, then
//! `target/peers/bin/grpcurl` (`GOBIN=$PWD/target/peers/bin go install
//! github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3`), then `PATH`. When it
//! is missing the tests are skipped with a printed reason, unless
//! `PROTOBENCH_REQUIRE_PEERS` is set (CI sets it), in which case they fail.

mod common;

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::Duration;

use common::{drop_nulls, vector};
use protobench_contract::{Protocol, workload};
use protobench_server::Listener;

fn grpcurl() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PROTOBENCH_GRPCURL") {
        return Some(PathBuf::from(path));
    }
    let local = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/peers/bin/grpcurl");
    if local.is_file() {
        return Some(local);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("grpcurl"))
        .find(|p| p.is_file())
}

/// grpcurl, or `None` after printing why the test is skipped.
fn grpcurl_or_skip() -> Option<PathBuf> {
    let found = grpcurl();
    if found.is_none() {
        let reason = "grpcurl not found ($PROTOBENCH_GRPCURL, target/peers/bin, PATH)";
        assert!(
            std::env::var_os("PROTOBENCH_REQUIRE_PEERS").is_none(),
            "{reason} and PROTOBENCH_REQUIRE_PEERS is set"
        );
        eprintln!(
            "skipped: {reason}; install it with: \
             GOBIN=$PWD/target/peers/bin go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3"
        );
    }
    found
}

/// Runs `grpcurl [TLS flags] FLAGS ADDR VERB` with `stdin` (bounded: 60 s).
async fn grpcurl_run(grpcurl: &PathBuf, listener: &Listener, flags: &[&str], verb: &str, stdin: Vec<u8>) -> Output {
    use tokio::io::AsyncWriteExt as _;

    let mut command = tokio::process::Command::new(grpcurl);
    if listener.tls {
        command.arg("-cacert").arg(&common::certificate().cert);
    } else {
        command.arg("-plaintext");
    }
    command
        .args(flags)
        .arg(listener.addr.to_string())
        .arg(verb)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("grpcurl starts");
    let mut input = child.stdin.take().unwrap();
    input.write_all(&stdin).await.unwrap();
    drop(input);
    tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("grpcurl finishes within 60 s")
        .expect("grpcurl runs")
}

/// Numbers compared by value (`3` and `3.0` are equal), nulls dropped.
fn normalize(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match drop_nulls(value) {
        Value::Number(n) => serde_json::json!(n.as_f64().unwrap()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, normalize(v))).collect()),
        Value::Array(items) => Value::Array(items.into_iter().map(normalize).collect()),
        other => other,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcurl_lists_the_services_through_reflection() {
    let Some(grpcurl) = grpcurl_or_skip() else {
        return;
    };
    let server = common::start(common::config(&[Protocol::Grpc], false)).await;
    let out = grpcurl_run(&grpcurl, &server.listeners()[0], &[], "list", Vec::new()).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for service in [
        "protobench.v1.Bench",
        "helloworld.Greeter",
        "grpc.reflection.v1.ServerReflection",
    ] {
        assert!(
            stdout.lines().any(|l| l == service),
            "{service} missing from:\n{stdout}"
        );
    }
    server.shutdown().await;
}

async fn every_workload_through_grpcurl(tls: bool) {
    let Some(grpcurl) = grpcurl_or_skip() else {
        return;
    };
    let server = common::start(common::config(&[Protocol::Grpc], tls)).await;
    let listener = server.listeners()[0];
    let flags = ["-max-msg-sz", "67108864", "-emit-defaults", "-d", "@"];
    for w in workload::ALL {
        let method = w.operation.grpc_path().trim_start_matches('/');
        let out = grpcurl_run(&grpcurl, &listener, &flags, method, vector(w.name, "request.json")).await;
        assert!(
            out.status.success(),
            "{}: {}",
            w.name,
            String::from_utf8_lossy(&out.stderr)
        );
        let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let expected: serde_json::Value = serde_json::from_slice(&vector(w.name, "response.json")).unwrap();
        assert!(
            normalize(found) == normalize(expected),
            "{}: grpcurl's JSON differs from the vector",
            w.name
        );
    }
    // An error status reaches the stock client too.
    let out = grpcurl_run(
        &grpcurl,
        &listener,
        &["-d", "@"],
        "protobench.v1.Bench/GetFile",
        br#"{"name":"nope"}"#.to_vec(),
    )
    .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Code: NotFound"), "{stderr}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcurl_gets_every_workload_right_in_clear_text() {
    every_workload_through_grpcurl(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcurl_gets_every_workload_right_with_tls() {
    every_workload_through_grpcurl(true).await;
}
