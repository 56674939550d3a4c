//! Load from many generator hosts (docs/distributed.md): `protobench agent`
//! runs load plans on command ([`agent`]); a coordinator ([`coordinator`])
//! checks each agent's clock, sends it its share of the plan with an
//! absolute start, gathers the seconds' histograms they stream, and adds
//! them ([`protobench_model::merge`]). To the run loop the coordinator is
//! one more [`crate::engine::Engine`].
//!
//! The wire: HTTP/2 over one connection per agent, in clear text (prior
//! knowledge) or over mutual TLS ([`tls`], ALPN `h2`). Every request carries the shared token (`authorization: Bearer`)
//! and the coordinator's version; `GET /v1/clock` answers the agent's wall
//! clock, `POST /v1/run` takes an [`Order`] and answers a stream of
//! newline-delimited JSON [`Frame`]s. Dropping that stream cancels the run.

pub mod agent;
pub mod coordinator;
pub mod tls;

use protobench_model::hdr::EncodedHistogram;
use protobench_model::load::{LoadPlan, LoadResult, TimelinePoint};
use protobench_model::merge::LaneHistograms;
use serde::{Deserialize, Serialize};

/// The version an agent and its coordinator must share.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The request header carrying the coordinator's [`VERSION`].
pub const VERSION_HEADER: &str = "x-protobench-version";
/// The environment variable an agent (and a coordinator) reads its token from.
pub const TOKEN_ENV: &str = "PROTOBENCH_AGENT_TOKEN";
/// The shortest token accepted: a shared secret, not a password to type.
pub const MIN_TOKEN_LEN: usize = 16;
/// The largest request an agent reads (an order: a plan).
pub const MAX_ORDER_BYTES: usize = 1 << 20;
/// The largest frame a coordinator reads (a final result with its histograms).
pub const MAX_FRAME_BYTES: usize = 16 << 20;

/// The agent's answer to `GET /v1/clock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockReading {
    /// The agent's wall clock, ns since the Unix epoch.
    pub agent_ns: u64,
}

/// What a coordinator asks an agent to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Order {
    /// The agent's number.
    pub index: u32,
    /// Its share of the plan.
    pub plan: LoadPlan,
    /// When its schedule starts (warm-up first), on the agent's clock, ns
    /// since the Unix epoch.
    pub start_unix_ns: u64,
}

/// One line of an agent's answer to an [`Order`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "frame", rename_all = "snake_case")]
pub enum Frame {
    /// Connections are open; waiting for the start.
    Ready,
    /// One second of the measured window closed.
    Second {
        /// When that second started, on the agent's clock (ns since the epoch).
        at_unix_ns: u64,
        /// Its counts (and users).
        point: TimelinePoint,
        /// Its corrected latency histogram.
        histogram: EncodedHistogram,
    },
    /// The run ended.
    Done {
        /// The agent's result.
        result: Box<LoadResult>,
        /// Its other histograms.
        histograms: LaneHistograms,
    },
    /// The run could not start or failed.
    Failed {
        /// Why.
        message: String,
        /// It missed the common start (refused for this point).
        late: bool,
    },
}

/// One NTP-style exchange: the coordinator's clock when it sent the
/// request and when the answer arrived, and the agent's reading between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockSample {
    /// Coordinator's clock at sending, ns since the epoch.
    pub sent_ns: u64,
    /// Agent's clock when it answered.
    pub agent_ns: u64,
    /// Coordinator's clock at receiving.
    pub received_ns: u64,
}

/// An agent's clock against the coordinator's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockOffset {
    /// Agent minus coordinator (positive: the agent is ahead).
    pub offset_ns: i64,
    /// The round trip of the sample it comes from.
    pub round_trip_ns: u64,
    /// Half that round trip: the agent read its clock somewhere within it.
    pub uncertainty_ns: u64,
}

/// The offset from the sample with the shortest round trip (the one whose
/// reading is pinned down best); `None` without samples.
pub fn best_offset(samples: &[ClockSample]) -> Option<ClockOffset> {
    samples
        .iter()
        .min_by_key(|s| s.received_ns.saturating_sub(s.sent_ns))
        .map(|s| {
            let round_trip_ns = s.received_ns.saturating_sub(s.sent_ns);
            let midpoint = i128::from(s.sent_ns) + i128::from(round_trip_ns / 2);
            ClockOffset {
                offset_ns: (i128::from(s.agent_ns) - midpoint) as i64,
                round_trip_ns,
                uncertainty_ns: round_trip_ns.div_ceil(2),
            }
        })
}

/// Whether `given` is the token: compared in time independent of where
/// they differ.
pub fn token_matches(given: &[u8], token: &[u8]) -> bool {
    if given.len() != token.len() {
        return false;
    }
    given.iter().zip(token).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// Checks a token given to an agent or a coordinator: long enough, one line.
pub fn check_token(token: &str) -> Result<String, String> {
    let t = token.trim();
    if t.len() < MIN_TOKEN_LEN {
        return Err(format!(
            "the agent token has {} characters: at least {MIN_TOKEN_LEN} expected",
            t.len()
        ));
    }
    if t.chars().any(|c| c.is_control() || c == ' ') {
        return Err("the agent token holds spaces or control characters: expected one word".into());
    }
    Ok(t.to_owned())
}

/// Checks an agent's address as a preset or `--agents` gives it:
/// `host:port` (an IPv6 host in brackets), the port from 1 to 65535.
pub fn check_address(addr: &str) -> Result<(), String> {
    let expected = "expected host:port, e.g. 10.0.0.2:7070, [fd00::2]:7070 or agent-0.bench.svc:7070";
    let bad = || format!("`{addr}` is not an agent address ({expected})");
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    let host_ok = match bare {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
        }
    };
    if !host_ok {
        return Err(bad());
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(()),
        _ => Err(format!(
            "`{addr}`: the port `{port}` is not a port from 1 to 65535 ({expected})"
        )),
    }
}

/// Whether an agent's address (checked by [`check_address`]) is on this
/// host's loopback (`localhost`, 127.0.0.0/8, `[::1]`): such an agent
/// reaches servers listening on loopback.
pub fn on_loopback(addr: &str) -> bool {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_addresses_are_host_and_port() {
        for ok in ["127.0.0.1:7070", "[::1]:1", "agent-0.bench.svc:7070", "localhost:65535"] {
            assert_eq!(check_address(ok), Ok(()), "{ok}");
        }
        for bad in ["127.0.0.1", ":7070", "a b:1", "::1:7070", "[zz]:1", "http://a:1"] {
            let e = check_address(bad).unwrap_err();
            assert!(
                e.contains("not an agent address") && e.contains("host:port"),
                "{bad}: {e}"
            );
        }
        for bad_port in ["a:0", "a:70000", "a:x"] {
            let e = check_address(bad_port).unwrap_err();
            assert!(e.contains("is not a port from 1 to 65535"), "{bad_port}: {e}");
        }
        assert!(on_loopback("127.0.0.1:1") && on_loopback("127.3.0.1:1") && on_loopback("[::1]:1"));
        assert!(on_loopback("LOCALHOST:1"));
        assert!(!on_loopback("10.0.0.2:7070") && !on_loopback("agent-0.bench.svc:7070"));
    }

    #[test]
    fn the_shortest_round_trip_gives_the_offset() {
        let samples = [
            // 2 ms round trip, agent 5 ms ahead
            ClockSample {
                sent_ns: 1_000_000_000,
                agent_ns: 1_006_000_000,
                received_ns: 1_002_000_000,
            },
            // 200 us round trip, agent read 5 ms + 100 us after sending: 5 ms ahead
            ClockSample {
                sent_ns: 2_000_000_000,
                agent_ns: 2_005_100_000,
                received_ns: 2_000_200_000,
            },
            // a slow one, skewed
            ClockSample {
                sent_ns: 3_000_000_000,
                agent_ns: 3_050_000_000,
                received_ns: 3_040_000_000,
            },
        ];
        let o = best_offset(&samples).unwrap();
        assert_eq!(o.offset_ns, 5_000_000);
        assert_eq!(o.round_trip_ns, 200_000);
        assert_eq!(o.uncertainty_ns, 100_000);
        // Behind: negative.
        let behind = [ClockSample {
            sent_ns: 10_000,
            agent_ns: 4_000,
            received_ns: 12_000,
        }];
        assert_eq!(best_offset(&behind).unwrap().offset_ns, -7_000);
        assert_eq!(best_offset(&[]), None);
    }

    #[test]
    fn tokens_are_checked_and_compared_whole() {
        assert!(token_matches(b"0123456789abcdef", b"0123456789abcdef"));
        assert!(!token_matches(b"0123456789abcdeX", b"0123456789abcdef"));
        assert!(!token_matches(b"0123456789abcde", b"0123456789abcdef"));
        assert!(check_token("short").unwrap_err().contains("at least 16"));
        assert!(check_token("0123456789 abcdef").is_err());
        assert_eq!(check_token(" 0123456789abcdef\n").unwrap(), "0123456789abcdef");
    }
}
