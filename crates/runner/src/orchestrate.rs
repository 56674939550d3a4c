//! Running a plan: server lifecycle, verification, warm-up, measurement,
//! search kinds, failures, interruption, and immediate storage.
//!
//! Order: repetition by repetition; within one, server group by server group
//! (rotated each repetition); within a group, its points in plan order. One
//! server process serves a group for one repetition, so repetitions of a
//! point are never back to back and each sees a fresh server.
//!
//! Failures are data: a server that does not start, fails verification or
//! crashes marks the affected measurements failed (with the reason and its
//! log tail) and the run goes on. Every measurement is written to the
//! database as soon as it is taken; if that write fails (disk full, lock),
//! it is kept and retried after the next one, and whatever is still unsaved
//! at the end is returned so the caller can dump it elsewhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

use protobench_model::load::{EndReason, LoadResult};
use protobench_model::run::{
    Failure, Measurement, MeasurementStatus, PointConfig, PointKind, RunStatus, Search, SearchStep, ServerCost,
};
use protobench_model::time::now_rfc3339;
use protobench_results::store::Store;

use crate::engine::{Engine, EngineEvent};
use crate::isolation::{Cgroup, CgroupSupport, Limits};
use crate::manifest::Catalog;
use crate::plan::{Plan, ServerGroup};
use crate::procfs::{self, Sampler};
use crate::server::{RunningServer, STOP_GRACE, StartSpec, TlsFiles};

/// What the runner reports while it runs (the CLI renders these).
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    /// Before the first measurement.
    Begin {
        /// Measurements to take now.
        todo: u32,
        /// Measurements in the plan.
        total: u32,
        /// Rough duration estimate.
        estimate_s: f64,
    },
    /// A server is being started.
    ServerStarting {
        /// Server name.
        server: String,
        /// Repetition.
        repetition: u32,
    },
    /// A server could not be started or verified.
    ServerFailed {
        /// Server name.
        server: String,
        /// Why.
        reason: String,
    },
    /// A measurement starts.
    PointStarted {
        /// Point index.
        point: u32,
        /// Repetition.
        repetition: u32,
        /// `server protocol workload variant`.
        label: String,
        /// Measurements finished so far.
        done: u32,
        /// Measurements to take.
        todo: u32,
    },
    /// One second of a measurement.
    Live {
        /// Successful calls in the last second.
        rate: f64,
        /// p99 latency in the last second.
        p99_ns: u64,
        /// Calls so far.
        calls: u64,
        /// Errors so far.
        errors: u64,
    },
    /// A measurement ended (successfully or not).
    PointFinished {
        /// Point index.
        point: u32,
        /// `server protocol workload variant`.
        label: String,
        /// Repetition.
        repetition: u32,
        /// The rate, when measured.
        rate: Option<f64>,
        /// Why it failed.
        failure: Option<String>,
    },
    /// Something to record with the run.
    Warning(String),
}

/// Fixed inputs of a run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// This executable (`{protobench}`).
    pub exe: PathBuf,
    /// `PROTOBENCH_DATASET` for servers.
    pub dataset: Option<PathBuf>,
    /// Where to put generated certificates.
    pub work_dir: PathBuf,
    /// Time between SIGTERM and SIGKILL.
    pub stop_grace: Duration,
    /// Extra environment for servers (tests).
    pub extra_env: Vec<(String, String)>,
}

impl RunOptions {
    /// Options for this executable.
    pub fn new(exe: PathBuf, dataset: Option<PathBuf>, work_dir: PathBuf) -> RunOptions {
        RunOptions {
            exe,
            dataset,
            work_dir,
            stop_grace: STOP_GRACE,
            extra_env: vec![],
        }
    }
}

/// How a run ended.
#[derive(Debug, Default)]
pub struct Outcome {
    /// `complete`, or `interrupted` when cancelled.
    pub status: Option<RunStatus>,
    /// Measurements taken now.
    pub measured: u32,
    /// Of those, failed.
    pub failed: u32,
    /// Measurements the database did not accept (to be saved elsewhere).
    pub unsaved: Vec<Measurement>,
    /// The last storage error, if any.
    pub save_error: Option<String>,
    /// Warnings raised.
    pub warnings: Vec<String>,
}

struct Ctx<'a, E: Engine> {
    plan: &'a Plan,
    catalog: &'a Catalog,
    engine: &'a E,
    store: &'a mut Store,
    run_id: i64,
    opts: &'a RunOptions,
    events: Option<UnboundedSender<RunEvent>>,
    cancel: CancellationToken,
    cgroups: CgroupSupport,
    tls: Option<TlsFiles>,
    outcome: Outcome,
    done: u32,
    todo: u32,
}

impl<E: Engine> Ctx<'_, E> {
    fn emit(&self, e: RunEvent) {
        if let Some(tx) = &self.events {
            let _ = tx.send(e);
        }
    }

    fn warn(&mut self, w: String) {
        if !self.outcome.warnings.contains(&w) {
            let _ = self.store.add_warning(self.run_id, &w);
            self.emit(RunEvent::Warning(w.clone()));
            self.outcome.warnings.push(w);
        }
    }

    /// Stores a measurement, retrying earlier unsaved ones first.
    fn save(&mut self, m: Measurement) {
        let mut pending = std::mem::take(&mut self.outcome.unsaved);
        pending.push(m);
        let mut still = Vec::new();
        for m in pending {
            match self.store.save_measurement(self.run_id, &m) {
                Ok(()) => {}
                Err(e) => {
                    let msg = format!("{e}");
                    if self.outcome.save_error.as_deref() != Some(&msg) {
                        self.emit(RunEvent::Warning(format!(
                            "{msg}: measurement kept in memory, retrying"
                        )));
                    }
                    self.outcome.save_error = Some(msg);
                    still.push(m);
                }
            }
        }
        self.outcome.unsaved = still;
    }

    fn record(&mut self, m: Measurement) {
        self.done += 1;
        self.outcome.measured += 1;
        if m.status == MeasurementStatus::Failed {
            self.outcome.failed += 1;
        }
        let label = self.plan.points.get(m.point as usize).map_or_else(String::new, |p| {
            format!("{} {} {} {}", p.server, p.protocol, p.workload, p.variant_label())
        });
        self.emit(RunEvent::PointFinished {
            point: m.point,
            label,
            repetition: m.repetition,
            rate: m.result.as_ref().map(|r| r.rate),
            failure: m.failure.as_ref().map(|f| f.reason.clone()),
        });
        self.save(m);
    }

    fn fail(&mut self, point: u32, repetition: u32, reason: &str, log_tail: Option<String>) {
        let now = now_rfc3339();
        self.record(Measurement {
            point,
            repetition,
            status: MeasurementStatus::Failed,
            failure: Some(Failure {
                reason: reason.to_string(),
                log_tail,
            }),
            result: None,
            server_cost: None,
            server_rss_timeline: vec![],
            search: None,
            started_at: now.clone(),
            finished_at: now,
        });
    }

    fn start_server(
        &mut self,
        group: &ServerGroup,
        repetition: u32,
    ) -> Result<RunningServer, (String, Option<String>)> {
        self.emit(RunEvent::ServerStarting {
            server: group.server.clone(),
            repetition,
        });
        let manifest = self
            .catalog
            .servers
            .get(&group.server)
            .cloned()
            .ok_or_else(|| (format!("server `{}` has no manifest", group.server), None))?;
        let missing = manifest.missing_toolchain();
        if !missing.is_empty() {
            return Err((
                format!(
                    "server `{}` needs {} on PATH (toolchain in {}/manifest.toml)",
                    group.server,
                    missing.join(", "),
                    manifest.dir.display()
                ),
                None,
            ));
        }
        if let Some(bin) = manifest.missing_start_binary() {
            return Err((
                format!(
                    "server `{}` is not built: {} is missing (run `protobench build {}`)",
                    group.server,
                    bin.display(),
                    group.server
                ),
                None,
            ));
        }
        let limits = Limits {
            cpu_limit: group.cpu_limit,
            memory_limit_bytes: group.memory_limit_bytes,
        };
        let cgroup = if limits != Limits::default() {
            let name = format!("protobench-{}-g{}-r{}", std::process::id(), group.index, repetition);
            match Cgroup::create(&self.cgroups, &name, &limits) {
                Ok(c) => Some(c),
                Err(e) => {
                    let mut msg = e.to_string();
                    if let Some(src) = std::error::Error::source(&e) {
                        msg = format!("{msg}: {src}");
                    }
                    self.warn(format!(
                        "limits of server `{}` not applied ({msg}); measured without them",
                        group.server
                    ));
                    None
                }
            }
        } else {
            None
        };
        let spec = StartSpec {
            manifest,
            group: group.clone(),
            exe: self.opts.exe.clone(),
            dataset: self.opts.dataset.clone(),
            tls: if group.tls { self.tls.clone() } else { None },
            cpus: self.plan.server_cpus.clone(),
            extra_env: self.opts.extra_env.clone(),
        };
        RunningServer::start(&spec, cgroup).map_err(|e| {
            let mut msg = e.to_string();
            if let Some(src) = std::error::Error::source(&e) {
                msg = format!("{msg}: {src}");
            }
            (msg, e.log_tail())
        })
    }
}

/// Runs the measurements `todo` ((point, repetition) pairs) of `plan`,
/// storing each in run `run_id` as it is taken.
#[allow(clippy::too_many_arguments)] // reason: the inputs of a run are independent; a struct would only rename them
pub async fn execute<E: Engine>(
    plan: &Plan,
    catalog: &Catalog,
    engine: &E,
    store: &mut Store,
    run_id: i64,
    todo: &BTreeSet<(u32, u32)>,
    opts: &RunOptions,
    events: Option<UnboundedSender<RunEvent>>,
    cancel: CancellationToken,
) -> Outcome {
    let mut ctx = Ctx {
        plan,
        catalog,
        engine,
        store,
        run_id,
        opts,
        events,
        cancel,
        cgroups: CgroupSupport::detect(),
        tls: None,
        outcome: Outcome::default(),
        done: 0,
        todo: todo.len() as u32,
    };
    ctx.emit(RunEvent::Begin {
        todo: ctx.todo,
        total: plan.total(),
        estimate_s: plan.estimate_s() * todo.len() as f64 / plan.total().max(1) as f64,
    });
    if plan
        .groups
        .iter()
        .any(|g| g.tls && todo.iter().any(|(p, _)| g.points.contains(p)))
    {
        match crate::server::self_signed(&opts.work_dir.join("tls")) {
            Ok(files) => ctx.tls = Some(files),
            Err(e) => ctx.warn(format!("TLS points will fail: {e}")),
        }
    }
    for (repetition, group_index, points) in plan.schedule() {
        if ctx.cancel.is_cancelled() {
            break;
        }
        let points: Vec<u32> = points
            .into_iter()
            .filter(|p| todo.contains(&(*p, repetition)))
            .collect();
        if points.is_empty() {
            continue;
        }
        let group = plan.groups[group_index as usize].clone();
        run_group(&mut ctx, &group, repetition, &points).await;
    }
    let cancelled = ctx.cancel.is_cancelled();
    let mut outcome = ctx.outcome;
    outcome.status = Some(if cancelled {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    });
    outcome
}

async fn start_blocking<E: Engine>(
    ctx: &mut Ctx<'_, E>,
    group: &ServerGroup,
    repetition: u32,
) -> Result<RunningServer, (String, Option<String>)> {
    // Starting waits for a child's output; keep it off the async workers'
    // hot path by doing it in place (the engine is idle meanwhile).
    tokio::task::block_in_place(|| ctx.start_server(group, repetition))
}

async fn run_group<E: Engine>(ctx: &mut Ctx<'_, E>, group: &ServerGroup, repetition: u32, points: &[u32]) {
    let mut server = match start_blocking(ctx, group, repetition).await {
        Ok(s) => s,
        Err((reason, tail)) => {
            ctx.emit(RunEvent::ServerFailed {
                server: group.server.clone(),
                reason: reason.clone(),
            });
            for &p in points {
                ctx.fail(p, repetition, &reason, tail.clone());
            }
            return;
        }
    };
    let mut failed_protocols = verify(ctx, &server, group, points).await;
    let mut sampler = Sampler::start(server.pid());
    let mut restarted = false;
    for &p in points {
        if ctx.cancel.is_cancelled() {
            break;
        }
        let point = ctx.plan.points[p as usize].clone();
        if let Some(reason) = failed_protocols.get(&point.protocol) {
            let (reason, tail) = reason.clone();
            ctx.fail(p, repetition, &reason, Some(tail));
            continue;
        }
        // A server that died between points is restarted once per group.
        if let Some(status) = server.exited() {
            let tail = server.log_tail();
            if restarted {
                ctx.fail(
                    p,
                    repetition,
                    &format!(
                        "server `{}` exited ({status}) and was already restarted once",
                        group.server
                    ),
                    Some(tail),
                );
                continue;
            }
            restarted = true;
            ctx.warn(format!("server `{}` exited ({status}); restarted", group.server));
            drop(sampler);
            server = match start_blocking(ctx, group, repetition).await {
                Ok(s) => s,
                Err((reason, tail)) => {
                    for &q in points.iter().skip_while(|q| **q != p) {
                        ctx.fail(q, repetition, &reason, tail.clone());
                    }
                    return;
                }
            };
            failed_protocols = verify(ctx, &server, group, points).await;
            sampler = Sampler::start(server.pid());
            if let Some((reason, tail)) = failed_protocols.get(&point.protocol).cloned() {
                ctx.fail(p, repetition, &reason, Some(tail));
                continue;
            }
        }
        let label = format!(
            "{} {} {} {}",
            point.server,
            point.protocol,
            point.workload,
            point.variant_label()
        );
        ctx.emit(RunEvent::PointStarted {
            point: p,
            repetition,
            label,
            done: ctx.done,
            todo: ctx.todo,
        });
        let started_at = now_rfc3339();
        let target = server.listeners.get(&point.protocol).cloned().unwrap_or_default();
        let measured = measure_point(ctx, &point, &target, &server, &sampler).await;
        let interrupted = ctx.cancel.is_cancelled();
        match measured {
            Ok(_) if interrupted => break, // a cut-short measurement is not kept
            Ok((result, cost, rss, search)) => {
                if let Some(status) = server.exited() {
                    ctx.fail(
                        p,
                        repetition,
                        &format!("server `{}` exited ({status}) during the measurement", group.server),
                        Some(server.log_tail()),
                    );
                    continue;
                }
                if result.generator.generator_bound {
                    let why = result.generator.reason.clone().unwrap_or_default();
                    ctx.warn(format!(
                        "generator-bound: {} {} {} ({why}); the rate measures the load generator, not the server",
                        point.protocol,
                        point.workload,
                        point.variant_label()
                    ));
                }
                if let Some(hits) = server.cgroup_memory_limit_hits()
                    && hits > 0
                {
                    ctx.warn(format!("server `{}` hit its memory limit {hits} times", group.server));
                }
                ctx.record(Measurement {
                    point: p,
                    repetition,
                    status: MeasurementStatus::Ok,
                    failure: None,
                    result: Some(result),
                    server_cost: Some(cost),
                    server_rss_timeline: rss,
                    search,
                    started_at,
                    finished_at: now_rfc3339(),
                });
            }
            Err(_) if interrupted => break,
            Err(reason) => {
                let reason = match server.exited() {
                    Some(status) => format!(
                        "server `{}` exited ({status}) during the measurement: {reason}",
                        group.server
                    ),
                    None => format!("measurement failed: {reason}"),
                };
                ctx.fail(p, repetition, &reason, Some(server.log_tail()));
            }
        }
    }
    drop(sampler);
    let grace = ctx.opts.stop_grace;
    let stopped = tokio::task::block_in_place(|| server.stop(grace));
    if stopped.killed {
        ctx.warn(format!(
            "server `{}` did not stop within {} s of SIGTERM and was killed",
            group.server,
            grace.as_secs()
        ));
    }
}

/// Verifies each protocol of the group on the workloads its points use.
/// Returns the protocols that failed, with the reason and log tail.
async fn verify<E: Engine>(
    ctx: &mut Ctx<'_, E>,
    server: &RunningServer,
    group: &ServerGroup,
    points: &[u32],
) -> BTreeMap<String, (String, String)> {
    let mut failed = BTreeMap::new();
    for protocol in &group.protocols {
        let mut workloads: Vec<String> = points
            .iter()
            .map(|p| &ctx.plan.points[*p as usize])
            .filter(|p| &p.protocol == protocol)
            .map(|p| p.workload.clone())
            .collect();
        workloads.dedup();
        if workloads.is_empty() {
            continue;
        }
        let target = server.listeners.get(protocol).cloned().unwrap_or_default();
        if let Err(e) = verify_protocol(ctx.engine, group, protocol, &target, &workloads).await {
            let reason = format!("verification of `{}` {protocol} failed: {e}", group.server);
            ctx.emit(RunEvent::ServerFailed {
                server: group.server.clone(),
                reason: reason.clone(),
            });
            failed.insert(protocol.clone(), (reason, server.log_tail()));
        }
    }
    failed
}

/// Verifies one protocol. With injected failures the server may answer any
/// call with the contract's injected failure, so each workload is retried
/// (up to [`VERIFY_ATTEMPTS`] times) and passes on its first correct answer,
/// or when every attempt was an injected failure (a rate near 1).
async fn verify_protocol<E: Engine>(
    engine: &E,
    group: &ServerGroup,
    protocol: &str,
    target: &str,
    workloads: &[String],
) -> Result<(), String> {
    let first = engine.verify(protocol, target, group.tls, workloads).await;
    if first.is_ok() || group.failure_rate == 0.0 {
        return first;
    }
    for w in workloads {
        let one = std::slice::from_ref(w);
        let mut last = Ok(());
        for _ in 0..VERIFY_ATTEMPTS {
            last = engine.verify(protocol, target, group.tls, one).await;
            if last.is_ok() {
                break;
            }
        }
        if let Err(e) = last
            && !e.contains("injected failure")
        {
            return Err(e);
        }
    }
    Ok(())
}

/// Verification attempts per workload when failures are injected.
pub const VERIFY_ATTEMPTS: usize = 10;

type Measured = (LoadResult, ServerCost, Vec<u64>, Option<Search>);

/// Where a point is measured: the point, its server's address, the server
/// process and its sampler.
struct Site<'a> {
    point: &'a PointConfig,
    target: &'a str,
    server: &'a RunningServer,
    sampler: &'a Sampler,
}

/// One engine call with the server's cost over its measured window.
async fn run_once<E: Engine>(
    ctx: &Ctx<'_, E>,
    site: &Site<'_>,
    concurrency: u32,
    duration_ns: u64,
    warmup_ns: u64,
) -> Result<(LoadResult, ServerCost, Vec<u64>), String> {
    let Site {
        point,
        target,
        server,
        sampler,
    } = *site;
    let plan = ctx.plan.load_plan(point, target, concurrency, duration_ns, warmup_ns);
    let (tx, mut rx) = unbounded_channel();
    let started: Arc<Mutex<Option<Instant>>> = Arc::default();
    let forward = {
        let started = started.clone();
        let events = ctx.events.clone();
        tokio::spawn(async move {
            while let Some(e) = rx.recv().await {
                match e {
                    EngineEvent::Started { at } => *started.lock().unwrap_or_else(|e| e.into_inner()) = Some(at),
                    EngineEvent::Progress {
                        calls,
                        errors,
                        rate,
                        p99_ns,
                        ..
                    } => {
                        if let Some(ev) = &events {
                            let _ = ev.send(RunEvent::Live {
                                rate,
                                p99_ns,
                                calls,
                                errors,
                            });
                        }
                    }
                }
            }
        })
    };
    let result = ctx.engine.measure(plan, Some(tx), ctx.cancel.child_token()).await;
    let returned = Instant::now();
    let _ = forward.await;
    let result = result?;
    if result.end_reason == EndReason::Interrupted {
        return Ok((result, ServerCost::default(), vec![]));
    }
    let window = Duration::from_nanos(result.duration_ns);
    let start = started
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .map(|at| at + Duration::from_nanos(warmup_ns))
        .filter(|s| *s + window <= returned + Duration::from_millis(50))
        .unwrap_or_else(|| returned.checked_sub(window).unwrap_or(returned));
    let samples = sampler.snapshot(server.pid());
    let (mut cost, rss) = procfs::cost(&samples, start, start + window, result.calls);
    if let Some(peak) = server.cgroup_memory_peak() {
        cost.rss_peak_bytes = cost.rss_peak_bytes.max(peak);
    }
    Ok((result, cost, rss))
}

async fn measure_point<E: Engine>(
    ctx: &mut Ctx<'_, E>,
    point: &PointConfig,
    target: &str,
    server: &RunningServer,
    sampler: &Sampler,
) -> Result<Measured, String> {
    let plan = ctx.plan;
    let site = Site {
        point,
        target,
        server,
        sampler,
    };
    match point.kind {
        PointKind::Fixed | PointKind::Rate => {
            let (r, c, rss) = run_once(ctx, &site, point.concurrency, plan.duration_ns, plan.warmup_ns).await?;
            Ok((r, c, rss, None))
        }
        PointKind::Discover => {
            let spec = plan.discover.clone().ok_or("discover settings missing from the plan")?;
            let mut steps = Vec::new();
            let mut best: Option<(u32, f64)> = None;
            let mut c = spec.start;
            let mut warmup = plan.warmup_ns;
            let stop_reason;
            loop {
                let (r, _, _) = run_once(ctx, &site, c, spec.step_ns, warmup).await?;
                warmup = 0;
                if ctx.cancel.is_cancelled() {
                    return Ok((r, ServerCost::default(), vec![], None));
                }
                steps.push(SearchStep {
                    concurrency: c,
                    rate: r.rate,
                    errors: r.error_count(),
                    p99_ns: r.latency.p99_ns,
                });
                match best {
                    Some((_, b)) if r.rate <= b * (1.0 + spec.min_gain) => {
                        stop_reason = format!(
                            "rate at concurrency {c} ({:.0}/s) improved by {:.1}% or less over the best ({b:.0}/s): stopped",
                            r.rate,
                            spec.min_gain * 100.0
                        );
                        if r.rate > b {
                            best = Some((c, r.rate));
                        }
                        break;
                    }
                    _ => best = Some((c, r.rate)),
                }
                let next = c.saturating_mul(spec.factor);
                if next > spec.max {
                    stop_reason = format!("reached discover.max ({})", spec.max);
                    break;
                }
                c = next;
            }
            let (chosen, _) = best.unwrap_or((spec.start, 0.0));
            let (r, cost, rss) = run_once(ctx, &site, chosen, plan.duration_ns, plan.warmup_ns).await?;
            let search = Search {
                steps,
                chosen_concurrency: chosen,
                knee_rate: None,
                stop_reason,
            };
            Ok((r, cost, rss, Some(search)))
        }
        PointKind::Ramp => {
            let spec = plan.ramp.clone().ok_or("ramp settings missing from the plan")?;
            let mut steps = Vec::new();
            let mut best: Option<Measured> = None;
            let mut best_rate = 0.0;
            let mut flat = 0;
            let mut c = spec.start;
            let mut warmup = plan.warmup_ns;
            let stop_reason;
            loop {
                let (r, cost, rss) = run_once(ctx, &site, c, spec.step_ns, warmup).await?;
                warmup = 0;
                if ctx.cancel.is_cancelled() {
                    return Ok((r, cost, rss, None));
                }
                let errors = r.error_count();
                let error_rate = if r.calls == 0 {
                    0.0
                } else {
                    errors as f64 / r.calls as f64
                };
                steps.push(SearchStep {
                    concurrency: c,
                    rate: r.rate,
                    errors,
                    p99_ns: r.latency.p99_ns,
                });
                if error_rate > spec.max_error_rate {
                    stop_reason = format!(
                        "errors began at concurrency {c} ({:.1}% of calls failed, above ramp.max_error_rate)",
                        error_rate * 100.0
                    );
                    if best.is_none() {
                        best = Some((r, cost, rss, None));
                    }
                    break;
                }
                if r.rate > best_rate * (1.0 + spec.min_gain) || best.is_none() {
                    best_rate = r.rate;
                    best = Some((r, cost, rss, None));
                    flat = 0;
                } else {
                    flat += 1;
                    if flat >= spec.patience {
                        stop_reason = format!(
                            "rate stopped rising for {flat} steps after concurrency {}",
                            c - spec.step * flat
                        );
                        break;
                    }
                }
                if c + spec.step > spec.max {
                    stop_reason = format!("reached ramp.max ({})", spec.max);
                    break;
                }
                c += spec.step;
            }
            let (r, cost, rss, _) = best.expect("at least one step ran");
            let knee = r.plan.concurrency;
            let search = Search {
                steps,
                chosen_concurrency: knee,
                knee_rate: Some(r.rate),
                stop_reason,
            };
            Ok((r, cost, rss, Some(search)))
        }
    }
}
