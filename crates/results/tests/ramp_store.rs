//! The continuous ramp's record in the results database (issue 10).
//!
//! - users and p95 per second, and the knee (second, users, rate, reason),
//!   round-trip
//! - a database written before those columns existed (schema version 2) is
//!   upgraded on open and still reads, its seconds with 0 users and p95

use protobench_model::run::{RunEnvironment, Search, SearchStep};
use protobench_model::testing;
use protobench_results::store::{NewRun, SCHEMA_VERSION, Store};

fn new_run() -> NewRun {
    NewRun {
        preset: "ramp".into(),
        preset_path: None,
        plan: serde_json::json!({"preset": "ramp"}),
        repetitions: 1,
        noise_threshold: 0.1,
        environment: RunEnvironment::default(),
        points: vec![testing::point(0, "grpc", "inventory.xs")],
        started_at: "2026-01-01T00:00:00Z".into(),
    }
}

/// A 4-second ramp, 15 users more each second, its knee at second 2.
fn ramp_measurement(run: &NewRun) -> protobench_model::run::Measurement {
    let mut m = testing::measurement(&run.points[0], 1, 1000.0);
    let r = m.result.as_mut().unwrap();
    r.timeline = (0..4)
        .map(|s| protobench_model::load::TimelinePoint {
            second: s,
            successes: 100 * u64::from(s + 1),
            errors: u64::from(s),
            p50_ns: 1_000 * u64::from(s + 1),
            p95_ns: 2_000 * u64::from(s + 1),
            p99_ns: 3_000 * u64::from(s + 1),
            users: 15 * (s + 1),
        })
        .collect();
    m.search = Some(Search {
        steps: r
            .timeline
            .iter()
            .map(|p| SearchStep {
                concurrency: p.users,
                rate: p.successes as f64,
                errors: p.errors,
                p99_ns: p.p99_ns,
            })
            .collect(),
        chosen_concurrency: 45,
        knee_rate: Some(300.0),
        stop_reason: "rate stopped rising for 3 s after second 2 (45 users)".into(),
        knee_second: Some(2),
        stopped_at_knee: false,
    });
    m
}

#[test]
fn the_ramp_timeline_and_its_knee_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let mut s = Store::open(&path).unwrap();
    let run = new_run();
    let id = s.create_run(&run).unwrap();
    let m = ramp_measurement(&run);
    s.save_measurement(id, &m).unwrap();
    let back = &s.load_run(id).unwrap().measurements[0];
    assert_eq!(
        back.result.as_ref().unwrap().timeline,
        m.result.as_ref().unwrap().timeline
    );
    assert_eq!(back.search, m.search);
}

#[test]
fn a_version_2_database_is_upgraded_and_its_seconds_read_with_zero_users() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let mut s = Store::open(&path).unwrap();
    let run = new_run();
    let id = s.create_run(&run).unwrap();
    let mut m = ramp_measurement(&run);
    m.search.as_mut().unwrap().knee_second = None;
    s.save_measurement(id, &m).unwrap();
    drop(s);
    // Turn the file back into what version 2 wrote: no users or p95 columns, no networks, no thresholds,
    // no server CPU per second, and a search record without a knee second.
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(
        "ALTER TABLE timeseries DROP COLUMN server_cpu_ns;
         ALTER TABLE timeseries DROP COLUMN users;
         ALTER TABLE timeseries DROP COLUMN p95_ns;
         DROP TABLE links;
         ALTER TABLE points DROP COLUMN network;
         ALTER TABLE measurements DROP COLUMN link_json;
         ALTER TABLE measurements DROP COLUMN stream_json;
         ALTER TABLE measurements DROP COLUMN rss_before_bytes;
         DROP TABLE thresholds;
         PRAGMA user_version = 2;",
    )
    .unwrap();
    drop(c);
    let s = Store::open(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    let back = &s.load_run(id).unwrap().measurements[0];
    let t = &back.result.as_ref().unwrap().timeline;
    assert_eq!(t.len(), 4);
    assert!(t.iter().all(|p| p.users == 0 && p.p95_ns == 0), "{t:?}");
    assert_eq!(t[3].successes, 400, "the old columns are intact");
    assert_eq!(back.search.as_ref().unwrap().knee_second, None);
}

/// The report draws the stored ramp as Locust does: users, calls/s and
/// latency per second on one time axis, with the knee's second marked.
#[test]
fn the_report_draws_the_ramp_over_time_with_the_knee() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let mut s = Store::open(&path).unwrap();
    let mut run = new_run();
    run.points[0].kind = protobench_model::run::PointKind::Ramp;
    let id = s.create_run(&run).unwrap();
    let m = ramp_measurement(&run);
    s.save_measurement(id, &m).unwrap();
    let rec = s.load_run(id).unwrap();
    let charts = protobench_results::html::charts(&rec);
    let ramp = charts.iter().find(|c| c.id == "ramp-0").expect("a ramp chart");
    assert!(ramp.svg.contains("knee: 45 users"), "{}", ramp.svg);
    for series in ["users", "calls/s", "p95"] {
        assert!(ramp.svg.contains(series), "{series} in the ramp chart");
    }
    // A fixed point gets no ramp chart.
    let mut fixed = rec.clone();
    fixed.points[0].kind = protobench_model::run::PointKind::Fixed;
    assert!(
        !protobench_results::html::charts(&fixed)
            .iter()
            .any(|c| c.id.starts_with("ramp-"))
    );
}
