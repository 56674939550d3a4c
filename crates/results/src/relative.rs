//! Each protocol relative to a reference protocol on the same workload.
//!
//! Absolute rates on a shared machine drift 30-50% from one minute to the
//! next; what a user compares is how protocols stand against each other,
//! and drift that hits both sides of a ratio cancels when both were
//! measured close together. The runner measures **peers** (points that
//! differ only by protocol, [`PointConfig::peer_key`]) back to back in every
//! repetition, so their per-repetition ratios are paired
//! ([`stats::log_contrast`](protobench_model::stats::log_contrast)): this
//! table shows rate, p50 and p99 of each protocol divided by the
//! reference's, with that paired 95% interval.
//!
//! The reference of a peer set is its first point in plan order: the first
//! protocol the preset lists that the server serves (the quick preset lists
//! `rest` first).

use std::fmt::Write as _;

use serde::Serialize;

use protobench_model::format::TextTable;

use crate::chart::Chart;
use crate::svg::{Bar, BarChart, Scale};
use protobench_model::run::{PointAggregate, PointConfig, PointKind, RunRecord};
use protobench_model::stats::{Pairing, Ratio, Summary, ratio_with};

/// One protocol against the reference protocol of its peer set.
#[derive(Debug, Clone, Serialize)]
pub struct Relative {
    /// `server workload variant` of the peer set.
    pub peers: String,
    /// The protocol compared.
    pub protocol: String,
    /// The reference protocol it is divided by.
    pub reference: String,
    /// Calls per second, protocol / reference (above 1: faster).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<Ratio>,
    /// Median latency, protocol / reference (above 1: slower).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50: Option<Ratio>,
    /// 99th percentile latency, protocol / reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99: Option<Ratio>,
}

impl Relative {
    /// Half the width of the rate ratio's 95% interval as a fraction of the
    /// ratio, the larger side (the interval is not symmetric): `0.08` means
    /// the true ratio lies within about ±8%.
    pub fn rate_precision(&self) -> Option<f64> {
        let r = self.rate.as_ref()?;
        let (lo, hi) = r.interval()?;
        Some((hi / r.ratio - 1.0).max(1.0 - lo / r.ratio))
    }
}

/// The peer sets of `run` with two or more points, each protocol against
/// the set's first, in plan order.
pub fn relative(run: &RunRecord) -> Vec<Relative> {
    relative_of(&run.aggregates())
}

/// [`relative`] over aggregates already computed.
pub fn relative_of(aggregates: &[PointAggregate]) -> Vec<Relative> {
    let mut sets: Vec<(String, Vec<&PointAggregate>)> = Vec::new();
    // Streaming points have no unary rate to compare (crate::streams).
    for a in aggregates.iter().filter(|a| a.config.kind != PointKind::Stream) {
        let key = a.config.peer_key();
        match sets.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(a),
            None => sets.push((key, vec![a])),
        }
    }
    let mut out = Vec::new();
    for (_, members) in sets {
        let Some((reference, others)) = members.split_first() else {
            continue;
        };
        for other in others {
            let ratio = |f: fn(&PointAggregate) -> &Option<Summary>| match (f(reference), f(other)) {
                (Some(a), Some(b)) => ratio_with(a, b, Pairing::SameRepetitions),
                _ => None,
            };
            out.push(Relative {
                peers: peers_label(&other.config),
                protocol: other.config.protocol.to_string(),
                reference: reference.config.protocol.to_string(),
                rate: ratio(|a| &a.rate),
                p50: ratio(|a| &a.p50_ns),
                p99: ratio(|a| &a.p99_ns),
            });
        }
    }
    out
}

/// `server workload variant`, the load label without the connection part
/// (which differs by protocol within a peer set).
fn peers_label(c: &PointConfig) -> String {
    let variant = c.variant_label();
    let load = c.load_label();
    let base = load.split('/').next().unwrap_or(&load).to_string();
    format!("{} {} {}", c.server, c.workload, variant.replacen(&load, &base, 1))
}

/// `1.23x [1.10, 1.38]` (paired intervals marked `p`), or `-`.
pub fn ratio_cell(r: &Option<Ratio>) -> String {
    match r {
        None => "-".into(),
        Some(r) => match r.interval() {
            Some((lo, hi)) => format!(
                "{}x [{}, {}]{}",
                fmt_ratio(r.ratio),
                fmt_ratio(lo),
                fmt_ratio(hi),
                if r.paired { "" } else { " unpaired" }
            ),
            None => format!("{}x (1 repetition)", fmt_ratio(r.ratio)),
        },
    }
}

/// Three significant digits, without a trailing exponent.
fn fmt_ratio(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The column titles of the table.
pub const HEADER: [&str; 6] = ["peers", "protocol", "vs", "rate", "p50", "p99"];

/// The table's rows as cells.
pub fn rows(rel: &[Relative]) -> Vec<[String; 6]> {
    rel.iter()
        .map(|r| {
            [
                r.peers.clone(),
                r.protocol.clone(),
                r.reference.clone(),
                ratio_cell(&r.rate),
                ratio_cell(&r.p50),
                ratio_cell(&r.p99),
            ]
        })
        .collect()
}

/// One line: how many rate ratios are known within ±10% and the median
/// precision.
pub fn precision_line(rel: &[Relative]) -> Option<String> {
    let mut p: Vec<f64> = rel.iter().filter_map(Relative::rate_precision).collect();
    if p.is_empty() {
        return None;
    }
    p.sort_by(f64::total_cmp);
    let within = p.iter().filter(|v| **v <= 0.10).count();
    Some(format!(
        "{within} of {} rate ratios known within ±10% (95% interval); median ±{:.0}%",
        p.len(),
        p[p.len() / 2] * 100.0
    ))
}

/// The rate ratios as bars with their intervals, one group per peer set
/// and one series per `protocol / reference`, on a log axis (a protocol
/// twice as fast and one half as fast sit equally far from 1); `None`
/// without ratios.
pub fn rate_chart(rel: &[Relative]) -> Option<Chart> {
    let mut categories: Vec<String> = Vec::new();
    let mut series: Vec<String> = Vec::new();
    for r in rel.iter().filter(|r| r.rate.is_some()) {
        if !categories.contains(&r.peers) {
            categories.push(r.peers.clone());
        }
        let name = format!("{} / {}", r.protocol, r.reference);
        if !series.contains(&name) {
            series.push(name);
        }
    }
    if categories.is_empty() {
        return None;
    }
    let series = series
        .into_iter()
        .map(|name| {
            let bars = categories
                .iter()
                .map(|c| {
                    let r = rel
                        .iter()
                        .find(|r| &r.peers == c && format!("{} / {}", r.protocol, r.reference) == name)?;
                    let ratio = r.rate.as_ref()?;
                    Some(Bar {
                        value: ratio.ratio,
                        ci: ratio.interval(),
                    })
                })
                .collect();
            (name, bars)
        })
        .collect();
    let chart = BarChart {
        title: "Rate relative to the reference protocol".into(),
        y_label: "calls/s, protocol / reference (1 = same)".into(),
        categories,
        series,
    };
    Some(Chart {
        id: "relative-rate".into(),
        title: chart.title.clone(),
        caption: "Each protocol's calls/s divided by the reference protocol's on the same workload, measured back to back in every repetition; whiskers are the paired 95% intervals; log axis.".into(),
        svg: chart.render_scaled(Scale::Log),
    })
}

/// The section as plain text; empty when no point has a peer.
pub fn text(run: &RunRecord) -> String {
    let rel = relative(run);
    if rel.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nRelative to the reference protocol on the same workload (protocol / reference; 95% interval, paired by repetition)\n",
    );
    let mut table = TextTable::new(HEADER);
    for row in rows(&rel) {
        table.row(row);
    }
    out.push_str(&table.render());
    if let Some(line) = precision_line(&rel) {
        let _ = writeln!(out, "{line}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use protobench_model::load::{ConnectionPolicy, Protocol};
    use protobench_model::stats::DEFAULT_NOISE_THRESHOLD;

    fn config(index: u32, protocol: Protocol, workload: &str) -> PointConfig {
        PointConfig {
            stream: None,
            index,
            server: "rust".into(),
            protocol,
            workload: workload.into(),
            tls: false,
            kind: PointKind::Fixed,
            concurrency: 16,
            connections: 16,
            connection_policy: None,
            rate: None,
            failure_rate: 0.0,
            service_time: None,
            cpu_limit: None,
            memory_limit_bytes: None,
            network: None,
        }
    }

    fn aggregate(config: PointConfig, rates: &[f64]) -> PointAggregate {
        let tagged: Vec<(u32, f64)> = rates.iter().enumerate().map(|(i, v)| (i as u32 + 1, *v)).collect();
        let mut a = PointAggregate::of(&config, &[], DEFAULT_NOISE_THRESHOLD);
        a.rate = Summary::of_repetitions(&tagged);
        a
    }

    #[test]
    fn each_protocol_is_divided_by_the_first_of_its_peers_paired() {
        // rest drifts 100 -> 50 -> 80; grpc runs beside it at exactly half
        // each time: paired, the ratio is 0.5 with no width at all.
        let aggs = vec![
            aggregate(config(0, Protocol::Rest, "inventory.xs"), &[100.0, 50.0, 80.0]),
            aggregate(config(1, Protocol::Rest, "echo.8k"), &[10.0, 10.0, 10.0]),
            aggregate(config(2, Protocol::Grpc, "inventory.xs"), &[50.0, 25.0, 40.0]),
        ];
        let rel = relative_of(&aggs);
        assert_eq!(rel.len(), 1, "echo.8k has no peer: {rel:?}");
        let r = &rel[0];
        assert_eq!((r.protocol.as_str(), r.reference.as_str()), ("grpc", "rest"));
        assert_eq!(r.peers, "rust inventory.xs c=16");
        let rate = r.rate.as_ref().unwrap();
        assert!(rate.paired);
        assert!((rate.ratio - 0.5).abs() < 1e-12, "{rate:?}");
        let (lo, hi) = rate.interval().unwrap();
        assert!((lo - 0.5).abs() < 1e-9 && (hi - 0.5).abs() < 1e-9, "{rate:?}");
        assert!(r.rate_precision().unwrap() < 1e-9);
    }

    #[test]
    fn the_paired_interval_matches_a_hand_computation() {
        // ln(b/a) per repetition: ln 0.5, ln 0.6, ln 0.55.
        let aggs = vec![
            aggregate(config(0, Protocol::Rest, "inventory.xs"), &[100.0, 100.0, 100.0]),
            aggregate(config(1, Protocol::Grpc, "inventory.xs"), &[50.0, 60.0, 55.0]),
        ];
        let rel = relative_of(&aggs);
        let d = [0.5f64.ln(), 0.6f64.ln(), 0.55f64.ln()];
        let mean = d.iter().sum::<f64>() / 3.0;
        let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        let half = 4.302652729911275 * sd / 3f64.sqrt();
        let rate = rel[0].rate.as_ref().unwrap();
        assert!((rate.ratio - mean.exp()).abs() < 1e-9);
        let (lo, hi) = rate.interval().unwrap();
        assert!((lo - (mean - half).exp()).abs() < 1e-4, "{lo}");
        assert!((hi - (mean + half).exp()).abs() < 1e-4, "{hi}");
        let precision = rel[0].rate_precision().unwrap();
        assert!((precision - (half.exp() - 1.0)).abs() < 1e-4, "{precision}");
        let line = precision_line(&rel).unwrap();
        assert!(line.starts_with("0 of 1 rate ratios known within ±10%"), "{line}");
    }

    #[test]
    fn points_of_other_loads_or_tls_are_not_peers() {
        let mut tls = config(1, Protocol::Grpc, "inventory.xs");
        tls.tls = true;
        let mut other_load = config(2, Protocol::Grpc, "inventory.xs");
        other_load.concurrency = 64;
        let aggs = vec![
            aggregate(config(0, Protocol::Rest, "inventory.xs"), &[1.0, 2.0]),
            aggregate(tls, &[1.0, 2.0]),
            aggregate(other_load, &[1.0, 2.0]),
        ];
        assert!(relative_of(&aggs).is_empty());
    }

    #[test]
    fn a_shared_connection_count_does_not_split_peers() {
        // HTTP/1.1 gets one connection per caller, gRPC shares 4: still peers.
        let mut grpc = config(1, Protocol::Grpc, "inventory.xs");
        grpc.connections = 4;
        grpc.connection_policy = Some(ConnectionPolicy::Shared(4));
        let aggs = vec![
            aggregate(config(0, Protocol::Rest, "inventory.xs"), &[10.0, 20.0]),
            aggregate(grpc, &[20.0, 40.0]),
        ];
        let rel = relative_of(&aggs);
        assert_eq!(rel.len(), 1);
        assert_eq!(rel[0].peers, "rust inventory.xs c=16");
    }
}
