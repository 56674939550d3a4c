//! Choosing a mechanism for each property of a profile ([`plan`], pure), and
//! applying it to a server host ([`EmulatedLink`]).
//!
//! | property | with netem | without netem |
//! |---|---|---|
//! | rate (+ burst) | `tc` tbf, child of netem | `tc` tbf at the root of each veth end |
//! | delay, jitter | `tc` netem | toxiproxy latency toxics, one per direction |
//! | loss | `tc` netem | nftables `numgen random` drop at each veth end's ingress |
//!
//! Each direction is shaped where its packets leave: "up" on the
//! generator-side veth end's egress (and, for loss, dropped at the server
//! end's ingress), "down" the other way round.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::NetworkError;
use super::capabilities::{Capabilities, ToxiproxyBins};
use super::profile::{Direction, LinkProfile, Network, format_duration};
use super::sys::{run, sh, which};
use super::topology::ServerHost;
use super::toxiproxy::{Latency, Toxiproxy};

/// What shaped one property of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// Not shaped (the profile does not ask for it).
    None,
    /// `tc` token bucket filter.
    TcTbf,
    /// `tc` netem.
    TcNetem,
    /// toxiproxy latency toxics (TCP only, whole milliseconds).
    Toxiproxy,
    /// nftables `numgen random` drop rules.
    Nftables,
}

/// The mechanism behind each property.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mechanisms {
    /// Rate and burst.
    pub rate: Mechanism,
    /// One-way delay.
    pub delay: Mechanism,
    /// Delay variation.
    pub jitter: Mechanism,
    /// Packet loss.
    pub loss: Mechanism,
}

/// A profile resolved against this machine: which mechanism shapes what.
/// Made by [`check`] before any point runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapePlan {
    /// The profile.
    pub profile: LinkProfile,
    /// The mechanism per property.
    pub mechanisms: Mechanisms,
    /// Where the applied link differs from the profile (e.g. toxiproxy's
    /// 1 ms resolution), one sentence each.
    pub notes: Vec<String>,
    /// toxiproxy, when it shapes delay or jitter.
    pub toxiproxy: Option<ToxiproxyBins>,
    up_latency: Option<Latency>,
    down_latency: Option<Latency>,
}

const TOXIPROXY_INSTALL: &str = "install toxiproxy with scripts/setup.sh (go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0 and .../cmd/cli@v2.5.0, installed as toxiproxy-server and toxiproxy-cli in $(go env GOPATH)/bin or on PATH), or use a kernel with sch_netem";

// Longer than the project's ~120-line guide: one decision table (per
// property and direction: which mechanism this kernel and its tools allow,
// or which error names what is missing), kept in one place so that every
// combination can be read and unit-tested against it.
/// Resolves `profile` against `caps`. Pure: the same inputs give the same
/// plan or the same error, naming what is missing and how to get it.
pub fn plan(profile: &LinkProfile, caps: &Capabilities) -> Result<ShapePlan, NetworkError> {
    let missing = |what: String, fix: &str| NetworkError::Unavailable { what, fix: fix.into() };
    if !caps.root {
        return Err(missing(
            format!(
                "network `{}` needs root: network namespaces, veth pairs, qdiscs and nftables rules need CAP_NET_ADMIN",
                profile.name
            ),
            "run protobench as root, or use network = \"loopback\"",
        ));
    }
    if !caps.ip || !caps.tc {
        return Err(missing(
            format!(
                "network `{}` needs `ip` and `tc`, which are not installed",
                profile.name
            ),
            "apt-get install iproute2",
        ));
    }
    let dirs = [&profile.up, &profile.down];
    let any = |f: fn(&Direction) -> bool| dirs.iter().any(|d| f(d));
    let wants_rate = any(|d| d.rate_bps.is_some());
    let wants_delay = any(|d| d.delay_ns > 0);
    let wants_jitter = any(|d| d.jitter_ns > 0);
    let wants_loss = any(|d| d.loss_percent > 0.0);
    let mut notes = Vec::new();
    let rate = if !wants_rate {
        Mechanism::None
    } else if caps.tbf {
        Mechanism::TcTbf
    } else {
        return Err(missing(
            format!(
                "network `{}` sets a rate, but this kernel has no tbf qdisc",
                profile.name
            ),
            "use a kernel built with CONFIG_NET_SCH_TBF, or drop rate= from the profile",
        ));
    };
    let (mut delay, mut jitter) = (Mechanism::None, Mechanism::None);
    let (mut up_latency, mut down_latency) = (None, None);
    let mut toxiproxy = None;
    if wants_delay || wants_jitter {
        if caps.netem {
            delay = if wants_delay {
                Mechanism::TcNetem
            } else {
                Mechanism::None
            };
            jitter = if wants_jitter {
                Mechanism::TcNetem
            } else {
                Mechanism::None
            };
        } else if let Some(bins) = &caps.toxiproxy {
            let mut latency = |side: &str, d: &Direction| {
                let ms = |ns: u64| (ns + 500_000) / 1_000_000;
                let l = Latency {
                    latency_ms: ms(d.delay_ns),
                    jitter_ms: ms(d.jitter_ns),
                };
                for (what, ns, got) in [
                    ("delay", d.delay_ns, l.latency_ms),
                    ("jitter", d.jitter_ns, l.jitter_ms),
                ] {
                    if ns > 0 && ns != got * 1_000_000 {
                        notes.push(if got == 0 {
                            format!(
                                "{side}.{what} {} is below toxiproxy's 1 ms resolution and is not added (the veth's own few tens of microseconds remain)",
                                format_duration(ns)
                            )
                        } else {
                            format!(
                                "{side}.{what} {} rounded to {got}ms (toxiproxy's resolution)",
                                format_duration(ns)
                            )
                        });
                    }
                }
                (l.latency_ms > 0 || l.jitter_ms > 0).then_some(l)
            };
            up_latency = latency("up", &profile.up);
            down_latency = latency("down", &profile.down);
            if up_latency.is_some() || down_latency.is_some() {
                toxiproxy = Some(bins.clone());
                let used = |f: fn(&Latency) -> u64| [up_latency, down_latency].iter().flatten().any(|l| f(l) > 0);
                delay = if used(|l| l.latency_ms) {
                    Mechanism::Toxiproxy
                } else {
                    Mechanism::None
                };
                jitter = if used(|l| l.jitter_ms) {
                    Mechanism::Toxiproxy
                } else {
                    Mechanism::None
                };
                notes.push(
                    "delay and jitter are added by toxiproxy, a TCP proxy in front of the server: TCP's congestion control sees only the veth's round trip, so loss recovers faster than on a real link of this delay".into(),
                );
            }
        } else {
            return Err(missing(
                format!(
                    "network `{}` sets delay or jitter, but this kernel has no netem qdisc and toxiproxy is not installed",
                    profile.name
                ),
                TOXIPROXY_INSTALL,
            ));
        }
    }
    let loss = if !wants_loss {
        Mechanism::None
    } else if caps.netem {
        Mechanism::TcNetem
    } else if caps.nft {
        Mechanism::Nftables
    } else {
        return Err(missing(
            format!(
                "network `{}` sets loss, but this kernel has no netem qdisc and nftables is not usable",
                profile.name
            ),
            "apt-get install nftables (the kernel needs nf_tables with numgen), or use a kernel with sch_netem",
        ));
    };
    Ok(ShapePlan {
        profile: profile.clone(),
        mechanisms: Mechanisms {
            rate,
            delay,
            jitter,
            loss,
        },
        notes,
        toxiproxy,
        up_latency,
        down_latency,
    })
}

/// The check step, run once before any point: probes the machine and
/// resolves every network. `Loopback` needs nothing and gives `None`.
pub fn check(networks: &[Network]) -> Result<Vec<Option<ShapePlan>>, NetworkError> {
    if networks.iter().all(|n| n.profile().is_none()) {
        return Ok(networks.iter().map(|_| None).collect());
    }
    let caps = Capabilities::detect();
    networks
        .iter()
        .map(|n| n.profile().map(|p| plan(p, &caps)).transpose())
        .collect()
}

/// A server host behind a shaped link. Everything is removed on drop.
#[derive(Debug)]
pub struct EmulatedLink {
    // Field order is drop order: toxiproxy goes before the namespace.
    toxiproxy: Option<Toxiproxy>,
    host: ServerHost,
    plan: ShapePlan,
    exposed: BTreeMap<String, SocketAddr>,
}

/// First toxiproxy listen port inside the server host (below Linux's
/// ephemeral range, so servers binding port 0 never take it).
const FIRST_PROXY_PORT: u16 = 20_000;

/// The lowest proxy port no exposed name holds (names come and go as the
/// servers of a link are replaced, so the count of names is not enough).
fn free_proxy_port(exposed: &BTreeMap<String, SocketAddr>) -> u16 {
    (FIRST_PROXY_PORT..)
        .find(|p| !exposed.values().any(|a| a.port() == *p))
        .expect("fewer proxies than ports")
}

/// tbf's queue: at least 25 ms of the rate, or one round trip of the profile.
fn tbf_limit(d: &Direction, rtt_ns: u64) -> Option<u64> {
    let rate = d.rate_bps?;
    let queue_ns = rtt_ns.max(25_000_000);
    Some(d.effective_burst_bytes()? + (rate as u128 * queue_ns as u128 / 8 / 1_000_000_000) as u64)
}

/// The `tc` argument lists that shape one veth end's egress.
fn tc_commands(dev: &str, d: &Direction, m: &Mechanisms, rtt_ns: u64) -> Vec<Vec<String>> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    let tbf = |parent: &[&str]| {
        let mut v = s(&["qdisc", "add", "dev", dev]);
        v.extend(s(parent));
        v.extend(s(&["tbf", "rate", &format!("{}bit", d.rate_bps.unwrap_or(0))]));
        v.extend(s(&["burst", &d.effective_burst_bytes().unwrap_or(0).to_string()]));
        v.extend(s(&["limit", &tbf_limit(d, rtt_ns).unwrap_or(0).to_string()]));
        v
    };
    let netem_here = (m.delay == Mechanism::TcNetem && d.delay_ns > 0)
        || (m.jitter == Mechanism::TcNetem && d.jitter_ns > 0)
        || (m.loss == Mechanism::TcNetem && d.loss_percent > 0.0);
    let mut out = Vec::new();
    if netem_here {
        let mut v = s(&["qdisc", "add", "dev", dev, "root", "handle", "1:", "netem"]);
        v.extend(s(&["delay", &format!("{}us", d.delay_ns / 1000)]));
        if d.jitter_ns > 0 {
            v.push(format!("{}us", d.jitter_ns / 1000));
        }
        if d.loss_percent > 0.0 {
            v.extend(s(&["loss", &format!("{}%", d.loss_percent)]));
        }
        if d.rate_bps.is_some() {
            // Room for a round trip of packets waiting in netem.
            let packets = tbf_limit(d, rtt_ns).unwrap_or(0) / 1500 + 1000;
            v.extend(s(&["limit", &packets.to_string()]));
        }
        out.push(v);
        if d.rate_bps.is_some() {
            out.push(tbf(&["parent", "1:1", "handle", "10:"]));
        }
    } else if d.rate_bps.is_some() {
        out.push(tbf(&["root"]));
    }
    out
}

/// The nftables script that drops `loss_percent` of IPv4 packets arriving
/// on `dev`, counting all and dropped packets.
fn nft_loss_script(table: &str, dev: &str, loss_percent: f64) -> String {
    let threshold = (loss_percent * 10_000.0).round() as u64; // per million
    format!(
        "table netdev {table} {{\n  chain loss {{\n    type filter hook ingress device \"{dev}\" priority 0; policy accept;\n    meta protocol ip counter\n    meta protocol ip numgen random mod 1000000 < {threshold} counter drop\n  }}\n}}\n"
    )
}

impl EmulatedLink {
    /// Creates the server host and applies `plan` to it (tc on both veth
    /// ends, nftables loss rules, toxiproxy inside when it shapes delay).
    pub fn create(plan: &ShapePlan) -> Result<EmulatedLink, NetworkError> {
        let host = ServerHost::create()?;
        let mut link = EmulatedLink {
            toxiproxy: None,
            host,
            plan: plan.clone(),
            exposed: BTreeMap::new(),
        };
        let ns = link.host.namespace().to_string();
        let m = &plan.mechanisms;
        let rtt = plan.profile.rtt_ns();
        for cmd in tc_commands(link.host.host_interface(), &plan.profile.up, m, rtt) {
            let mut argv = vec!["tc"];
            argv.extend(cmd.iter().map(String::as_str));
            sh(&argv)?;
        }
        for cmd in tc_commands(link.host.server_interface(), &plan.profile.down, m, rtt) {
            let mut argv = vec!["tc", "-n", &ns];
            argv.extend(cmd.iter().map(String::as_str));
            sh(&argv)?;
        }
        if m.loss == Mechanism::Nftables {
            let nft = which("nft")
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "nft".into());
            if plan.profile.up.loss_percent > 0.0 {
                let script = nft_loss_script(&ns, link.host.server_interface(), plan.profile.up.loss_percent);
                run(
                    &["ip", "netns", "exec", &ns, &nft, "-f", "-"],
                    Some(&script),
                    super::sys::COMMAND_TIMEOUT,
                )?;
            }
            if plan.profile.down.loss_percent > 0.0 {
                let script = nft_loss_script(&ns, link.host.host_interface(), plan.profile.down.loss_percent);
                run(&[&nft, "-f", "-"], Some(&script), super::sys::COMMAND_TIMEOUT)?;
            }
        }
        if let Some(bins) = &plan.toxiproxy {
            link.toxiproxy = Some(Toxiproxy::start(&ns, bins, plan.up_latency, plan.down_latency)?);
        }
        Ok(link)
    }

    /// The server host.
    pub fn host(&self) -> &ServerHost {
        &self.host
    }

    /// The plan it applies.
    pub fn plan(&self) -> &ShapePlan {
        &self.plan
    }

    /// Where servers inside listen: `server_ip:0` (set every
    /// `PROTOBENCH_<P>_ADDR` to it).
    pub fn bind_addr(&self) -> SocketAddr {
        self.host.bind_addr()
    }

    /// The address the generator must use for a server listening on
    /// `server_addr` inside: a toxiproxy proxy in front of it when toxiproxy
    /// shapes delay, else the address itself. `name` identifies the proxy
    /// (e.g. the protocol); exposing a name again returns its address.
    pub fn expose(&mut self, name: &str, server_addr: SocketAddr) -> Result<SocketAddr, NetworkError> {
        if let Some(a) = self.exposed.get(name) {
            return Ok(*a);
        }
        let Some(proxy) = &self.toxiproxy else {
            return Ok(server_addr);
        };
        let port = free_proxy_port(&self.exposed);
        let listen = SocketAddr::from((self.host.server_ip(), port));
        proxy.add_proxy(name, listen, server_addr)?;
        self.exposed.insert(name.to_string(), listen);
        Ok(listen)
    }

    /// Removes what [`EmulatedLink::expose`] made for `name` (the next
    /// server of a point can then reuse the name).
    pub fn unexpose(&mut self, name: &str) -> Result<(), NetworkError> {
        if self.exposed.remove(name).is_some()
            && let Some(proxy) = &self.toxiproxy
        {
            proxy.remove_proxy(name)?;
        }
        Ok(())
    }

    /// toxiproxy's process id, when it runs.
    pub fn toxiproxy_pid(&self) -> Option<u32> {
        self.toxiproxy.as_ref().map(Toxiproxy::pid)
    }

    /// CPU time toxiproxy has used so far (ns), when it runs: read it at the
    /// edges of a point's window to charge the proxy's cost to the point.
    pub fn toxiproxy_cpu_ns(&self) -> Option<u64> {
        self.toxiproxy.as_ref().map(Toxiproxy::cpu_ns)
    }

    /// toxiproxy's last output lines, when it runs (for failure reports).
    pub fn toxiproxy_log_tail(&self) -> Option<String> {
        self.toxiproxy.as_ref().map(Toxiproxy::log_tail)
    }

    /// Removes everything now (drop does the same, ignoring errors).
    pub fn remove(mut self) -> Result<(), NetworkError> {
        self.toxiproxy.take();
        self.host.remove()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(netem: bool, nft: bool, toxiproxy: bool) -> Capabilities {
        Capabilities {
            root: true,
            ip: true,
            tc: true,
            tbf: true,
            netem,
            nft,
            toxiproxy: toxiproxy.then(|| ToxiproxyBins {
                server: "/x/toxiproxy-server".into(),
                cli: "/x/toxiproxy-cli".into(),
            }),
        }
    }

    fn profile(s: &str) -> LinkProfile {
        s.parse::<Network>().unwrap().profile().unwrap().clone()
    }

    #[test]
    fn mechanisms_follow_what_the_machine_has() {
        let p = profile("rate=100mbit,delay=20ms,jitter=2ms,loss=1%");
        let m = |c| plan(&p, &c).map(|pl| pl.mechanisms);
        use Mechanism::*;
        // netem does delay, jitter and loss; tbf the rate
        assert_eq!(
            m(caps(true, true, true)).unwrap(),
            Mechanisms {
                rate: TcTbf,
                delay: TcNetem,
                jitter: TcNetem,
                loss: TcNetem
            }
        );
        // this kernel: no netem
        assert_eq!(
            m(caps(false, true, true)).unwrap(),
            Mechanisms {
                rate: TcTbf,
                delay: Toxiproxy,
                jitter: Toxiproxy,
                loss: Nftables
            }
        );
        // rate only needs nothing but tbf
        let r = plan(&profile("rate=10mbit"), &caps(false, false, false)).unwrap();
        assert_eq!(
            r.mechanisms,
            Mechanisms {
                rate: TcTbf,
                delay: None,
                jitter: None,
                loss: None
            }
        );
        assert!(r.toxiproxy.is_none());
    }

    #[test]
    fn a_profile_the_machine_cannot_apply_says_what_is_missing_and_how_to_get_it() {
        let cases = [
            // (profile, capabilities, expected fragments)
            (
                "delay=20ms",
                caps(false, true, false),
                vec![
                    "no netem qdisc and toxiproxy is not installed",
                    "go install github.com/Shopify/toxiproxy",
                ],
            ),
            (
                "loss=1%",
                caps(false, false, true),
                vec!["sets loss", "apt-get install nftables"],
            ),
            (
                "rate=1mbit",
                Capabilities {
                    tbf: false,
                    ..caps(true, true, true)
                },
                vec!["no tbf qdisc"],
            ),
            (
                "rate=1mbit",
                Capabilities {
                    root: false,
                    ..caps(true, true, true)
                },
                vec!["needs root", "loopback"],
            ),
            (
                "rate=1mbit",
                Capabilities {
                    tc: false,
                    ..caps(true, true, true)
                },
                vec!["apt-get install iproute2"],
            ),
        ];
        for (p, c, want) in cases {
            let err = plan(&profile(p), &c).unwrap_err().to_string();
            for w in want {
                assert!(err.contains(w), "{p}: {err:?} lacks {w:?}");
            }
        }
    }

    #[test]
    fn toxiproxy_rounds_to_whole_milliseconds_and_says_so() {
        let lan = plan(&profile("lan-1g"), &caps(false, true, true)).unwrap();
        // 50 us each way cannot be added: no toxiproxy at all
        assert_eq!(lan.mechanisms.delay, Mechanism::None);
        assert!(lan.toxiproxy.is_none());
        assert!(
            lan.notes
                .iter()
                .any(|n| n.contains("below toxiproxy's 1 ms resolution")),
            "{:?}",
            lan.notes
        );
        let p = plan(&profile("delay=1500us,up.jitter=1ms"), &caps(false, true, true)).unwrap();
        assert_eq!(
            p.up_latency,
            Some(Latency {
                latency_ms: 2,
                jitter_ms: 1
            })
        );
        assert_eq!(
            p.down_latency,
            Some(Latency {
                latency_ms: 2,
                jitter_ms: 0
            })
        );
        assert!(p.notes.iter().any(|n| n.contains("rounded to 2ms")));
    }

    #[test]
    fn tc_commands_per_kernel() {
        let p = profile("rate=100mbit,delay=20ms,loss=1%");
        let with_netem = plan(&p, &caps(true, true, true)).unwrap();
        let cmds = tc_commands("v", &p.up, &with_netem.mechanisms, p.rtt_ns());
        assert_eq!(
            cmds[0].join(" "),
            "qdisc add dev v root handle 1: netem delay 20000us loss 1% limit 1341"
        );
        // 12,500-byte burst (1 ms of 100 Mbit/s) + 40 ms of the rate
        assert_eq!(
            cmds[1].join(" "),
            "qdisc add dev v parent 1:1 handle 10: tbf rate 100000000bit burst 12500 limit 512500"
        );
        let without = plan(&p, &caps(false, true, true)).unwrap();
        let cmds = tc_commands("v", &p.up, &without.mechanisms, p.rtt_ns());
        assert_eq!(cmds.len(), 1);
        assert_eq!(
            cmds[0].join(" "),
            "qdisc add dev v root tbf rate 100000000bit burst 12500 limit 512500"
        );
    }

    #[test]
    fn a_proxy_port_freed_by_unexpose_is_reused_and_a_held_one_never() {
        let addr = |p: u16| SocketAddr::from(([169, 254, 128, 2], p));
        let mut exposed = BTreeMap::new();
        assert_eq!(free_proxy_port(&exposed), 20_000);
        for (name, port) in [("grpc", 20_000), ("rest", 20_001), ("soap", 20_002)] {
            exposed.insert(name.to_string(), addr(port));
        }
        assert_eq!(free_proxy_port(&exposed), 20_003);
        // the next server's grpc, after its old proxy was removed: not 20_002
        exposed.remove("grpc");
        assert_eq!(free_proxy_port(&exposed), 20_000);
    }

    #[test]
    fn nft_script_drops_the_share_per_million() {
        let s = nft_loss_script("pb1n0", "pb1n0s", 0.1);
        assert!(s.contains("device \"pb1n0s\""), "{s}");
        assert!(s.contains("numgen random mod 1000000 < 1000 counter drop"), "{s}");
    }
}
