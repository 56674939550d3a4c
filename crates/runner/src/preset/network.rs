//! `network`: the links the matrix runs across (docs/network.md), each a
//! profile name or inline settings, checked here so a wrong one is a
//! file:line:key error like every other; whether this machine can apply
//! them is `crate::network::check`, run before any point.

use super::check::Checker;
use super::raw::RawPreset;
use crate::network::Network;

/// The checked networks, parsed here once: empty when the preset has no
/// `network` key or lists only `loopback` (points then carry none, as every
/// run did before networks existed).
pub(super) fn networks(raw: &RawPreset, c: &mut Checker<'_>) -> Vec<Option<Network>> {
    let Some(list) = &raw.network else {
        return vec![];
    };
    if list.get_ref().is_empty() {
        c.issue(
            list.span(),
            "network",
            "is empty (accepted: loopback, lan-1g, wan-100m-40ms, mobile-4g, or settings like rate=100mbit,delay=20ms)",
        );
        return vec![];
    }
    let mut out: Vec<Network> = Vec::new();
    for (i, item) in list.get_ref().iter().enumerate() {
        let key = format!("network[{i}]");
        match item.get_ref().parse::<Network>() {
            Err(e) => c.issue(item.span(), &key, e),
            Ok(n) if out.contains(&n) => c.issue(item.span(), &key, format!("`{n}` is listed twice")),
            Ok(n) => out.push(n),
        }
    }
    if out.iter().all(|n| *n == Network::Loopback) {
        return vec![];
    }
    out.into_iter().map(Some).collect()
}
