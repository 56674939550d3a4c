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

use protobench_model::format::error_chain;
use protobench_model::load::{EndReason, LoadResult, Protocol};
use protobench_model::run::{
    Failure, Measurement, MeasurementStatus, PointConfig, PointKind, RunStatus, Search, ServerCost, Warmup,
};
use protobench_model::time::now_rfc3339;
use protobench_results::store::Store;

use crate::engine::{Engine, Event};
use crate::error::{ExitContext, MeasureError, RunnerError};
use crate::isolation::{Cgroup, CgroupSupport, Limits};
use crate::manifest::Catalog;
use crate::plan::{Plan, ServerGroup};
use crate::procfs::{self, Sampler};
use crate::search::{Discover, Next, Observation, Ramp, Stepper};
use crate::server::{RunningServer, STOP_GRACE, StartSpec, TlsFiles};

pub mod netrun;

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
    /// What the engine reports during a measurement (its own events, as sent).
    Engine(Event),
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
    /// An emulated link was created and measured before its points
    /// (`RunLink::summary_line`: "lan-1g: measured 0.95 Gbit/s up, ...").
    Link(String),
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
    /// The executable with the [`crate::guard`] subcommand every server is
    /// started through, so that none outlives this process (the binary sets
    /// it to itself; `None` starts servers directly).
    pub guard: Option<PathBuf>,
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
            guard: None,
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
    /// The link the current network's servers sit behind (`None`: loopback).
    link: Option<netrun::ActiveLink>,
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
        let label = self
            .plan
            .points
            .get(m.point as usize)
            .map_or_else(String::new, PointConfig::label);
        self.emit(RunEvent::PointFinished {
            point: m.point,
            label,
            repetition: m.repetition,
            rate: m.result.as_ref().map(|r| r.rate),
            failure: m.failure.as_ref().map(|f| f.reason.clone()),
        });
        self.save(m);
    }

    fn fail(&mut self, point: u32, repetition: u32, error: &RunnerError) {
        let now = now_rfc3339();
        self.record(Measurement {
            point,
            repetition,
            status: MeasurementStatus::Failed,
            failure: Some(Failure {
                reason: error.to_string(),
                log_tail: error.log_tail(),
            }),
            result: None,
            server_cost: None,
            server_rss_timeline: vec![],
            search: None,
            warmup: None,
            link: None,
            started_at: now.clone(),
            finished_at: now,
        });
    }

    fn start_server(&mut self, group: &ServerGroup, repetition: u32) -> Result<RunningServer, RunnerError> {
        self.emit(RunEvent::ServerStarting {
            server: group.server.clone(),
            repetition,
        });
        let refuse = |reason: String| RunnerError::ServerStart {
            server: group.server.clone(),
            reason,
            log_tail: None,
        };
        let manifest = self
            .catalog
            .servers
            .get(&group.server)
            .cloned()
            .ok_or_else(|| refuse(format!("server `{}` has no manifest", group.server)))?;
        let missing = manifest.missing_toolchain();
        if !missing.is_empty() {
            return Err(refuse(format!(
                "server `{}` needs {} on PATH (toolchain in {}/manifest.toml)",
                group.server,
                missing.join(", "),
                manifest.dir.display()
            )));
        }
        if let Some(bin) = manifest.missing_start_binary() {
            return Err(refuse(format!(
                "server `{}` is not built: {} is missing (run `protobench build {}`)",
                group.server,
                bin.display(),
                group.server
            )));
        }
        let cgroup = self.cgroup_for(group, repetition);
        let mut extra_env: Vec<(String, String)> = manifest.env.clone().into_iter().collect();
        extra_env.extend(self.opts.extra_env.iter().cloned());
        // Behind a link: listen on the server host's address, not loopback.
        if let Some(link) = &self.link {
            let bind = link.link.bind_addr().to_string();
            extra_env.extend(group.protocols.iter().map(|p| (p.addr_env().to_string(), bind.clone())));
        }
        let netns = self.link.as_ref().map(|l| l.link.host().namespace().to_string());
        let spec = StartSpec {
            manifest,
            group: group.clone(),
            exe: self.opts.exe.clone(),
            dataset: self.opts.dataset.clone(),
            tls: if group.tls { self.tls.clone() } else { None },
            cpus: self.plan.server_cpus.clone(),
            extra_env,
        };
        RunningServer::start_in_namespace(&spec, cgroup, self.opts.guard.as_deref(), netns.as_deref()).map_err(|e| {
            RunnerError::ServerStart {
                server: group.server.clone(),
                reason: error_chain(&e),
                log_tail: e.log_tail(),
            }
        })
    }

    /// The cgroup applying the group's limits, if it has any and they can
    /// be applied (a warning says so when they cannot).
    fn cgroup_for(&mut self, group: &ServerGroup, repetition: u32) -> Option<Cgroup> {
        let limits = Limits {
            cpu_limit: group.cpu_limit,
            memory_limit_bytes: group.memory_limit_bytes,
        };
        if limits == Limits::default() {
            return None;
        }
        let name = format!("protobench-{}-g{}-r{}", std::process::id(), group.index, repetition);
        match Cgroup::create(&self.cgroups, &name, &limits) {
            Ok(c) => Some(c),
            Err(e) => {
                self.warn(format!(
                    "limits of server `{}` not applied ({}); measured without them",
                    group.server,
                    error_chain(&e)
                ));
                None
            }
        }
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
        link: None,
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
        .any(|g| g.tls && plan.target(&g.server).is_none() && todo.iter().any(|(p, _)| g.points.contains(p)))
    {
        match crate::server::self_signed(&opts.work_dir.join("tls")) {
            Ok(files) => ctx.tls = Some(files),
            Err(e) => ctx.warn(format!("TLS points will fail: {e}")),
        }
    }
    // Network by network: each link is created and measured once, carries
    // its points' repetitions, and is removed before the next (and on every
    // way out: `ActiveLink` removes it on drop).
    let networks = netrun::networks_to_run(plan, todo);
    let checked = tokio::task::block_in_place(|| netrun::check(&networks));
    for (network, shape) in networks.iter().zip(checked) {
        if ctx.cancel.is_cancelled() {
            break;
        }
        let todo_here = |repetition: u32, points: Vec<u32>| -> Vec<u32> {
            points
                .into_iter()
                .filter(|p| todo.contains(&(*p, repetition)))
                .collect()
        };
        let schedule: Vec<(u32, u32, Vec<u32>)> = plan
            .schedule()
            .into_iter()
            .filter(|(_, g, _)| plan.groups[*g as usize].network == *network)
            .map(|(r, g, points)| (r, g, todo_here(r, points)))
            .filter(|(_, _, points)| !points.is_empty())
            .collect();
        match netrun::open(&mut ctx, network.as_deref(), shape) {
            Ok(link) => ctx.link = link,
            Err(e) => {
                for (repetition, _, points) in &schedule {
                    for &p in points {
                        ctx.fail(p, *repetition, &e);
                    }
                }
                continue;
            }
        }
        for (repetition, group_index, points) in schedule {
            if ctx.cancel.is_cancelled() {
                break;
            }
            let group = plan.groups[group_index as usize].clone();
            run_group(&mut ctx, &group, repetition, &points).await;
        }
        netrun::close(&mut ctx);
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
) -> Result<RunningServer, RunnerError> {
    // Starting waits for a child's output; keep it off the async workers'
    // hot path by doing it in place (the engine is idle meanwhile).
    tokio::task::block_in_place(|| ctx.start_server(group, repetition))
}

/// A started and verified server with its sampler, restarted at most once
/// per group when it dies between points; or a target (not started, not
/// verified, sampled only when it names a PID).
struct Serving {
    /// `None` for a target.
    server: Option<RunningServer>,
    /// Where the engine reaches each protocol: the listener itself, or the
    /// link's proxy in front of it (a target's points use its own address).
    targets: BTreeMap<Protocol, String>,
    /// The process whose CPU and memory are sampled, and its sampler.
    sampled: Option<(u32, Sampler)>,
    /// Protocols that failed verification.
    failed: BTreeMap<Protocol, RunnerError>,
    restarted: bool,
}

impl Serving {
    async fn start<E: Engine>(
        ctx: &mut Ctx<'_, E>,
        group: &ServerGroup,
        repetition: u32,
        points: &[u32],
    ) -> Result<Serving, RunnerError> {
        let server = start_blocking(ctx, group, repetition).await?;
        let targets = match &mut ctx.link {
            None => server.listeners.clone(),
            Some(link) => {
                let exposed = tokio::task::block_in_place(|| link.expose_all(&server.listeners));
                match exposed {
                    Ok(t) => t,
                    Err(e) => {
                        let mut server = server;
                        let grace = ctx.opts.stop_grace;
                        tokio::task::block_in_place(|| server.stop(grace));
                        return Err(e);
                    }
                }
            }
        };
        let failed = verify(ctx, &server, &targets, group, points).await;
        let sampled = Some((server.pid(), Sampler::start(server.pid())));
        Ok(Serving {
            server: Some(server),
            targets,
            sampled,
            failed,
            restarted: false,
        })
    }

    /// A target: nothing to start or verify; its PID, if given, is sampled.
    fn target(pid: Option<u32>) -> Serving {
        Serving {
            server: None,
            targets: BTreeMap::new(),
            sampled: pid.map(|pid| (pid, Sampler::start(pid))),
            failed: BTreeMap::new(),
            restarted: false,
        }
    }

    /// Makes sure the server is alive before point `p`: restarts it once if
    /// it died, and says why `p` cannot be measured otherwise.
    async fn ready_for<E: Engine>(
        &mut self,
        ctx: &mut Ctx<'_, E>,
        group: &ServerGroup,
        repetition: u32,
        points: &[u32],
    ) -> Result<(), RunnerError> {
        let Some(status) = self.server.as_mut().and_then(RunningServer::exited) else {
            return Ok(());
        };
        if self.restarted {
            return Err(RunnerError::ServerExited {
                server: group.server.clone(),
                status,
                context: ExitContext::AlreadyRestarted,
                log_tail: self.server.as_ref().map(RunningServer::log_tail).unwrap_or_default(),
            });
        }
        ctx.warn(format!("server `{}` exited ({status}); restarted", group.server));
        let mut fresh = Serving::start(ctx, group, repetition, points).await?;
        fresh.restarted = true;
        *self = fresh;
        Ok(())
    }
}

async fn run_group<E: Engine>(ctx: &mut Ctx<'_, E>, group: &ServerGroup, repetition: u32, points: &[u32]) {
    let started = match ctx.plan.target(&group.server) {
        Some(t) => {
            // Said once per run, with the run's warnings (and in the report).
            let note = t.note();
            ctx.warn(note);
            Ok(Serving::target(t.pid))
        }
        None => Serving::start(ctx, group, repetition, points).await,
    };
    let mut serving = match started {
        Ok(s) => s,
        Err(e) => {
            ctx.emit(RunEvent::ServerFailed {
                server: group.server.clone(),
                reason: e.to_string(),
            });
            for &p in points {
                ctx.fail(p, repetition, &e);
            }
            return;
        }
    };
    for (i, &p) in points.iter().enumerate() {
        if ctx.cancel.is_cancelled() {
            break;
        }
        let point = ctx.plan.points[p as usize].clone();
        if let Err(e) = serving.ready_for(ctx, group, repetition, points).await {
            let restart_failed = matches!(e, RunnerError::ServerStart { .. });
            ctx.fail(p, repetition, &e);
            if restart_failed {
                // No server for the rest of the group either.
                for &q in &points[i + 1..] {
                    ctx.fail(q, repetition, &e);
                }
                return;
            }
            continue;
        }
        if let Some(e) = serving.failed.get(&point.protocol) {
            let e = clone_failure(e);
            ctx.fail(p, repetition, &e);
            continue;
        }
        measure_and_record(ctx, group, &point, repetition, &mut serving).await;
    }
    let Serving { server, sampled, .. } = serving;
    drop(sampled);
    let Some(mut server) = server else {
        return;
    };
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

/// A verification failure, once per point it fails.
fn clone_failure(e: &RunnerError) -> RunnerError {
    match e {
        RunnerError::Verification {
            server,
            protocol,
            difference,
            log_tail,
        } => RunnerError::Verification {
            server: server.clone(),
            protocol: *protocol,
            difference: difference.clone(),
            log_tail: log_tail.clone(),
        },
        other => RunnerError::ServerStart {
            server: String::new(),
            reason: other.to_string(),
            log_tail: other.log_tail(),
        },
    }
}

/// Measures one point on a running server and records the measurement (or
/// its failure). A measurement cut short by Ctrl-C is not kept.
async fn measure_and_record<E: Engine>(
    ctx: &mut Ctx<'_, E>,
    group: &ServerGroup,
    point: &PointConfig,
    repetition: u32,
    serving: &mut Serving,
) {
    let p = point.index;
    ctx.emit(RunEvent::PointStarted {
        point: p,
        repetition,
        label: point.label(),
        done: ctx.done,
        todo: ctx.todo,
    });
    let started_at = now_rfc3339();
    let target = serving.targets.get(&point.protocol).cloned().unwrap_or_default();
    let proxy_cpu_before = ctx.link.as_ref().and_then(|l| l.link.toxiproxy_cpu_ns());
    let site = Site {
        point,
        target: &target,
        server: serving.server.as_ref(),
        sampled: serving.sampled.as_ref().map(|(pid, s)| (*pid, s)),
    };
    let measured = measure_point(ctx, &site).await;
    if ctx.cancel.is_cancelled() {
        return;
    }
    let proxy_cpu_ns = proxy_cpu_before
        .zip(ctx.link.as_ref().and_then(|l| l.link.toxiproxy_cpu_ns()))
        .map(|(a, b)| b.saturating_sub(a));
    let mut server = serving.server.as_mut();
    let mut exited = |context| {
        let server = server.as_deref_mut()?;
        server.exited().map(|status| RunnerError::ServerExited {
            server: group.server.clone(),
            status,
            context,
            log_tail: server.log_tail(),
        })
    };
    let m = match measured {
        Err(e) => {
            let e = exited(ExitContext::DuringFailedMeasurement(e.clone())).unwrap_or(RunnerError::Measurement(e));
            ctx.fail(p, repetition, &e);
            return;
        }
        Ok(m) => m,
    };
    if let Some(e) = exited(ExitContext::DuringMeasurement) {
        ctx.fail(p, repetition, &e);
        return;
    }
    if m.result.generator.generator_bound {
        let why = m.result.generator.reason.clone().unwrap_or_default();
        ctx.warn(format!(
            "generator-bound: {} {} {} ({why}); the rate measures the load generator, not the server",
            point.protocol,
            point.workload,
            point.variant_label()
        ));
    }
    if let Some(hits) = serving
        .server
        .as_ref()
        .and_then(RunningServer::cgroup_memory_limit_hits)
        && hits > 0
    {
        ctx.warn(format!("server `{}` hit its memory limit {hits} times", group.server));
    }
    let link = ctx.link.as_ref().map(|l| l.point_link(&m.result, proxy_cpu_ns));
    ctx.record(Measurement {
        point: p,
        repetition,
        status: MeasurementStatus::Ok,
        failure: None,
        result: Some(m.result),
        server_cost: m.cost,
        server_rss_timeline: m.rss,
        search: m.search,
        warmup: m.warmup,
        link,
        started_at,
        finished_at: now_rfc3339(),
    });
}

/// Verifies each protocol of the group on the workloads its points use.
/// Returns the protocols that failed, with why.
async fn verify<E: Engine>(
    ctx: &mut Ctx<'_, E>,
    server: &RunningServer,
    targets: &BTreeMap<Protocol, String>,
    group: &ServerGroup,
    points: &[u32],
) -> BTreeMap<Protocol, RunnerError> {
    let mut failed = BTreeMap::new();
    for &protocol in &group.protocols {
        let mut workloads: Vec<String> = points
            .iter()
            .map(|p| &ctx.plan.points[*p as usize])
            .filter(|p| p.protocol == protocol)
            .map(|p| p.workload.clone())
            .collect();
        workloads.dedup();
        if workloads.is_empty() {
            continue;
        }
        let target = targets.get(&protocol).cloned().unwrap_or_default();
        if let Err(difference) = verify_protocol(ctx.engine, group, protocol, &target, &workloads).await {
            let e = RunnerError::Verification {
                server: group.server.clone(),
                protocol,
                difference,
                log_tail: server.log_tail(),
            };
            ctx.emit(RunEvent::ServerFailed {
                server: group.server.clone(),
                reason: e.to_string(),
            });
            failed.insert(protocol, e);
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
    protocol: Protocol,
    target: &str,
    workloads: &[String],
) -> Result<(), crate::error::VerifyError> {
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
            && !e.only_injected()
        {
            return Err(e);
        }
    }
    Ok(())
}

/// Verification attempts per workload when failures are injected.
pub const VERIFY_ATTEMPTS: usize = 10;

/// One point's measurement: the engine's result, the server's cost over the
/// measured window, its RSS per second, and the search trace.
struct Measured {
    result: LoadResult,
    /// `None` when nothing was sampled (a target without a PID).
    cost: Option<ServerCost>,
    rss: Vec<u64>,
    search: Option<Search>,
    warmup: Option<Warmup>,
}

/// Where a point is measured: the point, its server's address, the server
/// process (none for a target) and the sampled PID with its sampler.
struct Site<'a> {
    point: &'a PointConfig,
    target: &'a str,
    server: Option<&'a RunningServer>,
    sampled: Option<(u32, &'a Sampler)>,
}

/// One engine call with the server's cost over its measured window. With
/// `warmup = "steady"` the warm-up is a run of its own, stopped as soon as
/// the rate has stopped rising (at most `warmup_ns`), and the measured run
/// follows it at once.
async fn run_once<E: Engine>(
    ctx: &Ctx<'_, E>,
    site: &Site<'_>,
    concurrency: u32,
    duration_ns: u64,
    warmup_ns: u64,
) -> Result<Measured, MeasureError> {
    let (warmup_ns, warmup) = match ctx.plan.warmup_steady {
        Some(spec) if warmup_ns > 0 => (0, Some(steady_warmup(ctx, site, concurrency, warmup_ns, spec).await?)),
        _ => (warmup_ns, None),
    };
    let mut m = measure_once(ctx, site, concurrency, duration_ns, warmup_ns).await?;
    m.warmup = warmup;
    Ok(m)
}

/// Warms up for at least the preset's and the stack's minimum, then until
/// the per-second rate has stopped rising (`protobench_model::steady::steady`),
/// or until `max_ns` has passed.
async fn steady_warmup<E: Engine>(
    ctx: &Ctx<'_, E>,
    site: &Site<'_>,
    concurrency: u32,
    max_ns: u64,
    spec: crate::plan::SteadyWarmup,
) -> Result<Warmup, MeasureError> {
    let plan = ctx.plan.load_plan(site.point, site.target, concurrency, max_ns, 0);
    // The stack's own minimum (a JIT's) counts as much as the preset's.
    let stack_min = (ctx.catalog.servers.get(&site.point.server)).map_or(0, |m| m.warmup_min_s);
    let min_s = u64::from(spec.min_s).max(stack_min) as usize;
    let (tx, mut rx) = unbounded_channel();
    let stop = ctx.cancel.child_token();
    let watcher = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut rates = Vec::new();
            let mut steady = false;
            while let Some(e) = rx.recv().await {
                // A second past the end is the partial one the run ends
                // with: its low count would read as a fall.
                if let Event::Progress { rate, elapsed_ns, .. } = e
                    && elapsed_ns <= max_ns
                {
                    rates.push(rate);
                    if !steady
                        && rates.len() >= min_s
                        && protobench_model::steady::steady(&rates, spec.window_s as usize, spec.threshold)
                    {
                        steady = true;
                        stop.cancel();
                    }
                }
            }
            steady
        })
    };
    let started = Instant::now();
    let result = ctx.engine.measure(plan, Some(tx), stop).await;
    let steady = watcher.await.unwrap_or(false);
    result?;
    Ok(Warmup {
        duration_ns: started.elapsed().as_nanos() as u64,
        steady,
    })
}

/// One engine call with the server's cost over its measured window.
async fn measure_once<E: Engine>(
    ctx: &Ctx<'_, E>,
    site: &Site<'_>,
    concurrency: u32,
    duration_ns: u64,
    warmup_ns: u64,
) -> Result<Measured, MeasureError> {
    let plan = ctx
        .plan
        .load_plan(site.point, site.target, concurrency, duration_ns, warmup_ns);
    measure_plan(ctx, site, plan, ctx.cancel.child_token(), None).await
}

/// One engine run of `plan` (cancelled by `stop`, a child of the run's
/// token) with the server's cost over its measured window; every engine
/// event also goes to `tap` (the continuous ramp's knee watcher). Only a
/// run cut short by the user (Ctrl-C) goes without its cost.
async fn measure_plan<E: Engine>(
    ctx: &Ctx<'_, E>,
    site: &Site<'_>,
    plan: protobench_model::load::LoadPlan,
    stop: CancellationToken,
    tap: Option<UnboundedSender<Event>>,
) -> Result<Measured, MeasureError> {
    let warmup_ns = plan.warmup_ns;
    let (tx, mut rx) = unbounded_channel();
    let started: Arc<Mutex<Option<Instant>>> = Arc::default();
    let forward = {
        let started = started.clone();
        let events = ctx.events.clone();
        tokio::spawn(async move {
            while let Some(e) = rx.recv().await {
                if let Event::Started { at, .. } = e {
                    *started.lock().unwrap_or_else(|e| e.into_inner()) = Some(at);
                }
                if let Some(tap) = &tap {
                    let _ = tap.send(e.clone());
                }
                if let Some(ev) = &events {
                    let _ = ev.send(RunEvent::Engine(e));
                }
            }
        })
    };
    let result = ctx.engine.measure(plan, Some(tx), stop).await;
    let returned = Instant::now();
    let _ = forward.await;
    let result = result?;
    if result.end_reason == EndReason::Interrupted && ctx.cancel.is_cancelled() {
        return Ok(Measured {
            result,
            cost: None,
            rss: vec![],
            search: None,
            warmup: None,
        });
    }
    let window = Duration::from_nanos(result.duration_ns);
    let start = started
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .map(|at| at + Duration::from_nanos(warmup_ns))
        .filter(|s| *s + window <= returned + Duration::from_millis(50))
        .unwrap_or_else(|| returned.checked_sub(window).unwrap_or(returned));
    let (cost, rss) = match site.sampled {
        None => (None, vec![]),
        Some((pid, sampler)) => {
            let samples = sampler.snapshot(pid);
            let (mut cost, rss) = procfs::cost(&samples, start, start + window, result.calls);
            if let Some(peak) = site.server.and_then(RunningServer::cgroup_memory_peak) {
                cost.rss_peak_bytes = cost.rss_peak_bytes.max(peak);
            }
            (Some(cost), rss)
        }
    };
    Ok(Measured {
        result,
        cost,
        rss,
        search: None,
        warmup: None,
    })
}

/// Measures a point by its kind: one run for `fixed` and `rate`; a search
/// for `discover` (then the best concurrency measured for the full
/// duration) and `ramp` (the knee step is the measurement).
async fn measure_point<E: Engine>(ctx: &mut Ctx<'_, E>, site: &Site<'_>) -> Result<Measured, MeasureError> {
    let plan = ctx.plan;
    match site.point.kind {
        PointKind::Fixed | PointKind::Rate => {
            run_once(ctx, site, site.point.concurrency, plan.duration_ns, plan.warmup_ns).await
        }
        PointKind::Discover => {
            let spec = plan
                .discover
                .clone()
                .ok_or_else(|| MeasureError("discover settings missing from the plan".into()))?;
            let step_ns = spec.step_ns;
            let Some((stepper, stop, _)) = search(ctx, site, Discover::new(spec), step_ns).await? else {
                return Err(interrupted(site));
            };
            let mut m = run_once(ctx, site, stop.concurrency, plan.duration_ns, plan.warmup_ns).await?;
            m.search = Some(Search {
                steps: stepper.steps().to_vec(),
                chosen_concurrency: stop.concurrency,
                knee_rate: None,
                stop_reason: stop.reason,
                knee_second: None,
            });
            Ok(m)
        }
        PointKind::Ramp => {
            let spec = plan
                .ramp
                .clone()
                .ok_or_else(|| MeasureError("ramp settings missing from the plan".into()))?;
            if !spec.stepped {
                return continuous_ramp(ctx, site, &spec).await;
            }
            let step_ns = spec.step_ns;
            let Some((stepper, stop, mut measured)) = search(ctx, site, Ramp::new(spec), step_ns).await? else {
                return Err(interrupted(site));
            };
            let mut m = measured.swap_remove(stop.best);
            m.search = Some(Search {
                steps: stepper.steps().to_vec(),
                chosen_concurrency: stop.concurrency,
                knee_rate: Some(m.result.rate),
                stop_reason: stop.reason,
                knee_second: None,
            });
            Ok(m)
        }
    }
}

/// Runs a search: "ask the stepper, measure once" until it stops. Returns
/// the stepper, its stop and every step's measurement, or `None` when
/// interrupted.
async fn search<E: Engine, S: Stepper>(
    ctx: &mut Ctx<'_, E>,
    site: &Site<'_>,
    mut stepper: S,
    step_ns: u64,
) -> Result<Option<(S, crate::search::Stop, Vec<Measured>)>, MeasureError> {
    let mut concurrency = stepper.first();
    let mut warmup = ctx.plan.warmup_ns;
    let mut measured = Vec::new();
    loop {
        let m = run_once(ctx, site, concurrency, step_ns, warmup).await?;
        warmup = 0;
        if ctx.cancel.is_cancelled() {
            return Ok(None);
        }
        let r = &m.result;
        let next = stepper.observe(Observation {
            concurrency,
            rate: r.rate,
            calls: r.calls,
            errors: r.error_count(),
            p99_ns: r.latency.p99_ns,
        });
        measured.push(m);
        match next {
            Next::Measure(c) => concurrency = c,
            Next::Stop(stop) => return Ok(Some((stepper, stop, measured))),
        }
    }
}

/// The continuous ramp: one engine run whose callers join at `spawn_rate`
/// per second from `start` up to `max` (a concurrency schedule), keeping
/// their connections. A watcher applies the knee rule to each closed second
/// and cancels the run at the knee; the whole timeline is the measurement,
/// the knee (second, users, rate, reason) its search record. A steady
/// warm-up, if the preset asks for one, runs first at `start` users.
async fn continuous_ramp<E: Engine>(
    ctx: &mut Ctx<'_, E>,
    site: &Site<'_>,
    spec: &crate::plan::RampSpec,
) -> Result<Measured, MeasureError> {
    let (warmup_ns, warmup) = match ctx.plan.warmup_steady {
        Some(steady) if ctx.plan.warmup_ns > 0 => (
            0,
            Some(steady_warmup(ctx, site, spec.start.max(1), ctx.plan.warmup_ns, steady).await?),
        ),
        _ => (ctx.plan.warmup_ns, None),
    };
    let (start, stages) = spec.stages();
    let window_ns: u64 = stages.iter().map(|s| s.duration_ns).sum();
    let mut plan = ctx
        .plan
        .load_plan(site.point, site.target, spec.max, window_ns, warmup_ns);
    plan.duration_ns = None;
    plan.start_users = start;
    plan.stages = stages;
    let stop = ctx.cancel.child_token();
    let (tap, mut seconds) = unbounded_channel();
    let watcher = {
        let stop = stop.clone();
        let spec = spec.clone();
        tokio::spawn(async move {
            let mut rule = crate::search::KneeRule::new(&spec);
            let mut stopped = false;
            while let Some(e) = seconds.recv().await {
                // A second past the schedule's end is the partial one the
                // run ends with: its low count would read as a fall.
                if let Event::Progress { second, elapsed_ns, .. } = e
                    && elapsed_ns <= window_ns
                    && !stopped
                    && rule.observe(&second).is_some()
                {
                    stopped = true;
                    stop.cancel();
                }
            }
            stopped
        })
    };
    let measured = measure_plan(ctx, site, plan, stop, Some(tap)).await;
    let stopped = watcher.await.unwrap_or(false);
    let mut m = measured?;
    if ctx.cancel.is_cancelled() {
        return Err(interrupted(site));
    }
    if stopped {
        m.result.end_reason = EndReason::Knee;
    }
    let knee = crate::search::find_knee(&m.result.timeline, m.result.duration_ns, spec).ok_or_else(|| {
        MeasureError(format!(
            "the ramp of {} ended before its first whole second",
            site.point.label()
        ))
    })?;
    let steps = m
        .result
        .timeline
        .iter()
        .filter(|p| (u64::from(p.second) + 1) * 1_000_000_000 <= m.result.duration_ns)
        .map(|p| protobench_model::run::SearchStep {
            concurrency: p.users,
            rate: p.successes as f64,
            errors: p.errors,
            p99_ns: p.p99_ns,
        })
        .collect();
    m.search = Some(Search {
        steps,
        chosen_concurrency: knee.users,
        knee_rate: Some(knee.rate),
        stop_reason: knee.reason,
        knee_second: Some(knee.second),
    });
    m.warmup = warmup;
    Ok(m)
}

/// A search cut short by Ctrl-C: nothing is kept (the caller sees the
/// cancellation and records nothing).
fn interrupted(site: &Site<'_>) -> MeasureError {
    MeasureError(format!("interrupted during the search of {}", site.point.label()))
}
