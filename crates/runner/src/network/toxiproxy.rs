//! Delay and jitter where the kernel has no `netem`: toxiproxy, run inside
//! the server host in front of each server port, with one latency toxic per
//! direction. Its API listens on the namespace's own loopback and is driven
//! with its own CLI through `ip netns exec`, so no control traffic crosses
//! the shaped link.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::NetworkError;
use super::capabilities::ToxiproxyBins;
use super::sys::{COMMAND_TIMEOUT, run};
use crate::server::LogTail;

/// The API address inside the server host.
const API: &str = "127.0.0.1:8474";
/// How long toxiproxy gets to answer its API after starting.
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Latency toxic settings for one direction, in whole milliseconds (the
/// toxic's resolution).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Latency {
    /// Added one-way delay.
    pub(crate) latency_ms: u64,
    /// +/- variation.
    pub(crate) jitter_ms: u64,
}

/// A toxiproxy server running inside a server host; killed on drop.
#[derive(Debug)]
pub(crate) struct Toxiproxy {
    child: Child,
    ns: String,
    bins: ToxiproxyBins,
    log: LogTail,
    up: Option<Latency>,
    down: Option<Latency>,
}

impl Toxiproxy {
    /// Starts `toxiproxy-server` inside `ns` and waits (at most
    /// [`START_TIMEOUT`]) until its API answers.
    pub(crate) fn start(
        ns: &str,
        bins: &ToxiproxyBins,
        up: Option<Latency>,
        down: Option<Latency>,
    ) -> Result<Toxiproxy, NetworkError> {
        let (host, port) = API.split_once(':').expect("API has a port");
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(&bins.server)
            .args(["-host", host, "-port", port])
            // It logs every accepted client at info level.
            .env("LOG_LEVEL", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| NetworkError::Io {
                what: format!("cannot start {}", bins.server.display()),
                source,
            })?;
        let log = LogTail::default();
        if let Some(err) = child.stderr.take() {
            let log = log.clone();
            std::thread::spawn(move || {
                use std::io::BufRead;
                for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                    log.push(&line);
                }
            });
        }
        let mut proxy = Toxiproxy {
            child,
            ns: ns.to_string(),
            bins: bins.clone(),
            log,
            up,
            down,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = proxy.child.try_wait() {
                return Err(NetworkError::Measure(format!(
                    "toxiproxy-server exited with {status} at start: {}",
                    proxy.log.text()
                )));
            }
            if proxy.cli(&["list"]).is_ok() {
                return Ok(proxy);
            }
            if Instant::now() >= deadline {
                return Err(NetworkError::Timeout {
                    command: format!("toxiproxy-server in {ns} answering on {API}"),
                    seconds: START_TIMEOUT.as_secs(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn cli(&self, args: &[&str]) -> Result<String, NetworkError> {
        let cli = self.bins.cli.display().to_string();
        let host = format!("http://{API}");
        let mut argv = vec!["ip", "netns", "exec", &self.ns, &cli, "-h", &host];
        argv.extend_from_slice(args);
        run(&argv, None, COMMAND_TIMEOUT)
    }

    /// Creates proxy `name` listening on `listen` and forwarding to
    /// `upstream`, with the latency toxics of both directions.
    pub(crate) fn add_proxy(&self, name: &str, listen: SocketAddr, upstream: SocketAddr) -> Result<(), NetworkError> {
        let (l, u) = (listen.to_string(), upstream.to_string());
        self.cli(&["create", "-l", &l, "-u", &u, name])?;
        for (stream, lat) in [("--upstream", self.up), ("--downstream", self.down)] {
            let Some(lat) = lat else { continue };
            let toxic = format!("latency{}", &stream[1..]);
            let (a, b) = (
                format!("latency={}", lat.latency_ms),
                format!("jitter={}", lat.jitter_ms),
            );
            self.cli(&[
                "toxic", "add", "-n", &toxic, "-t", "latency", "-a", &a, "-a", &b, stream, name,
            ])?;
        }
        Ok(())
    }

    /// Deletes proxy `name`.
    pub(crate) fn remove_proxy(&self, name: &str) -> Result<(), NetworkError> {
        self.cli(&["delete", name]).map(|_| ())
    }

    /// Its process id (the server itself: `ip netns exec` execs in place).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU time it has used so far (user + system, from `/proc/PID/stat`).
    pub(crate) fn cpu_ns(&self) -> u64 {
        crate::procfs::sample(self.pid()).cpu_ns
    }

    /// Its last output lines.
    pub(crate) fn log_tail(&self) -> String {
        self.log.text()
    }
}

impl Drop for Toxiproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
