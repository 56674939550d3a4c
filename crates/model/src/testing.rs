//! Builders of plausible results for tests of the store, the renderers and
//! the runner (not for production use).

use crate::load::{
    ConnectionPolicy, EndReason, Environment, ErrorCount, ErrorKind, Generator, LatencySummary, LoadPlan, LoadResult,
    TimelinePoint, Validation,
};
use crate::run::{
    Measurement, MeasurementStatus, PointConfig, PointKind, RunEnvironment, RunRecord, RunStatus, ServerCost,
};

/// A latency summary around `p50_ns`.
pub fn latency(p50_ns: u64) -> LatencySummary {
    LatencySummary {
        count: 1000,
        min_ns: p50_ns / 4,
        mean_ns: p50_ns + p50_ns / 10,
        p50_ns,
        p90_ns: p50_ns * 2,
        p95_ns: p50_ns * 3,
        p99_ns: p50_ns * 5,
        p999_ns: p50_ns * 8,
        max_ns: p50_ns * 10,
    }
}

/// A result of `seconds` at `rate` calls/s with `errors` failed calls.
pub fn result(protocol: &str, workload: &str, rate: f64, errors: u64, seconds: u32) -> LoadResult {
    let successes = (rate * seconds as f64) as u64;
    let calls = successes + errors;
    LoadResult {
        schema_version: crate::load::SCHEMA_VERSION,
        plan: LoadPlan {
            protocol: protocol.parse().expect("a protocol name"),
            target: "127.0.0.1:1".into(),
            workload: Some(workload.into()),
            custom: None,
            concurrency: 16,
            connections: 16,
            per_call: false,
            rate: None,
            arrival: Default::default(),
            arrival_stream: 0,
            duration_ns: Some(seconds as u64 * 1_000_000_000),
            requests: None,
            warmup_ns: 0,
            timeout_ns: 1_000_000_000,
            connect_timeout_ns: 1_000_000_000,
            validate: Validation::Status,
            tls: None,
            threads: 1,
            start_users: 0,
            stages: Vec::new(),
        },
        environment: Environment::default(),
        started_at: "2026-01-01T00:00:00Z".into(),
        duration_ns: seconds as u64 * 1_000_000_000,
        end_reason: EndReason::Duration,
        calls,
        successes,
        rate,
        started_rate: rate,
        latency: latency(1_000_000),
        service_time: latency(1_000_000),
        connect: latency(100_000),
        connections_opened: 16,
        connects_per_second: 0.0,
        connect_share: 0.0,
        errors: if errors > 0 {
            vec![ErrorCount {
                kind: ErrorKind::HttpStatus,
                count: errors,
                sample: "HTTP 500".into(),
            }]
        } else {
            vec![]
        },
        success_percent: if calls == 0 {
            0.0
        } else {
            successes as f64 * 100.0 / calls as f64
        },
        http_statuses: [(200, successes), (500, errors)]
            .into_iter()
            .filter(|&(_, count)| count > 0)
            .map(|(code, count)| crate::load::StatusCount { code, count })
            .collect(),
        grpc_statuses: Vec::new(),
        error_latency: (errors > 0).then(|| LatencySummary {
            count: errors,
            ..latency(500_000)
        }),
        bytes_sent: calls * 100,
        bytes_received: calls * 1000,
        bytes_sent_per_call: 100.0,
        bytes_received_per_call: 1000.0,
        generator: Generator {
            threads: 1,
            cpu_ns: calls * 10_000,
            cpu_ns_per_call: 10_000.0,
            cpu_utilization: 0.5,
            schedule_lag: LatencySummary::default(),
            generator_bound: false,
            reason: None,
        },
        timeline: (0..seconds)
            .map(|s| TimelinePoint {
                second: s,
                successes: rate as u64,
                errors: 0,
                p50_ns: 1_000_000,
                p95_ns: 4_000_000,
                p99_ns: 5_000_000,
                users: 16,
            })
            .collect(),
        histogram: "HISTFAAAABx4nJNpmSzMwMDAxQABzFCaEUzOmNZgLwEARHsDMA==".into(),
        intervals: Vec::new(),
        agents: Vec::new(),
        incomplete: false,
        agent_intervals: Vec::new(),
    }
}

/// A closed-loop point.
pub fn point(index: u32, protocol: &str, workload: &str) -> PointConfig {
    PointConfig {
        stream: None,
        index,
        server: "rust".into(),
        protocol: protocol.parse().expect("a protocol name"),
        workload: workload.into(),
        tls: false,
        kind: PointKind::Fixed,
        concurrency: 16,
        connections: 16,
        connection_policy: Some(ConnectionPolicy::PerCaller),
        rate: None,
        failure_rate: 0.0,
        service_time: None,
        cpu_limit: None,
        memory_limit_bytes: None,
        network: None,
    }
}

/// A successful measurement.
pub fn measurement(point: &PointConfig, repetition: u32, rate: f64) -> Measurement {
    let r = result(point.protocol.name(), &point.workload, rate, 0, 2);
    let cpu_ns = r.calls * 50_000;
    Measurement {
        server_rss_before_bytes: None,
        stream: None,
        point: point.index,
        repetition,
        status: MeasurementStatus::Ok,
        failure: None,
        server_cost: Some(ServerCost {
            cpu_ns,
            cpu_ns_per_call: 50_000.0,
            calls_per_cpu_second: 20_000.0,
            rss_peak_bytes: 30 << 20,
            rss_mean_bytes: 28 << 20,
        }),
        server_rss_timeline: vec![29 << 20, 30 << 20],
        server_cpu_timeline: vec![],
        result: Some(r),
        search: None,
        link: None,
        warmup: None,
        started_at: "2026-01-01T00:00:00Z".into(),
        finished_at: "2026-01-01T00:00:02Z".into(),
    }
}

/// A complete run record of `points` and `measurements`.
pub fn record(points: Vec<PointConfig>, measurements: Vec<Measurement>) -> RunRecord {
    RunRecord {
        id: 1,
        preset: "test".into(),
        preset_path: None,
        status: RunStatus::Complete,
        started_at: "2026-01-01T00:00:00Z".into(),
        finished_at: Some("2026-01-01T00:01:00Z".into()),
        plan: serde_json::json!({}),
        repetitions: measurements.iter().map(|m| m.repetition).max().unwrap_or(1),
        noise_threshold: crate::stats::DEFAULT_NOISE_THRESHOLD,
        environment: RunEnvironment::default(),
        warnings: vec![],
        points,
        measurements,
        links: vec![],
    }
}
