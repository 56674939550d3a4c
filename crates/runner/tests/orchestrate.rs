//! Orchestration with a scripted engine and a fake server (a shell script
//! that prints the contract's `listening` lines), on a real database file.
//!
//! - every measurement is stored, repetitions interleaved, server cost sampled
//! - verification failure, crash at start, start timeout and a missing
//!   toolchain mark measurements failed with the reason; the run goes on
//! - interruption keeps finished measurements and resume completes the run
//! - discover doubles concurrency until the gain is <= 2%; ramp finds the knee
//! - a full database keeps measurements in memory instead of losing them

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use protobench_model::load::{EndReason, LoadPlan, LoadResult, Protocol};
use protobench_model::run::{MeasurementStatus, RunEnvironment, RunStatus};
use protobench_model::testing;
use protobench_results::store::{NewRun, Store};
use protobench_runner::engine::{Engine, Event};
use protobench_runner::error::{MeasureError, VerifyError, WorkloadFailure};
use protobench_runner::manifest::{Catalog, Manifest};
use protobench_runner::orchestrate::{self, Outcome, RunEvent, RunOptions};
use protobench_runner::plan::Plan;
use protobench_runner::preset::{self, Context};
use protobench_runner::units::CpuSet;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// A fake server: prints one listening line per PROTOBENCH_*_ADDR, then
/// sleeps until SIGTERM. FAKE_MODE=crash exits at once; FAKE_MODE=silent never listens.
const FAKE_SERVER: &str = r#"#!/bin/sh
echo "fake server starting" >&2
if [ "$FAKE_MODE" = crash ]; then echo "fatal: cannot load dataset" >&2; exit 3; fi
if [ "$FAKE_MODE" = silent ]; then exec sleep 30; fi
port=40000
for p in REST REST_H2 GRPC SOAP; do
  eval addr=\$PROTOBENCH_${p}_ADDR
  if [ -n "$addr" ]; then
    name=$(echo $p | tr 'A-Z_' 'a-z-')
    port=$((port+1))
    echo "listening protocol=$name addr=127.0.0.1:$port tls=false"
  fi
done
trap 'exit 0' TERM
while true; do
  if [ -n "$FAKE_DIE" ] && [ -f "$FAKE_DIE" ]; then echo "segfault in handler" >&2; exit 7; fi
  sleep 0.05
done
"#;

struct Fake {
    dir: tempfile::TempDir,
    catalog: Catalog,
}

fn fake(toolchain: &[&str], start_timeout_s: u64) -> Fake {
    fake_with(toolchain, start_timeout_s, "")
}

/// [`fake`] with more manifest lines.
fn fake_with(toolchain: &[&str], start_timeout_s: u64, extra: &str) -> Fake {
    let dir = tempfile::tempdir().unwrap();
    let sdir = dir.path().join("servers/fake");
    std::fs::create_dir_all(&sdir).unwrap();
    std::fs::write(sdir.join("server.sh"), FAKE_SERVER).unwrap();
    let tools: Vec<String> = toolchain.iter().map(|t| format!("\"{t}\"")).collect();
    std::fs::write(
        sdir.join("manifest.toml"),
        format!(
            "name = \"fake\"\nlanguage = \"sh\"\nstack = \"a shell script\"\nprotocols = [\"rest\", \"grpc\", \"soap\"]\ntoolchain = [{}]\nstart = [\"sh\", \"server.sh\"]\nstart_timeout_s = {start_timeout_s}\n{extra}",
            tools.join(", ")
        ),
    )
    .unwrap();
    let catalog = Catalog::load(Some(&dir.path().join("servers")));
    assert!(catalog.servers.contains_key("fake"), "{:?}", catalog.broken);
    Fake { dir, catalog }
}

fn plan(f: &Fake, body: &str) -> Plan {
    plan_warmed(f, "warmup = \"0s\"\n", body)
}

/// [`plan`] with the warm-up lines given.
fn plan_warmed(f: &Fake, warmup: &str, body: &str) -> Plan {
    let ctx = Context {
        catalog: f.catalog.clone(),
        cpus: CpuSet::parse("0-1").unwrap(),
    };
    let text = format!("servers = [\"fake\"]\n{warmup}duration = \"1s\"\n{body}");
    preset::resolve(&text, "t.toml", &ctx).unwrap_or_else(|e| panic!("{e}"))
}

/// Engine double: rate = min(100 * concurrency, cap); verify fails for listed protocols.
#[derive(Default)]
struct Scripted {
    cap: f64,
    fail_verify: Vec<String>,
    error_from_concurrency: Option<u32>,
    cancel_after: Option<(usize, CancellationToken)>,
    /// On this measure call, make the server die (create the flag file) and wait for it.
    kill_server_on: Option<(usize, PathBuf)>,
    /// The first N verify calls answer with an injected failure.
    injected_verify_failures: usize,
    /// Runs of 10 s or more (steady warm-ups) report a flat 1000 calls/s
    /// once per simulated second until cancelled; the seconds each reported.
    warmup_seconds: Mutex<Vec<u64>>,
    verifies: Mutex<usize>,
    calls: Mutex<Vec<LoadPlan>>,
}

impl Engine for Scripted {
    async fn measure(
        &self,
        plan: LoadPlan,
        events: Option<UnboundedSender<Event>>,
        cancel: CancellationToken,
    ) -> Result<LoadResult, MeasureError> {
        if let Some(e) = &events {
            let _ = e.send(Event::Started {
                at: std::time::Instant::now(),
                connections: 1,
                threads: 1,
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Some(e) = &events
            && plan.duration_ns.unwrap_or(0) >= 10_000_000_000
        {
            let mut second = 0;
            while !cancel.is_cancelled() && second * 1_000_000_000 < plan.duration_ns.unwrap_or(0) {
                second += 1;
                let _ = e.send(Event::Progress {
                    elapsed_ns: second * 1_000_000_000,
                    calls: second * 1000,
                    errors: 0,
                    rate: 1000.0,
                    p99_ns: 1_000_000,
                    second: protobench_model::load::TimelinePoint {
                        second: second as u32 - 1,
                        successes: 1000,
                        errors: 0,
                        p50_ns: 500_000,
                        p95_ns: 900_000,
                        p99_ns: 1_000_000,
                        users: 1,
                    },
                });
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            self.warmup_seconds.lock().unwrap().push(second);
        }
        let n = {
            let mut calls = self.calls.lock().unwrap();
            calls.push(plan.clone());
            calls.len()
        };
        if let Some((after, token)) = &self.cancel_after
            && n > *after
        {
            token.cancel();
        }
        if let Some((on, flag)) = &self.kill_server_on
            && n == *on
        {
            std::fs::write(flag, "die").unwrap();
            tokio::time::sleep(Duration::from_millis(400)).await;
            std::fs::remove_file(flag).unwrap();
        }
        let cap = if self.cap > 0.0 { self.cap } else { 1e9 };
        let rate = (100.0 * plan.concurrency as f64).min(cap);
        let errors = match self.error_from_concurrency {
            Some(c) if plan.concurrency >= c => 50,
            _ => 0,
        };
        let mut r = testing::result(
            plan.protocol.name(),
            plan.workload.as_deref().unwrap_or(""),
            rate,
            errors,
            1,
        );
        r.duration_ns = 20_000_000;
        if cancel.is_cancelled() {
            r.end_reason = EndReason::Interrupted;
        }
        r.plan = plan;
        Ok(r)
    }

    async fn verify(
        &self,
        protocol: Protocol,
        _target: &str,
        _tls: bool,
        workloads: &[String],
    ) -> Result<(), VerifyError> {
        {
            let mut v = self.verifies.lock().unwrap();
            *v += 1;
            if *v <= self.injected_verify_failures {
                return Err(VerifyError::Mismatch(vec![WorkloadFailure {
                    workload: workloads[0].clone(),
                    finding: "FAIL: found HTTP 500 injected failure, expected HTTP 200".into(),
                    injected: true,
                }]));
            }
        }
        if self.fail_verify.iter().any(|p| p == protocol.name()) {
            return Err(VerifyError::Mismatch(vec![WorkloadFailure {
                workload: workloads[0].clone(),
                finding: "found <Fault>, expected <EchoResponse>".into(),
                injected: false,
            }]));
        }
        Ok(())
    }
}

fn store(dir: &Path, plan: &Plan) -> (Store, i64, PathBuf) {
    let path = dir.join("r.db");
    let mut s = Store::open(&path).unwrap();
    let id = s
        .create_run(&NewRun {
            preset: plan.preset.clone(),
            preset_path: None,
            plan: serde_json::to_value(plan).unwrap(),
            repetitions: plan.repetitions,
            noise_threshold: plan.noise_threshold,
            environment: RunEnvironment::default(),
            points: plan.points.clone(),
            started_at: "now".into(),
        })
        .unwrap();
    (s, id, path)
}

fn all(plan: &Plan) -> BTreeSet<(u32, u32)> {
    (1..=plan.repetitions)
        .flat_map(|r| plan.points.iter().map(move |p| (p.index, r)))
        .collect()
}

#[allow(clippy::too_many_arguments)] // reason: a test helper mirroring execute's inputs
async fn go(
    f: &Fake,
    plan: &Plan,
    engine: &Scripted,
    s: &mut Store,
    id: i64,
    todo: &BTreeSet<(u32, u32)>,
    env: &[(&str, &str)],
    cancel: CancellationToken,
) -> Outcome {
    go_telling(f, plan, engine, s, id, todo, env, cancel, None).await
}

/// [`go`], passing every event of the run to `events`.
#[allow(clippy::too_many_arguments, reason = "go's arguments and the event channel")]
async fn go_telling(
    f: &Fake,
    plan: &Plan,
    engine: &Scripted,
    s: &mut Store,
    id: i64,
    todo: &BTreeSet<(u32, u32)>,
    env: &[(&str, &str)],
    cancel: CancellationToken,
    events: Option<UnboundedSender<RunEvent>>,
) -> Outcome {
    let mut opts = RunOptions::new(PathBuf::from("/bin/false"), None, f.dir.path().join("work"));
    opts.stop_grace = Duration::from_secs(2);
    opts.extra_env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let outcome = orchestrate::execute(plan, &f.catalog, engine, s, id, todo, &opts, events, cancel).await;
    s.set_status(id, outcome.status.unwrap(), "end").unwrap();
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_measurement_is_stored_with_interleaved_repetitions() {
    let f = fake(&[], 10);
    let p = plan(
        &f,
        "repetitions = 2\nprotocols = [\"rest\", \"grpc\"]\nworkloads = [\"inventory.xs\", \"echo.8k\"]\ntls = [false]\n[load]\nconcurrency = 4\n",
    );
    let (mut s, id, _) = store(f.dir.path(), &p);
    let engine = Scripted::default();
    let out = go(&f, &p, &engine, &mut s, id, &all(&p), &[], CancellationToken::new()).await;
    assert_eq!(
        (out.status, out.measured, out.failed),
        (Some(RunStatus::Complete), 8, 0)
    );
    assert!(out.unsaved.is_empty());
    let rec = s.load_run(id).unwrap();
    assert_eq!(rec.measurements.len(), 8);
    assert!(
        rec.measurements
            .iter()
            .all(|m| m.status == MeasurementStatus::Ok && m.server_cost.is_some())
    );
    // Repetitions are interleaved: all four points once before any twice,
    // and within a repetition the two protocols of a workload back to back.
    let calls = engine.calls.lock().unwrap();
    let order: Vec<String> = calls
        .iter()
        .map(|c| format!("{} {}", c.protocol, c.workload.as_deref().unwrap()))
        .collect();
    let first: BTreeSet<&String> = order[..4].iter().collect();
    let second: BTreeSet<&String> = order[4..].iter().collect();
    assert_eq!((first.len(), &first), (4, &second), "{order:?}");
    for pair in calls.chunks(2) {
        assert_eq!(pair[0].workload, pair[1].workload, "{order:?}");
        assert_ne!(pair[0].protocol, pair[1].protocol, "{order:?}");
    }
    // The engine got the real ports from the listening lines.
    assert!(
        calls.iter().all(|c| c.target.starts_with("127.0.0.1:4000")),
        "{:?}",
        calls[0].target
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_verification_fails_that_protocol_only() {
    let f = fake(&[], 10);
    let p = plan(
        &f,
        "repetitions = 1\nprotocols = [\"rest\", \"soap\"]\nworkloads = [\"echo.8k\"]\n[load]\nconcurrency = 2\n",
    );
    let (mut s, id, _) = store(f.dir.path(), &p);
    let engine = Scripted {
        fail_verify: vec!["soap".into()],
        ..Default::default()
    };
    let out = go(&f, &p, &engine, &mut s, id, &all(&p), &[], CancellationToken::new()).await;
    assert_eq!((out.measured, out.failed), (2, 1));
    let rec = s.load_run(id).unwrap();
    let soap = rec
        .measurements
        .iter()
        .find(|m| rec.points[m.point as usize].protocol == Protocol::Soap)
        .unwrap();
    let f = soap.failure.as_ref().unwrap();
    assert_eq!(
        f.reason,
        "verification of `fake` soap failed: echo.8k: found <Fault>, expected <EchoResponse>"
    );
    assert!(f.log_tail.as_ref().unwrap().contains("fake server starting"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_at_start_fails_its_points_with_its_log() {
    let f = fake(&[], 10);
    let p = plan(
        &f,
        "repetitions = 2\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 1\n",
    );
    let (mut s, id, _) = store(f.dir.path(), &p);
    let out = go(
        &f,
        &p,
        &Scripted::default(),
        &mut s,
        id,
        &all(&p),
        &[("FAKE_MODE", "crash")],
        CancellationToken::new(),
    )
    .await;
    assert_eq!(
        (out.status, out.measured, out.failed),
        (Some(RunStatus::Complete), 2, 2)
    );
    let rec = s.load_run(id).unwrap();
    let fail = rec.measurements[0].failure.as_ref().unwrap();
    assert_eq!(fail.reason, "server `fake` exited with exit status 3 before listening");
    assert!(fail.log_tail.as_ref().unwrap().contains("fatal: cannot load dataset"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_listens_times_out() {
    let f = fake(&[], 1);
    let p = plan(
        &f,
        "repetitions = 1\nprotocols = [\"rest\", \"grpc\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 1\n",
    );
    let (mut s, id, _) = store(f.dir.path(), &p);
    let out = go(
        &f,
        &p,
        &Scripted::default(),
        &mut s,
        id,
        &all(&p),
        &[("FAKE_MODE", "silent")],
        CancellationToken::new(),
    )
    .await;
    assert_eq!(out.failed, 2);
    let rec = s.load_run(id).unwrap();
    assert_eq!(
        rec.measurements[0].failure.as_ref().unwrap().reason,
        "server `fake` did not report listening for rest, grpc within 1 s (start_timeout_s)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_toolchain_is_named_with_the_manifest() {
    let f = fake(&["protobench-no-such-compiler"], 10);
    let p = plan(
        &f,
        "repetitions = 1\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 1\n",
    );
    let (mut s, id, _) = store(f.dir.path(), &p);
    let out = go(
        &f,
        &p,
        &Scripted::default(),
        &mut s,
        id,
        &all(&p),
        &[],
        CancellationToken::new(),
    )
    .await;
    assert_eq!(out.failed, 1);
    let reason = s.load_run(id).unwrap().measurements[0].failure.clone().unwrap().reason;
    let manifest_dir = f.dir.path().join("servers/fake");
    assert_eq!(
        reason,
        format!(
            "server `fake` needs protobench-no-such-compiler on PATH (toolchain in {}/manifest.toml)",
            manifest_dir.display()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interruption_keeps_finished_points_and_resume_completes() {
    let f = fake(&[], 10);
    let p = plan(
        &f,
        "repetitions = 2\nprotocols = [\"rest\", \"grpc\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 2\n",
    );
    let (mut s, id, _) = store(f.dir.path(), &p);
    let cancel = CancellationToken::new();
    let engine = Scripted {
        cancel_after: Some((2, cancel.clone())),
        ..Default::default()
    };
    let out = go(&f, &p, &engine, &mut s, id, &all(&p), &[], cancel).await;
    assert_eq!(out.status, Some(RunStatus::Interrupted));
    let rec = s.load_run(id).unwrap();
    assert_eq!(rec.status, RunStatus::Interrupted);
    assert_eq!(rec.measurements.len(), 2, "the cut-short third measurement is not kept");
    let missing: BTreeSet<(u32, u32)> = rec.missing().into_iter().collect();
    assert_eq!(missing.len(), 2);

    let out = go(
        &f,
        &p,
        &Scripted::default(),
        &mut s,
        id,
        &missing,
        &[],
        CancellationToken::new(),
    )
    .await;
    assert_eq!((out.status, out.measured), (Some(RunStatus::Complete), 2));
    let rec = s.load_run(id).unwrap();
    assert_eq!(rec.measurements.len(), 4);
    assert!(rec.missing().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover_doubles_until_the_gain_is_small_then_measures_the_best() {
    let f = fake(&[], 10);
    let p = plan(
        &f,
        "kind = \"discover\"\nrepetitions = 1\nprotocols = [\"grpc\"]\nworkloads = [\"inventory.xs\"]\n[discover]\nstep_duration = \"1s\"\n",
    );
    let (mut s, id, _) = store(f.dir.path(), &p);
    // 2 -> 200/s, 4 -> 400, 8 -> 800, 16 -> 1000 (cap), 32 -> 1000 (no gain): best 16
    let engine = Scripted {
        cap: 1000.0,
        ..Default::default()
    };
    go(&f, &p, &engine, &mut s, id, &all(&p), &[], CancellationToken::new()).await;
    let conc: Vec<u32> = engine.calls.lock().unwrap().iter().map(|c| c.concurrency).collect();
    assert_eq!(conc, [2, 4, 8, 16, 32, 16]);
    let m = &s.load_run(id).unwrap().measurements[0];
    let search = m.search.as_ref().unwrap();
    assert_eq!(search.chosen_concurrency, 16);
    assert_eq!(search.steps.len(), 5);
    assert_eq!(m.result.as_ref().unwrap().plan.concurrency, 16);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ramp_stops_when_errors_begin_and_reports_the_knee() {
    let f = fake(&[], 10);
    let p = plan(
        &f,
        "kind = \"ramp\"\nrepetitions = 1\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[ramp]\nstepped = true\nstart = 1\nstep = 15\nstep_duration = \"1s\"\n",
    );
    let (mut s, id, _) = store(f.dir.path(), &p);
    // concurrency 1, 16, 31, 46: errors from 40 on
    let engine = Scripted {
        error_from_concurrency: Some(40),
        ..Default::default()
    };
    go(&f, &p, &engine, &mut s, id, &all(&p), &[], CancellationToken::new()).await;
    let conc: Vec<u32> = engine.calls.lock().unwrap().iter().map(|c| c.concurrency).collect();
    assert_eq!(conc, [1, 16, 31, 46]);
    let search = s.load_run(id).unwrap().measurements[0].search.clone().unwrap();
    assert_eq!(search.chosen_concurrency, 31);
    assert_eq!(search.knee_rate, Some(3100.0));
    assert!(
        search.stop_reason.starts_with("errors began at concurrency 46"),
        "{}",
        search.stop_reason
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_database_keeps_measurements_in_memory() {
    let f = fake(&[], 10);
    let p = plan(
        &f,
        "repetitions = 3\nprotocols = [\"rest\", \"grpc\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 2\n",
    );
    let (mut s, id, path) = store(f.dir.path(), &p);
    let pages: u64 = rusqlite_pages(&path);
    s.limit_pages(pages).unwrap();
    let out = go_no_status(&f, &p, &mut s, id).await;
    assert_eq!(out.measured, 6);
    assert!(!out.unsaved.is_empty(), "nothing fits in the capped file");
    assert!(out.save_error.as_deref().unwrap().ends_with("disk full"));
    let stored = s.load_run(id).unwrap().measurements.len();
    assert_eq!(
        stored + out.unsaved.len(),
        6,
        "every measurement is either stored or returned"
    );
}

fn rusqlite_pages(path: &Path) -> u64 {
    // page_count via the CLI-free route: file size / page size (4096 default).
    std::fs::metadata(path).unwrap().len() / 4096
}

async fn go_no_status(f: &Fake, p: &Plan, s: &mut Store, id: i64) -> Outcome {
    let mut opts = RunOptions::new(PathBuf::from("/bin/false"), None, f.dir.path().join("work"));
    opts.stop_grace = Duration::from_secs(2);
    orchestrate::execute(
        p,
        &f.catalog,
        &Scripted::default(),
        s,
        id,
        &all(p),
        &opts,
        None,
        CancellationToken::new(),
    )
    .await
}

#[test]
fn manifests_from_the_repository_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../servers");
    let c = Catalog::load(Some(&dir));
    assert!(c.broken.is_empty(), "{:?}", c.broken);
    for m in c.servers.values() {
        assert!(!m.protocols.is_empty());
        let _ = Manifest::info(m);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_mid_run_fails_that_point_and_is_restarted() {
    let f = fake(&[], 10);
    let p = plan(
        &f,
        "repetitions = 1\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\", \"inventory.m\", \"echo.8k\"]\n[load]\nconcurrency = 1\n",
    );
    let (mut s, id, _) = store(f.dir.path(), &p);
    let flag = f.dir.path().join("die");
    let engine = Scripted {
        kill_server_on: Some((2, flag.clone())),
        ..Default::default()
    };
    let die = flag.to_string_lossy().into_owned();
    let out = go(
        &f,
        &p,
        &engine,
        &mut s,
        id,
        &all(&p),
        &[("FAKE_DIE", &die)],
        CancellationToken::new(),
    )
    .await;
    assert_eq!((out.measured, out.failed), (3, 1));
    assert!(
        out.warnings
            .iter()
            .any(|w| w == "server `fake` exited (exit status 7); restarted"),
        "{:?}",
        out.warnings
    );
    let rec = s.load_run(id).unwrap();
    let failed = rec.measurements.iter().find(|m| m.failure.is_some()).unwrap();
    // the point measured second (the run order is drawn per repetition)
    let second = engine.calls.lock().unwrap()[1].workload.clone().unwrap();
    assert_eq!(rec.points[failed.point as usize].workload, second);
    let f = failed.failure.as_ref().unwrap();
    assert_eq!(f.reason, "server `fake` exited (exit status 7) during the measurement");
    assert!(f.log_tail.as_ref().unwrap().contains("segfault in handler"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verification_tolerates_injected_failures() {
    let f = fake(&[], 10);
    let p = plan(
        &f,
        "repetitions = 1\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 1\n[server]\nfailure_rate = 0.5\n",
    );
    let (mut s, id, _) = store(f.dir.path(), &p);
    // the first call and three retries hit injected failures, the fifth passes
    let engine = Scripted {
        injected_verify_failures: 4,
        ..Default::default()
    };
    let out = go(&f, &p, &engine, &mut s, id, &all(&p), &[], CancellationToken::new()).await;
    assert_eq!((out.measured, out.failed), (1, 0));
    // always failing with the injected failure (rate near 1) still passes
    let engine = Scripted {
        injected_verify_failures: 1000,
        ..Default::default()
    };
    let out = go(&f, &p, &engine, &mut s, id, &all(&p), &[], CancellationToken::new()).await;
    assert_eq!(out.failed, 0);
}

#[test]
fn limits_are_applied_through_cgroups_where_available() {
    use protobench_runner::isolation::{Cgroup, CgroupSupport, Limits};
    use protobench_runner::server::{RunningServer, StartSpec};
    let support = CgroupSupport::detect();
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    if matches!(support, CgroupSupport::None { .. }) || !root {
        eprintln!("skipping: {} (root: {root})", support.describe());
        return;
    }
    let f = fake(&[], 10);
    let p = plan(
        &f,
        "repetitions = 1\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 1\n[server]\ncpu_limit = 0.5\nmemory_limit = \"64MiB\"\n",
    );
    let limits = Limits {
        cpu_limit: Some(0.5),
        memory_limit_bytes: Some(64 << 20),
    };
    let name = format!("protobench-test-{}", std::process::id());
    let cg = Cgroup::create(&support, &name, &limits).unwrap();
    let dirs = cg.dirs().to_vec();
    let spec = StartSpec {
        manifest: f.catalog.servers["fake"].clone(),
        group: p.groups[0].clone(),
        exe: PathBuf::from("/bin/false"),
        dataset: None,
        tls: None,
        cpus: Some(CpuSet::parse("0").unwrap()),
        extra_env: vec![],
    };
    let mut server = RunningServer::start(&spec, Some(cg)).unwrap();
    let own = std::fs::read_to_string(format!("/proc/{}/cgroup", server.pid())).unwrap();
    assert!(own.contains(&name), "server not in its cgroup:\n{own}");
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("Cpus_allowed_list:") && l.trim_end().ends_with('0')),
        "pinned to CPU 0"
    );
    for d in &dirs {
        if d.join("cpu.cfs_quota_us").exists() {
            assert_eq!(
                std::fs::read_to_string(d.join("cpu.cfs_quota_us")).unwrap().trim(),
                "50000"
            );
        }
        if d.join("memory.limit_in_bytes").exists() {
            assert_eq!(
                std::fs::read_to_string(d.join("memory.limit_in_bytes")).unwrap().trim(),
                (64u64 << 20).to_string()
            );
        }
    }
    server.stop(Duration::from_secs(2));
    drop(server);
    assert!(
        dirs.iter().all(|d| !d.exists()),
        "cgroups removed after the server stopped"
    );
}

/// A steady warm-up lasts at least the preset's `warmup_min`, and at least
/// the stack's own `warmup_min_s` (a JIT's) when that is longer; a flat rate
/// is judged steady at the first look after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_warm_up_lasts_the_longer_of_the_preset_and_stack_minimum() {
    let body = "repetitions = 1\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\ntls = [false]\n[load]\nconcurrency = 1\n";
    for (extra, preset_min, want) in [
        // the test's 10-second window is the least
        ("", "", 10),
        ("", "warmup_min = \"8s\"\n", 10),
        ("", "warmup_min = \"14s\"\n", 14),
        ("warmup_min_s = 16\n", "", 16),
        ("warmup_min_s = 11\n", "warmup_min = \"13s\"\n", 13),
    ] {
        let f = fake_with(&[], 10, extra);
        let warmup = format!("warmup = \"steady\"\nwarmup_max = \"60s\"\n{preset_min}");
        let p = plan_warmed(&f, &warmup, body);
        let (mut s, id, _) = store(f.dir.path(), &p);
        let engine = Scripted::default();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let out = go_telling(
            &f,
            &p,
            &engine,
            &mut s,
            id,
            &all(&p),
            &[],
            CancellationToken::new(),
            Some(tx),
        )
        .await;
        assert_eq!(out.measured, 1, "{extra} {preset_min}");
        // The run says which process serves, and each warm-up second as it
        // goes: steady only at the last.
        let mut warming = Vec::new();
        let mut ready = 0;
        while let Ok(e) = rx.try_recv() {
            match e {
                RunEvent::WarmingUp { second, steady, .. } => warming.push((second, steady)),
                RunEvent::ServerReady { pid, .. } => {
                    assert!(pid > 0);
                    ready += 1;
                }
                _ => {}
            }
        }
        assert_eq!(ready, 1, "{extra} {preset_min}");
        let want_seconds: Vec<(u32, bool)> = (1..=want as u32).map(|s| (s, s == want as u32)).collect();
        assert_eq!(warming, want_seconds, "{extra} {preset_min}");
        assert_eq!(
            *engine.warmup_seconds.lock().unwrap(),
            vec![want],
            "{extra} {preset_min}"
        );
        let rec = s.load_run(id).unwrap();
        assert!(rec.measurements[0].warmup.expect("a warm-up record").steady);
    }
}
