//! Starting and stopping one server process from its manifest, under the
//! environment contract of `contract/README.md`.
//!
//! The runner asks for port 0 on loopback for every protocol it needs
//! (`PROTOBENCH_<P>_ADDR=127.0.0.1:0`) and reads the real ports from the
//! server's `listening protocol=P addr=A tls=B` lines. Everything the server
//! writes (stdout and stderr) goes to a bounded tail kept for failure reports.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use protobench_model::load::Protocol;

use crate::isolation::{self, Cgroup};
use crate::manifest::Manifest;
use crate::plan::ServerGroup;
use crate::units::CpuSet;

/// Lines of server output kept.
pub const LOG_TAIL_LINES: usize = 40;

/// How long a server gets between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// The last lines a server wrote.
#[derive(Debug, Clone, Default)]
pub struct LogTail(Arc<Mutex<VecDeque<String>>>);

impl LogTail {
    /// Adds a line (long lines are cut).
    pub fn push(&self, line: &str) {
        let mut q = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() == LOG_TAIL_LINES {
            q.pop_front();
        }
        let mut l = line.trim_end().to_string();
        if l.len() > 500 {
            let mut cut = 500;
            while !l.is_char_boundary(cut) {
                cut -= 1;
            }
            l.truncate(cut);
            l.push('…');
        }
        q.push_back(l);
    }

    /// The tail as text.
    pub fn text(&self) -> String {
        let q = self.0.lock().unwrap_or_else(|e| e.into_inner());
        q.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

/// One `listening` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listening {
    /// The protocol.
    pub protocol: Protocol,
    /// `ip:port`.
    pub addr: String,
    /// TLS on.
    pub tls: bool,
}

/// Parses `listening protocol=<p> addr=<ip:port> tls=<true|false>`.
pub fn parse_listening(line: &str) -> Option<Listening> {
    let rest = line.trim().strip_prefix("listening ")?;
    let mut protocol = None;
    let mut addr = None;
    let mut tls = None;
    for kv in rest.split_whitespace() {
        match kv.split_once('=')? {
            ("protocol", v) => protocol = v.parse().ok(),
            ("addr", v) => addr = Some(v.to_string()),
            ("tls", v) => tls = Some(v == "true"),
            _ => {}
        }
    }
    Some(Listening {
        protocol: protocol?,
        addr: addr?,
        tls: tls.unwrap_or(false),
    })
}

/// A certificate and key for TLS servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
}

/// Everything needed to start one server process.
#[derive(Debug, Clone)]
pub struct StartSpec {
    /// The manifest.
    pub manifest: Manifest,
    /// The group's settings.
    pub group: ServerGroup,
    /// This executable (for `{protobench}`).
    pub exe: PathBuf,
    /// `PROTOBENCH_DATASET`, when known.
    pub dataset: Option<PathBuf>,
    /// Certificate for TLS groups.
    pub tls: Option<TlsFiles>,
    /// CPUs to pin to.
    pub cpus: Option<CpuSet>,
    /// Extra environment (tests).
    pub extra_env: Vec<(String, String)>,
}

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The process could not be spawned.
    #[error("cannot start server `{server}` ({command})")]
    Spawn {
        /// Server name.
        server: String,
        /// The command line.
        command: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// It exited before listening.
    #[error("server `{server}` exited with {status} before listening")]
    Exited {
        /// Server name.
        server: String,
        /// Exit status.
        status: String,
        /// Its output.
        log_tail: String,
    },
    /// Not every listening line appeared in time.
    #[error("server `{server}` did not report listening for {missing} within {timeout_s} s (start_timeout_s)")]
    Timeout {
        /// Server name.
        server: String,
        /// Protocols without a listening line.
        missing: String,
        /// The limit.
        timeout_s: u64,
        /// Its output.
        log_tail: String,
    },
    /// The server host's network namespace could not be entered.
    #[error("server `{server}`: cannot start it inside its network namespace")]
    Namespace {
        /// Server name.
        server: String,
        /// The cause.
        #[source]
        source: crate::network::NetworkError,
    },
    /// Pinning or limits failed.
    #[error("server `{server}`: isolation failed")]
    Isolation {
        /// Server name.
        server: String,
        /// The cause.
        #[source]
        source: isolation::IsolationError,
    },
}

impl StartError {
    /// The server's output, when it produced any.
    pub fn log_tail(&self) -> Option<String> {
        match self {
            StartError::Exited { log_tail, .. } | StartError::Timeout { log_tail, .. } => Some(log_tail.clone()),
            _ => None,
        }
    }
}

/// A running server.
#[derive(Debug)]
pub struct RunningServer {
    name: String,
    child: Child,
    /// Listen address by protocol.
    pub listeners: BTreeMap<Protocol, String>,
    log: LogTail,
    keeper: Option<Keeper>,
    cgroup: Option<Arc<Cgroup>>,
    started: Instant,
}

/// How a server ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    /// Exit status, `None` if it could not be collected.
    pub status: Option<String>,
    /// Killed with SIGKILL after the grace period.
    pub killed: bool,
    /// Its last output.
    pub log_tail: String,
}

fn spawn_reader(mut r: impl Read + Send + 'static, log: LogTail, tx: Option<mpsc::Sender<Listening>>) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(&mut r);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf);
                    log.push(&line);
                    if let (Some(tx), Some(l)) = (&tx, parse_listening(&line)) {
                        let _ = tx.send(l);
                    }
                }
            }
        }
    });
}

fn status_text(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => s.to_string(),
    }
}

/// The server's start command, its output piped; run in the server's
/// directory unless embedded. With a `guard` (this executable), the command
/// runs through [`crate::guard`], so the server ends when the runner does.
fn command(m: &Manifest, argv: &[String], guard: Option<&Path>) -> Command {
    // A relative start path is relative to the server's directory.
    let relative = !m.is_embedded() && argv[0].contains('/') && !Path::new(&argv[0]).is_absolute();
    let program = if relative {
        let p = m.dir.join(&argv[0]);
        std::path::absolute(&p).unwrap_or(p)
    } else {
        PathBuf::from(&argv[0])
    };
    let mut cmd = match guard {
        Some(g) => crate::guard::command(g, &program, &argv[1..]),
        None => {
            let mut c = Command::new(program);
            c.args(&argv[1..]);
            c
        }
    };
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if !m.is_embedded() {
        cmd.current_dir(&m.dir);
    }
    cmd
}

/// The contract's variables only; inherited `PROTOBENCH_*` are cleared.
fn set_env(cmd: &mut Command, spec: &StartSpec) {
    for (k, _) in std::env::vars() {
        if k.starts_with("PROTOBENCH_") {
            cmd.env_remove(k);
        }
    }
    let g = &spec.group;
    for p in &g.protocols {
        cmd.env(p.addr_env(), "127.0.0.1:0");
    }
    let workers = g
        .workers
        .map(|w| w as usize)
        .or(spec.cpus.as_ref().map(CpuSet::len))
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    cmd.env("PROTOBENCH_WORKERS", workers.to_string());
    cmd.env("PROTOBENCH_FAILURE_RATE", g.failure_rate.to_string());
    cmd.env("PROTOBENCH_FAILURE_SEED", g.failure_seed.to_string());
    if let Some(st) = &g.service_time {
        cmd.env("PROTOBENCH_SERVICE_TIME", st);
    }
    if let Some(t) = &spec.tls {
        cmd.env("PROTOBENCH_TLS_CERT", &t.cert)
            .env("PROTOBENCH_TLS_KEY", &t.key);
    }
    if let Some(d) = &spec.dataset {
        cmd.env("PROTOBENCH_DATASET", d);
    }
    for (k, v) in &spec.extra_env {
        cmd.env(k, v);
    }
}

/// The thread that forked a server. It lives (asleep) until the server has
/// been reaped, because the kernel sends a server its parent-death signal
/// when the *thread* that forked it exits ([`crate::guard`]).
#[derive(Debug)]
struct Keeper {
    release: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Keeper {
    fn drop(&mut self) {
        drop(self.release.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Spawns `cmd` from a thread pinned to `cpus` and inside `cgroup`, so
/// everything the server creates inherits both. When that thread could not
/// enter the cgroup, the process is moved into it (and killed if that fails).
/// The thread stays until the returned [`Keeper`] is dropped.
fn spawn_isolated(
    mut cmd: Command,
    cpus: Option<&CpuSet>,
    cgroup: Option<&Arc<Cgroup>>,
    netns: Option<&str>,
    server: &str,
    command_line: String,
) -> Result<(Child, Keeper), StartError> {
    let (result_tx, result_rx) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let (cpus, cgroup_for_thread) = (cpus.cloned(), cgroup.cloned());
    // The spawning thread enters the server host first: the process it
    // forks starts there (the thread is this one's alone, so nothing else
    // moves).
    let (ns_tx, ns_rx) = mpsc::channel();
    let netns = netns.map(str::to_owned);
    let thread = std::thread::Builder::new()
        .name(format!("server-{server}"))
        .spawn(move || {
            if let Some(ns) = &netns
                && let Err(e) = crate::network::topology::enter_namespace(ns)
            {
                let _ = ns_tx.send(Err(e));
                return;
            }
            let _ = ns_tx.send(Ok(()));
            let spawned = (|| {
                if let Some(c) = &cpus {
                    isolation::pin_current_thread(c)?;
                }
                let mut entered = false;
                if let Some(cg) = &cgroup_for_thread {
                    entered = cg.enter_current_thread().is_ok();
                }
                Ok::<_, isolation::IsolationError>((cmd.spawn(), entered))
            })();
            let _ = result_tx.send(spawned);
            // Until the server is gone (the sender is dropped).
            let _ = released.recv();
            // The last holder removes the cgroup, after the server.
            drop(cgroup_for_thread);
        })
        .map_err(|source| StartError::Spawn {
            server: server.to_string(),
            command: command_line.clone(),
            source,
        })?;
    let keeper = Keeper {
        release: Some(release),
        thread: Some(thread),
    };
    if let Ok(Err(source)) = ns_rx.recv() {
        return Err(StartError::Namespace {
            server: server.to_string(),
            source,
        });
    }
    let spawn_result = result_rx.recv().expect("spawn thread sends its result");
    let (spawned, entered) = spawn_result.map_err(|source| StartError::Isolation {
        server: server.to_string(),
        source,
    })?;
    let mut child = spawned.map_err(|source| StartError::Spawn {
        server: server.to_string(),
        command: command_line,
        source,
    })?;
    if let Some(cg) = cgroup
        && !entered
        && let Err(source) = cg.add_process(child.id())
    {
        let _ = child.kill();
        let _ = child.wait();
        return Err(StartError::Isolation {
            server: server.to_string(),
            source,
        });
    }
    Ok((child, keeper))
}

impl RunningServer {
    /// Starts the server, pinned and limited, and waits for its listening
    /// lines (at most `start_timeout_s`).
    pub fn start(spec: &StartSpec, cgroup: Option<Cgroup>) -> Result<RunningServer, StartError> {
        RunningServer::start_guarded(spec, cgroup, None)
    }

    /// [`RunningServer::start`] through `guard` (this executable, which has
    /// the [`crate::guard`] subcommand): the server then ends when this
    /// process ends, however it ends.
    pub fn start_guarded(
        spec: &StartSpec,
        cgroup: Option<Cgroup>,
        guard: Option<&Path>,
    ) -> Result<RunningServer, StartError> {
        RunningServer::start_in_namespace(spec, cgroup, guard, None)
    }

    /// [`RunningServer::start_guarded`] inside the network namespace `netns`
    /// (an emulated server host, `crate::network::ServerHost::namespace`).
    /// Its listen addresses must be the host's (`PROTOBENCH_<P>_ADDR` in
    /// `spec.extra_env`, which overrides the loopback default).
    pub fn start_in_namespace(
        spec: &StartSpec,
        cgroup: Option<Cgroup>,
        guard: Option<&Path>,
        netns: Option<&str>,
    ) -> Result<RunningServer, StartError> {
        let cgroup = cgroup.map(Arc::new);
        let m = &spec.manifest;
        let argv = m.start_command(&spec.exe);
        let mut cmd = command(m, &argv, guard);
        set_env(&mut cmd, spec);
        let (mut child, keeper) =
            spawn_isolated(cmd, spec.cpus.as_ref(), cgroup.as_ref(), netns, &m.name, argv.join(" "))?;
        let log = LogTail::default();
        let (tx, rx) = mpsc::channel();
        spawn_reader(child.stdout.take().expect("piped"), log.clone(), Some(tx));
        spawn_reader(child.stderr.take().expect("piped"), log.clone(), None);

        let mut running = RunningServer {
            name: m.name.clone(),
            child,
            listeners: BTreeMap::new(),
            log,
            keeper: Some(keeper),
            cgroup,
            started: Instant::now(),
        };
        running.wait_listening(&spec.group.protocols, m.start_timeout_s, &rx)?;
        Ok(running)
    }

    /// Collects the listening lines of `protocols` from `rx` until each has
    /// one; fails when the server exits first or after `timeout_s` (then
    /// stopping it).
    fn wait_listening(
        &mut self,
        protocols: &[Protocol],
        timeout_s: u64,
        rx: &mpsc::Receiver<Listening>,
    ) -> Result<(), StartError> {
        let deadline = Instant::now() + Duration::from_secs(timeout_s);
        while protocols.iter().any(|p| !self.listeners.contains_key(p)) {
            if let Ok(Some(status)) = self.child.try_wait() {
                // Let the readers drain the last lines.
                std::thread::sleep(Duration::from_millis(50));
                return Err(StartError::Exited {
                    server: self.name.clone(),
                    status: status_text(status),
                    log_tail: self.log.text(),
                });
            }
            let now = Instant::now();
            if now >= deadline {
                let missing: Vec<&str> = protocols
                    .iter()
                    .filter(|p| !self.listeners.contains_key(*p))
                    .map(|p| p.name())
                    .collect();
                let missing = missing.join(", ");
                let log_tail = self.log.text();
                self.stop(Duration::from_secs(2));
                return Err(StartError::Timeout {
                    server: self.name.clone(),
                    missing,
                    timeout_s,
                    log_tail,
                });
            }
            if let Ok(l) = rx.recv_timeout((deadline - now).min(Duration::from_millis(50))) {
                self.listeners.insert(l.protocol, l.addr);
            }
        }
        Ok(())
    }

    /// Server name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How long it has been running.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// `None` while running, else how it exited.
    pub fn exited(&mut self) -> Option<String> {
        self.child.try_wait().ok().flatten().map(status_text)
    }

    /// Its last output.
    pub fn log_tail(&self) -> String {
        self.log.text()
    }

    /// Peak memory from the cgroup, when limited.
    pub fn cgroup_memory_peak(&self) -> Option<u64> {
        self.cgroup.as_ref()?.memory_peak_bytes()
    }

    /// Times the memory limit was hit, when limited.
    pub fn cgroup_memory_limit_hits(&self) -> Option<u64> {
        self.cgroup.as_ref()?.memory_limit_hits()
    }

    /// SIGTERM, then SIGKILL after `grace`; waits for the exit.
    pub fn stop(&mut self, grace: Duration) -> Stopped {
        let pid = Pid::from_raw(self.child.id() as i32);
        let mut killed = false;
        let status = match self.child.try_wait() {
            Ok(Some(s)) => Some(status_text(s)),
            _ => {
                let _ = kill(pid, Signal::SIGTERM);
                let deadline = Instant::now() + grace;
                loop {
                    match self.child.try_wait() {
                        Ok(Some(s)) => break Some(status_text(s)),
                        Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                        Ok(None) => {
                            killed = true;
                            let _ = self.child.kill();
                            break self.child.wait().ok().map(status_text);
                        }
                        Err(_) => break None,
                    }
                }
            }
        };
        // Workers of multi-process servers that outlived their parent.
        for (p, _) in crate::procfs::tree(self.child.id()) {
            if p != self.child.id() {
                let _ = kill(Pid::from_raw(p as i32), Signal::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(30));
        Stopped {
            status,
            killed,
            log_tail: self.log.text(),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.stop(Duration::from_secs(2));
        }
        // The forking thread ends once the server is gone, then the cgroup
        // (if any) is removed.
        self.keeper.take();
        self.cgroup.take();
    }
}

/// Writes a self-signed certificate for `localhost` and `127.0.0.1` into `dir`.
pub fn self_signed(dir: &Path) -> Result<TlsFiles, String> {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .map_err(|e| format!("cannot generate a certificate: {e}"))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let files = TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    std::fs::write(&files.cert, cert.cert.pem()).map_err(|e| format!("cannot write {}: {e}", files.cert.display()))?;
    std::fs::write(&files.key, cert.signing_key.serialize_pem())
        .map_err(|e| format!("cannot write {}: {e}", files.key.display()))?;
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_lines_table() {
        let cases = [
            (
                "listening protocol=rest addr=127.0.0.1:4000 tls=false",
                Some(("rest", "127.0.0.1:4000", false)),
            ),
            (
                "listening protocol=rest-h2 addr=127.0.0.1:4001 tls=true\n",
                Some(("rest-h2", "127.0.0.1:4001", true)),
            ),
            (
                "listening addr=127.0.0.1:1 protocol=grpc tls=false",
                Some(("grpc", "127.0.0.1:1", false)),
            ), // any order
            ("listening protocol=soap", None),                         // no address
            ("INFO listening protocol=rest addr=1:1 tls=false", None), // not at the start
            ("generated certificate cert=/tmp/c key=/tmp/k", None),
        ];
        for (line, want) in cases {
            let got = parse_listening(line);
            let want = want.map(|(p, a, t)| Listening {
                protocol: p.parse().unwrap(),
                addr: a.into(),
                tls: t,
            });
            assert_eq!(got, want, "{line}");
        }
    }

    #[test]
    fn log_tail_keeps_the_last_lines() {
        let t = LogTail::default();
        for i in 0..100 {
            t.push(&format!("line {i}\n"));
        }
        let text = t.text();
        assert_eq!(text.lines().count(), LOG_TAIL_LINES);
        assert!(text.ends_with("line 99"));
        t.push(&"é".repeat(600));
        assert!(t.text().ends_with('…'));
    }
}
