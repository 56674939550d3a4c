//! Presets with `[[targets]]` through the built binary (issue #13): the
//! services are `protobench serve` processes this test starts itself, so
//! protobench only calls them.
//!
//! - a gRPC target described by server reflection (with the PID of its
//!   process) and a REST target (without), kind fixed, repetitions = 2:
//!   every measurement stored, server cost only where a PID was given,
//!   the report says the targets were not verified, compare works
//! - a bad target key: exact message with its line, exit code 2, nothing created
//!
//! Each point runs 1 s with 2 callers.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use protobench_model::run::RunStatus;
use protobench_results::store::Store;

fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_protobench"))
        .current_dir(dir)
        .env_remove("PROTOBENCH_PRESETS_DIR")
        .env_remove("PROTOBENCH_SERVERS_DIR")
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn custom_targets_run_with_repetitions_store_and_report() {
    let (mut grpc, grpc_addr) = common::serve("grpc", &[]);
    let (mut rest, rest_addr) = common::serve("rest", &[]);
    let dir = tempfile::tempdir().unwrap();
    let preset = format!(
        r#"name = "mine"
kind = "fixed"
repetitions = 2
warmup = "0s"
duration = "1s"
validate = "full"
[load]
concurrency = 2

[[targets]]
name = "greeter"
protocol = "grpc"
address = "{grpc_addr}"
call = "helloworld.Greeter/SayHello"
data = '{{"request": {{"name": "custom"}}}}'
pid = {pid}

[[targets]]
name = "inventory"
protocol = "rest"
url = "http://{rest_addr}/v1/inventory/xs"
headers = ["accept: application/json"]
"#,
        pid = grpc.id()
    );
    std::fs::write(dir.path().join("mine.toml"), preset).unwrap();
    let out = run_in(dir.path(), &["run", "mine.toml", "--db", "r.db"]);
    let _ = (grpc.kill(), rest.kill(), grpc.wait(), rest.wait());
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("run 1 complete: 4 measurements"), "{stdout}");

    let rec = Store::open_read_only(&dir.path().join("r.db"))
        .unwrap()
        .load_run(1)
        .unwrap();
    assert_eq!(rec.status, RunStatus::Complete);
    assert_eq!(rec.measurements.len(), 4);
    for m in &rec.measurements {
        let point = &rec.points[m.point as usize];
        let r = m.result.as_ref().unwrap();
        assert!(r.successes > 0 && r.error_count() == 0, "{point:?}: {m:?}");
        assert_eq!(point.workload, "custom");
        match point.server.as_str() {
            // Sampled from the PID the preset gives.
            "greeter" => assert!(
                m.server_cost.is_some_and(|c| c.cpu_ns > 0 && c.rss_peak_bytes > 0),
                "{m:?}"
            ),
            // No PID: no server cost, rather than a zero.
            "inventory" => assert!(m.server_cost.is_none(), "{m:?}"),
            other => panic!("unexpected server {other}"),
        }
    }
    assert_eq!(
        rec.measurements.iter().filter(|m| m.repetition == 2).count(),
        2,
        "two repetitions of each point"
    );
    assert!(
        rec.warnings.iter().any(|w| w.starts_with(&format!(
            "target `greeter` (grpc helloworld.Greeter/SayHello (server reflection) at {grpc_addr}) is not verified"
        ))),
        "{:?}",
        rec.warnings
    );

    let out = run_in(dir.path(), &["report", "1", "--format", "md", "--db", "r.db"]);
    let md = text(&out.stdout);
    assert!(
        md.contains("target `inventory` (rest GET/POST / at http://") && md.contains("is not verified"),
        "{md}"
    );
    let out = run_in(dir.path(), &["compare", "1", "1", "--db", "r.db"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn a_bad_target_key_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.toml"),
        "[load]\nconcurrency = 1\n[[targets]]\nname = \"api\"\nprotocol = \"grpc\"\naddress = \"127.0.0.1:1\"\nmethod = \"GET\"\n",
    )
    .unwrap();
    let out = run_in(dir.path(), &["run", "bad.toml", "--db", "r.db"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: invalid preset\n\
         bad.toml:3:1: targets[0].call: missing: the gRPC method, e.g. call = \"package.Service/Method\"\n\
         bad.toml:7:10: targets[0].method: applies only to protocol rest, rest-h2 or soap, not grpc\n"
    );
    assert!(!dir.path().join("r.db").exists(), "nothing was created");
}
