//! `protobench report RUN --web`: a stored run's report served by the
//! binary, read-only, loopback by default, a token on any other address.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use protobench_model::run::RunEnvironment;
use protobench_model::testing;
use protobench_results::store::{NewRun, Store};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_protobench"))
}

/// A database with one run of two points.
fn stored_run(db: &Path) {
    let mut s = Store::open(db).unwrap();
    let points = vec![
        testing::point(0, "rest", "inventory.xs"),
        testing::point(1, "grpc", "inventory.xs"),
    ];
    let run = NewRun {
        preset: "web-test".into(),
        preset_path: None,
        plan: serde_json::json!({}),
        repetitions: 1,
        noise_threshold: 0.1,
        environment: RunEnvironment::default(),
        points: points.clone(),
        started_at: "2026-01-01T00:00:00Z".into(),
    };
    let id = s.create_run(&run).unwrap();
    for p in &points {
        s.save_measurement(id, &testing::measurement(p, 1, 1000.0)).unwrap();
    }
}

/// Kills the server when the test ends, however it ends.
struct Server(Child);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `report 1 --web ...` and returns it with the URL it printed.
fn serve(db: &Path, web: &[&str]) -> (Server, String) {
    let mut child = bin()
        .args(["report", "1", "--db"])
        .arg(db)
        .args(web)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let server = Server(child);
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string();
    assert!(line.starts_with("serving run 1 at "), "{line}");
    (server, url)
}

/// One HTTP/1.1 request to `port` on 127.0.0.1; (status, body).
fn request(port: u16, method: &str, path: &str, host: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {out:?}"));
    let body = out.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string();
    (status, body)
}

/// The port of `http://ADDR:PORT/...`.
fn port_of(url: &str) -> u16 {
    let authority = url.trim_start_matches("http://").split('/').next().unwrap();
    authority.rsplit(':').next().unwrap().parse().unwrap()
}

#[test]
fn the_stored_report_is_served_read_only_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    stored_run(&db);
    let (_server, url) = serve(&db, &["--web"]);
    assert!(url.starts_with("http://127.0.0.1:") && !url.contains("token"), "{url}");
    let port = port_of(&url);
    let (status, body) = request(port, "GET", "/", &format!("127.0.0.1:{port}"));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("<h1>protobench run 1 — web-test</h1>"), "{body}");
    assert!(
        body.contains("Relative to the reference protocol"),
        "the report's sections"
    );
    assert_eq!(request(port, "GET", "/", &format!("localhost:{port}")).0, 200);
    // a page elsewhere that rebinds its name to 127.0.0.1 is refused
    let (status, body) = request(port, "GET", "/", "evil.example");
    assert_eq!(status, 403, "{body}");
    // read-only
    assert_eq!(request(port, "POST", "/", &format!("127.0.0.1:{port}")).0, 405);
    assert_eq!(request(port, "DELETE", "/", &format!("127.0.0.1:{port}")).0, 405);
    assert_eq!(
        request(port, "GET", "/../etc/passwd", &format!("127.0.0.1:{port}")).0,
        404
    );
}

#[test]
fn another_address_needs_the_flag_and_then_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    stored_run(&db);
    let out = bin()
        .args(["report", "1", "--db"])
        .arg(&db)
        .args(["--web", "0.0.0.0:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused without --web-public");
    assert!(
        stderr.contains("--web 0.0.0.0:0") && stderr.contains("--web-public"),
        "{stderr}"
    );

    let (_server, url) = serve(&db, &["--web", "0.0.0.0:0", "--web-public"]);
    let token = url
        .split("token=")
        .nth(1)
        .unwrap_or_else(|| panic!("no token in {url}"));
    assert_eq!(token.len(), 32, "{url}");
    let port = port_of(url.split('?').next().unwrap());
    let host = format!("127.0.0.1:{port}");
    let (status, body) = request(port, "GET", "/", &host);
    assert_eq!(status, 401, "without the token: {body}");
    assert_eq!(request(port, "GET", "/?token=0123", &host).0, 401, "a wrong token");
    let (status, body) = request(port, "GET", &format!("/?token={token}"), &host);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("<h1>protobench run 1"), "{body}");
}
