//! `protobench run` and the reading commands, through the built binary.
//!
//! - the quick preset with 1-second points: table, database, report, then
//!   `runs`, `show`, `compare` and `report` in every format
//! - the HTML report renders in headless Chromium with every chart
//! - invalid presets: exact message and exit code 2
//! - Ctrl-C / SIGTERM keeps finished points, `--resume` finishes the run
//! - locked, unwritable and full databases: clear messages, nothing lost
//! - a server whose toolchain is missing fails its points, the run goes on
//! - a killed run takes its server with it and is then seen `interrupted`;
//!   a run being measured cannot be resumed by a second process
//! - unsaved measurements: the run is incomplete, the file is unique to its
//!   database and never overwritten, `import` brings it in once

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use protobench_model::run::RunStatus;
use protobench_results::store::Store;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_protobench"));
    c.env_remove("PROTOBENCH_PRESETS_DIR")
        .env_remove("PROTOBENCH_SERVERS_DIR")
        .env_remove("PROTOBENCH_DB_MAX_PAGES");
    c
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    bin().current_dir(dir).args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A small preset: one protocol pair, one workload, 1-second points.
const SMALL: &str = r#"name = "small"
servers = ["rust"]
protocols = ["rest", "grpc"]
workloads = ["inventory.xs"]
repetitions = 2
warmup = "0s"
duration = "1s"
[load]
concurrency = 4
"#;

#[test]
fn quick_preset_runs_stores_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = run_in(
        dir.path(),
        &[
            "run",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--repetitions",
            "1",
            "--db",
            "r.db",
        ],
    );
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    assert!(started.elapsed() < Duration::from_secs(170), "{:?}", started.elapsed());
    let (table, relative_section) = stdout
        .split_once("Relative to the reference protocol")
        .unwrap_or_else(|| panic!("no relative table: {stdout}"));
    let rows = table.lines().filter(|l| l.starts_with("rust ")).count();
    assert_eq!(rows, 16, "{stdout}");
    assert!(stdout.contains("run 1 complete: 16 measurements"), "{stdout}");
    // each of rest-h2, grpc and soap relative to rest on each of 4 workloads
    let relative = relative_section
        .lines()
        .filter(|l| l.starts_with("rust ") && l.contains(" rest ") && l.contains("x (1 repetition)"))
        .count();
    assert_eq!(relative, 12, "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l == "report: protobench-report/run-1/report.html"),
        "{stdout}"
    );
    let html_path = dir.path().join("protobench-report/run-1/report.html");
    assert!(html_path.is_file());
    assert!(dir.path().join("protobench-report/run-1/charts/rate.svg").is_file());
    assert!(dir.path().join("protobench-report/run-1/charts/rate.png").is_file());

    let rec = Store::open_read_only(&dir.path().join("r.db"))
        .unwrap()
        .load_run(1)
        .unwrap();
    assert_eq!(rec.status, RunStatus::Complete);
    assert_eq!(rec.measurements.len(), 16);
    for m in &rec.measurements {
        let r = m.result.as_ref().unwrap();
        assert!(r.successes > 0 && r.error_count() == 0, "{m:?}");
        let c = m.server_cost.unwrap();
        assert!(c.cpu_ns > 0 && c.rss_peak_bytes > 0, "server cost sampled: {c:?}");
        assert!(!r.histogram.is_empty() && !r.timeline.is_empty());
        assert!(m.server_cpu_timeline.len() <= r.timeline.len(), "{m:?}");
    }
    // the server's CPU per second (the drift flag's second signal) is kept
    // for the seconds the sampler covered: with 1 s windows, most of them
    assert!(
        rec.measurements
            .iter()
            .any(|m| m.server_cpu_timeline.first().is_some_and(|c| *c > 0)),
        "no measurement kept its server CPU per second"
    );
    assert!(!rec.environment.machine.cpu_model.is_empty());
    assert!(rec.environment.isolation[0].starts_with("server CPUs: "));

    let out = run_in(dir.path(), &["runs", "--db", "r.db"]);
    let s = text(&out.stdout);
    assert!(
        s.lines().nth(1).unwrap().contains("quick") && s.contains("complete") && s.contains("16/16"),
        "{s}"
    );

    let out = run_in(dir.path(), &["show", "latest", "--db", "r.db"]);
    let s = text(&out.stdout);
    assert!(
        out.status.success() && s.contains("preset: quick") && s.contains("rest-h2"),
        "{s}"
    );

    let out = run_in(dir.path(), &["compare", "1", "1", "--db", "r.db"]);
    let s = text(&out.stdout);
    assert!(out.status.success() && s.contains("differences are significant"), "{s}");

    let out = run_in(dir.path(), &["report", "1", "--format", "md", "--db", "r.db"]);
    assert!(text(&out.stdout).starts_with("# protobench run 1 — quick"));
    let out = run_in(dir.path(), &["report", "1", "--format", "csv", "--db", "r.db"]);
    assert_eq!(text(&out.stdout).lines().count(), 17);
    let out = run_in(
        dir.path(),
        &["report", "1", "--format", "json", "--db", "r.db", "--out", "json"],
    );
    assert!(out.status.success());
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("json/report.json")).unwrap()).unwrap();
    assert_eq!(v["aggregates"].as_array().unwrap().len(), 16);
    let errors = common::schema_errors("report.schema.json", &v);
    assert!(errors.is_empty(), "{errors:#?}");

    chromium_renders(&html_path);
}

/// Renders the page in headless Chromium: it must load, have no script
/// errors (it has no scripts at all), and show every chart.
fn chromium_renders(html: &Path) {
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    let Some(chromium) = chromium else {
        assert!(
            std::env::var_os("PROTOBENCH_REQUIRE_PEERS").is_none(),
            "PROTOBENCH_REQUIRE_PEERS is set but chromium is missing"
        );
        eprintln!("skipping the browser check: chromium is not installed");
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let url = format!("file://{}", html.display());
    let out = Command::new(&chromium)
        .args(common)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--dump-dom", &url])
        .output()
        .unwrap();
    let dom = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(dom.contains("<h1>protobench run 1"), "{dom:.500}");
    assert!(!stderr.contains("Uncaught"), "script errors:\n{stderr}");
    let figures = dom.matches("<figure id=\"chart-").count();
    assert!(figures >= 10, "{figures} charts");
    assert_eq!(dom.matches("<svg").count(), figures);
    let shot = html.with_file_name("screenshot.png");
    let out = Command::new(&chromium)
        .args(common)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args([
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,2000",
            &url,
        ])
        .output()
        .unwrap();
    assert!(shot.is_file(), "{}", text(&out.stderr));
}

#[test]
fn an_invalid_preset_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.toml"), "servers = [\"rust\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nmode = \"closd\"\nconcurrency = 1\n").unwrap();
    let out = run_in(dir.path(), &["run", "bad.toml", "--db", "r.db"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: invalid preset\nbad.toml:5:8: load.mode: unknown value `closd` (accepted: closed, open)\n"
    );
    assert!(!dir.path().join("r.db").exists(), "nothing was created");

    let out = run_in(dir.path(), &["run", "nosuch", "--db", "r.db"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with("error: no preset `nosuch` ("),
        "{}",
        text(&out.stderr)
    );
}

/// `--servers`/`--protocols`/`--workloads`/`--time-scale` change the plan a
/// dry run prints; a bad value is refused by its flag with exit code 2.
#[test]
fn command_line_overrides_change_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        dir.path(),
        &[
            "run",
            "quick",
            "--protocols",
            "grpc",
            "--workloads",
            "echo.1k,inventory.s",
            "--time-scale",
            "0.5",
            "--dry-run",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = plan["points"].as_array().unwrap();
    let got: Vec<(String, String)> = points
        .iter()
        .map(|p| {
            (
                p["protocol"].as_str().unwrap().to_string(),
                p["workload"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![("grpc".into(), "echo.1k".into()), ("grpc".into(), "inventory.s".into())]
    );
    assert_eq!(plan["time_scale"], 0.5);
    // quick.toml: 1 s windows, 250 ms warm-ups.
    assert_eq!(plan["duration_ns"], 500_000_000u64);
    assert_eq!(plan["warmup_ns"], 125_000_000u64);

    let out = run_in(dir.path(), &["run", "quick", "--servers", "nope", "--db", "r.db"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("error: invalid preset\n--servers: ") && err.contains("nope"),
        "{err}"
    );
    let out = run_in(dir.path(), &["run", "quick", "--time-scale", "0", "--db", "r.db"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with("error: --time-scale: `0` is not a scale"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.path().join("r.db").exists(), "nothing was created");

    // --claims-only: Bolanowski's claims read its 28 points with a new
    // connection per call, of 56; the plan says so.
    let out = run_in(dir.path(), &["run", "bolanowski2022", "--claims-only", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = plan["points"].as_array().unwrap();
    assert_eq!(points.len(), 28);
    assert!(
        points.iter().all(|p| p["connection_policy"] == "per-call"),
        "{points:?}"
    );
    let notes = plan["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .unwrap()
            .starts_with("claims only: 28 of the preset's 56 points")),
        "{notes:?}"
    );
    let out = run_in(dir.path(), &["run", "quick", "--claims-only", "--db", "r.db"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--claims-only: the preset states no claims"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.path().join("r.db").exists(), "nothing was created");
}

#[test]
fn interrupted_run_keeps_finished_points_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.toml"), SMALL).unwrap();
    let mut child = bin()
        .current_dir(dir.path())
        .args(["run", "small.toml", "--db", "r.db", "--no-report"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut seen = String::new();
    for line in BufReader::new(stderr).lines() {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if line.starts_with("[2/4") {
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            )
            .unwrap();
        }
        if line.starts_with("interrupted:") {
            break;
        }
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen}");
    assert!(
        seen.contains("interrupted: 2 measurement(s) left; finish with `protobench run --resume 1 --db r.db`"),
        "{seen}"
    );
    let rec = Store::open_read_only(&dir.path().join("r.db"))
        .unwrap()
        .load_run(1)
        .unwrap();
    assert_eq!(rec.status, RunStatus::Interrupted);
    assert_eq!(rec.measurements.len(), 2);
    // No server is left behind.
    assert!(!server_children_alive(child.id()));

    // `-o` names the report's directory (as `load -o` and `report -o` name their file).
    let out = run_in(dir.path(), &["run", "--resume", "1", "--db", "r.db", "-o", "rep"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(dir.path().join("rep/report.html").is_file());
    let rec = Store::open_read_only(&dir.path().join("r.db"))
        .unwrap()
        .load_run(1)
        .unwrap();
    assert_eq!(rec.status, RunStatus::Complete);
    assert_eq!(rec.measurements.len(), 4);
    let out = run_in(dir.path(), &["run", "--resume", "1", "--db", "r.db"]);
    assert!(out.status.success() && text(&out.stderr).contains("already complete"));
}

fn server_children_alive(parent: u32) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read_to_string(e.path().join("stat")).ok().is_some_and(|s| {
            let rest = &s[s.rfind(')').map_or(0, |i| i + 1)..];
            rest.split_whitespace().nth(1) == Some(&parent.to_string())
        })
    })
}

#[test]
fn a_locked_database_is_named_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.toml"), SMALL).unwrap();
    let db = dir.path().join("r.db");
    drop(Store::open(&db).unwrap());
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let out = run_in(dir.path(), &["run", "small.toml", "--db", "r.db"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        text(&out.stderr),
        "error: opening the results database: results database r.db is locked by another process (is another protobench run writing to it?)\n"
    );
}

#[test]
fn an_unwritable_database_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.toml"), SMALL).unwrap();
    let out = run_in(
        dir.path(),
        &["run", "small.toml", "--db", "/nonexistent-protobench/r.db"],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).starts_with(
            "error: opening the results database: results database /nonexistent-protobench/r.db is not writable: "
        ),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_full_disk_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // Six measurements of about 1.5 KB of result each (plus histograms) need
    // at least two more pages than the empty schema whatever the machine's
    // speed; the run itself (plan, points) fits in the pages the empty schema
    // has. One page of headroom therefore always runs out mid-run.
    std::fs::write(
        dir.path().join("small.toml"),
        SMALL.replace("repetitions = 2", "repetitions = 3"),
    )
    .unwrap();
    let db = dir.path().join("r.db");
    drop(Store::open(&db).unwrap());
    let pages = std::fs::metadata(&db).unwrap().len() / 4096;
    let out = bin()
        .current_dir(dir.path())
        .args(["run", "small.toml", "--db", "r.db", "--no-report"])
        .env("PROTOBENCH_DB_MAX_PAGES", (pages + 1).to_string())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("could not be written to r.db: results database r.db: disk full"),
        "{stderr}"
    );
    let file = saved_file(&stderr);
    assert!(file.starts_with("./protobench-r-run-1-unsaved-"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "       run 1 is incomplete: once the database can take them, `protobench import {file} --db r.db` stores them (or `protobench run --resume 1 --db r.db` measures them again)\n"
        )),
        "{stderr}"
    );
    let dump: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join(&file)).unwrap()).unwrap();
    let unsaved = dump["measurements"].as_array().unwrap().len();
    let rec = Store::open_read_only(&db).unwrap().load_run(1).unwrap();
    assert_eq!(
        rec.measurements.len() + unsaved,
        6,
        "every measurement is in the database or the dump"
    );
    assert!(unsaved > 0);
    // Not complete with measurements missing: --resume or import finishes it.
    assert_eq!(rec.status, RunStatus::Interrupted);
    assert!(
        stdout_line(&out, "run 1 interrupted: 6 measurements"),
        "{}",
        text(&out.stdout)
    );

    // Another database in the same directory, same run id: its own file,
    // and the first one is untouched.
    let before = std::fs::read(dir.path().join(&file)).unwrap();
    drop(Store::open(&dir.path().join("s.db")).unwrap());
    let out = bin()
        .current_dir(dir.path())
        .args(["run", "small.toml", "--db", "s.db", "--no-report"])
        .env("PROTOBENCH_DB_MAX_PAGES", (pages + 1).to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let other = saved_file(&text(&out.stderr));
    assert!(other.starts_with("./protobench-s-run-1-unsaved-"), "{other}");
    assert_eq!(std::fs::read(dir.path().join(&file)).unwrap(), before);

    // Imported once, refused twice; the run is then complete.
    let out = run_in(dir.path(), &["import", &file, "--db", "r.db"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("imported {unsaved} measurement(s) into run 1 of r.db; run 1 is complete\n")
    );
    let rec = Store::open_read_only(&db).unwrap().load_run(1).unwrap();
    assert_eq!((rec.status, rec.measurements.len()), (RunStatus::Complete, 6));
    let out = run_in(dir.path(), &["import", &file, "--db", "r.db"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).starts_with("error: run 1 already has a measurement of point "),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stderr).ends_with(": nothing imported\n"));
    // Into a database that does not exist: refused, nothing created.
    let out = run_in(dir.path(), &["import", &file, "--db", "none.db"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        text(&out.stderr),
        "error: results database none.db does not exist (run `protobench run` first, or pass --db)\n"
    );
    assert!(!dir.path().join("none.db").exists());
}

/// The file named by "they are saved in FILE (JSON...".
fn saved_file(stderr: &str) -> String {
    let rest = stderr
        .split("they are saved in ")
        .nth(1)
        .unwrap_or_else(|| panic!("no saved file in:\n{stderr}"));
    rest.split(" (JSON").next().unwrap().to_string()
}

fn stdout_line(out: &Output, prefix: &str) -> bool {
    text(&out.stdout).lines().any(|l| l.starts_with(prefix))
}

#[test]
fn resume_of_a_missing_database_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(dir.path(), &["run", "--resume", "1", "--db", "r.db"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        text(&out.stderr),
        "error: opening run 1 to resume it: results database r.db does not exist (run `protobench run` first, or pass --db)\n"
    );
    assert!(!dir.path().join("r.db").exists());
}

/// Starts the SMALL preset in `dir` and reads its stderr until a line
/// starts with `until`; returns the child and what it wrote.
#[allow(clippy::zombie_processes)] // reason: the caller waits for the returned child
fn start_small_until(dir: &Path, until: &str) -> (std::process::Child, BufReader<std::process::ChildStderr>, String) {
    std::fs::write(dir.join("small.toml"), SMALL).unwrap();
    let mut child = bin()
        .current_dir(dir)
        .args(["run", "small.toml", "--db", "r.db", "--no-report"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            let _ = child.wait();
            panic!("the run ended before `{until}`:\n{seen}");
        }
        seen.push_str(&line);
        if line.starts_with(until) {
            return (child, err, seen);
        }
    }
}

/// The children of `parent` (from /proc).
fn children(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let s = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let rest = &s[s.rfind(')')? + 1..];
            (rest.split_whitespace().nth(1)? == parent.to_string()).then_some(pid)
        })
        .collect()
}

/// Running (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let rest = &s[s.rfind(')').map_or(0, |i| i + 1)..];
        rest.split_whitespace().next() != Some("Z")
    })
}

#[test]
fn a_killed_run_takes_its_server_with_it_and_is_then_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, _err, seen) = start_small_until(dir.path(), "[1/4");
    let deadline = Instant::now() + Duration::from_secs(10);
    let servers = loop {
        let c = children(child.id());
        if !c.is_empty() || Instant::now() > deadline {
            break c;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!servers.is_empty(), "no server running:\n{seen}");
    child.kill().unwrap(); // SIGKILL: no handler runs
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while servers.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<u32> = servers.iter().copied().filter(|p| alive(*p)).collect();
    for p in &left {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*p as i32), nix::sys::signal::Signal::SIGKILL);
    }
    assert!(left.is_empty(), "servers {left:?} outlived their killed runner");

    // `runs` sees that nobody measures run 1 any more.
    let out = run_in(dir.path(), &["runs", "--db", "r.db"]);
    let s = text(&out.stdout);
    assert!(
        s.lines().nth(1).is_some_and(|l| l.contains(" interrupted ")),
        "{s}\n{}",
        text(&out.stderr)
    );
    assert_eq!(
        Store::open_read_only(&dir.path().join("r.db"))
            .unwrap()
            .load_run(1)
            .unwrap()
            .status,
        RunStatus::Interrupted
    );
    // And --resume finishes it.
    let out = run_in(dir.path(), &["run", "--resume", "1", "--db", "r.db", "--no-report"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rec = Store::open_read_only(&dir.path().join("r.db"))
        .unwrap()
        .load_run(1)
        .unwrap();
    assert_eq!((rec.status, rec.measurements.len()), (RunStatus::Complete, 4));
}

#[test]
fn a_run_being_measured_cannot_be_resumed_by_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, err, _) = start_small_until(dir.path(), "[1/4");
    let out = run_in(dir.path(), &["run", "--resume", "1", "--db", "r.db", "--no-report"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        text(&out.stderr),
        format!(
            "error: run 1 is being measured by another protobench process (pid {})\n",
            child.id()
        )
    );
    // The first run goes on and finishes alone.
    let rest: Vec<String> = err.lines().map(Result::unwrap).collect();
    let status = child.wait().unwrap();
    assert!(status.success(), "{rest:?}");
    let rec = Store::open_read_only(&dir.path().join("r.db"))
        .unwrap()
        .load_run(1)
        .unwrap();
    assert_eq!((rec.status, rec.measurements.len()), (RunStatus::Complete, 4));
    assert!(!dir.path().join("r.db.run-1.lock").exists());
}

#[test]
fn a_missing_toolchain_fails_that_server_only() {
    let dir = tempfile::tempdir().unwrap();
    let sdir = dir.path().join("servers/fake");
    std::fs::create_dir_all(&sdir).unwrap();
    std::fs::write(
        sdir.join("manifest.toml"),
        "name = \"fake\"\nlanguage = \"Fake\"\nstack = \"none\"\nprotocols = [\"rest\"]\ntoolchain = [\"protobench-no-such-compiler\"]\nbuild = [[\"protobench-no-such-compiler\", \"build\"]]\nstart = [\"bin/server\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("two.toml"),
        SMALL
            .replace("[\"rust\"]", "[\"rust\", \"fake\"]")
            .replace("[\"rest\", \"grpc\"]", "[\"rest\"]")
            .replace("repetitions = 2", "repetitions = 1"),
    )
    .unwrap();
    let out = bin()
        .current_dir(dir.path())
        .args([
            "run",
            "two.toml",
            "--db",
            "r.db",
            "--no-report",
            "--servers-dir",
            "servers",
        ])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("warning: server `fake` needs protobench-no-such-compiler on PATH (servers/fake/manifest.toml): its points will be marked failed"),
        "{stderr}"
    );
    let rec = Store::open_read_only(&dir.path().join("r.db"))
        .unwrap()
        .load_run(1)
        .unwrap();
    let by_server = |s: &str| {
        rec.measurements
            .iter()
            .filter(|m| rec.points[m.point as usize].server == s)
            .collect::<Vec<_>>()
    };
    assert!(by_server("rust").iter().all(|m| m.failure.is_none()));
    assert_eq!(
        by_server("fake")[0].failure.as_ref().unwrap().reason,
        "server `fake` needs protobench-no-such-compiler on PATH (toolchain in servers/fake/manifest.toml)"
    );

    let out = bin()
        .current_dir(dir.path())
        .args(["build", "fake", "--servers-dir", "servers"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "fake: cannot build: protobench-no-such-compiler not found on PATH (toolchain in servers/fake/manifest.toml)\n"
    );
    let out = bin()
        .current_dir(dir.path())
        .args(["servers", "--servers-dir", "servers"])
        .output()
        .unwrap();
    assert!(text(&out.stdout).contains("toolchain missing: protobench-no-such-compiler"));
}

/// A study preset, scaled down, runs to the end and judges its claims: the
/// claims on the workload measured get a verdict, the others are "not
/// measured" with the reason (bolanowski2022: per call and reused, clear and
/// TLS, at 1 call/s; 3-second windows at --time-scale 0.01).
#[test]
fn a_scaled_down_study_prints_its_findings() {
    let dir = tempfile::tempdir().unwrap();
    let presets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets");
    let out = bin()
        .current_dir(dir.path())
        .args([
            "run",
            "bolanowski2022",
            "--workloads",
            "tasks.int",
            "--repetitions",
            "2",
            "--time-scale",
            "0.01",
        ])
        .args(["--db", "r.db", "--no-report"])
        .env("PROTOBENCH_PRESETS_DIR", &presets)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}\n{stdout}", text(&out.stderr));
    assert!(stdout.contains("Findings vs the study"), "{stdout}");
    let rows: Vec<&str> = stdout.lines().filter(|l| l.contains("[p50: a ")).collect();
    assert_eq!(rows.len(), 15, "{stdout}");
    let judged: Vec<&&str> = rows
        .iter()
        .filter(|l| l.contains("III,") || l.contains("TLS makes REST"))
        .collect();
    assert_eq!(judged.len(), 3, "{stdout}");
    for r in &judged {
        assert!(!r.contains("not measured"), "{r}");
        assert!(
            ["holds", "does not hold", "inconclusive"]
                .iter()
                .any(|v| r.ends_with(v)),
            "{r}"
        );
    }
    assert!(
        rows.iter()
            .any(|r| r.contains("not measured: no point rest tasks.clone-hello")),
        "{stdout}"
    );
    // The scale and the study's differences are in the stored run's notes.
    let rec = Store::open_read_only(&dir.path().join("r.db"))
        .unwrap()
        .load_run(1)
        .unwrap();
    let notes = rec.environment.isolation.join("\n");
    assert!(notes.contains("time scale 0.01"), "{notes}");
    assert!(
        notes.contains("differs from the study: the study's servers are ASP.NET"),
        "{notes}"
    );
}
