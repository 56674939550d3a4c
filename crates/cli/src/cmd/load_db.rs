//! `protobench load ... --db FILE`: one load stored as a run of one point and
//! one repetition, so that two ad-hoc loads can be put side by side with
//! `compare` and rendered with `report`, as preset runs are.
//!
//! The point's server is the target's address, so loads of the same target,
//! protocol, workload and load match in `compare`.

use std::path::Path;

use anyhow::Context as _;
use protobench_load::LoadResult;
use protobench_model::run::{Measurement, MeasurementStatus, PointConfig, PointKind, RunEnvironment, RunStatus};
use protobench_model::threshold::Outcome;
use protobench_results::store::{NewRun, Store};

/// The preset name of runs stored by `load --db`.
pub(crate) const PRESET: &str = "load";

/// Opens (creating) the database before the run, so that an unusable file
/// fails before any connection.
pub(crate) fn open(db: &Path) -> anyhow::Result<Store> {
    Store::open(db).context("opening the results database (--db)")
}

/// The run's one point, described by the load's plan.
fn point(r: &LoadResult) -> PointConfig {
    let p = &r.plan;
    PointConfig {
        stream: None,
        index: 0,
        server: p.target.clone(),
        protocol: p.protocol,
        workload: p.workload.clone().unwrap_or_else(|| "custom".into()),
        tls: p.tls.is_some(),
        kind: if p.rate.is_some() {
            PointKind::Rate
        } else {
            PointKind::Fixed
        },
        concurrency: p.concurrency,
        connections: p.connections,
        rate: p.rate,
        failure_rate: 0.0,
        service_time: None,
        cpu_limit: None,
        memory_limit_bytes: None,
        network: None,
        connection_policy: Some(if p.per_call {
            protobench_model::load::ConnectionPolicy::PerCall
        } else if p.connections >= p.concurrency {
            protobench_model::load::ConnectionPolicy::PerCaller
        } else {
            protobench_model::load::ConnectionPolicy::Shared(p.connections)
        }),
    }
}

/// Stores the result (and its thresholds' outcomes) as a complete run; returns its id.
pub(crate) fn save(store: &mut Store, r: &LoadResult, outcomes: &[Outcome]) -> anyhow::Result<i64> {
    let finished = protobench_model::time::now_rfc3339();
    let point = point(r);
    let run = NewRun {
        preset: PRESET.into(),
        preset_path: None,
        plan: serde_json::json!({ "load": r.plan, "thresholds": outcomes.iter().map(|o| o.threshold.to_string()).collect::<Vec<_>>() }),
        repetitions: 1,
        noise_threshold: protobench_model::stats::DEFAULT_NOISE_THRESHOLD,
        environment: RunEnvironment {
            machine: r.environment.clone(),
            servers: Vec::new(),
            isolation: vec!["none: a single `protobench load` against a running target".into()],
        },
        points: vec![point.clone()],
        started_at: r.started_at.clone(),
    };
    let id = store.create_run(&run)?;
    store.save_measurement(
        id,
        &Measurement {
            server_rss_before_bytes: None,
            stream: None,
            point: 0,
            repetition: 1,
            status: MeasurementStatus::Ok,
            failure: None,
            result: Some(r.clone()),
            server_cost: None,
            server_rss_timeline: Vec::new(),
            server_cpu_timeline: vec![],
            warmup: None,
            link: None,
            search: None,
            started_at: r.started_at.clone(),
            finished_at: finished.clone(),
        },
    )?;
    let status = if r.end_reason == protobench_load::EndReason::Interrupted {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    store.set_status(id, status, &finished)?;
    if !outcomes.is_empty() {
        store.save_thresholds(id, outcomes)?;
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_reads_back_as_a_run_of_one_point() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = open(&dir.path().join("l.db")).unwrap();
        let r = protobench_model::testing::result("grpc", "inventory.xs", 1000.0, 0, 2);
        let id = save(&mut store, &r, &[]).unwrap();
        let run = store.load_run(id).unwrap();
        assert_eq!(
            (run.preset.as_str(), run.status, run.points.len()),
            ("load", RunStatus::Complete, 1)
        );
        assert_eq!(run.points[0].label(), "127.0.0.1:1 grpc inventory.xs c=16");
        assert_eq!(run.measurements[0].result.as_ref().unwrap().rate, 1000.0);
        assert_eq!(run.aggregates()[0].rate.as_ref().unwrap().median, 1000.0);
    }
}
