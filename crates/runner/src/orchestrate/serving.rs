//! The server lifecycle of one group for one repetition: start (from its
//! manifest, pinned, in its cgroup, in the link's namespace), expose (behind
//! the link's proxies), verify (every protocol on the workloads its points
//! use), restart once if it dies between points, and stop. A `[[targets]]`
//! service takes a server's place: nothing is started or verified.

use std::collections::BTreeMap;

use protobench_model::format::error_chain;
use protobench_model::load::Protocol;
use protobench_model::run::PointConfig;
use protobench_model::stream::StreamPoint;

use super::Conductor;
use super::events::RunEvent;
use crate::engine::Engine;
use crate::error::{ExitContext, RunnerError};
use crate::isolation::{Cgroup, Limits};
use crate::plan::ServerGroup;
use crate::procfs::Sampler;
use crate::server::{RunningServer, StartSpec};

/// Verification attempts per workload when failures are injected.
pub const VERIFY_ATTEMPTS: usize = 10;

/// A started and verified server with its sampler, restarted at most once
/// per group when it dies between points; or a target (not started, not
/// verified, sampled only when it names a PID).
pub(super) struct Serving {
    /// `None` for a target.
    pub(super) server: Option<RunningServer>,
    /// Where the engine reaches each protocol: the listener itself, or the
    /// link's proxy in front of it (a target's points use its own address).
    pub(super) targets: BTreeMap<Protocol, String>,
    /// The process whose CPU and memory are sampled, and its sampler.
    pub(super) sampled: Option<(u32, Sampler)>,
    /// Protocols that failed verification.
    pub(super) failed: BTreeMap<Protocol, RunnerError>,
    restarted: bool,
}

impl Serving {
    /// Starts the group's server, exposes it and verifies it.
    pub(super) async fn start<E: Engine>(
        c: &mut Conductor<'_, E>,
        group: &ServerGroup,
        repetition: u32,
        points: &[u32],
    ) -> Result<Serving, RunnerError> {
        // Starting waits for a child's output; keep it off the async
        // workers' hot path by doing it in place (the engine is idle meanwhile).
        let server = tokio::task::block_in_place(|| start_server(c, group, repetition))?;
        let targets = match &mut c.link {
            None => server.listeners.clone(),
            Some(link) => {
                let exposed = tokio::task::block_in_place(|| link.expose_all(&server.listeners));
                match exposed {
                    Ok(t) => t,
                    Err(e) => {
                        let mut server = server;
                        let grace = c.opts.stop_grace;
                        tokio::task::block_in_place(|| server.stop(grace));
                        return Err(e);
                    }
                }
            }
        };
        let failed = verify(c, &server, &targets, group, points).await;
        let sampled = Some((server.pid(), Sampler::start(server.pid())));
        c.voice.emit(RunEvent::ServerReady {
            server: group.server.clone(),
            pid: server.pid(),
        });
        Ok(Serving {
            server: Some(server),
            targets,
            sampled,
            failed,
            restarted: false,
        })
    }

    /// A target: nothing to start or verify; its PID, if given, is sampled.
    pub(super) fn target(pid: Option<u32>) -> Serving {
        Serving {
            server: None,
            targets: BTreeMap::new(),
            sampled: pid.map(|pid| (pid, Sampler::start(pid))),
            failed: BTreeMap::new(),
            restarted: false,
        }
    }

    /// Makes sure the server is alive before a point: restarts it once if
    /// it died, and says why the point cannot be measured otherwise.
    pub(super) async fn ready_for<E: Engine>(
        &mut self,
        c: &mut Conductor<'_, E>,
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
        c.voice
            .warn(format!("server `{}` exited ({status}); restarted", group.server));
        let mut fresh = Serving::start(c, group, repetition, points).await?;
        fresh.restarted = true;
        *self = fresh;
        Ok(())
    }

    /// Stops the server (SIGTERM, then SIGKILL after the grace), saying so
    /// when it had to be killed.
    pub(super) fn stop<E: Engine>(self, c: &mut Conductor<'_, E>, group: &ServerGroup) {
        let Serving { server, sampled, .. } = self;
        drop(sampled);
        let Some(mut server) = server else {
            return;
        };
        let grace = c.opts.stop_grace;
        let stopped = tokio::task::block_in_place(|| server.stop(grace));
        if stopped.killed {
            c.voice.warn(format!(
                "server `{}` did not stop within {} s of SIGTERM and was killed",
                group.server,
                grace.as_secs()
            ));
        }
    }
}

/// Starts the group's server from its manifest: toolchain and binary
/// checked first, its cgroup, the link's address and namespace.
fn start_server<E: Engine>(
    c: &mut Conductor<'_, E>,
    group: &ServerGroup,
    repetition: u32,
) -> Result<RunningServer, RunnerError> {
    c.voice.emit(RunEvent::ServerStarting {
        server: group.server.clone(),
        repetition,
    });
    let refuse = |reason: String| RunnerError::ServerStart {
        server: group.server.clone(),
        reason,
        log_tail: None,
    };
    let manifest = c
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
    let cgroup = cgroup_for(c, group, repetition);
    let mut extra_env: Vec<(String, String)> = manifest.env.clone().into_iter().collect();
    extra_env.extend(c.opts.extra_env.iter().cloned());
    // Behind a link: listen on the server host's address, not loopback;
    // for agents on other hosts, on the address they reach.
    let bind = match (&c.link, c.opts.server_host) {
        (Some(link), _) => Some(link.link.bind_addr()),
        (None, Some(ip)) => Some(std::net::SocketAddr::new(ip, 0)),
        (None, None) => None,
    };
    if let Some(bind) = bind.map(|b| b.to_string()) {
        extra_env.extend(group.protocols.iter().map(|p| (p.addr_env().to_string(), bind.clone())));
    }
    let netns = c.link.as_ref().map(|l| l.link.host().namespace().to_string());
    let spec = StartSpec {
        manifest,
        group: group.clone(),
        exe: c.opts.exe.clone(),
        dataset: c.opts.dataset.clone(),
        tls: if group.tls { c.tls.clone() } else { None },
        cpus: c.plan.server_cpus.clone(),
        extra_env,
    };
    RunningServer::start_in_namespace(&spec, cgroup, c.opts.guard.as_deref(), netns.as_deref()).map_err(|e| {
        RunnerError::ServerStart {
            server: group.server.clone(),
            reason: error_chain(&e),
            log_tail: e.log_tail(),
        }
    })
}

/// The cgroup applying the group's limits, if it has any and they can be
/// applied (a warning says so when they cannot).
fn cgroup_for<E: Engine>(c: &mut Conductor<'_, E>, group: &ServerGroup, repetition: u32) -> Option<Cgroup> {
    let limits = Limits {
        cpu_limit: group.cpu_limit,
        memory_limit_bytes: group.memory_limit_bytes,
    };
    if limits == Limits::default() {
        return None;
    }
    let name = format!("protobench-{}-g{}-r{}", std::process::id(), group.index, repetition);
    match Cgroup::create(&c.cgroups, &name, &limits) {
        Ok(cg) => Some(cg),
        Err(e) => {
            c.voice.warn(format!(
                "limits of server `{}` not applied ({}); measured without them",
                group.server,
                error_chain(&e)
            ));
            None
        }
    }
}

/// Verifies each protocol of the group on the workloads its points use.
/// Returns the protocols that failed, with why.
async fn verify<E: Engine>(
    c: &mut Conductor<'_, E>,
    server: &RunningServer,
    targets: &BTreeMap<Protocol, String>,
    group: &ServerGroup,
    points: &[u32],
) -> BTreeMap<Protocol, RunnerError> {
    let mut failed = BTreeMap::new();
    for &protocol in &group.protocols {
        let of_protocol: Vec<&PointConfig> = points
            .iter()
            .map(|p| &c.plan.points[*p as usize])
            .filter(|p| p.protocol == protocol)
            .collect();
        let mut workloads: Vec<String> = of_protocol
            .iter()
            .filter(|p| p.stream.is_none())
            .map(|p| p.workload.clone())
            .collect();
        workloads.dedup();
        // A streaming point is checked over its own transport and frames.
        let mut streams: Vec<(String, StreamPoint)> = Vec::new();
        for p in &of_protocol {
            if let Some(s) = p.stream {
                let check = (
                    p.workload.clone(),
                    StreamPoint {
                        rate: None,
                        messages: None,
                        ..s
                    },
                );
                if !streams.contains(&check) {
                    streams.push(check);
                }
            }
        }
        if workloads.is_empty() && streams.is_empty() {
            continue;
        }
        let target = targets.get(&protocol).cloned().unwrap_or_default();
        let verified = if streams.is_empty() {
            verify_protocol(c.engine, group, protocol, &target, &workloads).await
        } else {
            match c.engine.verify_streams(protocol, &target, group.tls, &streams).await {
                Ok(()) if !workloads.is_empty() => {
                    verify_protocol(c.engine, group, protocol, &target, &workloads).await
                }
                other => other,
            }
        };
        if let Err(difference) = verified {
            let e = RunnerError::Verification {
                server: group.server.clone(),
                protocol,
                difference,
                log_tail: server.log_tail(),
            };
            c.voice.emit(RunEvent::ServerFailed {
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

/// A verification failure, once per point it fails.
pub(super) fn clone_failure(e: &RunnerError) -> RunnerError {
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
