//! Helpers shared by the CLI's integration tests (each test binary includes
//! this module with `mod common;` and uses what it needs).

#![allow(dead_code, unreachable_pub, reason = "each test binary uses a part")]

pub mod pki;

use std::io::BufRead;
use std::process::{Child, Command, Output, Stdio};

/// Starts `protobench serve` for one protocol with one worker (and `extra`
/// arguments); returns the child and its listening address. The caller kills
/// and waits for the child.
#[allow(clippy::zombie_processes, reason = "the caller kills and waits for the child")]
pub fn serve(protocol: &str, extra: &[&str]) -> (Child, String) {
    serve_with_env(protocol, extra, &[])
}

/// [`serve`] with extra environment variables for the server.
#[allow(clippy::zombie_processes, reason = "the caller kills and waits for the child")]
pub fn serve_with_env(protocol: &str, extra: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let flag = format!("--{protocol}");
    let mut args = vec!["serve", flag.as_str(), "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_protobench"));
    cmd.args(&args).env("PROTOBENCH_WORKERS", "1").envs(env.iter().copied());
    let (child, line) = spawn_listening(&mut cmd);
    (child, addr_of(&line))
}

/// Spawns `cmd` (no stdin, stderr discarded, stdout read) and waits for
/// its `listening ...` line; returns the child and that line. The caller
/// kills and waits for the child.
#[allow(clippy::zombie_processes, reason = "the caller kills and waits for the child")]
pub fn spawn_listening(cmd: &mut Command) -> (Child, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("a listening line").unwrap();
        if line.starts_with("listening ") {
            return (child, line);
        }
    }
}

/// The `addr=` of a `listening ...` line.
pub fn addr_of(line: &str) -> String {
    line.split(' ')
        .find_map(|kv| kv.strip_prefix("addr="))
        .unwrap_or_else(|| panic!("no addr in {line:?}"))
        .to_owned()
}

/// Runs `protobench ARGS` with no standard input and collects its output.
pub fn protobench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_protobench"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Its standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// What `v` breaks of the published JSON schema `docs/schema/<name>`, one
/// line each with where (empty when it keeps to it).
pub fn schema_errors(name: &str, v: &serde_json::Value) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schema")
        .join(name);
    let schema: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect()
}

/// The agents' shared token in tests.
pub const AGENT_TOKEN: &str = "agents-cli-test-token-0123456789";

/// Writes [`AGENT_TOKEN`] to `dir/token`; returns its path.
pub fn agent_token_file(dir: &std::path::Path) -> String {
    let p = dir.join("token");
    std::fs::write(&p, format!("{AGENT_TOKEN}\n")).unwrap();
    p.display().to_string()
}

/// Starts `protobench agent` on a free loopback port with the token in
/// `token_file`; returns it (killed when dropped).
pub fn agent(token_file: &str) -> Agent {
    Agent::start(&["--token-file", token_file])
}

/// A `protobench agent` process, killed and waited for when dropped.
pub struct Agent {
    /// The process.
    pub child: Child,
    /// Where it listens (`addr=` of its first line).
    pub addr: String,
    /// Its first stdout line.
    pub line: String,
}

impl Agent {
    /// Starts `protobench agent --listen 127.0.0.1:0 ARGS` (without the
    /// token in the environment) and reads its address; its stderr is kept
    /// for [`Agent::stop`].
    #[allow(clippy::zombie_processes, reason = "Agent's drop kills and waits")]
    pub fn start(args: &[&str]) -> Agent {
        let mut child = Command::new(env!("CARGO_BIN_EXE_protobench"))
            .args(["agent", "--listen", "127.0.0.1:0"])
            .args(args)
            .env_remove("PROTOBENCH_AGENT_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let line = lines.next().expect("the agent prints its address").unwrap();
        let addr = addr_of(&line);
        Agent { child, addr, line }
    }

    /// Stops it and returns what it wrote on stderr.
    pub fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        err
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether a TCP connection to `addr` (an IPv4 `ip:port` this host
/// listens on) is established, from `/proc/net/tcp`: a coordinator holds
/// one to each agent from its clock check to the end of a point.
pub fn connected(addr: &str) -> bool {
    let port: u16 = addr.rsplit_once(':').unwrap().1.parse().unwrap();
    let local = format!(":{port:04X} ");
    std::fs::read_to_string("/proc/net/tcp")
        .unwrap()
        .lines()
        .skip(1)
        .any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && format!("{} ", f[1]).ends_with(&local) && f[3] == "01"
        })
}

/// Waits until [`connected`] says a connection to `addr` is established
/// (a coordinator reached that agent); fails after `within`.
pub fn wait_connected(addr: &str, within: std::time::Duration) {
    let waiting = std::time::Instant::now();
    while !connected(addr) {
        assert!(
            waiting.elapsed() < within,
            "nothing connected to {addr} within {within:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A child process killed and waited for when dropped (a server).
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `protobench load` against `server` on `agents` with the token file
/// `token`, a loose clock bound (a busy machine), JSON out, plus `extra`.
pub fn agents_load_args<'a>(server: &'a str, agents: &'a str, token: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "load",
        "--protocol",
        "rest",
        server,
        "--workload",
        "inventory.s",
        "--agents",
        agents,
        "--agent-token-file",
        token,
        "--max-clock-uncertainty",
        "200ms",
        "-O",
        "json",
        "--quiet",
    ];
    a.extend_from_slice(extra);
    a
}
