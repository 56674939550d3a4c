//! Running a plan: the schedule of its measurements, in rooms.
//!
//! - this file: the schedule (networks x repetitions x server groups) and
//!   what happens around each point (is its server alive, did its protocol
//!   verify, did the server die while it was measured);
//! - [`netrun`]: the emulated link of each network;
//! - `serving`: the server lifecycle (start, expose, verify, restart, stop);
//! - `measure`: one point by its [`crate::plan::Method`] (warm-up, cost,
//!   searches), without the store or the catalog;
//! - `events`: what the rooms say ([`RunEvent`]); measurements, warnings
//!   and link reports leave them only as events, and the session
//!   ([`crate::session::Writer`]) is the one writer of the store.
//!
//! Order: repetition by repetition; within one, server group by server group
//! (rotated each repetition); within a group, peers (points that differ
//! only by protocol) back to back in a seeded order drawn anew each
//! repetition ([`crate::plan::Plan::interleaved`]). One
//! server process serves a group for one repetition, so repetitions of a
//! point are never back to back and each sees a fresh server.
//!
//! Failures are data: a server that does not start, fails verification or
//! crashes marks the affected measurements failed (with the reason and its
//! log tail) and the run goes on. Every measurement is written to the
//! database as soon as it is taken; if that write fails (disk full, lock),
//! it is kept and retried after the next one, and whatever is still unsaved
//! at the end is returned so the caller can dump it elsewhere.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

use protobench_model::run::{Failure, Measurement, MeasurementStatus, PointConfig, RunStatus};
use protobench_model::time::now_rfc3339;
use protobench_results::store::Store;

use crate::engine::Engine;
use crate::error::{ExitContext, MeasureError, RunnerError};
use crate::isolation::CgroupSupport;
use crate::manifest::Catalog;
use crate::network::Network;
use crate::plan::{Method, Plan, ServerGroup};
use crate::server::{RunningServer, STOP_GRACE, TlsFiles};

pub mod events;
mod measure;
pub mod netrun;
mod serving;

pub use events::{Outcome, RunEvent};
pub use serving::VERIFY_ATTEMPTS;

use events::Voice;
use measure::{Measurer, Site};
use serving::Serving;

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
    /// Servers listen on this address of this host instead of loopback (a
    /// run on agents on other hosts, which must reach them); an emulated
    /// link's server host wins over it.
    pub server_host: Option<std::net::IpAddr>,
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
            server_host: None,
        }
    }
}

/// What the schedule's rooms share for one run: its inputs, its voice,
/// and the state of the network being measured.
pub(super) struct Conductor<'a, E: Engine> {
    plan: &'a Plan,
    catalog: &'a Catalog,
    engine: &'a E,
    opts: &'a RunOptions,
    voice: Voice,
    cancel: CancellationToken,
    cgroups: CgroupSupport,
    tls: Option<TlsFiles>,
    /// The link the current network's servers sit behind (`None`: loopback).
    link: Option<netrun::ActiveLink>,
    done: u32,
    todo: u32,
}

/// Runs the measurements `todo` ((point, repetition) pairs) of `plan`,
/// storing each in run `run_id` as it is taken: the schedule measures and
/// says what it measured, the session's writer stores it (and passes every
/// event on to `events`).
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
    let (tx, rx) = unbounded_channel();
    let writer = crate::session::writer::Writer::new(store, run_id);
    let (status, mut outcome) = tokio::join!(
        conduct(plan, catalog, engine, todo, opts, tx, cancel),
        writer.consume(rx, events)
    );
    outcome.status = Some(status);
    outcome
}

/// The schedule: network by network, repetition by repetition, group by
/// group. Says everything it does on `tx`; returns how the run ended.
async fn conduct<E: Engine>(
    plan: &Plan,
    catalog: &Catalog,
    engine: &E,
    todo: &BTreeSet<(u32, u32)>,
    opts: &RunOptions,
    tx: UnboundedSender<RunEvent>,
    cancel: CancellationToken,
) -> RunStatus {
    let mut c = Conductor {
        plan,
        catalog,
        engine,
        opts,
        voice: Voice::new(tx),
        cancel,
        cgroups: CgroupSupport::detect(),
        tls: None,
        link: None,
        done: 0,
        todo: todo.len() as u32,
    };
    c.voice.emit(RunEvent::Begin {
        todo: c.todo,
        total: plan.total(),
        estimate_s: plan.estimate_s() * todo.len() as f64 / plan.total().max(1) as f64,
    });
    // The kind and its settings, joined once (a stored plan edited by hand
    // may lack them: then nothing can be measured, and each says why).
    let method = match plan.method() {
        Ok(m) => m,
        Err(reason) => {
            let e = RunnerError::Measurement(MeasureError(reason));
            for &(p, r) in todo {
                c.fail(p, r, &e);
            }
            return RunStatus::Complete;
        }
    };
    if plan
        .groups
        .iter()
        .any(|g| g.tls && plan.target(&g.server).is_none() && todo.iter().any(|(p, _)| g.points.contains(p)))
    {
        match crate::server::self_signed(&opts.work_dir.join("tls")) {
            Ok(files) => c.tls = Some(files),
            Err(e) => c.voice.warn(format!("TLS points will fail: {e}")),
        }
    }
    // Network by network: each link is created and measured once, carries
    // its points' repetitions, and is removed before the next (and on every
    // way out: `ActiveLink` removes it on drop).
    let networks = netrun::networks_to_run(plan, todo);
    let checked = tokio::task::block_in_place(|| netrun::check(&networks));
    for (network, shape) in networks.iter().zip(checked) {
        if c.cancel.is_cancelled() {
            break;
        }
        let schedule = schedule_behind(plan, todo, network.as_ref());
        match netrun::open(&mut c, network.as_ref(), shape) {
            Ok(link) => c.link = link,
            Err(e) => {
                for (repetition, _, points) in &schedule {
                    for &p in points {
                        c.fail(p, *repetition, &e);
                    }
                }
                continue;
            }
        }
        for (repetition, group_index, points) in schedule {
            if c.cancel.is_cancelled() {
                break;
            }
            let group = plan.groups[group_index as usize].clone();
            run_group(&mut c, &method, &group, repetition, &points).await;
        }
        netrun::close(&mut c);
    }
    if c.cancel.is_cancelled() {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    }
}

/// The plan's schedule restricted to the groups behind `network` and to
/// the measurements still to take: (repetition, group, points).
fn schedule_behind(plan: &Plan, todo: &BTreeSet<(u32, u32)>, network: Option<&Network>) -> Vec<(u32, u32, Vec<u32>)> {
    plan.schedule()
        .into_iter()
        .filter(|(_, g, _)| plan.groups[*g as usize].network.as_ref() == network)
        .map(|(r, g, points)| {
            let points: Vec<u32> = points.into_iter().filter(|p| todo.contains(&(*p, r))).collect();
            (r, g, points)
        })
        .filter(|(_, _, points)| !points.is_empty())
        .collect()
}

impl<E: Engine> Conductor<'_, E> {
    /// Says that a measurement was taken (or failed): the record, then the
    /// progress line.
    fn record(&mut self, m: Measurement) {
        self.done += 1;
        let label = self
            .plan
            .points
            .get(m.point as usize)
            .map_or_else(String::new, PointConfig::label);
        let finished = RunEvent::PointFinished {
            point: m.point,
            label,
            repetition: m.repetition,
            rate: m
                .result
                .as_ref()
                .map(|r| r.rate)
                .or(m.stream.as_ref().map(|s| s.received_per_second)),
            failure: m.failure.as_ref().map(|f| f.reason.clone()),
        };
        self.voice.emit(RunEvent::Measured(Box::new(m)));
        self.voice.emit(finished);
    }

    fn fail(&mut self, point: u32, repetition: u32, error: &RunnerError) {
        let now = now_rfc3339();
        self.record(Measurement {
            server_rss_before_bytes: None,
            stream: None,
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
            server_cpu_timeline: vec![],
            search: None,
            warmup: None,
            link: None,
            started_at: now.clone(),
            finished_at: now,
        });
    }
}

/// One group for one repetition: its server started (or its target
/// noted), each point measured when its server is alive and its protocol
/// verified, then the server stopped.
async fn run_group<E: Engine>(
    c: &mut Conductor<'_, E>,
    method: &Method,
    group: &ServerGroup,
    repetition: u32,
    points: &[u32],
) {
    let started = match c.plan.target(&group.server) {
        Some(t) => {
            // Said once per run, with the run's warnings (and in the report).
            c.voice.warn(t.note());
            Ok(Serving::target(t.pid))
        }
        None => Serving::start(c, group, repetition, points).await,
    };
    let mut serving = match started {
        Ok(s) => s,
        Err(e) => {
            c.voice.emit(RunEvent::ServerFailed {
                server: group.server.clone(),
                reason: e.to_string(),
            });
            for &p in points {
                c.fail(p, repetition, &e);
            }
            return;
        }
    };
    for (i, &p) in points.iter().enumerate() {
        if c.cancel.is_cancelled() {
            break;
        }
        let point = c.plan.points[p as usize].clone();
        if let Err(e) = serving.ready_for(c, group, repetition, points).await {
            let restart_failed = matches!(e, RunnerError::ServerStart { .. });
            c.fail(p, repetition, &e);
            if restart_failed {
                // No server for the rest of the group either.
                for &q in &points[i + 1..] {
                    c.fail(q, repetition, &e);
                }
                return;
            }
            continue;
        }
        if let Some(e) = serving.failed.get(&point.protocol) {
            let e = serving::clone_failure(e);
            c.fail(p, repetition, &e);
            continue;
        }
        measure_and_record(c, method, group, &point, repetition, &mut serving).await;
    }
    serving.stop(c, group);
}

/// Measures one point on a running server and records the measurement (or
/// its failure). A measurement cut short by Ctrl-C is not kept.
async fn measure_and_record<E: Engine>(
    c: &mut Conductor<'_, E>,
    method: &Method,
    group: &ServerGroup,
    point: &PointConfig,
    repetition: u32,
    serving: &mut Serving,
) {
    let p = point.index;
    c.voice.emit(RunEvent::PointStarted {
        point: p,
        repetition,
        label: point.label(),
        done: c.done,
        todo: c.todo,
    });
    let started_at = now_rfc3339();
    let target = serving.targets.get(&point.protocol).cloned().unwrap_or_default();
    let proxy_cpu_before = c.link.as_ref().and_then(|l| l.link.toxiproxy_cpu_ns());
    let site = Site {
        point,
        target: &target,
        server: serving.server.as_ref(),
        sampled: serving.sampled.as_ref().map(|(pid, s)| (*pid, s)),
        // The stack's own minimum warm-up (a JIT's) counts as much as the preset's.
        stack_warmup_min_s: c.catalog.servers.get(&point.server).map_or(0, |m| m.warmup_min_s),
    };
    let measurer = Measurer {
        engine: c.engine,
        plan: c.plan,
        method,
        cancel: &c.cancel,
        events: c.voice.sender(),
    };
    if *method == Method::Stream {
        let measured = measurer.stream_point(&site).await;
        record_stream(c, group, point, repetition, serving, measured, started_at);
        return;
    }
    let measured = measurer.point(&site).await;
    if c.cancel.is_cancelled() {
        return;
    }
    let proxy_cpu_ns = proxy_cpu_before
        .zip(c.link.as_ref().and_then(|l| l.link.toxiproxy_cpu_ns()))
        .map(|(a, b)| b.saturating_sub(a));
    let Some(m) = measured_or_failed(c, group, point, repetition, serving, measured) else {
        return;
    };
    if m.result.generator.generator_bound {
        let why = m.result.generator.reason.clone().unwrap_or_default();
        c.voice.warn(format!(
            "generator-bound: {} {} {} {} ({why}); the rate measures the load generator, not the server",
            point.server,
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
        c.voice
            .warn(format!("server `{}` hit its memory limit {hits} times", group.server));
    }
    let link = c.link.as_ref().map(|l| l.point_link(&m.result, proxy_cpu_ns));
    c.record(Measurement {
        server_rss_before_bytes: None,
        stream: None,
        point: p,
        repetition,
        status: MeasurementStatus::Ok,
        failure: None,
        result: Some(m.result),
        server_cost: m.cost,
        server_rss_timeline: m.rss,
        server_cpu_timeline: m.cpu,
        search: m.search,
        warmup: m.warmup,
        link,
        started_at,
        finished_at: now_rfc3339(),
    });
}

/// The measurement, or `None` after recording the point failed: the
/// engine's error, or the server's exit during the measurement (which
/// explains the error, when there is one).
fn measured_or_failed<E: Engine, T>(
    c: &mut Conductor<'_, E>,
    group: &ServerGroup,
    point: &PointConfig,
    repetition: u32,
    serving: &mut Serving,
    measured: Result<T, MeasureError>,
) -> Option<T> {
    let mut exited = |context| {
        let server = serving.server.as_mut()?;
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
            c.fail(point.index, repetition, &e);
            return None;
        }
        Ok(m) => m,
    };
    if let Some(e) = exited(ExitContext::DuringMeasurement) {
        c.fail(point.index, repetition, &e);
        return None;
    }
    Some(m)
}

/// Records a streaming point's measurement (or its failure). A run cut
/// short by Ctrl-C is not kept.
fn record_stream<E: Engine>(
    c: &mut Conductor<'_, E>,
    group: &ServerGroup,
    point: &PointConfig,
    repetition: u32,
    serving: &mut Serving,
    measured: Result<measure::StreamMeasured, MeasureError>,
    started_at: String,
) {
    if c.cancel.is_cancelled() {
        return;
    }
    let Some(m) = measured_or_failed(c, group, point, repetition, serving, measured) else {
        return;
    };
    if m.result.generator_bound {
        c.voice.warn(format!(
            "generator-bound: {} {} {} {}; the message rate measures the load generator, not the server",
            point.server,
            point.protocol,
            point.workload,
            point.variant_label()
        ));
    }
    c.record(Measurement {
        point: point.index,
        repetition,
        status: MeasurementStatus::Ok,
        failure: None,
        result: None,
        stream: Some(m.result),
        server_rss_before_bytes: m.rss_before,
        server_cost: m.cost,
        server_rss_timeline: m.rss,
        server_cpu_timeline: m.cpu,
        search: None,
        warmup: None,
        link: None,
        started_at,
        finished_at: now_rfc3339(),
    });
}
