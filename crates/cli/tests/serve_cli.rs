//! `protobench serve` as a process: listening lines, flags over environment,
//! a generated certificate with `--tls`, exit 0 on SIGTERM and SIGINT, exit 2
//! on a bad environment variable.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// `protobench serve ARGS` with no `PROTOBENCH_*` variable but `env`.
fn serve(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_protobench"));
    command.arg("serve").args(args);
    for (name, _) in std::env::vars().filter(|(n, _)| n.starts_with("PROTOBENCH_")) {
        command.env_remove(name);
    }
    command.env("PROTOBENCH_WORKERS", "1").envs(env.iter().copied());
    command
}

/// Reads stdout lines until `n` listening lines have appeared (bounded: 30 s);
/// returns every line.
fn read_until_listening(stdout: ChildStdout, n: usize) -> Vec<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut lines = Vec::new();
    while lines.iter().filter(|l: &&String| l.starts_with("listening ")).count() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        lines.push(rx.recv_timeout(left).expect("serve prints its listeners within 30 s"));
    }
    lines
}

fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split(' ')
        .find_map(|kv| kv.strip_prefix(name))
        .unwrap_or_else(|| panic!("no {name} in {line:?}"))
}

/// Sends `signal` (e.g. `-TERM`) and waits (bounded: 15 s) for the exit.
fn stop(mut child: Child, signal: &str) -> ExitStatus {
    let status = Command::new("kill")
        .arg(signal)
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal}");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve did not exit within 15 s of {signal}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One HTTP/1.1 GET; returns the whole response text.
fn http_get(addr: &str, path: &str) -> String {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(tcp, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    tcp.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn serves_every_protocol_on_loopback_and_exits_0_on_sigterm() {
    let mut child = serve(&[], &[]).stdout(Stdio::piped()).spawn().unwrap();
    let lines = read_until_listening(child.stdout.take().unwrap(), 10);
    let protocols: Vec<&str> = lines.iter().map(|l| field(l, "protocol=")).collect();
    assert_eq!(
        protocols,
        [
            "rest",
            "rest-h2",
            "grpc",
            "soap",
            "graphql",
            "graphql-get",
            "connect",
            "connect-json",
            "grpc-web",
            "grpc-web-text"
        ]
    );
    for line in &lines {
        assert!(field(line, "addr=").starts_with("127.0.0.1:"), "{line}");
        assert_eq!(field(line, "tls="), "false");
    }
    let response = http_get(field(&lines[0], "addr="), "/v1/tasks/integer");
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(response.ends_with(r#"{"value":2147483647}"#), "{response}");
    assert!(stop(child, "-TERM").success());
}

#[test]
fn flags_override_the_environment_and_sigint_exits_0() {
    let env = [
        ("PROTOBENCH_REST_ADDR", "127.0.0.1:0"),
        ("PROTOBENCH_SOAP_ADDR", "127.0.0.1:0"),
    ];
    let mut child = serve(&["--grpc", "127.0.0.1:0", "--workers", "2"], &env)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = read_until_listening(child.stdout.take().unwrap(), 3);
    let protocols: Vec<&str> = lines.iter().map(|l| field(l, "protocol=")).collect();
    assert_eq!(protocols, ["rest", "grpc", "soap"]);
    assert!(stop(child, "-INT").success());
}

#[test]
fn tls_without_a_certificate_generates_one() {
    let mut child = serve(&["--tls", "--rest", "127.0.0.1:0"], &[])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = read_until_listening(child.stdout.take().unwrap(), 1);
    let generated = lines
        .iter()
        .find(|l| l.starts_with("generated certificate "))
        .expect("a generated certificate line");
    let (cert, key) = (field(generated, "cert="), field(generated, "key="));
    assert!(
        std::fs::read_to_string(cert)
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----")
    );
    assert!(std::fs::read_to_string(key).unwrap().contains("PRIVATE KEY-----"));
    let listening = lines.iter().find(|l| l.starts_with("listening ")).unwrap();
    assert_eq!(field(listening, "tls="), "true");
    assert!(stop(child, "-TERM").success());
}

#[test]
fn a_bad_environment_variable_exits_2_naming_it() {
    let out = serve(&[], &[("PROTOBENCH_FAILURE_RATE", "2")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: PROTOBENCH_FAILURE_RATE=\"2\": expected a number in 0..=1\n"
    );
    let out = serve(&["--cert", "c.pem"], &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "clap refuses --cert without --key");
}

/// `serve --server NAME` builds a manifest server, passes the PROTOBENCH_*
/// environment and its listening lines through, and forwards SIGTERM.
#[test]
fn serve_server_runs_a_manifest_server_and_forwards_sigterm() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("fake");
    std::fs::create_dir(&server).unwrap();
    std::fs::write(
        server.join("manifest.toml"),
        r#"name = "fake"
language = "shell"
stack = "bash"
protocols = ["rest"]
toolchain = ["bash"]
build = [["bash", "-c", "echo built > built.txt"]]
start = ["bash", "fake.sh"]
start_timeout_s = 10
"#,
    )
    .unwrap();
    std::fs::write(
        server.join("fake.sh"),
        "trap 'echo stopped >&2; exit 0' TERM\n\
         echo \"listening protocol=rest addr=$PROTOBENCH_REST_ADDR tls=false workers=$PROTOBENCH_WORKERS\"\n\
         while true; do sleep 0.1; done\n",
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_protobench"))
        .args([
            "serve",
            "--server",
            "fake",
            "--rest",
            "127.0.0.1:4567",
            "--workers",
            "3",
        ])
        .env("PROTOBENCH_SERVERS_DIR", dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(
        line,
        "listening protocol=rest addr=127.0.0.1:4567 tls=false workers=3\n"
    );
    assert_eq!(std::fs::read_to_string(server.join("built.txt")).unwrap(), "built\n");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopped"));
}

#[test]
fn serve_server_names_the_known_servers_when_unknown() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_protobench"))
        .args(["serve", "--server", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: no server `nope` (servers: "), "{stderr}");
}
