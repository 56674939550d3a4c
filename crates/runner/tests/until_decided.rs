//! `--until-decided` (issue 29): a session adds rounds of interleaved
//! repetitions while a claim's direction is undecided and the budget
//! allows, stores each round like the first, and says why it stopped. A
//! scripted engine whose noise shrinks after the first round, a fake server
//! and a real database file.
//!
//! - round 1 (3 repetitions) is noisy: the claim is inconclusive; round 2
//!   (repetitions 4-6) is quiet: the claim holds and the run stops there
//! - a budget too small for a second round stops after the first, saying so
//! - the rounds are stored: the run has 6 repetitions, nothing is missing

mod common;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use protobench_model::load::{LoadPlan, LoadResult, Protocol};
use protobench_model::run::RunStatus;
use protobench_model::testing;
use protobench_runner::engine::{Engine, Event};
use protobench_runner::error::{MeasureError, VerifyError};
use protobench_runner::orchestrate::RunOptions;
use protobench_runner::preset::{self, CommandLine, Context};
use protobench_runner::session::Session;
use protobench_runner::units::CpuSet;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// REST answers 1,000 calls/s every time; gRPC's k-th measurement is
/// e^x times that, x = 0.30, 0.02, 0.30 (the first round: the paired log
/// ratios spread so that three cannot tell), then 0.095 every time.
#[derive(Default)]
struct Quieting {
    seen: Mutex<BTreeMap<Protocol, u32>>,
}

impl Engine for Quieting {
    async fn measure(
        &self,
        plan: LoadPlan,
        _: Option<UnboundedSender<Event>>,
        _: CancellationToken,
    ) -> Result<LoadResult, MeasureError> {
        let k = {
            let mut seen = self.seen.lock().unwrap();
            let k = seen.entry(plan.protocol).or_default();
            *k += 1;
            *k
        };
        let x: f64 = match (plan.protocol, k) {
            (Protocol::Grpc, 1 | 3) => 0.30,
            (Protocol::Grpc, 2) => 0.02,
            (Protocol::Grpc, _) => 0.095,
            _ => 0.0,
        };
        let mut r = testing::result(plan.protocol.name(), "inventory.xs", 1000.0 * x.exp(), 0, 1);
        r.plan = plan;
        Ok(r)
    }

    async fn verify(&self, _: Protocol, _: &str, _: bool, _: &[String]) -> Result<(), VerifyError> {
        Ok(())
    }
}

const PRESET: &str = r#"servers = ["fake"]
protocols = ["rest", "grpc"]
workloads = ["inventory.xs"]
repetitions = 3
warmup = "0s"
duration = "1s"
[load]
concurrency = 4
[[findings]]
claim = "gRPC serves more calls than REST"
source = "a test"
metric = "rate"
a = { protocol = "grpc" }
b = { protocol = "rest" }
expect = ">"
"#;

async fn run(budget: Duration) -> (protobench_model::run::RunRecord, u32) {
    let dir = tempfile::tempdir().unwrap();
    let catalog = common::fake_catalog(dir.path());
    let ctx = Context {
        catalog: catalog.clone(),
        cpus: CpuSet::parse("0-1").unwrap(),
    };
    let command = CommandLine {
        until_decided: Some(budget),
        ..Default::default()
    };
    let plan = preset::resolve_command(PRESET, "t.toml", &ctx, &command).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plan.until_decided.map(|u| u.round), Some(3));
    let db = dir.path().join("r.db");
    let mut session = Session::start(plan, &db, &catalog, None).unwrap();
    let mut opts = RunOptions::new("/bin/false".into(), None, dir.path().join("work"));
    opts.stop_grace = Duration::from_secs(2);
    let engine = Quieting::default();
    let finished = session
        .execute(&catalog, &engine, &opts, None, CancellationToken::new())
        .await;
    assert_eq!(finished.status, RunStatus::Complete);
    assert_eq!(finished.outcome.failed, 0, "{:?}", finished.outcome);
    let grpc_runs = engine.seen.lock().unwrap()[&Protocol::Grpc];
    (session.record().unwrap(), grpc_runs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounds_are_added_until_the_claim_is_decided() {
    let (record, grpc_runs) = run(Duration::from_secs(600)).await;
    assert_eq!(grpc_runs, 6, "two rounds of three");
    assert_eq!(record.repetitions, 6);
    assert_eq!(record.measurements.len(), 12);
    assert!(record.missing().is_empty(), "every round is stored");
    let judged = protobench_results::report::judgements(&record);
    assert_eq!(judged[0].direction, protobench_model::findings::Direction::Holds);
    let said: Vec<&str> = record
        .warnings
        .iter()
        .filter(|w| w.starts_with("until decided"))
        .map(String::as_str)
        .collect();
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(
        said[0].starts_with("until decided: after 3 repetitions 1 of 1 claims undecided (#1): repetitions 4-6 added"),
        "{said:?}"
    );
    assert!(
        said[1].starts_with("until decided: every claim's direction decided after 6 repetitions"),
        "{said:?}"
    );
    // The report says when the claim was decided.
    assert_eq!(protobench_results::report::decided_after(&record), vec![Some(2)]);
    let text = protobench_results::report::findings_text(&record);
    assert!(
        text.contains(
            "until decided: the round each claim's direction was decided in: #1 round 2 (6 repetitions measured)"
        ),
        "{text}"
    );
    // The stored plan carries the rounds: --resume continues from it.
    assert_eq!(record.plan["repetitions"], 6);
    assert!(record.plan["until_decided"]["used_ns"].as_u64().unwrap() > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_too_small_for_another_round_stops_and_says_so() {
    let (record, grpc_runs) = run(Duration::from_millis(1)).await;
    assert_eq!(grpc_runs, 3, "the first round only");
    assert_eq!(record.repetitions, 3);
    let judged = protobench_results::report::judgements(&record);
    assert_eq!(
        judged[0].direction,
        protobench_model::findings::Direction::Inconclusive,
        "three noisy repetitions cannot tell"
    );
    assert!(
        record
            .warnings
            .iter()
            .any(|w| w.starts_with("until decided: budget spent") && w.contains("1 of 1 claims undecided (#1)")),
        "{:?}",
        record.warnings
    );
}
