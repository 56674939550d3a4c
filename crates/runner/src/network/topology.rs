//! The emulated server host: a network namespace joined to the runner's own
//! namespace by a veth pair with a private /30 from 169.254.128.0/17
//! (link-local: never routed off this machine; below the 169.254.169.0/24
//! that clouds use for metadata).
//!
//! Every name carries the owning process id: namespace `pb<PID>n<K>`, veth
//! ends `pb<PID>n<K>g` (generator side, in the runner's namespace) and
//! `pb<PID>n<K>s` (server side), nftables tables `pb<PID>n<K>`. What a killed
//! run left behind is recognised by its dead PID and removed by
//! [`cleanup_leftovers`], which every creation calls first.

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use super::NetworkError;
use super::sys::{sh, which};

/// Where `ip netns` keeps its named namespaces.
pub const NETNS_DIR: &str = "/run/netns";

static NEXT: AtomicU32 = AtomicU32::new(0);

fn next_name() -> String {
    let k = NEXT.fetch_add(1, Ordering::Relaxed) % 1000;
    format!("pb{}n{k}", std::process::id())
}

/// The owner PID and index of a name this module made (`pb<PID>n<K>`,
/// optionally followed by `g` or `s`), else `None`.
pub fn parse_owned_name(name: &str) -> Option<(u32, u32)> {
    let rest = name.strip_prefix("pb")?;
    let (pid, rest) = rest.split_once('n')?;
    let k = rest.strip_suffix(['g', 's']).unwrap_or(rest);
    let digits = |s: &str| !s.is_empty() && s.len() <= 10 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(k) {
        return None;
    }
    Some((pid.parse().ok()?, k.parse().ok()?))
}

fn owner_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Runs `f` on a short-lived thread that has entered the namespace `ns`
/// (sockets it creates belong to that namespace and stay there when handed
/// back).
pub fn in_namespace<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> Result<T, NetworkError> {
    let file = open_namespace(ns)?;
    std::thread::scope(|s| {
        s.spawn(|| {
            enter(&file, ns)?;
            Ok(f())
        })
        .join()
        .unwrap_or_else(|_| {
            Err(NetworkError::Measure(format!(
                "a thread inside namespace {ns} panicked"
            )))
        })
    })
}

/// Moves the calling thread into namespace `ns` (by name, for code that
/// holds only the name, e.g. a `StartSpec`): a process it spawns afterwards
/// starts inside. Use it on a short-lived spawning thread.
pub fn enter_namespace(ns: &str) -> Result<(), NetworkError> {
    enter(&open_namespace(ns)?, ns)
}

fn open_namespace(ns: &str) -> Result<File, NetworkError> {
    let path = PathBuf::from(NETNS_DIR).join(ns);
    File::open(&path).map_err(|source| NetworkError::Io {
        what: format!("cannot open {}", path.display()),
        source,
    })
}

fn enter(file: &File, ns: &str) -> Result<(), NetworkError> {
    use std::os::fd::AsFd;
    rustix::thread::move_into_link_name_space(file.as_fd(), Some(rustix::thread::LinkNameSpaceType::Network)).map_err(
        |e| NetworkError::Io {
            what: format!("cannot enter network namespace {ns}"),
            source: e.into(),
        },
    )
}

/// A named network namespace, deleted on drop (with every process still in it).
#[derive(Debug)]
pub struct Namespace {
    name: String,
    removed: bool,
}

impl Namespace {
    /// Creates `pb<PID>n<K>` with its loopback up, after removing leftovers.
    pub fn create() -> Result<Namespace, NetworkError> {
        cleanup_leftovers()?;
        Self::create_probe()
    }

    /// Like [`Namespace::create`] without the leftover sweep (capability probes).
    pub(crate) fn create_probe() -> Result<Namespace, NetworkError> {
        let name = next_name();
        sh(&["ip", "netns", "add", &name])?;
        let ns = Namespace { name, removed: false };
        sh(&["ip", "-n", &ns.name, "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Kills what still runs inside and deletes it (idempotent).
    pub fn remove(&mut self) -> Result<(), NetworkError> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        remove_namespace(&self.name)
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Process ids running inside namespace `ns`.
pub fn namespace_pids(ns: &str) -> Vec<u32> {
    sh(&["ip", "netns", "pids", ns])
        .map(|out| out.split_whitespace().filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default()
}

fn remove_namespace(ns: &str) -> Result<(), NetworkError> {
    // A namespace lives on while a process is inside: end them first. They
    // are ours (toxiproxy, a server the caller did not stop).
    for pid in namespace_pids(ns) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    // Deleting the namespace destroys the server end of the veth, which
    // takes its peer, qdiscs and the namespace's nftables tables with it.
    sh(&["ip", "netns", "del", ns]).map(|_| ())
}

/// The server host: a namespace, the veth pair and its addresses.
#[derive(Debug)]
pub struct ServerHost {
    ns: Namespace,
    host_if: String,
    server_if: String,
    host_ip: Ipv4Addr,
    server_ip: Ipv4Addr,
}

/// First address of the private range the /30s come from.
const BASE: u32 = u32::from_be_bytes([169, 254, 128, 0]);
/// Number of /30 slots in 169.254.128.0/17.
const SLOTS: u32 = 1 << 13;

impl ServerHost {
    /// Creates the namespace and the veth pair, addresses both ends and
    /// brings them up. Leftovers of dead runs are removed first.
    pub fn create() -> Result<ServerHost, NetworkError> {
        let ns = Namespace::create()?;
        let name = ns.name().to_string();
        let (host_if, server_if) = (format!("{name}g"), format!("{name}s"));
        let mut host = ServerHost {
            ns,
            host_if,
            server_if,
            host_ip: Ipv4Addr::UNSPECIFIED,
            server_ip: Ipv4Addr::UNSPECIFIED,
        };
        sh(&[
            "ip",
            "link",
            "add",
            &host.host_if,
            "type",
            "veth",
            "peer",
            "name",
            &host.server_if,
            "netns",
            &name,
        ])?;
        let slot = free_slot()?;
        let net = BASE + slot * 4;
        host.host_ip = Ipv4Addr::from(net + 1);
        host.server_ip = Ipv4Addr::from(net + 2);
        sh(&[
            "ip",
            "addr",
            "add",
            &format!("{}/30", host.host_ip),
            "dev",
            &host.host_if,
        ])?;
        sh(&["ip", "link", "set", &host.host_if, "up"])?;
        sh(&[
            "ip",
            "-n",
            &name,
            "addr",
            "add",
            &format!("{}/30", host.server_ip),
            "dev",
            &host.server_if,
        ])?;
        sh(&["ip", "-n", &name, "link", "set", &host.server_if, "up"])?;
        Ok(host)
    }

    /// The namespace's name (`pb<PID>n<K>`).
    pub fn namespace(&self) -> &str {
        self.ns.name()
    }

    /// The veth end in the runner's namespace.
    pub fn host_interface(&self) -> &str {
        &self.host_if
    }

    /// The veth end inside the server host.
    pub fn server_interface(&self) -> &str {
        &self.server_if
    }

    /// The generator side's address.
    pub fn host_ip(&self) -> Ipv4Addr {
        self.host_ip
    }

    /// The server host's address: servers bind `server_ip:0`.
    pub fn server_ip(&self) -> Ipv4Addr {
        self.server_ip
    }

    /// Where a server inside should listen (`PROTOBENCH_<P>_ADDR`).
    pub fn bind_addr(&self) -> SocketAddr {
        SocketAddr::from((self.server_ip, 0))
    }

    /// `ip netns exec <ns>`: prefix a server's argv with it to start the
    /// server inside (`ip` execs in place, so the PID is the server's).
    pub fn command_prefix(&self) -> Vec<String> {
        let ip = which("ip").map_or_else(|| "ip".to_string(), |p| p.display().to_string());
        vec![ip, "netns".into(), "exec".into(), self.namespace().to_string()]
    }

    /// `argv` wrapped to run inside the server host.
    pub fn wrap_command(&self, argv: &[String]) -> Vec<String> {
        let mut v = self.command_prefix();
        v.extend(argv.iter().cloned());
        v
    }

    /// Moves the calling thread into the server host's namespace, so a
    /// process it spawns starts inside (the pattern `server.rs` already uses
    /// for CPU pinning and cgroups: spawn from a short-lived thread).
    pub fn enter_current_thread(&self) -> Result<(), NetworkError> {
        enter_namespace(self.namespace())
    }

    /// Runs `f` on a thread inside the server host.
    pub fn run_inside<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T, NetworkError> {
        in_namespace(self.namespace(), f)
    }

    /// Process ids running inside.
    pub fn pids(&self) -> Vec<u32> {
        namespace_pids(self.namespace())
    }

    /// Removes everything (idempotent; drop does it too).
    pub fn remove(&mut self) -> Result<(), NetworkError> {
        let name = self.ns.name().to_string();
        // The generator-side nftables table (loss on the way down), if any.
        if which("nft").is_some() {
            let _ = sh(&["nft", "delete", "table", "netdev", &name]);
        }
        let r = self.ns.remove();
        // Normally gone with its peer; a half-made pair may remain.
        if link_exists(&self.host_if) {
            let _ = sh(&["ip", "link", "del", &self.host_if]);
        }
        r
    }
}

impl Drop for ServerHost {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

fn link_exists(name: &str) -> bool {
    std::path::Path::new("/sys/class/net").join(name).exists()
}

/// A /30 slot no address of this namespace uses, starting from one derived
/// from this process's id so concurrent runs rarely probe the same slots.
fn free_slot() -> Result<u32, NetworkError> {
    let out = sh(&["ip", "-4", "-o", "addr", "show"])?;
    let used: std::collections::BTreeSet<u32> = out
        .split_whitespace()
        .filter_map(|w| w.split_once('/').and_then(|(a, _)| a.parse::<Ipv4Addr>().ok()))
        .map(u32::from)
        .filter(|a| (BASE..BASE + SLOTS * 4).contains(a))
        .map(|a| (a - BASE) / 4)
        .collect();
    let start = (std::process::id().wrapping_mul(2_654_435_761) ^ NEXT.load(Ordering::Relaxed)) % SLOTS;
    (0..SLOTS)
        .map(|i| (start + i) % SLOTS)
        .find(|s| !used.contains(s))
        .ok_or_else(|| NetworkError::Unavailable {
            what: "every /30 of 169.254.128.0/17 is in use".into(),
            fix: "remove stale interfaces (`protobench` cleans its own with network::cleanup_leftovers)".into(),
        })
}

/// Removes namespaces, veth ends and nftables tables whose owner process is
/// gone (killed runs). Returns the names removed. Objects of live processes,
/// other sessions' included, are left alone.
pub fn cleanup_leftovers() -> Result<Vec<String>, NetworkError> {
    let mut removed = Vec::new();
    let dead = |name: &str| parse_owned_name(name).is_some_and(|(pid, _)| !owner_alive(pid));
    if let Ok(dir) = std::fs::read_dir(NETNS_DIR) {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if dead(&name) && remove_namespace(&name).is_ok() {
                removed.push(name);
            }
        }
    }
    if let Ok(dir) = std::fs::read_dir("/sys/class/net") {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if dead(&name) && sh(&["ip", "link", "del", &name]).is_ok() {
                removed.push(name);
            }
        }
    }
    if which("nft").is_some()
        && let Ok(out) = sh(&["nft", "list", "tables", "netdev"])
    {
        for name in out.lines().filter_map(|l| l.trim().strip_prefix("table netdev ")) {
            if dead(name) && sh(&["nft", "delete", "table", "netdev", name]).is_ok() {
                removed.push(format!("nft table netdev {name}"));
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_names_carry_the_pid() {
        let cases = [
            ("pb123n0", Some((123, 0))),
            ("pb123n45g", Some((123, 45))),
            ("pb4194304n999s", Some((4_194_304, 999))),
            ("pb123", None),    // no index
            ("pbxn1", None),    // no pid
            ("pb1n2x", None),   // unknown suffix
            ("eth0", None),     // not ours
            ("pb12n3gs", None), // two suffixes
            ("pbn3", None),     // empty pid
        ];
        for (name, want) in cases {
            assert_eq!(parse_owned_name(name), want, "{name}");
        }
        let mine = next_name();
        assert_eq!(parse_owned_name(&mine).map(|(p, _)| p), Some(std::process::id()));
        // interface names fit IFNAMSIZ (15 characters) even at the largest pid
        assert!("pb4194304n999g".len() <= 15);
    }
}
