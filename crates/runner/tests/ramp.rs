//! The continuous ramp (issue 10) with a scripted engine and a fake server
//! on a real database file: one engine run with a concurrency schedule,
//! stopped by the knee rule from its per-second timeline.
//!
//! - the preset's start/step/step_duration (or spawn_rate) and max become one
//!   schedule; the run is cancelled at the knee and stored whole with it
//! - errors from the first second stop it there
//! - a ramp that keeps rising ends at its maximum
//! - `stepped = true` keeps the old separate runs

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use protobench_model::load::{EndReason, LoadPlan, LoadResult, Protocol, TimelinePoint};
use protobench_model::run::RunEnvironment;
use protobench_model::testing;
use protobench_results::store::{NewRun, Store};
use protobench_runner::engine::{Engine, Event};
use protobench_runner::error::{MeasureError, VerifyError};
use protobench_runner::manifest::Catalog;
use protobench_runner::orchestrate::{self, RunOptions};
use protobench_runner::plan::Plan;
use protobench_runner::preset::{self, Context};
use protobench_runner::units::CpuSet;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// Engine double of a continuous ramp: each simulated second has the
/// schedule's users at its end and `rate_at(users)` successes and errors;
/// it runs to the schedule's end unless cancelled (a few ms per second).
struct Ramping {
    rate_at: fn(u32) -> (u64, u64),
    calls: Mutex<Vec<LoadPlan>>,
}

impl Engine for Ramping {
    async fn measure(
        &self,
        plan: LoadPlan,
        events: Option<UnboundedSender<Event>>,
        cancel: CancellationToken,
    ) -> Result<LoadResult, MeasureError> {
        self.calls.lock().unwrap().push(plan.clone());
        let mut r = testing::result(plan.protocol.name(), plan.workload.as_deref().unwrap_or(""), 1.0, 0, 1);
        let seconds = plan.window_ns().div_ceil(1_000_000_000) as u32;
        let mut timeline = Vec::new();
        for s in 0..seconds {
            if cancel.is_cancelled() {
                break;
            }
            let users = if plan.stages.is_empty() {
                plan.concurrency
            } else {
                protobench_load::stages::users_at(plan.start_users, &plan.stages, (u64::from(s) + 1) * 1_000_000_000)
            };
            let (successes, errors) = (self.rate_at)(users);
            let p = TimelinePoint {
                second: s,
                successes,
                errors,
                p50_ns: 1_000_000,
                p95_ns: 2_000_000,
                p99_ns: 3_000_000,
                users,
            };
            timeline.push(p);
            if let Some(e) = &events {
                let _ = e.send(Event::Progress {
                    elapsed_ns: (u64::from(s) + 1) * 1_000_000_000,
                    calls: 0,
                    errors: 0,
                    rate: successes as f64,
                    p99_ns: p.p99_ns,
                    second: p,
                });
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        r.duration_ns = timeline.len() as u64 * 1_000_000_000;
        r.successes = timeline.iter().map(|p| p.successes).sum();
        r.calls = r.successes + timeline.iter().map(|p| p.errors).sum::<u64>();
        r.timeline = timeline;
        if cancel.is_cancelled() {
            r.end_reason = EndReason::Interrupted;
        }
        r.plan = plan;
        Ok(r)
    }

    async fn verify(&self, _: Protocol, _: &str, _: bool, _: &[String]) -> Result<(), VerifyError> {
        Ok(())
    }
}

struct Setup {
    dir: tempfile::TempDir,
    catalog: Catalog,
    plan: Plan,
}

/// The preset text of a ramp point with this `[ramp]` table.
fn preset_text(ramp: &str) -> String {
    format!(
        "servers = [\"fake\"]\nwarmup = \"0s\"\nduration = \"1s\"\nkind = \"ramp\"\nrepetitions = 1\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[ramp]\n{ramp}"
    )
}

fn setup(ramp: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let catalog = common::fake_catalog(dir.path());
    let ctx = Context {
        catalog: catalog.clone(),
        cpus: CpuSet::parse("0-1").unwrap(),
    };
    let plan = preset::resolve(&preset_text(ramp), "t.toml", &ctx).unwrap_or_else(|e| panic!("{e}"));
    Setup { dir, catalog, plan }
}

/// Runs the plan; returns the stored measurement and the engine's plans.
async fn run(setup: &Setup, engine: &Ramping) -> (protobench_model::run::Measurement, Vec<LoadPlan>) {
    let path = setup.dir.path().join("r.db");
    let mut s = Store::open(&path).unwrap();
    let p = &setup.plan;
    let id = s
        .create_run(&NewRun {
            preset: p.preset.clone(),
            preset_path: None,
            plan: serde_json::to_value(p).unwrap(),
            repetitions: p.repetitions,
            noise_threshold: p.noise_threshold,
            environment: RunEnvironment::default(),
            points: p.points.clone(),
            started_at: "now".into(),
        })
        .unwrap();
    let todo: BTreeSet<(u32, u32)> = p.points.iter().map(|pt| (pt.index, 1)).collect();
    let mut opts = RunOptions::new(PathBuf::from("/bin/false"), None, setup.dir.path().join("work"));
    opts.stop_grace = Duration::from_secs(2);
    let out = orchestrate::execute(
        p,
        &setup.catalog,
        engine,
        &mut s,
        id,
        &todo,
        &opts,
        None,
        CancellationToken::new(),
    )
    .await;
    assert_eq!(out.failed, 0, "{out:?}");
    let m = s.load_run(id).unwrap().measurements.remove(0);
    (m, engine.calls.lock().unwrap().clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_with_a_schedule_is_stopped_at_the_knee_and_stored_whole() {
    // 15 users/s from 1 to 2000: 1 + 15 (s + 1) users at the end of second s;
    // the rate follows 10/user up to 400 users, then stays flat.
    let setup = setup("start = 1\nstep = 15\nstep_duration = \"1s\"\nmax = 2000\npatience = 3\n");
    let engine = Ramping {
        rate_at: |u| (u64::from(u.min(400)) * 10, 0),
        calls: Mutex::default(),
    };
    let (m, plans) = run(&setup, &engine).await;
    assert_eq!(plans.len(), 1, "one continuous engine run, not one per step");
    let plan = &plans[0];
    assert_eq!((plan.start_users, plan.concurrency), (1, 2000));
    assert_eq!(plan.stages.len(), 1);
    assert_eq!(plan.stages[0].target, 2000);
    // (2000 - 1) users at 15/s: 133.27 s (rounded down to the ns).
    assert_eq!(plan.stages[0].duration_ns, 133_266_666_666);
    let r = m.result.as_ref().unwrap();
    assert!(m.search.as_ref().unwrap().stopped_at_knee);
    // Second 25 has 391 users (3910/s), second 26 has 406 > 400 users
    // (4000/s) and seconds 27-29 stay at 4000/s: three flat seconds.
    let search = m.search.as_ref().unwrap();
    assert_eq!(search.knee_second, Some(26), "{search:?}");
    assert_eq!(search.chosen_concurrency, 406);
    assert_eq!(search.knee_rate, Some(4000.0));
    assert_eq!(
        search.stop_reason,
        "rate stopped rising for 3 s after second 26 (406 users)"
    );
    assert!(
        r.timeline.len() <= 32,
        "cancelled near the knee: {} s",
        r.timeline.len()
    );
    let users: Vec<u32> = r.timeline.iter().map(|p| p.users).collect();
    assert!(users.windows(2).all(|w| w[1] == w[0] + 15), "{users:?}");
    assert_eq!(search.steps.len(), r.timeline.len(), "one step per whole second");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_from_the_first_second_stop_the_ramp_there() {
    let setup = setup("start = 10\nspawn_rate = 20\nmax = 500\n");
    let engine = Ramping {
        rate_at: |_| (100, 100),
        calls: Mutex::default(),
    };
    let (m, plans) = run(&setup, &engine).await;
    // (500 - 10) users at 20/s: 24.5 s.
    assert_eq!(plans[0].stages[0].duration_ns, 24_500_000_000);
    let search = m.search.as_ref().unwrap();
    assert_eq!((search.knee_second, search.chosen_concurrency), (Some(0), 30));
    assert!(
        search
            .stop_reason
            .starts_with("errors began in second 0 at 30 users (50.0% of calls failed"),
        "{}",
        search.stop_reason
    );
    assert!(search.stopped_at_knee);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ramp_that_keeps_rising_ends_at_its_maximum() {
    let setup = setup("start = 0\nspawn_rate = 10\nmax = 50\n");
    let engine = Ramping {
        rate_at: |u| (u64::from(u) * 100, 0),
        calls: Mutex::default(),
    };
    let (m, _) = run(&setup, &engine).await;
    let r = m.result.as_ref().unwrap();
    assert_eq!(r.end_reason, EndReason::Duration);
    assert_eq!(r.timeline.last().unwrap().users, 50);
    let search = m.search.as_ref().unwrap();
    assert_eq!((search.knee_second, search.chosen_concurrency), (Some(4), 50));
    assert_eq!(search.stop_reason, "reached ramp.max (50 users)");
    assert!(!search.stopped_at_knee);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stepped_keeps_one_run_per_step() {
    let setup = setup("stepped = true\nstart = 1\nstep = 15\nmax = 46\n");
    let engine = Ramping {
        rate_at: |u| (u64::from(u) * 10, 0),
        calls: Mutex::default(),
    };
    let (m, plans) = run(&setup, &engine).await;
    let conc: Vec<u32> = plans.iter().map(|p| p.concurrency).collect();
    assert_eq!(conc, [1, 16, 31, 46]);
    assert!(plans.iter().all(|p| p.stages.is_empty()));
    assert_eq!(m.search.as_ref().unwrap().knee_second, None);
}

#[test]
fn bad_ramp_tables_name_file_line_and_key() {
    let ctx = Context {
        catalog: setup("").catalog,
        cpus: CpuSet::parse("0-1").unwrap(),
    };
    // The [ramp] table is on line 8; its keys from line 9.
    let rows = [
        (
            "spawn_rate = 15\nstep = 15\n",
            "t.toml:10:8: ramp.spawn_rate: give either spawn_rate (users per second) or step and step_duration, not both",
        ),
        (
            "spawn_rate = 0\n",
            "t.toml:9:14: ramp.spawn_rate: must be a number of users per second above 0 and at most 1000000, got 0",
        ),
        (
            "stepped = true\nspawn_rate = 5\n",
            "t.toml:10:14: ramp.spawn_rate: is for the continuous ramp; a stepped ramp adds `step` users every `step_duration`",
        ),
        (
            "start = 100\nmax = 50\n",
            "t.toml:10:7: ramp.max: must be at least ramp.start (100), found 50",
        ),
        (
            "stepped = true\nstart = 0\n",
            "t.toml:10:9: ramp.start: must be an integer of at least 1, found 0",
        ),
    ];
    for (ramp, want) in rows {
        let e = preset::resolve(&preset_text(ramp), "t.toml", &ctx)
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{ramp:?}: {e}");
    }
}
