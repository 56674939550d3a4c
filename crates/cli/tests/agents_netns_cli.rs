//! Agents on emulated hosts (docs/distributed.md): the Rust server in its
//! own network namespace and three agents each in theirs, all on one
//! bridged LAN with the coordinator (this process's namespace), over real
//! sockets. The merged rate is the sum of the agents', each agent's clock
//! offset is reported.
//!
//! Root and iproute2 are needed; without them the test skips with a
//! printed reason, and fails under `PROTOBENCH_REQUIRE_NETNS=1` (CI).

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "agents-netns-test-token-0123456789";
/// The LAN's /24 (a private range no test elsewhere uses).
const NET: &str = "10.254.213";

fn can_emulate() -> bool {
    let caps = protobench_runner::network::Capabilities::detect();
    let missing: Vec<&str> = [(!caps.root).then_some("root"), (!caps.ip).then_some("iproute2")]
        .into_iter()
        .flatten()
        .collect();
    if missing.is_empty() {
        return true;
    }
    let reason = format!("emulated hosts need {}", missing.join(", "));
    if std::env::var("PROTOBENCH_REQUIRE_NETNS").as_deref() == Ok("1") {
        panic!("{reason} (PROTOBENCH_REQUIRE_NETNS=1)");
    }
    eprintln!("skipped: {reason}");
    false
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A bridged LAN: a bridge in its own namespace, and one veth per host
/// (the coordinator's end in this namespace). Removed on drop (deleting
/// the namespaces takes their veths and their peers along).
struct Lan {
    prefix: String,
    namespaces: Vec<String>,
    children: Vec<Child>,
}

impl Lan {
    fn new() -> Lan {
        let prefix = format!("pbag{}", std::process::id());
        let bridge = format!("{prefix}br");
        ip(&["netns", "add", &bridge]);
        ip(&["-n", &bridge, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &bridge, "link", "set", "br0", "up"]);
        Lan {
            prefix,
            namespaces: vec![bridge],
            children: Vec::new(),
        }
    }

    /// Attaches host `k` with address NET.`host`: in a new namespace, or
    /// (`None`) this process's own.
    fn attach(&mut self, k: usize, host: u8, namespace: Option<&str>) -> String {
        let (outer, inner) = (
            format!("pa{}{k}", std::process::id()),
            format!("pb{}{k}", std::process::id()),
        );
        let bridge = self.namespaces[0].clone();
        ip(&["link", "add", &inner, "type", "veth", "peer", "name", &outer]);
        ip(&["link", "set", &outer, "netns", &bridge]);
        ip(&["-n", &bridge, "link", "set", &outer, "master", "br0", "up"]);
        let addr = format!("{NET}.{host}");
        match namespace {
            Some(ns) => {
                let ns = format!("{}{ns}", self.prefix);
                ip(&["netns", "add", &ns]);
                self.namespaces.push(ns.clone());
                ip(&["link", "set", &inner, "netns", &ns]);
                ip(&["-n", &ns, "addr", "add", &format!("{addr}/24"), "dev", &inner]);
                ip(&["-n", &ns, "link", "set", &inner, "up"]);
                ip(&["-n", &ns, "link", "set", "lo", "up"]);
            }
            None => {
                ip(&["addr", "add", &format!("{addr}/24"), "dev", &inner]);
                ip(&["link", "set", &inner, "up"]);
            }
        }
        addr
    }

    /// Starts `protobench ARGS` inside namespace `ns`; returns its first
    /// stdout line (the `listening` line).
    fn start(&mut self, ns: &str, args: &[&str]) -> String {
        let ns = format!("{}{ns}", self.prefix);
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &ns, env!("CARGO_BIN_EXE_protobench")])
            .args(args)
            .env("PROTOBENCH_WORKERS", "1")
            .env_remove("PROTOBENCH_AGENT_TOKEN");
        let (child, line) = common::spawn_listening(&mut cmd);
        self.children.push(child);
        line
    }
}

impl Drop for Lan {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in self.namespaces.iter().rev() {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

#[test]
fn three_agents_on_their_own_hosts_load_a_server_on_its_own() {
    if !can_emulate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, TOKEN).unwrap();
    let token = token.to_str().unwrap();
    let mut lan = Lan::new();
    lan.attach(0, 1, None);
    let server_ip = lan.attach(1, 2, Some("s"));
    let agent_ips: Vec<String> = (0..3)
        .map(|i| lan.attach(2 + i, 10 + i as u8, Some(&format!("a{i}"))))
        .collect();
    let server = format!("{server_ip}:18080");
    lan.start("s", &["serve", "--rest", &server]);
    let mut agents = Vec::new();
    for (i, a) in agent_ips.iter().enumerate() {
        let listen = format!("{a}:7070");
        let line = lan.start(&format!("a{i}"), &["agent", "--listen", &listen, "--token-file", token]);
        assert!(line.contains(&format!("addr={listen}")), "{line}");
        agents.push(listen);
    }
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_protobench"))
        .args([
            "load",
            "--protocol",
            "rest",
            &server,
            "--workload",
            "inventory.s",
            "--agents",
            &agents.join(","),
            "--agent-token-file",
            token,
            "--rate",
            "300",
            "-c",
            "60",
            "--duration",
            "3s",
            "--max-clock-uncertainty",
            "200ms",
            "-O",
            "json",
            "--quiet",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(120));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let lanes = r["agents"].as_array().unwrap();
    assert_eq!(lanes.len(), 3);
    assert!(r.get("incomplete").is_none(), "{r}");
    let lane_rates: f64 = lanes.iter().map(|l| l["rate"].as_f64().unwrap()).sum();
    let rate = r["rate"].as_f64().unwrap();
    assert!(
        (rate - lane_rates).abs() <= 0.02 * rate,
        "merged {rate}, lanes {lane_rates}"
    );
    assert!((rate - 300.0).abs() < 30.0, "merged rate {rate}");
    for (i, l) in lanes.iter().enumerate() {
        assert_eq!(l["agent"], agents[i]);
        assert!(l["successes"].as_u64().unwrap() > 200, "{l}");
        // Offsets are reported (the same kernel clock here: near zero,
        // within the uncertainty plus scheduling noise).
        let (offset, unc) = (
            l["clock_offset_ns"].as_i64().unwrap(),
            l["clock_uncertainty_ns"].as_i64().unwrap(),
        );
        assert!(unc > 0 && offset.abs() < 50_000_000, "{l}");
    }
    assert_eq!(
        r["calls"].as_u64().unwrap(),
        lanes.iter().map(|l| l["calls"].as_u64().unwrap()).sum::<u64>()
    );
}
