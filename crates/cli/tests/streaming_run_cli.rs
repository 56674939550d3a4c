//! `protobench run` with a `kind = "stream"` preset (issue 31) against the
//! built-in Rust server: every workload over every transport that carries
//! it, verified first, measured by the streaming engine, stored whole in a
//! real SQLite file with the server's cost and memory, and shown in the
//! report's Streams table and charts.
//!
//! Bounded: a few points of 0.3 s each after a 0.1 s warm-up.

mod common;

use std::path::Path;
use std::process::Command;

use protobench_model::run::{MeasurementStatus, PointKind, RunRecord};
use protobench_model::stream::{Frames, StreamTransport};
use protobench_results::store::Store;

const PRESET: &str = r#"
name = "streams-test"
kind = "stream"
servers = ["rust"]
workloads = ["stream.echo.64b", "stream.sub.1k.r1000", "stream.poll.1k"]
repetitions = 2
warmup = "100ms"
duration = "300ms"

[stream]
transports = ["grpc", "websocket", "sse", "poll"]
frames = ["binary", "text"]

[load]
concurrency = [2]
"#;

fn run(dir: &Path, preset: &str, extra: &[&str]) -> std::process::Output {
    std::fs::write(dir.join("p.toml"), preset).unwrap();
    Command::new(env!("CARGO_BIN_EXE_protobench"))
        .current_dir(dir)
        .env_remove("PROTOBENCH_PRESETS_DIR")
        .env_remove("PROTOBENCH_SERVERS_DIR")
        .args(["run", "p.toml", "--db", "r.db", "-o", "report"])
        .args(extra)
        .output()
        .unwrap()
}

fn record(dir: &Path) -> RunRecord {
    let store = Store::open_read_only(&dir.join("r.db")).unwrap();
    let id = store.latest_run().unwrap().unwrap();
    store.load_run(id).unwrap()
}

#[test]
fn a_stream_preset_measures_each_transport_and_reports_per_message_figures() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), PRESET, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");

    let rec = record(dir.path());
    // echo: grpc + websocket x2 frames; subscription: grpc + websocket x2 + sse; poll: poll
    let ways: Vec<(String, StreamTransport, Frames)> = rec
        .points
        .iter()
        .map(|p| {
            assert_eq!(p.kind, PointKind::Stream);
            let s = p.stream.expect("a streaming point says how it is carried");
            (p.workload.clone(), s.transport, s.frames)
        })
        .collect();
    assert_eq!(ways.len(), 8, "{ways:?}");
    assert!(ways.contains(&("stream.echo.64b".into(), StreamTransport::WebSocket, Frames::Text)));
    assert!(ways.contains(&("stream.sub.1k.r1000".into(), StreamTransport::Sse, Frames::Text)));
    assert!(ways.contains(&("stream.poll.1k".into(), StreamTransport::Poll, Frames::Text)));
    assert!(!ways.contains(&("stream.echo.64b".into(), StreamTransport::Sse, Frames::Text)));

    assert_eq!(rec.measurements.len(), 16);
    for m in &rec.measurements {
        assert_eq!(m.status, MeasurementStatus::Ok, "{m:?}");
        assert!(m.result.is_none(), "a streaming point has no unary result");
        let s = m.stream.as_ref().expect("the streaming result is stored");
        assert!(s.messages_received > 0, "point {}: {s:?}", m.point);
        assert_eq!(s.failed_streams(), 0, "point {}: {:?}", m.point, s.ends);
        assert!(s.latency.p50_ns > 0 && s.latency.p99_ns >= s.latency.p50_ns);
        assert!(!s.histogram.is_empty(), "the per-message histogram is kept");
        assert_eq!(s.plan.streams, 2);
        let cost = m.server_cost.as_ref().expect("the server was sampled");
        assert!(cost.cpu_ns > 0 && cost.rss_peak_bytes > 0);
        assert!(m.server_rss_before_bytes.is_some_and(|b| b > 0));
    }
    // A subscription at 1,000 events/s: the latency runs from the server's stamp.
    let sub = rec
        .points
        .iter()
        .find(|p| p.workload == "stream.sub.1k.r1000" && p.stream.unwrap().transport == StreamTransport::Grpc)
        .unwrap();
    let m = rec.measurements.iter().find(|m| m.point == sub.index).unwrap();
    assert_eq!(m.stream.as_ref().unwrap().plan.transport, StreamTransport::Grpc);

    // The terminal and the report show the streams' table, not the unary one.
    assert!(stdout.contains("Streams (medians over repetitions"), "{stdout}");
    assert!(stdout.contains("websocket/text on rest"), "{stdout}");
    assert!(!stdout.contains("Relative to the reference protocol"), "{stdout}");
    let html = std::fs::read_to_string(dir.path().join("report/report.html")).unwrap();
    assert!(html.contains("<section id=\"streams\">"));
    assert!(
        html.contains("id=\"chart-stream-distribution-stream-echo-64b\""),
        "a per-message distribution chart"
    );
    assert!(
        html.contains("id=\"chart-stream-memory-stream-sub-1k-r1000\""),
        "a memory per stream chart"
    );

    // The JSON report of a streaming run keeps to its published schema.
    let out = Command::new(env!("CARGO_BIN_EXE_protobench"))
        .current_dir(dir.path())
        .args(["report", "1", "--format", "json", "--db", "r.db", "--out", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("json/report.json")).unwrap()).unwrap();
    assert!(
        v["run"]["measurements"][0]["stream"]["messages_received"]
            .as_u64()
            .unwrap()
            > 0
    );
    let errors = common::schema_errors("report.schema.json", &v);
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn a_stream_preset_names_what_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    for (preset, says) in [
        (
            PRESET.replace("[stream]", "protocols = [\"rest\"]\n[stream]"),
            "protocols: a stream preset's listeners follow from [stream] transports",
        ),
        (
            PRESET.replace("\"stream.poll.1k\"", "\"inventory.s\""),
            "workloads[2]: unknown `inventory.s`",
        ),
        (
            PRESET.replace("\"poll\"]", "\"carrier-pigeon\"]"),
            "stream.transports[3]: unknown `carrier-pigeon`",
        ),
        (
            PRESET.replace("kind = \"stream\"", "kind = \"fixed\""),
            "stream: only goes with kind = \"stream\"",
        ),
        (
            PRESET.replace("frames = [\"binary\", \"text\"]", "frames = [\"binary\"]\nrate = [0]"),
            "stream.rate: 0 is no message rate",
        ),
    ] {
        let out = run(dir.path(), &preset, &["--dry-run"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{says}: {stderr}");
        assert!(stderr.contains(says), "expected {says:?} in {stderr}");
    }
}
