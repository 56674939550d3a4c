//! Running the kernel's own tools (`ip`, `tc`, `nft`) with a bounded wait,
//! and finding out what this machine can emulate.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::NetworkError;

/// How long one `ip`/`tc`/`nft` call may take.
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `argv` (with `stdin` fed in), waits at most `timeout`, and returns
/// its standard output; a non-zero exit is an error carrying its stderr.
pub(crate) fn run(argv: &[&str], stdin: Option<&str>, timeout: Duration) -> Result<String, NetworkError> {
    let command = argv.join(" ");
    let mut child = Command::new(argv[0])
        .args(&argv[1..])
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| NetworkError::Io {
            what: format!("cannot run `{command}`"),
            source,
        })?;
    if let (Some(text), Some(mut w)) = (stdin, child.stdin.take()) {
        // Small scripts: fits the pipe; an error shows up as the tool's failure.
        let _ = w.write_all(text.as_bytes());
    }
    let read = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        })
    };
    let out = read(child.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let err = read(child.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(NetworkError::Timeout {
                    command,
                    seconds: timeout.as_secs(),
                });
            }
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if status.success() {
        Ok(stdout)
    } else {
        Err(NetworkError::Command {
            command,
            status: status.to_string(),
            stderr: stderr.trim().to_string(),
        })
    }
}

/// [`run`] with the default timeout and no input.
pub(crate) fn sh(argv: &[&str]) -> Result<String, NetworkError> {
    run(argv, None, COMMAND_TIMEOUT)
}

/// Finds an executable on `PATH`, then in the sbin directories (root's tools
/// live there and `PATH` may lack them).
pub(crate) fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

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
        let Ok(probe) = super::topology::Namespace::create_probe() else {
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
