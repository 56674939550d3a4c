//! The matrix: servers x server variants (TLS, failure rate, service time,
//! CPU and memory limits) make the server groups, one process each; each
//! group's protocols x workloads x concurrency x connections x rates make
//! its points.

use std::ops::Range;

use protobench_model::load::{ConnectionPolicy, Protocol};
use protobench_model::run::{PointConfig, PointKind};

use super::Context;
use super::check::Checker;
use super::load_spec::LoadSpec;
use super::machine::Machine;
use super::stream::StreamSpec;
use super::top::TopLevel;
use crate::manifest::Manifest;
use crate::plan::{ServerGroup, TARGET_WORKLOAD, Target};

/// Everything the matrix is made of.
pub(super) struct Dimensions<'a> {
    pub(super) top: &'a TopLevel,
    pub(super) load: &'a LoadSpec,
    /// `[stream]` of a `stream` preset.
    pub(super) stream: Option<&'a StreamSpec>,
    pub(super) machine: &'a Machine,
    /// The first concurrency of a search (discover or ramp), when the kind is one.
    pub(super) search_start: Option<u32>,
    /// Where `protocols` is written, for the issue when a server serves none.
    pub(super) protocols_span: Option<Range<usize>>,
    /// The `network` list, checked: `None` stands for the loopback-only
    /// default (points and groups then carry no network).
    pub(super) networks: Vec<Option<crate::network::Network>>,
}

/// The settings of one server process besides the server itself.
struct Variant {
    tls: bool,
    failure_rate: f64,
    service_time: Option<String>,
    cpu_limit: Option<f64>,
    memory_limit: Option<u64>,
}

/// The points and server groups, in plan order, network outermost (so the
/// groups of one link are contiguous). Protocols a server does not serve are
/// skipped with a note; a server that serves none is an issue (once).
pub(super) fn expand(
    d: &Dimensions<'_>,
    targets: &[Target],
    ctx: &Context,
    c: &mut Checker<'_>,
    notes: &mut Vec<String>,
) -> (Vec<PointConfig>, Vec<ServerGroup>) {
    let mut points = Vec::new();
    let mut groups: Vec<ServerGroup> = Vec::new();
    let variants = variants(d);
    let served: Vec<(&String, Vec<Protocol>)> = d
        .top
        .servers
        .iter()
        .filter_map(|s| Some((s, served(d, s, ctx.catalog.servers.get(s)?, c, notes))))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    let loopback_only = [None];
    let networks = if d.networks.is_empty() {
        &loopback_only[..]
    } else {
        &d.networks[..]
    };
    for (network, (s, served)) in networks.iter().flat_map(|n| served.iter().map(move |s| (n, s))) {
        for v in &variants {
            let mut group = ServerGroup {
                index: groups.len() as u32,
                server: s.to_string(),
                tls: v.tls,
                failure_rate: v.failure_rate,
                failure_seed: d.machine.failure_seed,
                service_time: v.service_time.clone(),
                cpu_limit: v.cpu_limit,
                memory_limit_bytes: v.memory_limit,
                workers: d.machine.workers,
                protocols: served.clone(),
                points: vec![],
                network: network.clone(),
            };
            match d.stream {
                Some(spec) => {
                    let streaming = ctx
                        .catalog
                        .servers
                        .get(s.as_str())
                        .map_or(&[][..], |m| &m.streaming[..]);
                    add_stream_points(d, spec, streaming, &mut group, &mut points, notes);
                }
                None => add_points(d, &d.top.workloads, &mut group, &mut points, notes),
            }
            groups.push(group);
        }
    }
    // Targets after the servers: one group each (nothing to start, so no
    // server variants), its one call as the workload.
    let workloads = [TARGET_WORKLOAD.to_string()];
    for t in targets {
        let mut group = ServerGroup {
            index: groups.len() as u32,
            server: t.name.clone(),
            tls: t.uses_tls(),
            failure_rate: 0.0,
            failure_seed: d.machine.failure_seed,
            service_time: None,
            cpu_limit: None,
            memory_limit_bytes: None,
            workers: None,
            protocols: vec![t.protocol],
            points: vec![],
            network: None,
        };
        add_points(d, &workloads, &mut group, &mut points, &mut Vec::new());
        groups.push(group);
    }
    (points, groups)
}

/// Every server variant, TLS outermost and memory limit innermost.
fn variants(d: &Dimensions<'_>) -> Vec<Variant> {
    let m = d.machine;
    let mut out = Vec::new();
    for &tls in &d.top.tls {
        for &failure_rate in &m.failure_rates {
            for service_time in &m.service_times {
                for &cpu_limit in &m.cpu_limits {
                    for &memory_limit in &m.memory_limits {
                        out.push(Variant {
                            tls,
                            failure_rate,
                            service_time: service_time.clone(),
                            cpu_limit,
                            memory_limit,
                        });
                    }
                }
            }
        }
    }
    out
}

/// The preset's protocols that server `s` serves.
fn served(
    d: &Dimensions<'_>,
    s: &str,
    manifest: &Manifest,
    c: &mut Checker<'_>,
    notes: &mut Vec<String>,
) -> Vec<Protocol> {
    let protocols = &d.top.protocols;
    let serves = protobench_contract::protocol::names(&manifest.protocols, ", ");
    for p in protocols.iter().filter(|p| !manifest.protocols.contains(p)) {
        notes.push(format!("server `{s}` does not serve `{p}` (serves: {serves}): skipped"));
    }
    let served: Vec<Protocol> = protocols
        .iter()
        .copied()
        .filter(|p| manifest.protocols.contains(p))
        .collect();
    if served.is_empty()
        && let Some(span) = &d.protocols_span
        && !protocols.is_empty()
    {
        c.issue(
            span.clone(),
            "protocols",
            format!("server `{s}` serves none of these (serves: {serves})"),
        );
    }
    served
}

/// The connection policies of `protocol`'s points: one connection per
/// caller by default; HTTP/1.1 carries one call per connection at a time, so
/// a shared count becomes one per caller (`http1_connections` says so).
fn policies(protocol: Protocol, written: &[ConnectionPolicy]) -> Vec<ConnectionPolicy> {
    let mut out: Vec<ConnectionPolicy> = Vec::new();
    let written = if written.is_empty() {
        &[ConnectionPolicy::PerCaller][..]
    } else {
        written
    };
    for &p in written {
        let p = match p {
            ConnectionPolicy::Shared(_) if protocol.is_http1() => ConnectionPolicy::PerCaller,
            p => p,
        };
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// Adds the group's points: its protocols x workloads x concurrency x
/// connections x rates. `graphql-get` carries queries only: a mutation
/// workload is skipped on it with a note (once per preset).
fn add_points(
    d: &Dimensions<'_>,
    workloads: &[String],
    group: &mut ServerGroup,
    points: &mut Vec<PointConfig>,
    notes: &mut Vec<String>,
) {
    let load = d.load;
    for protocol in group.protocols.clone() {
        for workload in workloads {
            if protocol == Protocol::GraphqlGet && is_mutation(workload) {
                let note =
                    format!("`{workload}` is a GraphQL mutation, which `graphql-get` (GET) cannot carry: skipped");
                if !notes.contains(&note) {
                    notes.push(note);
                }
                continue;
            }
            for &conc in &load.concurrency {
                let conns = policies(protocol, &load.connections);
                for &policy in &conns {
                    let callers = d.search_start.unwrap_or(conc);
                    for &rate in &load.rates {
                        let index = points.len() as u32;
                        points.push(PointConfig {
                            stream: None,
                            index,
                            server: group.server.clone(),
                            protocol,
                            workload: workload.clone(),
                            tls: group.tls,
                            kind: d.top.kind,
                            concurrency: callers,
                            connections: policy.for_callers(callers).0,
                            connection_policy: Some(policy),
                            rate,
                            failure_rate: group.failure_rate,
                            service_time: group.service_time.clone(),
                            cpu_limit: group.cpu_limit,
                            memory_limit_bytes: group.memory_limit_bytes,
                            network: group.network.as_ref().map(ToString::to_string),
                        });
                        group.points.push(index);
                    }
                }
            }
        }
    }
}

/// Whether a contract workload is a GraphQL mutation (a REST `POST`).
fn is_mutation(workload: &str) -> bool {
    protobench_contract::workload::find(workload)
        .is_some_and(|w| protobench_contract::graphql::root(w.operation).mutation)
}

/// A `stream` preset's points: each workload over every transport that
/// carries it and the server serves (its manifest's `streaming`), on the
/// transport's listener, x WebSocket frames x rates x streams at once. A
/// workload no served transport carries is skipped with a note.
fn add_stream_points(
    d: &Dimensions<'_>,
    spec: &StreamSpec,
    streaming: &[protobench_contract::stream::StreamTransport],
    group: &mut ServerGroup,
    points: &mut Vec<PointConfig>,
    notes: &mut Vec<String>,
) {
    for workload in &d.top.workloads {
        let ways: Vec<_> = spec
            .points_for(workload, streaming)
            .into_iter()
            .filter(|s| group.protocols.contains(&super::stream::listener(s.transport)))
            .collect();
        if ways.is_empty() {
            notes.push(format!(
                "server `{}` serves no transport of [stream] that carries `{workload}`: skipped",
                group.server
            ));
        }
        for way in ways {
            for &streams in &d.load.concurrency {
                let index = points.len() as u32;
                points.push(PointConfig {
                    index,
                    server: group.server.clone(),
                    protocol: super::stream::listener(way.transport),
                    workload: workload.clone(),
                    tls: group.tls,
                    kind: PointKind::Stream,
                    concurrency: streams,
                    connections: streams,
                    connection_policy: Some(ConnectionPolicy::PerCaller),
                    rate: None,
                    failure_rate: group.failure_rate,
                    service_time: group.service_time.clone(),
                    cpu_limit: group.cpu_limit,
                    memory_limit_bytes: group.memory_limit_bytes,
                    network: group.network.as_ref().map(ToString::to_string),
                    stream: Some(way),
                });
                group.points.push(index);
            }
        }
    }
}
