//! `agents`: the generator hosts the run's load comes from
//! (docs/distributed.md), each `host:port`, checked here so a wrong one is a
//! file:line:key error like every other (`--agents` replaces the list and
//! is checked by the same rules, named by its flag). The token is never in
//! a preset: it comes from `--agent-token-file` or the environment.

use super::check::Checker;
use super::raw::RawPreset;

/// The checked agents (empty: the run generates its load itself).
pub(super) fn agents(raw: &RawPreset, c: &mut Checker<'_>) -> Vec<String> {
    let Some(list) = &raw.agents else {
        return vec![];
    };
    if list.get_ref().is_empty() {
        c.issue(
            list.span(),
            "agents",
            "is empty (expected host:port of `protobench agent`s, e.g. [\"10.0.0.2:7070\", \"10.0.0.3:7070\"]; leave the key out to generate the load here)",
        );
        return vec![];
    }
    let mut out: Vec<String> = Vec::new();
    for (i, item) in list.get_ref().iter().enumerate() {
        let key = format!("agents[{i}]");
        let addr = item.get_ref();
        match crate::agents::check_address(addr) {
            Err(e) => c.issue(item.span(), &key, e),
            Ok(()) if out.contains(addr) => c.issue(item.span(), &key, format!("`{addr}` is listed twice")),
            Ok(()) => out.push(addr.clone()),
        }
    }
    out
}

/// Agents and an emulated network (`network = [...]` other than loopback)
/// do not combine: the runner's links join namespaces of this host (the
/// generator's and the server's), while agents are other hosts whose path
/// to the server no link of this host shapes. Refused at `agents` (or
/// `--agents`), naming the network.
pub(super) fn refuse_with_networks(
    raw: &RawPreset,
    agents: &[String],
    points: &[protobench_model::run::PointConfig],
    c: &mut Checker<'_>,
) {
    let (Some(list), Some(network)) = (&raw.agents, points.iter().find_map(|p| p.network.as_deref())) else {
        return;
    };
    if agents.is_empty() {
        return;
    }
    c.issue(
        list.span(),
        "agents",
        format!(
            "agents cannot run with an emulated network (`network` lists `{network}`): a link joins this host's namespaces, and the agents are other hosts whose path to the server it does not shape; drop one of `agents` and `network` (docs/distributed.md)"
        ),
    );
}
