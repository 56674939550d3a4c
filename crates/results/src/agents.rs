//! The lanes of points run on agents (docs/distributed.md): for every
//! measurement whose load came from agents, one row per agent with its
//! share, rate, latency, clock offset, its own generator verdict and what
//! became of it when it failed. The merged figures are the main table's.

use protobench_model::format::{TextTable, fmt_ns};
use protobench_model::load::AgentLane;
use protobench_model::run::RunRecord;

/// The columns of the agents' table.
pub const AGENTS_HEADER: [&str; 11] = [
    "point",
    "rep",
    "agent",
    "address",
    "share",
    "rate/s",
    "p50",
    "p99",
    "clock offset",
    "generator",
    "outcome",
];

/// Whether a column of [`AGENTS_HEADER`] holds numbers.
pub fn numeric_column(i: usize) -> bool {
    matches!(i, 1 | 2 | 5 | 6 | 7 | 8)
}

/// One row per agent lane of every measurement run on agents, in point
/// then repetition order; empty when no point ran on agents.
pub fn rows(run: &RunRecord) -> Vec<[String; 11]> {
    let mut out = Vec::new();
    for m in &run.measurements {
        let Some(r) = m.result.as_ref().filter(|r| !r.agents.is_empty()) else {
            continue;
        };
        let label = run
            .points
            .iter()
            .find(|p| p.index == m.point)
            .map_or_else(|| format!("point {}", m.point), |p| p.label());
        for lane in &r.agents {
            out.push(row(&label, m.repetition, lane));
        }
    }
    out
}

fn row(label: &str, repetition: u32, a: &AgentLane) -> [String; 11] {
    let latency = |ns: u64| {
        if a.latency.count == 0 {
            "-".to_owned()
        } else {
            fmt_ns(ns as f64)
        }
    };
    [
        label.to_owned(),
        repetition.to_string(),
        a.index.to_string(),
        a.agent.clone(),
        a.rate_share
            .map_or_else(|| format!("{} callers", a.concurrency), |q| format!("{q} calls/s")),
        format!("{:.1}", a.rate),
        latency(a.latency.p50_ns),
        latency(a.latency.p99_ns),
        format!(
            "{:+} us ±{} us",
            a.clock_offset_ns / 1000,
            a.clock_uncertainty_ns.div_ceil(1000)
        ),
        if a.generator.generator_bound {
            "GENERATOR-BOUND".into()
        } else {
            "ok".into()
        },
        match &a.failure {
            None => "ok".into(),
            Some(f) => format!("FAILED {:.1} s after the start: {}", f.after_ns as f64 / 1e9, f.message),
        },
    ]
}

/// The agents' table as text, with its heading; `None` when no point ran on agents.
pub fn text(run: &RunRecord) -> Option<String> {
    let rows = rows(run);
    if rows.is_empty() {
        return None;
    }
    let mut table = TextTable::new(AGENTS_HEADER).right((0..AGENTS_HEADER.len()).filter(|&i| numeric_column(i)));
    for r in rows {
        table.row(r);
    }
    Some(format!(
        "\nAgents (each measurement's lanes; the table above shows the merged figures)\n{}",
        table.render()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use protobench_model::load::{AgentFailure, Generator, LatencySummary};
    use protobench_model::testing;

    fn lane(index: u32, agent: &str, rate: f64) -> AgentLane {
        AgentLane {
            index,
            agent: agent.into(),
            clock_offset_ns: -12_000,
            clock_uncertainty_ns: 150_500,
            round_trip_ns: 301_000,
            concurrency: 2,
            rate_share: None,
            start_offset_ns: 0,
            calls: rate as u64,
            successes: rate as u64,
            rate,
            latency: LatencySummary {
                count: rate as u64,
                p50_ns: 1_000_000,
                p99_ns: 4_000_000,
                ..Default::default()
            },
            generator: Generator::default(),
            failure: None,
        }
    }

    #[test]
    fn each_lane_is_a_row_with_its_clock_verdict_and_failure() {
        let point = testing::point(0, "rest", "inventory.s");
        let mut m = testing::measurement(&point, 2, 300.0);
        let mut bound = lane(1, "10.0.0.3:7070", 100.0);
        bound.generator.generator_bound = true;
        let mut dead = lane(2, "10.0.0.4:7070", 20.0);
        dead.failure = Some(AgentFailure {
            after_ns: 4_200_000_000,
            message: "connection lost".into(),
        });
        let r = m.result.as_mut().unwrap();
        r.agents = vec![lane(0, "10.0.0.2:7070", 180.0), bound, dead];
        r.incomplete = true;
        let plain = testing::measurement(&point, 1, 300.0);
        let run = testing::record(vec![point.clone()], vec![plain, m]);
        let rows = rows(&run);
        assert_eq!(rows.len(), 3, "only the measurement run on agents has rows");
        assert_eq!(rows[0][0], point.label());
        assert_eq!(rows[0][1], "2");
        assert_eq!(rows[0][3], "10.0.0.2:7070");
        assert_eq!(rows[0][4], "2 callers");
        assert_eq!(rows[0][5], "180.0");
        assert_eq!((rows[0][6].as_str(), rows[0][7].as_str()), ("1.00ms", "4.00ms"));
        assert_eq!(rows[0][8], "-12 us ±151 us");
        assert_eq!((rows[0][9].as_str(), rows[0][10].as_str()), ("ok", "ok"));
        assert_eq!(rows[1][9], "GENERATOR-BOUND");
        assert_eq!(rows[2][10], "FAILED 4.2 s after the start: connection lost");
        let shown = text(&run).unwrap();
        assert!(shown.contains("10.0.0.4:7070") && shown.contains("FAILED"), "{shown}");
        let none = testing::record(vec![point.clone()], vec![testing::measurement(&point, 1, 1.0)]);
        assert_eq!(text(&none), None);
    }
}
