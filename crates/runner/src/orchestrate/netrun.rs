//! Networks in a run (docs/network.md): which networks the plan's groups
//! sit behind, checking them all before any point, and the one link of the
//! network being measured: created, measured and stored before its points,
//! the servers' listeners exposed through it, and removed after them (or on
//! drop, whatever way the run ends).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

use protobench_model::format::error_chain;
use protobench_model::load::{LoadResult, Protocol};
use protobench_model::network::{PointLink, RunLink};
use protobench_model::time::now_rfc3339;

use super::{Conductor, RunEvent};
use crate::engine::Engine;
use crate::error::RunnerError;
use crate::network::{
    self, AchievedLink, EmulatedLink, LinkReport, MeasureOptions, Mechanism, Mechanisms, Network, NetworkError,
    ShapePlan,
};
use crate::plan::Plan;

/// The link the servers of the current network sit behind.
#[derive(Debug)]
pub(super) struct ActiveLink {
    /// The network as points carry it.
    pub(super) network: String,
    /// The server host and its shaping (removed on drop).
    pub(super) link: EmulatedLink,
    /// What it achieved before the points ran.
    pub(super) achieved: AchievedLink,
}

impl ActiveLink {
    /// The addresses the engine uses for a server's `listeners`: a proxy in
    /// front of each where toxiproxy shapes delay, else the listeners. A
    /// previous server's proxies of the same protocols are replaced.
    pub(super) fn expose_all(
        &mut self,
        listeners: &BTreeMap<Protocol, String>,
    ) -> Result<BTreeMap<Protocol, String>, RunnerError> {
        let fail = |e: &dyn std::error::Error| RunnerError::Network {
            network: self.network.clone(),
            reason: error_chain(e),
        };
        let mut out = BTreeMap::new();
        for (protocol, addr) in listeners {
            let name = protocol.name();
            self.link.unexpose(name).map_err(|e| fail(&e))?;
            let addr: SocketAddr = addr.parse().map_err(|e| fail(&e))?;
            let target = self.link.expose(name, addr).map_err(|e| fail(&e))?;
            out.insert(*protocol, target.to_string());
        }
        Ok(out)
    }

    /// A measurement's share of the link ([`network::link_bound`]): every
    /// call's bytes count (failed calls cross the link too).
    pub(super) fn point_link(&self, r: &LoadResult, toxiproxy_cpu_ns: Option<u64>) -> PointLink {
        let calls_per_second = if r.duration_ns > 0 {
            r.calls as f64 / (r.duration_ns as f64 / 1e9)
        } else {
            r.rate
        };
        let b = network::link_bound(
            calls_per_second,
            r.bytes_sent_per_call,
            r.bytes_received_per_call,
            &self.achieved,
        );
        PointLink {
            network: self.network.clone(),
            bytes_sent_per_call: r.bytes_sent_per_call,
            bytes_received_per_call: r.bytes_received_per_call,
            up_capacity_bps: self.achieved.up.goodput_bps,
            down_capacity_bps: self.achieved.down.goodput_bps,
            up_share: b.up_share,
            down_share: b.down_share,
            bound: b.any(),
            toxiproxy_cpu_ns,
        }
    }
}

/// The networks with something to measure, each once, in plan order
/// (`None`: loopback, the default).
pub(super) fn networks_to_run(plan: &Plan, todo: &BTreeSet<(u32, u32)>) -> Vec<Option<Network>> {
    let mut out: Vec<Option<Network>> = Vec::new();
    for g in &plan.groups {
        if g.points.iter().any(|p| todo.iter().any(|(q, _)| q == p)) && !out.contains(&g.network) {
            out.push(g.network.clone());
        }
    }
    out
}

/// Checks every network against this machine before any point runs
/// ([`network::check`]): per network, its shaping plan (`None` for
/// loopback) or why it cannot be applied.
pub(super) fn check(networks: &[Option<Network>]) -> Vec<Result<Option<ShapePlan>, RunnerError>> {
    let all: Vec<Network> = networks
        .iter()
        .map(|n| n.clone().unwrap_or(Network::Loopback))
        .collect();
    match network::check(&all) {
        Ok(plans) => plans.into_iter().map(Ok).collect(),
        Err(e) => {
            let reason = error_chain(&e);
            all.iter()
                .map(|n| match n {
                    Network::Loopback => Ok(None),
                    Network::Emulated(_) => Err(RunnerError::Network {
                        network: n.to_string(),
                        reason: reason.clone(),
                    }),
                })
                .collect()
        }
    }
}

/// Checks every network of `plan` against this machine, as [`check`] does
/// when the run starts: the reasons, one per network that cannot be
/// applied (empty when all can). Call it before creating the run, so an
/// impossible profile fails before anything runs.
pub fn check_plan(plan: &Plan) -> Vec<String> {
    let all: BTreeSet<(u32, u32)> = plan.points.iter().map(|p| (p.index, 1)).collect();
    check(&networks_to_run(plan, &all))
        .into_iter()
        .filter_map(|r| r.err().map(|e| e.to_string()))
        .collect()
}

/// Creates and measures the link of `network` (nothing for loopback),
/// and says what it achieved (its report, which the session stores).
pub(super) fn open<E: Engine>(
    c: &mut Conductor<'_, E>,
    network: Option<&Network>,
    shape: Result<Option<ShapePlan>, RunnerError>,
) -> Result<Option<ActiveLink>, RunnerError> {
    let Some(shape) = shape? else {
        return Ok(None);
    };
    let name = network.map_or_else(|| "loopback".to_string(), ToString::to_string);
    let made = tokio::task::block_in_place(|| -> Result<(EmulatedLink, AchievedLink), NetworkError> {
        let mut link = EmulatedLink::create(&shape)?;
        let achieved = link.measure(&MeasureOptions::default())?;
        Ok((link, achieved))
    });
    let (link, achieved) = made.map_err(|e| RunnerError::Network {
        network: name.clone(),
        reason: error_chain(&e),
    })?;
    let report = link.report(achieved.clone());
    // Stored with the run by the session, shown by the binary.
    c.voice.emit(RunEvent::Link(Box::new(run_link(&name, &report))));
    for w in &report.warnings {
        c.voice.warn(format!(
            "{name}: the achieved link is far from its profile: {w}; its points measure the link that was achieved"
        ));
    }
    Ok(Some(ActiveLink {
        network: name,
        link,
        achieved,
    }))
}

/// Removes the current link, if any (a failure to remove is a warning: the
/// next run's `cleanup_leftovers` finds what is left).
pub(super) fn close<E: Engine>(c: &mut Conductor<'_, E>) {
    if let Some(active) = c.link.take() {
        let name = active.network.clone();
        if let Err(e) = tokio::task::block_in_place(|| active.link.remove()) {
            c.voice
                .warn(format!("link `{name}` was not removed cleanly: {}", error_chain(&e)));
        }
    }
}

/// The mechanisms as one line: `rate tc-tbf, delay toxiproxy`.
pub fn mechanisms_text(m: &Mechanisms) -> String {
    let name = |m: Mechanism| serde_json::to_value(m).ok().and_then(|v| v.as_str().map(str::to_owned));
    let parts: Vec<String> = [
        ("rate", m.rate),
        ("delay", m.delay),
        ("jitter", m.jitter),
        ("loss", m.loss),
    ]
    .into_iter()
    .filter(|(_, m)| *m != Mechanism::None)
    .filter_map(|(what, m)| Some(format!("{what} {}", name(m)?)))
    .collect();
    if parts.is_empty() {
        "not shaped".into()
    } else {
        parts.join(", ")
    }
}

/// The record of a link stored with the run.
pub fn run_link(network: &str, report: &LinkReport) -> RunLink {
    RunLink {
        network: network.to_string(),
        measured_at: now_rfc3339(),
        mechanisms: mechanisms_text(&report.mechanisms),
        up_rate_bps: report.profile.up.rate_bps,
        down_rate_bps: report.profile.down.rate_bps,
        profile_rtt_ns: report.profile.rtt_ns(),
        rtt_ns: report.achieved.rtt_ns,
        up_goodput_bps: report.achieved.up.goodput_bps,
        down_goodput_bps: report.achieved.down.goodput_bps,
        toxiproxy_cpu_ns: report.achieved.toxiproxy_cpu_ns,
        notes: report.notes.clone(),
        warnings: report.warnings.clone(),
        report: serde_json::to_value(report).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mechanisms_read_as_one_line() {
        use Mechanism::*;
        let m = Mechanisms {
            rate: TcTbf,
            delay: Toxiproxy,
            jitter: None,
            loss: Nftables,
        };
        assert_eq!(mechanisms_text(&m), "rate tc-tbf, delay toxiproxy, loss nftables");
        let none = Mechanisms {
            rate: None,
            delay: None,
            jitter: None,
            loss: None,
        };
        assert_eq!(mechanisms_text(&none), "not shaped");
    }

    #[test]
    fn loopback_needs_nothing_and_a_bad_network_cannot_reach_the_run() {
        // A network is parsed once, by the preset check: its text cannot
        // reach the run unparsed.
        let checked = check(&[None, Some(Network::Loopback)]);
        assert!(matches!(checked[..], [Ok(None), Ok(None)]), "{checked:?}");
        let e = "rate=fast".parse::<Network>().unwrap_err();
        assert!(e.contains("is not a rate"), "{e}");
    }
}
