//! `protobench load` and `protobench verify` with streaming workloads
//! (issue 31) against `protobench serve`: the per-message summary and its
//! JSON, the streaming checks of verify clear and TLS, and the refusals of
//! flags that do not fit a stream (exit 2, naming the flag).

use std::io::BufRead;
use std::process::{Child, Command, Output, Stdio};

fn protobench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_protobench"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `protobench serve` on rest, rest-h2 and grpc (port 0); the child, the
/// addresses by protocol and the generated certificate (with `--tls`).
#[allow(clippy::zombie_processes, reason = "the Server guard kills and waits for the child")]
fn serve(tls: bool) -> (Server, Vec<(String, String)>, Option<String>) {
    let mut args = vec![
        "serve",
        "--rest",
        "127.0.0.1:0",
        "--rest-h2",
        "127.0.0.1:0",
        "--grpc",
        "127.0.0.1:0",
        "--connect",
        "127.0.0.1:0",
    ];
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
    let (mut addrs, mut cert) = (Vec::new(), None);
    while addrs.len() < 4 {
        let line = lines.next().expect("serve prints its listeners").unwrap();
        let field = |name: &str| line.split(' ').find_map(|kv| kv.strip_prefix(name)).map(str::to_owned);
        if line.starts_with("generated certificate") {
            cert = field("cert=");
        } else if line.starts_with("listening ") {
            addrs.push((field("protocol=").unwrap(), field("addr=").unwrap()));
        }
    }
    (Server(child), addrs, cert)
}

/// Kills the server when the test ends, passing or not.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn addr<'a>(addrs: &'a [(String, String)], protocol: &str) -> &'a str {
    &addrs.iter().find(|(p, _)| p == protocol).unwrap().1
}

#[test]
fn load_prints_per_message_figures_for_a_grpc_echo_stream_and_its_json() {
    let (_server, addrs, _) = serve(false);
    let grpc = addr(&addrs, "grpc");
    let args = [
        "load",
        "--protocol",
        "grpc",
        grpc,
        "--workload",
        "stream.echo.64b",
        "--streams",
        "2",
        "--connections",
        "1",
        "--messages",
        "20",
        "--rate",
        "500",
    ];
    let o = protobench(&args);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.starts_with(&format!(
            "stream.echo.64b grpc over grpc {grpc}: 2 streams on 1 connection, 500 messages/s per stream\n"
        )),
        "{out}"
    );
    assert!(out.contains("\nmessages   sent 40 ("), "{out}");
    assert!(out.contains(" received 40 ("), "{out}");
    assert!(out.contains("\nends\n  [clean] 2 streams\n"), "{out}");
    assert!(out.contains("\nlatency    min "), "{out}");
    let mut json_args = args.to_vec();
    json_args.extend(["-O", "json"]);
    let o = protobench(&json_args);
    assert_eq!(o.status.code(), Some(0));
    let r: protobench_model::stream::StreamResult = serde_json::from_slice(&o.stdout).expect("a StreamResult");
    assert_eq!((r.messages_sent, r.messages_received, r.streams.clean), (40, 40, 2));
    assert_eq!(r.latency.count, 40);
}

#[test]
fn load_drives_sse_and_websocket_subscriptions_by_default_transport_and_by_flag() {
    let (_server, addrs, _) = serve(false);
    for (protocol, extra) in [
        ("rest", &[][..]),
        ("rest-h2", &[][..]),
        ("rest", &["--stream", "websocket", "--frames", "binary"][..]),
    ] {
        let mut args = vec![
            "load",
            "--protocol",
            protocol,
            addr(&addrs, protocol),
            "--workload",
            "stream.sub.tiny",
            "-O",
            "json",
        ];
        args.extend_from_slice(extra);
        let o = protobench(&args);
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        let r: protobench_model::stream::StreamResult = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!((r.messages_received, r.streams.clean), (100, 1), "{protocol} {extra:?}");
    }
}

#[test]
fn verify_checks_the_streaming_operations_clear_and_tls() {
    for tls in [false, true] {
        let (_server, addrs, cert) = serve(tls);
        for (protocol, streams, checks) in [
            ("grpc", "grpc", 10),
            ("rest", "websocket,sse,poll", 26),
            ("rest-h2", "sse,poll", 6),
            ("connect", "connect", 5),
        ] {
            let mut args = vec![
                "verify",
                "--protocol",
                protocol,
                "--target",
                addr(&addrs, protocol),
                "--stream",
                streams,
                "--workload",
                "tasks.int",
            ];
            if let Some(cert) = &cert {
                args.extend(["--cacert", cert.as_str()]);
            }
            let o = protobench(&args);
            let out = String::from_utf8_lossy(&o.stdout);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{protocol} tls={tls}:\n{out}{}",
                String::from_utf8_lossy(&o.stderr)
            );
            let n = checks + 1;
            assert!(out.ends_with(&format!(": {n} of {n} workloads passed\n")), "{out}");
        }
    }
}

#[test]
fn flags_that_do_not_fit_a_stream_are_refused_by_name() {
    let target = "127.0.0.1:9";
    for (args, says) in [
        (
            vec![
                "load",
                "--protocol",
                "rest",
                target,
                "--workload",
                "stream.echo.64b",
                "--stream",
                "sse",
            ],
            "error: workload stream.echo.64b is EchoStream, which --stream sse does not carry (it carries Subscribe)\n",
        ),
        (
            vec![
                "load",
                "--protocol",
                "grpc",
                target,
                "--workload",
                "stream.echo.64b",
                "-n",
                "5",
            ],
            "error: --requests does not apply to a streaming workload (stream.echo.64b)\n",
        ),
        (
            vec![
                "load",
                "--protocol",
                "grpc",
                target,
                "--workload",
                "inventory.s",
                "--streams",
                "4",
            ],
            "error: --stream, --streams and --messages apply to a streaming workload (--workload stream.*, listed in contract/stream-workloads.json)\n",
        ),
        (
            vec!["verify", "--protocol", "grpc", "--target", target, "--stream", "pigeon"],
            "error: --stream: unknown streaming transport `pigeon` (accepted: grpc, websocket, sse, poll, connect)\n",
        ),
        (
            vec![
                "load",
                "--protocol",
                "connect",
                target,
                "--workload",
                "stream.upload.1k",
            ],
            "error: the engine does not drive Upload over --stream connect yet (it drives Subscribe)\n",
        ),
        (
            vec![
                "load",
                "--protocol",
                "rest",
                target,
                "--workload",
                "stream.sub.1k",
                "--stream",
                "connect",
            ],
            "error: --stream connect runs on --protocol connect, not rest\n",
        ),
    ] {
        let o = protobench(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).ends_with(says),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
