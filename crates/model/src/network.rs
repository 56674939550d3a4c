//! What a run records about the emulated links its points crossed
//! (docs/network.md): one [`RunLink`] per link, measured before its points
//! ran, and one [`PointLink`] per measurement on a link, with the link-bound
//! verdict the runner computed (`protobench_runner::network::link_bound`).
//!
//! Plain data: the runner fills these from its `LinkReport`, the store keeps
//! them, and every renderer reads them.

use serde::{Deserialize, Serialize};

/// A link a run created, as measured before its points ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunLink {
    /// The network as the preset writes it (`lan-1g`, `rate=100mbit,delay=20ms`).
    pub network: String,
    /// When it was measured (RFC 3339). A resumed run measures its links again.
    pub measured_at: String,
    /// What shaped each property, e.g. `rate tc-tbf, delay toxiproxy`.
    pub mechanisms: String,
    /// The profile's rate generator to server (bit/s on the wire), if shaped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_rate_bps: Option<u64>,
    /// The profile's rate server to generator (bit/s on the wire), if shaped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_rate_bps: Option<u64>,
    /// The round trip the profile asks for.
    pub profile_rtt_ns: u64,
    /// Measured round trip (median of one-byte echoes).
    pub rtt_ns: u64,
    /// Measured TCP payload throughput generator to server.
    pub up_goodput_bps: f64,
    /// Measured TCP payload throughput server to generator.
    pub down_goodput_bps: f64,
    /// toxiproxy's CPU over the measurement's transfers, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toxiproxy_cpu_ns: Option<u64>,
    /// Where the applied link differs from the profile (mechanism limits).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Where the achieved link is far from the profile.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The runner's full `LinkReport` (profile, mechanisms, every measured
    /// figure), as JSON.
    #[serde(default)]
    pub report: serde_json::Value,
}

impl RunLink {
    /// One line for reports: `lan-1g: measured 0.95 Gbit/s up, 0.96 Gbit/s
    /// down, RTT 0.02 ms (tc-tbf)`.
    pub fn summary_line(&self) -> String {
        format!(
            "{}: measured {} up, {} down, RTT {} ({})",
            self.network,
            fmt_bits(self.up_goodput_bps),
            fmt_bits(self.down_goodput_bps),
            fmt_ms(self.rtt_ns),
            self.mechanisms
        )
    }
}

/// A measurement's relation to its link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointLink {
    /// The network it ran on.
    pub network: String,
    /// TCP payload per call, generator to server.
    pub bytes_sent_per_call: f64,
    /// TCP payload per call, server to generator.
    pub bytes_received_per_call: f64,
    /// The link's measured payload capacity generator to server (bit/s).
    pub up_capacity_bps: f64,
    /// The link's measured payload capacity server to generator (bit/s).
    pub down_capacity_bps: f64,
    /// calls/s x bytes sent per call x 8 / up capacity.
    pub up_share: f64,
    /// calls/s x bytes received per call x 8 / down capacity.
    pub down_share: f64,
    /// Either direction carried at least the link-bound share of its capacity:
    /// the link, not the server, limited the rate.
    pub bound: bool,
    /// toxiproxy's CPU over this measurement, when toxiproxy carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toxiproxy_cpu_ns: Option<u64>,
}

impl PointLink {
    /// The larger of the two directions' shares.
    pub fn share(&self) -> f64 {
        self.up_share.max(self.down_share)
    }
}

/// A bit rate with its unit: `95.6 Mbit/s`; `0.94 Gbit/s` from 0.5 Gbit/s up.
pub fn fmt_bits(bps: f64) -> String {
    if bps >= 0.5e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.1} Mbit/s", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{:.1} kbit/s", bps / 1e3)
    } else {
        format!("{bps:.0} bit/s")
    }
}

/// Milliseconds with two decimals (a round trip).
pub fn fmt_ms(ns: u64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_rates_and_round_trips_read_as_the_issue_writes_them() {
        assert_eq!(fmt_bits(0.94e9), "0.94 Gbit/s");
        assert_eq!(fmt_bits(0.4e9), "400.0 Mbit/s");
        assert_eq!(fmt_bits(1.2e9), "1.20 Gbit/s");
        assert_eq!(fmt_bits(95.6e6), "95.6 Mbit/s");
        assert_eq!(fmt_bits(5_700.0), "5.7 kbit/s");
        assert_eq!(fmt_ms(210_000), "0.21 ms");
        let l = RunLink {
            network: "lan-1g".into(),
            measured_at: String::new(),
            mechanisms: "rate tc-tbf".into(),
            up_rate_bps: Some(1_000_000_000),
            down_rate_bps: Some(1_000_000_000),
            profile_rtt_ns: 100_000,
            rtt_ns: 210_000,
            up_goodput_bps: 0.952e9,
            down_goodput_bps: 0.962e9,
            toxiproxy_cpu_ns: None,
            notes: vec![],
            warnings: vec![],
            report: serde_json::Value::Null,
        };
        assert_eq!(
            l.summary_line(),
            "lan-1g: measured 0.95 Gbit/s up, 0.96 Gbit/s down, RTT 0.21 ms (rate tc-tbf)"
        );
    }
}
