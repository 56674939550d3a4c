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
    let mut child = Command::new(env!("CARGO_BIN_EXE_protobench"))
        .args(&args)
        .env("PROTOBENCH_WORKERS", "1")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("serve prints its listeners").unwrap();
        if let Some(rest) = line.strip_prefix("listening ") {
            let addr = rest
                .split(' ')
                .find_map(|kv| kv.strip_prefix("addr="))
                .unwrap()
                .to_owned();
            return (child, addr);
        }
    }
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
        let addr = line
            .split(' ')
            .find_map(|kv| kv.strip_prefix("addr="))
            .unwrap_or_else(|| panic!("no addr in {line:?}"))
            .to_owned();
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
