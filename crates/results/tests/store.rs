//! The results database on a real temporary file.
//!
//! - a new file gets the current schema version; reopening is idempotent
//! - runs, points and measurements round-trip (histogram and time series included)
//! - a stored measurement is never replaced; `missing` drives --resume
//! - a newer schema, a locked file, an unwritable path and a full disk each
//!   give their own error naming the file

use std::path::Path;

use protobench_model::run::{Failure, Measurement, MeasurementStatus, RunEnvironment, RunStatus};
use protobench_model::testing;
use protobench_results::store::{MIGRATIONS, NewRun, SCHEMA_VERSION, Store, StoreError};

fn new_run(points: usize) -> NewRun {
    let workloads = ["inventory.xs", "inventory.m", "echo.8k", "grpcbench.complex"];
    NewRun {
        preset: "quick".into(),
        preset_path: Some("presets/quick.toml".into()),
        plan: serde_json::json!({"preset": "quick"}),
        repetitions: 3,
        noise_threshold: 0.1,
        environment: RunEnvironment::default(),
        points: (0..points)
            .map(|i| testing::point(i as u32, "grpc", workloads[i % 4]))
            .collect(),
        started_at: "2026-01-01T00:00:00Z".into(),
    }
}

#[test]
fn new_file_gets_the_current_schema_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let s = Store::open(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(MIGRATIONS.len() as u32, SCHEMA_VERSION);
    drop(s);
    let s = Store::open(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    assert!(s.list_runs().unwrap().is_empty());
}

#[test]
fn runs_round_trip_with_histograms_and_time_series() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let mut s = Store::open(&path).unwrap();
    let run = new_run(2);
    let id = s.create_run(&run).unwrap();
    let mut m = testing::measurement(&run.points[0], 1, 1000.0);
    // the server's CPU of the window's first seconds (the last was not sampled)
    m.server_cpu_timeline = vec![400_000_000];
    assert!(m.result.as_ref().unwrap().timeline.len() > m.server_cpu_timeline.len());
    s.save_measurement(id, &m).unwrap();
    let failed = Measurement {
        server_rss_before_bytes: None,
        stream: None,
        point: 1,
        repetition: 1,
        status: MeasurementStatus::Failed,
        failure: Some(Failure {
            reason: "verification failed".into(),
            log_tail: Some("panic: x".into()),
        }),
        result: None,
        server_cost: None,
        server_rss_timeline: vec![],
        server_cpu_timeline: vec![],
        search: None,
        link: None,
        warmup: None,
        started_at: "a".into(),
        finished_at: "b".into(),
    };
    s.save_measurement(id, &failed).unwrap();
    s.add_warning(id, "generator-bound").unwrap();
    s.add_warning(id, "generator-bound").unwrap();
    s.set_status(id, RunStatus::Interrupted, "2026-01-01T00:01:00Z")
        .unwrap();
    drop(s);

    let s = Store::open_read_only(&path).unwrap();
    let rec = s.load_run(id).unwrap();
    assert_eq!(rec.status, RunStatus::Interrupted);
    assert_eq!(rec.finished_at.as_deref(), Some("2026-01-01T00:01:00Z"));
    assert_eq!(rec.points, run.points);
    assert_eq!(rec.warnings, ["generator-bound"]);
    assert_eq!(rec.measurements.len(), 2);
    let back = rec.measurements.iter().find(|x| x.point == 0).unwrap();
    assert_eq!(
        back.result, m.result,
        "histogram and timeline come back from their tables"
    );
    assert_eq!(back.server_cost.unwrap().cpu_ns, m.server_cost.unwrap().cpu_ns);
    assert_eq!(back.server_rss_timeline, m.server_rss_timeline);
    assert_eq!(back.server_cpu_timeline, m.server_cpu_timeline);
    assert_eq!(rec.measurements.iter().find(|x| x.point == 1).unwrap(), &failed);
    // 2 points x 3 repetitions, 2 taken
    assert_eq!(rec.missing().len(), 4);
    let list = s.list_runs().unwrap();
    assert_eq!((list[0].measured, list[0].failed, list[0].points), (2, 1, 2));
}

#[test]
fn a_stored_measurement_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("r.db")).unwrap();
    let run = new_run(1);
    let id = s.create_run(&run).unwrap();
    s.save_measurement(id, &testing::measurement(&run.points[0], 1, 1000.0))
        .unwrap();
    let e = s
        .save_measurement(id, &testing::measurement(&run.points[0], 1, 2000.0))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "results database {}: run {id} already has a measurement of point 0, repetition 1 (stored measurements are never replaced)",
            dir.path().join("r.db").display()
        )
    );
    let rec = s.load_run(id).unwrap();
    assert_eq!(rec.measurements.len(), 1);
    assert_eq!(rec.measurements[0].result.as_ref().unwrap().rate, 1000.0);
}

#[test]
fn unknown_run_and_missing_file_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let s = Store::open(&path).unwrap();
    let e = s.load_run(42).unwrap_err();
    assert_eq!(e.to_string(), format!("no run 42 in {}", path.display()));
    let missing = dir.path().join("none.db");
    let e = Store::open_read_only(&missing).unwrap_err();
    assert!(matches!(e, StoreError::Missing { .. }));
    assert!(!missing.exists(), "reading commands never create a database");
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let c = rusqlite::Connection::open(&path).unwrap();
    c.pragma_update(None, "user_version", 99).unwrap();
    drop(c);
    let e = Store::open(&path).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "results database {} has schema version 99, newer than this protobench understands ({SCHEMA_VERSION})",
            path.display()
        )
    );
}

#[test]
fn a_locked_database_is_reported_as_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    drop(Store::open(&path).unwrap());
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let e = Store::open(&path).unwrap_err();
    assert!(matches!(e, StoreError::Locked { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with(&format!("results database {} is locked", path.display()))
    );
}

#[test]
fn an_unwritable_path_is_reported() {
    let e = Store::open(Path::new("/nonexistent-protobench-dir/r.db")).unwrap_err();
    assert!(matches!(e, StoreError::ReadOnly { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "results database /nonexistent-protobench-dir/r.db is not writable"
    );
}

#[test]
fn a_full_disk_is_reported_and_earlier_data_survives() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let mut s = Store::open(&path).unwrap();
    let run = new_run(4);
    let id = s.create_run(&run).unwrap();
    s.save_measurement(id, &testing::measurement(&run.points[0], 1, 1000.0))
        .unwrap();
    let pages: u64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .unwrap();
    s.limit_pages(pages).unwrap();
    let mut full = None;
    for i in 1..4 {
        let mut m = testing::measurement(&run.points[i], 1, 1000.0);
        // A large time series so the file must grow.
        let r = m.result.as_mut().unwrap();
        r.timeline = (0..5000)
            .map(|s| protobench_model::load::TimelinePoint {
                second: s,
                successes: 1,
                errors: 0,
                p50_ns: 1,
                p95_ns: 1,
                p99_ns: 1,
                users: 1,
            })
            .collect();
        if let Err(e) = s.save_measurement(id, &m) {
            full = Some(e);
            break;
        }
    }
    let e = full.expect("the capped file fills up");
    assert!(matches!(e, StoreError::DiskFull { .. }), "{e:?}");
    assert_eq!(e.to_string(), format!("results database {}: disk full", path.display()));
    drop(s);
    let rec = Store::open_read_only(&path).unwrap().load_run(id).unwrap();
    assert!(!rec.measurements.is_empty(), "what was stored before stays");
}

#[test]
fn a_version_2_database_upgrades_and_networks_round_trip() {
    use protobench_model::network::{PointLink, RunLink};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    // A file written before networks existed: schema 2, a run and a point.
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        for sql in &MIGRATIONS[..2] {
            c.execute_batch(sql).unwrap();
        }
        c.pragma_update(None, "user_version", 2).unwrap();
        let p = testing::point(0, "grpc", "inventory.xs");
        let config = serde_json::to_string(&p).unwrap();
        assert!(!config.contains("network"), "{config}");
        c.execute_batch(&format!(
            "INSERT INTO runs (preset, status, started_at, repetitions, noise_threshold, plan_json, environment_json, protobench_version)
             VALUES ('old', 'complete', 'a', 1, 0.1, '{{}}', '{}', '0');
             INSERT INTO points (run_id, point_index, server, protocol, workload, tls, label, config_json)
             VALUES (1, 0, 'rust', 'grpc', 'inventory.xs', 0, 'c=1', '{config}');",
            serde_json::to_string(&RunEnvironment::default()).unwrap()
        ))
        .unwrap();
    }
    let mut s = Store::open_read_only(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    let old = s.load_run(1).unwrap();
    assert_eq!(old.points[0].network, None);
    assert!(old.links.is_empty());

    // A new run on a link: the point's network, the link and the
    // measurement's share come back as written.
    let mut run = new_run(1);
    run.points[0].network = Some("rate=100mbit".into());
    let id = s.create_run(&run).unwrap();
    let link = RunLink {
        network: "rate=100mbit".into(),
        measured_at: "t".into(),
        mechanisms: "rate tc-tbf".into(),
        up_rate_bps: Some(100_000_000),
        down_rate_bps: Some(100_000_000),
        profile_rtt_ns: 0,
        rtt_ns: 20_000,
        up_goodput_bps: 95.4e6,
        down_goodput_bps: 95.5e6,
        toxiproxy_cpu_ns: None,
        notes: vec![],
        warnings: vec!["far".into()],
        report: serde_json::json!({"profile": {"name": "rate=100mbit"}}),
    };
    s.save_link(id, &link).unwrap();
    let mut m = testing::measurement(&run.points[0], 1, 1000.0);
    m.link = Some(PointLink {
        network: "rate=100mbit".into(),
        bytes_sent_per_call: 100.0,
        bytes_received_per_call: 12_000.0,
        up_capacity_bps: 95.4e6,
        down_capacity_bps: 95.5e6,
        up_share: 0.01,
        down_share: 0.97,
        bound: true,
        toxiproxy_cpu_ns: None,
    });
    s.save_measurement(id, &m).unwrap();
    let rec = s.load_run(id).unwrap();
    assert_eq!(rec.points[0].network.as_deref(), Some("rate=100mbit"));
    assert_eq!(rec.links, vec![link]);
    assert_eq!(rec.measurements[0].link, m.link);
    assert!(rec.aggregates()[0].link_bound);
    assert!(rec.points[0].variant_label().ends_with("net=rate=100mbit"));
}

#[test]
fn thresholds_round_trip_and_are_replaced_on_a_second_check() {
    use protobench_model::threshold::{Outcome, Threshold};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let mut s = Store::open(&path).unwrap();
    let id = s.create_run(&new_run(1)).unwrap();
    assert!(
        s.thresholds(id).unwrap().is_empty(),
        "a run without thresholds has none"
    );
    let first = vec![
        Outcome {
            threshold: Threshold::parse("p99<5ms").unwrap(),
            point: Some("rust grpc inventory.xs c=16".into()),
            value: Some(6e6),
            passed: false,
        },
        Outcome {
            threshold: Threshold::parse("error_rate<0.1%").unwrap(),
            point: None,
            value: None,
            passed: false,
        },
    ];
    s.save_thresholds(id, &first).unwrap();
    assert_eq!(s.thresholds(id).unwrap(), first);
    let second = vec![Outcome {
        passed: true,
        value: Some(4e6),
        ..first[0].clone()
    }];
    s.save_thresholds(id, &second).unwrap();
    drop(s);
    let s = Store::open_read_only(&path).unwrap();
    assert_eq!(s.thresholds(id).unwrap(), second);
}

#[test]
fn a_version_2_file_is_upgraded_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        // The file as protobench wrote it before thresholds were stored.
        let c = rusqlite::Connection::open(&path).unwrap();
        for sql in &MIGRATIONS[..2] {
            c.execute_batch(sql).unwrap();
        }
        c.pragma_update(None, "user_version", 2).unwrap();
        c.execute(
            "INSERT INTO runs (preset, status, started_at, repetitions, noise_threshold, plan_json, environment_json, protobench_version)
             VALUES ('quick', 'complete', '2026-01-01T00:00:00Z', 1, 0.1, '{}', ?1, '0.1.0')",
            [serde_json::to_string(&RunEnvironment::default()).unwrap()],
        )
        .unwrap();
    }
    let s = Store::open_read_only(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(s.load_run(1).unwrap().preset, "quick");
    assert!(s.thresholds(1).unwrap().is_empty());
}

#[test]
fn the_connection_policy_round_trips_and_old_points_still_read() {
    use protobench_model::load::ConnectionPolicy;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let mut s = Store::open(&path).unwrap();
    let mut run = new_run(4);
    let policies = [
        Some(ConnectionPolicy::PerCaller),
        Some(ConnectionPolicy::PerCall),
        Some(ConnectionPolicy::Shared(2)),
        None, // stored before the policy existed
    ];
    for (p, policy) in run.points.iter_mut().zip(policies) {
        p.connection_policy = policy;
        p.connections = if policy == Some(ConnectionPolicy::Shared(2)) {
            2
        } else {
            16
        };
    }
    let id = s.create_run(&run).unwrap();
    let mut m = testing::measurement(&run.points[1], 1, 500.0);
    if let Some(r) = m.result.as_mut() {
        r.plan.per_call = true;
        r.connects_per_second = 500.0;
        r.connect_share = 0.4;
    }
    s.save_measurement(id, &m).unwrap();
    drop(s);
    let rec = Store::open_read_only(&path).unwrap().load_run(id).unwrap();
    assert_eq!(rec.points, run.points);
    let labels: Vec<String> = rec.points.iter().map(|p| p.load_label()).collect();
    assert_eq!(labels, ["c=16", "c=16/conn=per-call", "c=16/conn=2", "c=16"]);
    assert_eq!(rec.points[3].policy(), ConnectionPolicy::PerCaller);
    assert_eq!(rec.measurements[0].result, m.result);
}
