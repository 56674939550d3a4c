//! CI gates and pipes, as a user runs them (issue 13):
//!
//! - `load --threshold`: a table after the summary, exit 0 when all pass and
//!   4 when one fails; JSON output stays parseable; a bad threshold is named
//! - `run --threshold`: checked at every point, stored, shown by `show`
//! - `compare --fail-on-regression`: exit 5 when B is worse beyond the
//!   intervals, 0 within them, and "cannot judge" with one repetition
//! - a closed standard output (`| head`) ends every writer quietly with 0
//! - `runs` and `compare` JSON validate against their published schemas

mod common;
use common::serve;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use protobench_model::run::RunEnvironment;
use protobench_model::testing;
use protobench_results::store::{NewRun, Store};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_protobench"));
    c.env_remove("PROTOBENCH_PRESETS_DIR")
        .env_remove("PROTOBENCH_SERVERS_DIR")
        .env_remove("PROTOBENCH_DB_MAX_PAGES")
        .stdin(Stdio::null());
    c
}

fn protobench(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn load_thresholds_pass_with_0_and_fail_with_4() {
    let (mut server, addr) = serve("grpc", &[]);
    let base = [
        "load",
        "--protocol",
        "grpc",
        "--target",
        &addr,
        "--workload",
        "inventory.xs",
        "-c",
        "2",
        "-n",
        "100",
    ];
    let with = |extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        protobench(&a)
    };
    let o = with(&[
        "--threshold",
        "rate>0",
        "--threshold",
        "error_rate<1%",
        "--threshold",
        "p99 < 10s",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        out.contains("\nthreshold ") && out.ends_with("thresholds: all 3 passed\n"),
        "{out}"
    );
    assert!(out.contains("p99<10s") && out.contains("error_rate<1%"), "{out}");

    let o = with(&["--threshold", "rate>0", "--threshold", "p99<1ns"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    assert!(
        out.contains("FAIL") && out.ends_with("thresholds: 1 of 2 FAILED\n"),
        "{out}"
    );

    // JSON stays JSON; the table goes to stderr.
    let o = with(&["--threshold", "p99<1ns", "--format", "json"]);
    assert_eq!(o.status.code(), Some(4));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is the JSON result");
    assert_eq!(v["successes"], 100);
    assert!(text(&o.stderr).contains("thresholds: 1 of 1 FAILED"));
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn a_bad_threshold_is_named_with_the_accepted_forms_before_any_connection() {
    let o = protobench(&[
        "load",
        "--protocol",
        "rest",
        "--target",
        "127.0.0.1:9",
        "--workload",
        "tasks.int",
        "--threshold",
        "p99<5",
    ]);
    let err = text(&o.stderr);
    assert!(
        err.starts_with(
            "error: invalid threshold \"p99<5\": \"5\" needs a unit (ns, us, ms, s), e.g. 5ms; accepted forms: p50|p90"
        ),
        "{err}"
    );
    assert_eq!(o.status.code(), Some(2));
    let o = protobench(&[
        "load",
        "--protocol",
        "rest",
        "--target",
        "127.0.0.1:9",
        "--workload",
        "tasks.int",
        "--threshold",
        "cpu_per_call<1ms",
    ]);
    assert_eq!(
        text(&o.stderr),
        "error: threshold \"cpu_per_call<1ms\": cpu_per_call is the server's CPU, which only `protobench run` measures\n"
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn run_thresholds_are_checked_per_point_stored_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tiny.toml"),
        "name = \"tiny\"\nservers = [\"rust\"]\nprotocols = [\"grpc\"]\nworkloads = [\"inventory.xs\"]\n\
         repetitions = 1\nwarmup = \"0s\"\nduration = \"1s\"\nthresholds = [\"rate>0\"]\n[load]\nconcurrency = 2\n",
    )
    .unwrap();
    let o = bin()
        .current_dir(dir.path())
        .args([
            "run",
            "tiny.toml",
            "--db",
            "r.db",
            "--no-report",
            "--threshold",
            "p99<1ns",
        ])
        .output()
        .unwrap();
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(4), "{out}\n{}", text(&o.stderr));
    assert!(
        out.contains("rate>0") && out.contains("rust grpc inventory.xs c=2"),
        "{out}"
    );
    assert!(out.ends_with("thresholds: 1 of 2 FAILED\n"), "{out}");
    let store = Store::open_read_only(&dir.path().join("r.db")).unwrap();
    let stored = store.thresholds(1).unwrap();
    let got: Vec<(String, bool)> = stored.iter().map(|o| (o.threshold.to_string(), o.passed)).collect();
    assert_eq!(got, [("rate>0".into(), true), ("p99<1ns".into(), false)]);
    let o = bin()
        .current_dir(dir.path())
        .args(["show", "1", "--db", "r.db"])
        .output()
        .unwrap();
    assert!(
        text(&o.stdout).ends_with("thresholds: 1 of 2 FAILED\n"),
        "{}",
        text(&o.stdout)
    );
}

/// A database with runs of one point whose rates are given per repetition.
fn runs_db(path: &Path, runs: &[&[f64]]) {
    let mut s = Store::open(path).unwrap();
    for rates in runs {
        let point = testing::point(0, "grpc", "inventory.xs");
        let run = NewRun {
            preset: "gate".into(),
            preset_path: None,
            plan: serde_json::json!({}),
            repetitions: rates.len() as u32,
            noise_threshold: 0.1,
            environment: RunEnvironment::default(),
            points: vec![point.clone()],
            started_at: "2026-01-01T00:00:00Z".into(),
        };
        let id = s.create_run(&run).unwrap();
        for (i, r) in rates.iter().enumerate() {
            s.save_measurement(id, &testing::measurement(&point, i as u32 + 1, *r))
                .unwrap();
        }
    }
}

#[test]
fn compare_fails_on_a_regression_beyond_the_intervals_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    // 1: baseline; 2: 20% slower, tight; 3: 20% slower on the median but very noisy; 4: the same.
    runs_db(
        &db,
        &[
            &[1000.0, 1010.0, 990.0],
            &[800.0, 805.0, 795.0],
            &[800.0, 400.0, 1400.0],
            &[1000.0, 1005.0, 995.0],
        ],
    );
    let db = db.to_str().unwrap();
    let cmp = |b: &str| protobench(&["compare", "1", b, "--db", db, "--fail-on-regression", "5%"]);
    let o = cmp("2");
    assert_eq!(o.status.code(), Some(5), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).starts_with("regression: rust grpc inventory.xs c=16 rate: B/A 0.800 ["),
        "{}",
        text(&o.stderr)
    );
    let o = cmp("3");
    assert_eq!(o.status.code(), Some(0), "the interval reaches 1: {}", text(&o.stderr));
    let o = cmp("4");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stderr).ends_with("no regression beyond the noise and the 5% tolerance\n"));
    // Without the flag a regression is reported but does not fail.
    let o = protobench(&["compare", "1", "2", "--db", db]);
    assert_eq!(o.status.code(), Some(0));
}

/// Errors of `value` against `docs/schema/NAME`.
fn schema_errors(name: &str, value: &serde_json::Value) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schema")
        .join(name);
    let schema: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect()
}

#[test]
fn runs_and_compare_json_follow_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    // Runs 1 and 2 with intervals, 3 with one repetition (null intervals).
    runs_db(&db, &[&[1000.0, 1010.0, 990.0], &[800.0, 805.0, 795.0], &[900.0]]);
    let db = db.to_str().unwrap();
    let json = |args: &[&str]| -> serde_json::Value {
        let o = protobench(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let runs = json(&["runs", "--db", db, "-O", "json"]);
    assert_eq!(runs.as_array().unwrap().len(), 3);
    assert_eq!(schema_errors("runs.schema.json", &runs), Vec::<String>::new());
    for b in ["2", "3"] {
        let rows = json(&["compare", "1", b, "--db", db, "-O", "json"]);
        assert!(!rows.as_array().unwrap().is_empty());
        assert_eq!(
            schema_errors("compare.schema.json", &rows),
            Vec::<String>::new(),
            "compare 1 {b}"
        );
    }
    // The schema is not vacuous: a row without its ratio is rejected.
    let bad = serde_json::json!([{"point": "p", "metric": "rate", "a": 1.0, "b": 2.0}]);
    assert!(!schema_errors("compare.schema.json", &bad).is_empty());
}

#[test]
fn compare_with_one_repetition_says_it_cannot_judge() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    runs_db(&db, &[&[1000.0], &[500.0]]);
    let db = db.to_str().unwrap();
    let o = protobench(&["compare", "1", "2", "--db", db]);
    let out = text(&o.stdout);
    assert!(
        out.contains("cannot judge (1 repetition)") && !out.contains(" no\n"),
        "{out}"
    );
    assert!(
        out.contains("5 cannot be judged: a run with one repetition has no interval"),
        "{out}"
    );
    let o = protobench(&["compare", "1", "2", "--db", db, "--fail-on-regression", "5"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        "error: --fail-on-regression: nothing can be judged (one repetition, no interval): significance needs at least 2 repetitions in both runs\n"
    );
}

#[test]
fn a_closed_stdout_ends_every_writer_quietly_with_0() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("big.db");
    {
        // Enough points that every output is far larger than a pipe's buffer.
        let mut s = Store::open(&db).unwrap();
        let points: Vec<_> = (0..1500).map(|i| testing::point(i, "grpc", "inventory.xs")).collect();
        let run = NewRun {
            preset: "big".into(),
            preset_path: None,
            plan: serde_json::json!({}),
            repetitions: 1,
            noise_threshold: 0.1,
            environment: RunEnvironment::default(),
            points: points.clone(),
            started_at: "2026-01-01T00:00:00Z".into(),
        };
        let id = s.create_run(&run).unwrap();
        s.save_measurement(id, &testing::measurement(&points[0], 1, 1000.0))
            .unwrap();
    }
    let db = db.to_str().unwrap();
    let commands: [&[&str]; 4] = [
        &["show", "1", "--db", db],
        &["report", "1", "--format", "json", "--db", db],
        &["report", "1", "--format", "csv", "--db", db],
        &["compare", "1", "1", "--db", db, "--format", "json"],
    ];
    for args in commands {
        // As `| head -c 100`: read a little, then close the pipe.
        let mut child = bin()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 100];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout);
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let status = child.wait().unwrap();
        assert_eq!((status.code(), err.as_str()), (Some(0), ""), "{args:?}");
    }
}

#[test]
fn short_flags_and_a_url_target_map_to_the_plan() {
    let (mut server, addr) = serve("rest", &[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("result.json");
    let url = format!("http://{addr}/nowhere");
    // http:// means rest; -c -n -q -t -m -d -H; -O json; -o FILE instead of stdout.
    let o = protobench(&[
        "load",
        &url,
        "-c",
        "2",
        "-n",
        "20",
        "-q",
        "1000",
        "-t",
        "5s",
        "-m",
        "POST",
        "-d",
        "{\"a\":1}",
        "-H",
        "X-A: b",
        "-O",
        "json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty(), "the output went to the file");
    assert_eq!(text(&o.stderr), "");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let plan = &v["plan"];
    assert_eq!(
        (
            &plan["protocol"],
            &plan["concurrency"],
            &plan["requests"],
            &plan["rate"],
            &plan["timeout_ns"]
        ),
        (
            &"rest".into(),
            &2.into(),
            &20.into(),
            &1000.0.into(),
            &5_000_000_000u64.into()
        )
    );
    assert_eq!(plan["custom"]["method"], "POST");
    assert_eq!(plan["custom"]["data"], "{\"a\":1}");
    assert_eq!(
        plan["custom"]["headers"][0],
        serde_json::json!({"name": "X-A", "value": "b"})
    );
    assert_eq!(v["calls"], 20, "failed calls (404) are measurements");

    // -D FILE is the body from a file; --body is its older spelling.
    let body = dir.path().join("body.txt");
    std::fs::write(&body, "hello").unwrap();
    for flag in ["-D", "--data-file", "--body"] {
        let o = protobench(&[
            "load",
            &url,
            "-n",
            "2",
            "-c",
            "1",
            flag,
            body.to_str().unwrap(),
            "--format",
            "json",
        ]);
        assert_eq!(o.status.code(), Some(0), "{flag}: {}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["plan"]["custom"]["body_file"], body.to_str().unwrap(), "{flag}");
    }
    let _ = server.kill();
    let _ = server.wait();

    // grpc:// means grpc; --output is the older spelling of --format; -z is --duration.
    let (mut server, addr) = serve("grpc", &[]);
    let target = format!("grpc://{addr}");
    let o = protobench(&[
        "load",
        &target,
        "--workload",
        "inventory.xs",
        "-n",
        "10",
        "-c",
        "1",
        "--output",
        "csv",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let csv = text(&o.stdout);
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .starts_with(&format!("grpc,{addr},inventory.xs,")),
        "{csv}"
    );
    let o = protobench(&[
        "load",
        &target,
        "--workload",
        "inventory.xs",
        "-z",
        "300ms",
        "-c",
        "1",
        "-O",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["plan"]["duration_ns"], 300_000_000);
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn q_is_the_rate_never_quiet_and_an_unknown_protocol_is_asked_for() {
    let o = protobench(&["load", "--help"]);
    let help = text(&o.stdout);
    assert!(
        help.contains("-q, --rate <RATE>") && !help.contains("-q, --quiet"),
        "{help}"
    );
    assert!(
        help.contains("-O, --format <FORMAT>") && !help.contains("--output <"),
        "{help}"
    );
    let o = protobench(&["load", "127.0.0.1:9", "--workload", "tasks.int"]);
    assert_eq!(
        text(&o.stderr),
        "error: cannot tell the protocol of 127.0.0.1:9: give --protocol rest|rest-h2|grpc|soap, a URL (http://, https://, grpc://, grpcs://) or --call for gRPC\n"
    );
    assert_eq!(o.status.code(), Some(2));
    let o = protobench(&[
        "load",
        "grpc://127.0.0.1:9",
        "--protocol",
        "rest",
        "--workload",
        "tasks.int",
    ]);
    assert!(text(&o.stderr).starts_with("error: --protocol rest does not match the target grpc://127.0.0.1:9"));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn every_subcommand_spells_the_output_format_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    runs_db(&db, &[&[1000.0, 1010.0]]);
    let db = db.to_str().unwrap();
    let json = |args: &[&str]| {
        let o = protobench(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    };
    for flag in ["--format", "-O"] {
        assert!(json(&["runs", "--db", db, flag, "json"]).is_array());
        assert!(json(&["compare", "1", "1", "--db", db, flag, "json"]).is_array());
        assert!(json(&["report", "1", "--db", db, flag, "json"]).is_object());
    }
    // The older spellings still work.
    assert!(json(&["runs", "--db", db, "--json"]).is_array());
    assert!(json(&["compare", "1", "1", "--db", db, "--json"]).is_array());
}

#[test]
fn load_exports_hgrm_hlog_openmetrics_and_the_timeline() {
    let (mut server, addr) = serve("grpc", &[]);
    let dir = tempfile::tempdir().unwrap();
    let (hgrm, hlog) = (dir.path().join("l.hgrm"), dir.path().join("l.hlog"));
    let target = format!("grpc://{addr}");
    let base = [
        "load",
        target.as_str(),
        "--workload",
        "inventory.xs",
        "-c",
        "2",
        "-z",
        "1200ms",
    ];
    let mut args = base.to_vec();
    args.extend([
        "-O",
        "openmetrics",
        "--histogram",
        hgrm.to_str().unwrap(),
        "--hlog",
        hlog.to_str().unwrap(),
    ]);
    let o = protobench(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let metrics = text(&o.stdout);
    assert!(
        metrics.contains("# TYPE protobench_latency_seconds gauge") && metrics.ends_with("# EOF\n"),
        "{metrics}"
    );
    let hgrm = std::fs::read_to_string(&hgrm).unwrap();
    let total: Vec<u64> = hgrm
        .lines()
        .skip(2)
        .take_while(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap())
        .collect();
    assert!(
        total.windows(2).all(|w| w[0] <= w[1]),
        "TotalCount is cumulative:\n{hgrm}"
    );
    let hlog = std::fs::read_to_string(&hlog).unwrap();
    let intervals: Vec<&str> = hlog.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        intervals.len(),
        2,
        "one histogram per second (the last partial):\n{hlog}"
    );
    assert!(intervals[0].starts_with("Tag=latency,0.000,1.000,"), "{hlog}");
    assert!(intervals[1].starts_with("Tag=latency,1.000,0.200,"), "{hlog}");

    let mut args = base.to_vec();
    args.extend(["-O", "timeline-csv"]);
    let o = protobench(&args);
    let csv = text(&o.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "second,successes,errors,rate,p50_ns,p99_ns");
    assert_eq!(lines.len(), 3, "{csv}");
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn two_loads_stored_with_db_compare_and_report_like_runs() {
    let (mut server, addr) = serve("grpc", &[]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("loads.db");
    let db = db.to_str().unwrap();
    let target = format!("grpc://{addr}");
    for run in 1..=2 {
        let o = protobench(&[
            "load",
            &target,
            "--workload",
            "inventory.xs",
            "-c",
            "2",
            "-n",
            "50",
            "--db",
            db,
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert_eq!(text(&o.stderr), format!("stored as run {run} in {db}\n"));
    }
    let o = protobench(&["compare", "1", "2", "--db", db]);
    let out = text(&o.stdout);
    assert!(
        out.contains(&format!("{addr} grpc inventory.xs c=2")) && out.contains("cannot judge"),
        "{out}"
    );
    let o = protobench(&["report", "2", "--format", "md", "--db", db]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("inventory.xs"));
    let _ = server.kill();
    let _ = server.wait();
}
