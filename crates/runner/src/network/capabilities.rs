//! What this machine can emulate: the tools, the qdiscs and nftables rules
//! its kernel takes (probed in a throwaway namespace), and toxiproxy.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::sys::{COMMAND_TIMEOUT, is_executable, run, sh, which};
use super::topology::Namespace;

/// The toxiproxy binaries (server and CLI).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToxiproxyBins {
    /// `toxiproxy-server`.
    pub server: PathBuf,
    /// `toxiproxy-cli`.
    pub cli: PathBuf,
}

impl ToxiproxyBins {
    /// Looks on `PATH`, then in Go's install directory (`$GOBIN`,
    /// `$GOPATH/bin`, `~/go/bin`), where `scripts/setup.sh` puts them.
    pub fn find() -> Option<ToxiproxyBins> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        if let Some(d) = std::env::var_os("GOBIN") {
            dirs.push(d.into());
        }
        if let Some(d) = std::env::var_os("GOPATH") {
            dirs.extend(std::env::split_paths(&d).map(|p| p.join("bin")));
        }
        if let Some(h) = std::env::var_os("HOME") {
            dirs.push(PathBuf::from(h).join("go/bin"));
        }
        let find = |name: &str| which(name).or_else(|| dirs.iter().map(|d| d.join(name)).find(|p| is_executable(p)));
        Some(ToxiproxyBins {
            server: find("toxiproxy-server")?,
            cli: find("toxiproxy-cli")?,
        })
    }
}

/// What this machine can do for link emulation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Effective user is root (namespaces, veth, qdiscs and nftables need CAP_NET_ADMIN).
    pub root: bool,
    /// `ip` (iproute2).
    pub ip: bool,
    /// `tc` (iproute2).
    pub tc: bool,
    /// The kernel has the `tbf` qdisc.
    pub tbf: bool,
    /// The kernel has the `netem` qdisc.
    pub netem: bool,
    /// `nft` is installed and the kernel takes a `numgen random` drop rule.
    pub nft: bool,
    /// toxiproxy, when installed.
    pub toxiproxy: Option<ToxiproxyBins>,
}

impl Capabilities {
    /// Probes the machine: looks for the tools, then tries `tbf`, `netem`
    /// and an nftables `numgen` rule on the loopback device of a throwaway
    /// network namespace (nothing outside it is touched). About 50 ms.
    pub fn detect() -> Capabilities {
        let root = rustix::process::geteuid().is_root();
        let ip = which("ip").is_some();
        let tc = which("tc").is_some();
        let nft_bin = which("nft").is_some();
        let mut caps = Capabilities {
            root,
            ip,
            tc,
            tbf: false,
            netem: false,
            nft: false,
            toxiproxy: ToxiproxyBins::find(),
        };
        if !(root && ip && tc) {
            return caps;
        }
        let Ok(probe) = Namespace::create_probe() else {
            return caps;
        };
        let ns = probe.name().to_string();
        let qdisc = |spec: &[&str]| {
            let mut argv = vec!["tc", "-n", &ns, "qdisc", "replace", "dev", "lo", "root"];
            argv.extend_from_slice(spec);
            sh(&argv).is_ok()
        };
        caps.tbf = qdisc(&["tbf", "rate", "1mbit", "burst", "3028", "limit", "30000"]);
        caps.netem = qdisc(&["netem", "delay", "1ms"]);
        if nft_bin {
            let script = "table netdev pbprobe {\n chain c {\n  type filter hook ingress device \"lo\" priority 0; policy accept;\n  meta protocol ip numgen random mod 1000000 < 1 counter drop\n }\n}\n";
            caps.nft = run(
                &["ip", "netns", "exec", &ns, "nft", "-f", "-"],
                Some(script),
                COMMAND_TIMEOUT,
            )
            .is_ok();
        }
        drop(probe);
        caps
    }
}
