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

mod common;

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

/// Reads server-sent events from `s` until `done` accepts one state or
/// `limit` passes; every state read, in order.
fn states_until(
    s: &mut BufReader<TcpStream>,
    limit: Duration,
    done: impl Fn(&serde_json::Value) -> bool,
) -> Vec<serde_json::Value> {
    let deadline = std::time::Instant::now() + limit;
    let mut out = Vec::new();
    let mut line = String::new();
    while std::time::Instant::now() < deadline {
        line.clear();
        match s.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
                continue;
            }
            Err(e) => panic!("{e}"),
        }
        if let Some(json) = line.trim_end().strip_prefix("data: ") {
            let v: serde_json::Value = serde_json::from_str(json).unwrap();
            let stop = done(&v);
            out.push(v);
            if stop {
                break;
            }
        }
    }
    out
}

/// Opens `/events` and reads past the response head.
fn follow(port: u16) -> BufReader<TcpStream> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    write!(s, "GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 200"), "{line}");
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if line.to_ascii_lowercase().starts_with("content-type:") {
            assert!(line.contains("text/event-stream"), "{line}");
        }
    }
    r
}

/// Spawns `run PRESET --db r.db --no-report --web EXTRA...` in `dir` with
/// standard output piped, waits for its "live view: URL" line, keeps
/// draining the rest (the table must never fill the pipe) and returns the
/// process with the URL.
fn spawn_run_with_web(dir: &Path, preset: &Path, extra: &[&str]) -> (Server, String) {
    let mut cmd = bin();
    cmd.current_dir(dir)
        .args(["run"])
        .arg(preset)
        .args(["--db", "r.db", "--no-report", "--web"])
        .args(extra);
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let server = Server(child);
    let mut line = String::new();
    while !line.starts_with("live view: ") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "no live view line");
    }
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    (server, line.trim_start_matches("live view: ").trim().to_string())
}

#[test]
fn a_run_with_web_is_followed_live_and_then_serves_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let preset = dir.path().join("tiny.toml");
    std::fs::write(
        &preset,
        "name = \"tiny\"\nservers = [\"rust\"]\nprotocols = [\"rest\", \"grpc\"]\nworkloads = [\"inventory.xs\"]\nrepetitions = 2\nwarmup = \"0s\"\nduration = \"3s\"\n[load]\nconcurrency = 2\n",
    )
    .unwrap();
    let (mut server, url) = spawn_run_with_web(dir.path(), &preset, &[]);
    let port = port_of(&url);
    // The page and its script come from the binary.
    let (status, page) = request(port, "GET", "/", &format!("127.0.0.1:{port}"));
    assert_eq!(status, 200);
    assert!(page.contains("<script src=\"live.js\">"), "{page}");
    assert_eq!(request(port, "GET", "/live.js", &format!("127.0.0.1:{port}")).0, 200);
    assert_eq!(
        request(port, "GET", "/report", &format!("127.0.0.1:{port}")).0,
        404,
        "no report before the end"
    );

    // A page follows the run: the running point's rate second by second.
    let mut page1 = follow(port);
    let states = states_until(&mut page1, Duration::from_secs(60), |s| {
        s["current"]["seconds"].as_array().is_some_and(|v| v.len() >= 2)
    });
    let last = states.last().expect("a state");
    assert_eq!(last["preset"], "tiny");
    let seconds = last["current"]["seconds"].as_array().unwrap();
    assert!(seconds.iter().all(|x| x["rate"].as_f64().unwrap() > 0.0), "{last}");
    // Each second carries the generator's and the server's CPU.
    for side in ["generator", "server"] {
        assert!(
            seconds.iter().any(|x| x["cpu"][side].as_f64().is_some_and(|c| c > 0.0)),
            "{side} CPU per second: {last}"
        );
    }
    // Closed mid-run: the run goes on.
    drop(page1);

    // Reloaded mid-run: the first state already holds what finished.
    let mut page2 = follow(port);
    let first = states_until(&mut page2, Duration::from_secs(60), |s| {
        s["finished"].as_array().is_some_and(|v| !v.is_empty())
    });
    assert!(!first.is_empty());
    // The report of what is stored so far (or, if the run has just ended,
    // the finished one).
    let (status, so_far) = request(port, "GET", "/report", &format!("127.0.0.1:{port}"));
    assert_eq!(status, 200, "{so_far}");
    assert!(so_far.contains("protobench run 1 — tiny"), "{so_far}");
    let end = states_until(&mut page2, Duration::from_secs(90), |s| s["ended"].is_string());
    let end = end.last().expect("the end");
    assert!(
        end["ended"]
            .as_str()
            .unwrap()
            .contains("complete: 4 measurements (0 failed)"),
        "{end}"
    );
    assert_eq!(end["finished"].as_array().unwrap().len(), 4, "{end}");
    assert_eq!(end["report"], true);

    // After the run: the report, until SIGINT.
    let (status, report) = request(port, "GET", "/report", &format!("127.0.0.1:{port}"));
    assert_eq!(status, 200);
    assert!(report.contains("protobench run 1 — tiny"), "{report}");
    let pid = server.0.id() as i32;
    assert!(
        Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = server.0.try_wait().unwrap() {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "still serving after SIGINT");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    let rec = Store::open_read_only(&dir.path().join("r.db"))
        .unwrap()
        .load_run(1)
        .unwrap();
    assert_eq!(rec.measurements.len(), 4);

    // A baseline that does not exist fails before a run is created.
    let out = bin()
        .current_dir(dir.path())
        .args(["run"])
        .arg(&preset)
        .args(["--db", "r.db", "--no-report", "--web", "--baseline", "9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--baseline 9"), "{out:?}");
    assert!(
        Store::open_read_only(&dir.path().join("r.db"))
            .unwrap()
            .load_run(2)
            .is_err()
    );

    // Run 1 as the baseline of run 2: drawn behind the curve, a verdict per point.
    let (server, url) = spawn_run_with_web(dir.path(), &preset, &["--baseline", "1"]);
    let port = port_of(&url);
    let mut page = follow(port);
    let states = states_until(&mut page, Duration::from_secs(90), |s| s["ended"].is_string());
    let end = states.last().expect("the end");
    assert_eq!(end["baseline"], "run 1 (tiny)");
    assert!(
        states
            .iter()
            .any(|s| s["current"]["baseline_rate"].as_f64().is_some_and(|r| r > 0.0)),
        "the baseline's rate behind the running point"
    );
    let versus = end["versus"].as_array().unwrap();
    assert_eq!(versus.len(), 2, "{end}");
    for v in versus {
        assert_eq!(v["rates"].as_array().unwrap().len(), 2, "{v}");
        let verdict = v["verdict"].as_str().unwrap();
        assert!(
            ["faster ", "slower ", "within the noise "]
                .iter()
                .any(|w| verdict.starts_with(w)),
            "{verdict}"
        );
    }
    drop(server);
}

/// Headless Chromium, when installed (required when
/// PROTOBENCH_REQUIRE_PEERS is set, as in CI).
fn chromium() -> Option<std::path::PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var_os("PROTOBENCH_REQUIRE_PEERS").is_none(),
            "PROTOBENCH_REQUIRE_PEERS is set but chromium is missing"
        );
        eprintln!("skipping the browser check: chromium is not installed");
    }
    found
}

/// Loads `url` in headless Chromium, lets its script run for `ms`, and
/// returns the DOM (or, with `shot`, also writes a screenshot there).
fn browse(chromium: &Path, url: &str, ms: u32, shot: Option<&Path>) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
        &format!("--timeout={ms}"),
        "--window-size=1200,1600",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()));
    match shot {
        Some(p) => cmd.arg(format!("--screenshot={}", p.display())),
        None => cmd.arg("--dump-dom"),
    };
    let out = cmd.arg(url).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("Uncaught") && !stderr.contains("Refused to"),
        "script errors or a policy refusal:\n{stderr}"
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The text of the element with `id` (up to its first tag), if any.
fn text_of(dom: &str, id: &str) -> Option<String> {
    let start = dom.find(&format!("id=\"{id}\""))?;
    let after = &dom[start..];
    let open = after.find('>')? + 1;
    let close = after[open..].find('<')?;
    Some(after[open..open + close].to_string())
}

#[test]
fn chromium_shows_the_live_run_then_its_report() {
    let Some(chromium) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let preset = dir.path().join("tiny.toml");
    std::fs::write(
        &preset,
        "name = \"tiny\"\nservers = [\"rust\"]\nprotocols = [\"rest\", \"grpc\"]\nworkloads = [\"inventory.xs\"]\nrepetitions = 3\nwarmup = \"0s\"\nduration = \"5s\"\n[load]\nconcurrency = 2\n",
    )
    .unwrap();
    // A baseline first (no page needed), then the run followed in Chromium.
    let out = bin()
        .current_dir(dir.path())
        .args(["run"])
        .arg(&preset)
        .args(["--db", "r.db", "--no-report", "--repetitions", "2", "--duration", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let (_server, url) = spawn_run_with_web(dir.path(), &preset, &["--baseline", "1"]);

    // Mid-run: once the running point has two seconds, its curve and the
    // baseline's line are drawn; a look a second later has moved on.
    let look = || {
        let dom = browse(&chromium, &url, 2500, None);
        let status = text_of(&dom, "status").unwrap_or_default();
        let first_cell = dom
            .split("<table id=\"seconds\">")
            .nth(1)
            .and_then(|t| t.split("<td class=\"n\">").nth(1))
            .and_then(|c| c.split('<').next())
            .map(str::to_string);
        (dom, status, first_cell)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let (dom, status, cell) = loop {
        let (dom, status, cell) = look();
        // Chromium's virtual-time budget can run out before the page's
        // first state arrives on a loaded machine ("0 of 0"): look again.
        if status == "0 of 0 measurements" {
            assert!(std::time::Instant::now() < deadline, "no state shown: {dom:.3000}");
            std::thread::sleep(Duration::from_millis(500));
            continue;
        }
        assert!(
            status.ends_with("of 6 measurements"),
            "mid-run: {status:?}\n{dom:.2000}"
        );
        if dom.contains("id=\"rate\"") {
            break (dom, status, cell);
        }
        assert!(std::time::Instant::now() < deadline, "no curve drawn: {dom:.3000}");
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(
        dom.contains("id=\"baseline\""),
        "the baseline's line is drawn: {dom:.3000}"
    );
    let running = Path::new(env!("CARGO_TARGET_TMPDIR")).join("live-page-running.png");
    browse(&chromium, &url, 2500, Some(&running));
    assert!(running.is_file(), "a screenshot at {}", running.display());
    let (dom2, status2, cell2) = look();
    assert!(
        status2.ends_with("of 6 measurements"),
        "still mid-run: {status2:?}\n{dom2:.2000}"
    );
    let newest = [(status, cell), (status2, cell2)];
    assert_ne!(
        newest[0], newest[1],
        "the page moved on between two looks a second apart"
    );

    // The end: every measurement, a verdict against the baseline, the report.
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    let dom = loop {
        let dom = browse(&chromium, &url, 2500, None);
        if dom.contains("id=\"report\"") {
            break dom;
        }
        assert!(std::time::Instant::now() < deadline, "the run did not end: {dom:.2000}");
        std::thread::sleep(Duration::from_secs(2));
    };
    let finished = dom.split("<table id=\"finished\">").nth(1).unwrap();
    let rows = finished.split("</table>").next().unwrap().matches("<tr>").count();
    assert_eq!(rows, 1 + 6, "header and six measurements: {finished:.2000}");
    let versus = dom.split("<table id=\"versus\"").nth(1).unwrap();
    assert!(
        versus.contains("faster ") || versus.contains("slower ") || versus.contains("within the noise "),
        "{versus:.2000}"
    );
    // The finished report framed in the page, from the same server.
    let frame = dom
        .split("<iframe id=\"so-far\"")
        .nth(1)
        .and_then(|f| f.split('>').next())
        .unwrap_or_else(|| panic!("no report frame: {dom:.3000}"));
    assert!(
        frame.contains("src=\"report?n=6") && !frame.contains("hidden"),
        "the report framed: {frame}"
    );
    let ended = Path::new(env!("CARGO_TARGET_TMPDIR")).join("live-page-ended.png");
    browse(&chromium, &url, 2500, Some(&ended));
    assert!(ended.is_file(), "a screenshot at {}", ended.display());
    eprintln!(
        "screenshots of the live page: {} and {}",
        running.display(),
        ended.display()
    );
}

#[test]
fn a_load_with_web_is_followed_live_and_then_shows_its_result() {
    let (server, target) = common::serve("rest", &[]);
    let _server = Server(server);
    let mut child = bin()
        .args([
            "load",
            "--protocol",
            "rest",
            "--target",
            &target,
            "--workload",
            "inventory.xs",
        ])
        .args(["-c", "2", "-z", "3s", "--web"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let stdout = child.stdout.take().unwrap();
    let load = Server(child);
    let mut line = String::new();
    while !line.starts_with("live view: ") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "no live view line on stderr");
    }
    let port = port_of(line.trim_start_matches("live view: ").trim());
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let result = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = BufReader::new(stdout).read_to_string(&mut s);
        s
    });
    let mut page = follow(port);
    let states = states_until(&mut page, Duration::from_secs(30), |s| s["ended"].is_string());
    assert!(
        states
            .iter()
            .any(|s| s["current"]["seconds"].as_array().is_some_and(|v| !v.is_empty())),
        "the running load second by second"
    );
    let end = states.last().unwrap();
    assert!(
        end["ended"].as_str().unwrap().starts_with("load ended (duration): "),
        "{end}"
    );
    assert_eq!(end["finished"].as_array().unwrap().len(), 1);
    let (status, body) = request(port, "GET", "/report", &format!("127.0.0.1:{port}"));
    assert_eq!(status, 200);
    assert!(body.contains("<pre>") && body.contains("calls/s"), "{body}");
    let pid = load.0.id();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let text = result.join().unwrap();
    assert!(
        text.contains("calls/s"),
        "the result on stdout as without --web: {text}"
    );
}
