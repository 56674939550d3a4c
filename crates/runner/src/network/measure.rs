//! What an emulated link achieves, measured before the points run, and the
//! rules that read a point against it.
//!
//! A small sink runs on threads of this process with its listening socket
//! inside the server host; the generator side talks to it through the same
//! path the load engine uses (toxiproxy included, when it adds delay):
//!
//! - connect time: median TCP handshake straight to the sink (the kernel
//!   path: veth, tbf, loss, netem);
//! - RTT: median of 1-byte echoes on one connection (what a call sees);
//! - throughput each way: a bulk transfer sized to last about 1.5 s at the
//!   profile's rate, timed at the receiver from first to last byte (TCP
//!   payload, the unit the engine's `bytes_sent`/`bytes_received` use);
//! - loss: the nftables rules' packet counters, when they drop;
//!   retransmissions: `RetransSegs` of the sending side's namespace.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::NetworkError;
use super::link::{EmulatedLink, Mechanism, Mechanisms};
use super::profile::{LinkProfile, format_duration, format_rate};
use super::sys::{run, sh};
use super::topology::ServerHost;

/// Where a run stores what its link was: the profile, how it was applied,
/// and what was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkReport {
    /// The profile asked for.
    pub profile: LinkProfile,
    /// What shaped each property.
    pub mechanisms: Mechanisms,
    /// Where the applied link differs from the profile.
    pub notes: Vec<String>,
    /// What the link achieved, measured before the points ran.
    pub achieved: AchievedLink,
    /// Where the achieved link is far from the profile.
    pub warnings: Vec<String>,
}

/// Measuring a link and the record of it live here, beside the
/// measurement; creating and shaping it is [`super::link`]'s.
impl EmulatedLink {
    /// Measures what the link achieves (RTT, throughput each way, loss and
    /// retransmissions): see [`measure`].
    pub fn measure(&mut self, opts: &MeasureOptions) -> Result<AchievedLink, NetworkError> {
        measure(self, opts)
    }

    /// The record to store with the run.
    pub fn report(&self, achieved: AchievedLink) -> LinkReport {
        let plan = self.plan();
        LinkReport {
            warnings: far_from_profile(&plan.profile, &achieved),
            profile: plan.profile.clone(),
            mechanisms: plan.mechanisms,
            notes: plan.notes.clone(),
            achieved,
        }
    }
}

/// Share of a link's wire rate that reaches the application as TCP payload
/// on 1500-byte Ethernet frames: 1448 payload bytes (40 of IP/TCP headers,
/// 12 of timestamps) per 1514 bytes that tbf counts.
pub const PAYLOAD_SHARE: f64 = 1448.0 / 1514.0;

/// A direction is link-bound when the point moved at least this share of
/// the link's measured throughput.
pub const LINK_BOUND_SHARE: f64 = 0.9;

/// How the measurement runs.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasureOptions {
    /// TCP connects timed.
    pub connects: u32,
    /// 1-byte echoes timed.
    pub echoes: u32,
    /// Target length of each bulk transfer.
    pub transfer: Duration,
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            connects: 20,
            echoes: 30,
            transfer: Duration::from_millis(1500),
        }
    }
}

/// One direction as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AchievedDirection {
    /// TCP payload bits per second, first to last byte at the receiver.
    pub goodput_bps: f64,
    /// Payload bytes moved.
    pub bytes: u64,
    /// First to last byte (ns).
    pub duration_ns: u64,
    /// All bytes arrived before the deadline.
    pub complete: bool,
    /// IPv4 packets that reached the loss rule (nftables only).
    pub packets: Option<u64>,
    /// Of those, dropped.
    pub dropped_packets: Option<u64>,
    /// TCP segments retransmitted by the sender's namespace during the
    /// transfer. Up: the runner's namespace, so other traffic of this host
    /// counts too; down: the server host's, only this link.
    pub retransmitted_segments: Option<u64>,
}

impl AchievedDirection {
    /// Dropped share of packets in percent, when counted.
    pub fn loss_percent(&self) -> Option<f64> {
        match (self.packets, self.dropped_packets) {
            (Some(p), Some(d)) if p > 0 => Some(d as f64 * 100.0 / p as f64),
            _ => None,
        }
    }
}

/// What the link achieved. Stored with the run (inside [`super::LinkReport`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AchievedLink {
    /// Median 1-byte echo round trip (ns), through the engine's path.
    pub rtt_ns: u64,
    /// Fastest echo (ns).
    pub rtt_min_ns: u64,
    /// Slowest echo (ns).
    pub rtt_max_ns: u64,
    /// Echoes timed.
    pub rtt_samples: u32,
    /// Median TCP connect time straight to the server host (ns).
    pub connect_ns: u64,
    /// Generator to server host.
    pub up: AchievedDirection,
    /// Server host to generator.
    pub down: AchievedDirection,
    /// toxiproxy's CPU time during the measurement (ns), when it runs.
    pub toxiproxy_cpu_ns: Option<u64>,
    /// Wall time the measurement took (ns).
    pub measured_ns: u64,
}

/// Warnings when the achieved link is far from the profile: throughput
/// more than 10% off the payload a rate carries, RTT off by more than
/// max(1 ms, 10%), counted loss off by half, or a transfer cut short.
pub fn far_from_profile(profile: &LinkProfile, achieved: &AchievedLink) -> Vec<String> {
    let mut out = Vec::new();
    for (side, want, got) in [
        ("up", &profile.up, &achieved.up),
        ("down", &profile.down, &achieved.down),
    ] {
        if !got.complete {
            out.push(format!(
                "{side}: the transfer did not finish in time ({} bytes arrived)",
                got.bytes
            ));
        }
        if let Some(rate) = want.rate_bps {
            let expected = rate as f64 * PAYLOAD_SHARE;
            let off = got.goodput_bps / expected - 1.0;
            if off.abs() > 0.10 {
                out.push(format!(
                    "{side}: achieved {:.1} Mbit/s, {:.0}% {} the {:.1} Mbit/s of payload a {} link carries",
                    got.goodput_bps / 1e6,
                    off.abs() * 100.0,
                    if off < 0.0 { "below" } else { "above" },
                    expected / 1e6,
                    format_rate(rate)
                ));
            }
        }
        if want.loss_percent > 0.0
            && let (Some(p), Some(l)) = (got.packets, got.loss_percent())
            && p >= 2000
            && (l < want.loss_percent * 0.5 || l > want.loss_percent * 1.5)
        {
            out.push(format!(
                "{side}: {l:.2}% of {p} packets dropped, the profile asks for {}%",
                want.loss_percent
            ));
        }
    }
    let want = profile.rtt_ns() as f64;
    let tol = (want * 0.10).max(1e6);
    if (achieved.rtt_ns as f64 - want).abs() > tol {
        out.push(format!(
            "round trip {:.2} ms, the profile asks for {:.2} ms",
            achieved.rtt_ns as f64 / 1e6,
            want / 1e6
        ));
    }
    out
}

/// Whether a point was limited by the link, per direction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LinkBound {
    /// Share of the measured up throughput the point used.
    pub up_share: f64,
    /// Share of the measured down throughput the point used.
    pub down_share: f64,
    /// `up_share >= LINK_BOUND_SHARE`.
    pub up: bool,
    /// `down_share >= LINK_BOUND_SHARE`.
    pub down: bool,
}

impl LinkBound {
    /// Either direction is bound (the study's starred figures).
    pub fn any(&self) -> bool {
        self.up || self.down
    }
}

/// The link-bound rule: a direction is bound when calls/s x bytes per call
/// (the engine's `bytes_sent_per_call` up, `bytes_received_per_call` down)
/// reaches [`LINK_BOUND_SHARE`] of the link's measured goodput that way.
pub fn link_bound(
    calls_per_second: f64,
    bytes_sent_per_call: f64,
    bytes_received_per_call: f64,
    achieved: &AchievedLink,
) -> LinkBound {
    let share = |bytes: f64, d: &AchievedDirection| {
        if d.goodput_bps > 0.0 {
            calls_per_second * bytes * 8.0 / d.goodput_bps
        } else {
            0.0
        }
    };
    let (up_share, down_share) = (
        share(bytes_sent_per_call, &achieved.up),
        share(bytes_received_per_call, &achieved.down),
    );
    LinkBound {
        up_share,
        down_share,
        up: up_share >= LINK_BOUND_SHARE,
        down: down_share >= LINK_BOUND_SHARE,
    }
}

/// Bytes for one bulk transfer: `transfer` at the rate, 1 MiB to 1 GiB;
/// 256 MiB when the direction is unshaped.
fn transfer_bytes(rate_bps: Option<u64>, transfer: Duration) -> u64 {
    match rate_bps {
        Some(r) => ((r as f64 / 8.0 * transfer.as_secs_f64()) as u64).clamp(1 << 20, 1 << 30),
        None => 256 << 20,
    }
}

const IO_TIMEOUT: Duration = Duration::from_secs(5);
const CHUNK: usize = 64 * 1024;

/// The measurement sink: its socket lives in the server host, its threads
/// in this process. Stopped on drop.
struct Sink {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Sink {
    fn start(host: &ServerHost) -> Result<Sink, NetworkError> {
        let ip = host.server_ip();
        let listener = host
            .run_inside(move || TcpListener::bind((ip, 0)))?
            .map_err(|source| NetworkError::Io {
                what: format!("cannot listen on {ip} inside {}", host.namespace()),
                source,
            })?;
        let io = |source| NetworkError::Io {
            what: "measurement sink".into(),
            source,
        };
        let addr = listener.local_addr().map_err(io)?;
        listener.set_nonblocking(true).map_err(io)?;
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::Builder::new()
            .name("protobench-link-sink".into())
            .spawn(move || {
                while !st.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((s, _)) => {
                            let _ = std::thread::Builder::new()
                                .name("protobench-link-conn".into())
                                .spawn(move || serve(s));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
            .map_err(io)?;
        Ok(Sink {
            addr,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One sink connection: `E` echoes bytes, `U n` reads n bytes and answers
/// (bytes, first-to-last ns), `D n` writes n bytes. Every read and write
/// times out, so a connection thread always ends.
fn serve(mut s: TcpStream) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(IO_TIMEOUT));
    let _ = s.set_write_timeout(Some(IO_TIMEOUT));
    let _ = s.set_nodelay(true);
    let mut cmd = [0u8; 1];
    if s.read_exact(&mut cmd).is_err() {
        return;
    }
    match cmd[0] {
        b'E' => {
            let mut b = [0u8; 1];
            while s.read_exact(&mut b).is_ok() && s.write_all(&b).is_ok() {}
        }
        b'U' => {
            let mut n = [0u8; 8];
            if s.read_exact(&mut n).is_err() {
                return;
            }
            let (bytes, ns) = receive(&mut s, u64::from_be_bytes(n), Instant::now() + Duration::from_secs(600));
            let mut reply = [0u8; 16];
            reply[..8].copy_from_slice(&bytes.to_be_bytes());
            reply[8..].copy_from_slice(&ns.to_be_bytes());
            let _ = s.write_all(&reply);
        }
        b'D' => {
            let mut n = [0u8; 8];
            if s.read_exact(&mut n).is_err() {
                return;
            }
            let _ = send(&mut s, u64::from_be_bytes(n));
            let _ = s.shutdown(Shutdown::Write);
        }
        _ => {}
    }
}

fn send(s: &mut TcpStream, mut n: u64) -> std::io::Result<()> {
    let buf = vec![0x5a; CHUNK];
    while n > 0 {
        let k = n.min(CHUNK as u64) as usize;
        s.write_all(&buf[..k])?;
        n -= k as u64;
    }
    Ok(())
}

/// Reads up to `n` bytes until EOF, an idle timeout or `deadline`; returns
/// (bytes, first-to-last-byte ns).
fn receive(s: &mut TcpStream, n: u64, deadline: Instant) -> (u64, u64) {
    let mut buf = vec![0u8; CHUNK];
    let (mut got, mut first, mut last) = (0u64, None, Instant::now());
    while got < n && Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(k) => {
                last = Instant::now();
                first.get_or_insert(last);
                got += k as u64;
            }
        }
    }
    let ns = first.map_or(0, |f| last.duration_since(f).as_nanos() as u64);
    (got, ns)
}

fn median(v: &mut [u64]) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

/// `RetransSegs` from the `Tcp:` lines of a `/proc/net/snmp` text.
pub fn retrans_segs(snmp: &str) -> Option<u64> {
    let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (tcp.next()?, tcp.next()?);
    let i = names.split_whitespace().position(|n| n == "RetransSegs")?;
    values.split_whitespace().nth(i)?.parse().ok()
}

/// (all packets, dropped packets) from `nft -j list table` output of a
/// [`super::link`] loss table.
pub fn nft_counters(json: &str) -> Option<(u64, u64)> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let (mut all, mut dropped) = (None, None);
    for item in v.get("nftables")?.as_array()? {
        let Some(expr) = item.pointer("/rule/expr").and_then(|e| e.as_array()) else {
            continue;
        };
        let packets = expr.iter().find_map(|e| e.pointer("/counter/packets")?.as_u64());
        if expr.iter().any(|e| e.get("drop").is_some()) {
            dropped = packets;
        } else {
            all = packets;
        }
    }
    Some((all?, dropped?))
}

struct Counters {
    up_retrans: Option<u64>,
    down_retrans: Option<u64>,
    up_nft: Option<(u64, u64)>,
    down_nft: Option<(u64, u64)>,
}

fn counters(link: &EmulatedLink) -> Counters {
    let host = link.host();
    let ns = host.namespace();
    let nft = link.plan().mechanisms.loss == Mechanism::Nftables;
    let list_up = || {
        run(
            &["ip", "netns", "exec", ns, "nft", "-j", "list", "table", "netdev", ns],
            None,
            super::sys::COMMAND_TIMEOUT,
        )
    };
    Counters {
        up_retrans: std::fs::read_to_string("/proc/self/net/snmp")
            .ok()
            .as_deref()
            .and_then(retrans_segs),
        down_retrans: host
            .run_inside(|| std::fs::read_to_string("/proc/thread-self/net/snmp").ok())
            .ok()
            .flatten()
            .as_deref()
            .and_then(retrans_segs),
        up_nft: (nft && link.plan().profile.up.loss_percent > 0.0)
            .then(|| list_up().ok().as_deref().and_then(nft_counters))
            .flatten(),
        down_nft: (nft && link.plan().profile.down.loss_percent > 0.0)
            .then(|| {
                sh(&["nft", "-j", "list", "table", "netdev", ns])
                    .ok()
                    .as_deref()
                    .and_then(nft_counters)
            })
            .flatten(),
    }
}

fn connect(addr: SocketAddr) -> Result<TcpStream, NetworkError> {
    let s = TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(|source| NetworkError::Io {
        what: format!("cannot connect to the measurement sink at {addr}"),
        source,
    })?;
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(IO_TIMEOUT));
    let _ = s.set_write_timeout(Some(IO_TIMEOUT));
    Ok(s)
}

fn io_err(what: &str) -> impl Fn(std::io::Error) -> NetworkError + '_ {
    move |source| NetworkError::Io {
        what: what.to_string(),
        source,
    }
}

/// Measures `link` (see the module docs). Takes about 2 x `transfer` plus
/// the round trips; every wait is bounded.
pub fn measure(link: &mut EmulatedLink, opts: &MeasureOptions) -> Result<AchievedLink, NetworkError> {
    let started = Instant::now();
    let sink = Sink::start(link.host())?;
    const PROXY: &str = "protobench-link-measure";
    let target = link.expose(PROXY, sink.addr)?;
    let result = measure_with(link, opts, sink.addr, target);
    let _ = link.unexpose(PROXY);
    drop(sink);
    let mut achieved = result?;
    achieved.measured_ns = started.elapsed().as_nanos() as u64;
    Ok(achieved)
}

fn measure_with(
    link: &EmulatedLink,
    opts: &MeasureOptions,
    direct: SocketAddr,
    target: SocketAddr,
) -> Result<AchievedLink, NetworkError> {
    let profile = &link.plan().profile;
    // Connect time, straight to the sink (a lost SYN costs a 1 s retry: the median holds).
    let mut connects = Vec::new();
    for _ in 0..opts.connects {
        let t = Instant::now();
        if TcpStream::connect_timeout(&direct, IO_TIMEOUT).is_ok() {
            connects.push(t.elapsed().as_nanos() as u64);
        }
    }
    // RTT: 1-byte echoes through the engine's path.
    let mut s = connect(target)?;
    s.write_all(b"E").map_err(io_err("echo"))?;
    let mut rtts = Vec::new();
    let mut b = [0u8; 1];
    for i in 0..opts.echoes + 2 {
        let t = Instant::now();
        s.write_all(b"x").map_err(io_err("echo"))?;
        s.read_exact(&mut b).map_err(io_err("echo"))?;
        if i >= 2 {
            rtts.push(t.elapsed().as_nanos() as u64);
        }
    }
    drop(s);
    let cpu0 = link.toxiproxy_cpu_ns();
    let before = counters(link);
    // Up: the sink times the bytes it receives.
    let n_up = transfer_bytes(profile.up.rate_bps, opts.transfer);
    let deadline = |n: u64, rate: Option<u64>| {
        let expected = rate.map_or(opts.transfer.as_secs_f64(), |r| n as f64 * 8.0 / r as f64);
        Duration::from_secs_f64(expected * 4.0 + 10.0)
    };
    let mut s = connect(target)?;
    let mut head = vec![b'U'];
    head.extend_from_slice(&n_up.to_be_bytes());
    s.write_all(&head).map_err(io_err("upload"))?;
    send(&mut s, n_up).map_err(io_err("upload"))?;
    s.set_read_timeout(Some(deadline(n_up, profile.up.rate_bps)))
        .map_err(io_err("upload"))?;
    let mut reply = [0u8; 16];
    s.read_exact(&mut reply)
        .map_err(io_err("reading the upload's result"))?;
    let up_bytes = u64::from_be_bytes(reply[..8].try_into().expect("8 bytes"));
    let up_ns = u64::from_be_bytes(reply[8..].try_into().expect("8 bytes"));
    drop(s);
    let mid = counters(link);
    // Down: timed here.
    let n_down = transfer_bytes(profile.down.rate_bps, opts.transfer);
    let mut s = connect(target)?;
    let mut head = vec![b'D'];
    head.extend_from_slice(&n_down.to_be_bytes());
    s.write_all(&head).map_err(io_err("download"))?;
    let (down_bytes, down_ns) = receive(&mut s, n_down, Instant::now() + deadline(n_down, profile.down.rate_bps));
    drop(s);
    let after = counters(link);
    let cpu1 = link.toxiproxy_cpu_ns();

    let goodput = |bytes: u64, ns: u64| {
        if ns > 0 {
            bytes as f64 * 8.0 / (ns as f64 / 1e9)
        } else {
            0.0
        }
    };
    let diff = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?));
    let nft_diff = |a: Option<(u64, u64)>, b: Option<(u64, u64)>| match (a, b) {
        (Some(a), Some(b)) => (Some(b.0.saturating_sub(a.0)), Some(b.1.saturating_sub(a.1))),
        _ => (None, None),
    };
    // Loss counters span the whole transfer of each direction (acks included).
    let (up_packets, up_dropped) = nft_diff(before.up_nft, after.up_nft);
    let (down_packets, down_dropped) = nft_diff(before.down_nft, after.down_nft);
    let (rtt_min_ns, rtt_max_ns) = (
        rtts.iter().copied().min().unwrap_or(0),
        rtts.iter().copied().max().unwrap_or(0),
    );
    Ok(AchievedLink {
        rtt_samples: rtts.len() as u32,
        rtt_ns: median(&mut rtts),
        rtt_min_ns,
        rtt_max_ns,
        connect_ns: median(&mut connects),
        up: AchievedDirection {
            goodput_bps: goodput(up_bytes, up_ns),
            bytes: up_bytes,
            duration_ns: up_ns,
            complete: up_bytes == n_up,
            packets: up_packets,
            dropped_packets: up_dropped,
            retransmitted_segments: diff(before.up_retrans, mid.up_retrans),
        },
        down: AchievedDirection {
            goodput_bps: goodput(down_bytes, down_ns),
            bytes: down_bytes,
            duration_ns: down_ns,
            complete: down_bytes == n_down,
            packets: down_packets,
            dropped_packets: down_dropped,
            retransmitted_segments: diff(mid.down_retrans, after.down_retrans),
        },
        toxiproxy_cpu_ns: diff(cpu0, cpu1),
        measured_ns: 0,
    })
}

/// One line for logs and reports: `rtt 40.2 ms, up 95.1 Mbit/s, down 95.3 Mbit/s`.
pub fn describe(a: &AchievedLink) -> String {
    let mut s = format!(
        "rtt {} (connect {}), up {:.1} Mbit/s, down {:.1} Mbit/s",
        format_duration(a.rtt_ns / 1000 * 1000),
        format_duration(a.connect_ns / 1000 * 1000),
        a.up.goodput_bps / 1e6,
        a.down.goodput_bps / 1e6
    );
    for (side, d) in [("up", &a.up), ("down", &a.down)] {
        if let Some(l) = d.loss_percent() {
            s.push_str(&format!(", {side} loss {l:.2}%"));
        }
        if let Some(r) = d.retransmitted_segments {
            s.push_str(&format!(", {side} retransmitted {r}"));
        }
    }
    if let Some(c) = a.toxiproxy_cpu_ns {
        s.push_str(&format!(", toxiproxy cpu {} ms", c / 1_000_000));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::Network;

    fn achieved(up_bps: f64, down_bps: f64) -> AchievedLink {
        AchievedLink {
            up: AchievedDirection {
                goodput_bps: up_bps,
                complete: true,
                ..Default::default()
            },
            down: AchievedDirection {
                goodput_bps: down_bps,
                complete: true,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn link_bound_rule_per_direction() {
        // 100 Mbit/s of payload each way
        let link = achieved(100e6, 100e6);
        let cases = [
            // (calls/s, bytes sent/call, bytes received/call, up bound, down bound)
            (240.0, 100.0, 50_000.0, false, true), // 96 Mbit/s down: bound (Berg's M over REST)
            (200.0, 100.0, 50_000.0, false, false), // 80 Mbit/s down: not bound
            (225.0, 100.0, 50_000.0, false, true), // exactly 90% counts as bound
            (60_000.0, 200.0, 100.0, true, false), // 96 Mbit/s up, 48 Mbit/s down
            (0.0, 1e9, 1e9, false, false),         // no calls, no load
        ];
        for (calls, sent, received, up, down) in cases {
            let b = link_bound(calls, sent, received, &link);
            assert_eq!((b.up, b.down), (up, down), "{calls} calls/s x {sent}/{received}: {b:?}");
            assert_eq!(b.any(), up || down);
        }
        // a direction never measured is never bound
        let b = link_bound(1e6, 1e6, 1e6, &achieved(0.0, 0.0));
        assert!(!b.any());
    }

    #[test]
    fn far_from_profile_names_what_is_off() {
        let Network::Emulated(p) = "rate=100mbit,delay=20ms".parse::<Network>().unwrap() else {
            unreachable!()
        };
        let mut a = achieved(95.0e6, 70.0e6);
        a.rtt_ns = 40_400_000;
        let w = far_from_profile(&p, &a);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("down: achieved 70.0 Mbit/s, 27% below the 95.6 Mbit/s"),
            "{w:?}"
        );
        a.down.goodput_bps = 95.6e6;
        a.rtt_ns = 45_000_000;
        let w = far_from_profile(&p, &a);
        assert_eq!(w, vec!["round trip 45.00 ms, the profile asks for 40.00 ms"]);
        a.rtt_ns = 40_000_000;
        a.up.complete = false;
        assert!(far_from_profile(&p, &a)[0].contains("did not finish"));
    }

    #[test]
    fn far_from_profile_checks_counted_loss() {
        let Network::Emulated(p) = "loss=1%".parse::<Network>().unwrap() else {
            unreachable!()
        };
        let mut a = achieved(1e9, 1e9);
        a.up.packets = Some(10_000);
        a.up.dropped_packets = Some(100);
        assert!(far_from_profile(&p, &a).is_empty());
        a.up.dropped_packets = Some(10);
        assert!(far_from_profile(&p, &a)[0].contains("0.10% of 10000 packets dropped"));
        // too few packets to judge
        a.up.packets = Some(100);
        a.up.dropped_packets = Some(0);
        assert!(far_from_profile(&p, &a).is_empty());
    }

    #[test]
    fn transfer_size_follows_the_rate() {
        let t = Duration::from_millis(1500);
        assert_eq!(transfer_bytes(Some(100_000_000), t), 18_750_000);
        assert_eq!(transfer_bytes(Some(1_000), t), 1 << 20); // floor
        assert_eq!(transfer_bytes(None, t), 256 << 20);
    }

    #[test]
    fn proc_and_nft_parsers() {
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\nTcp: RtoAlgorithm RtoMin RetransSegs InErrs\nTcp: 1 200 42 0\nUdp: InDatagrams\nUdp: 5\n";
        assert_eq!(retrans_segs(snmp), Some(42));
        assert_eq!(retrans_segs("Ip: a\nIp: 1\n"), None);
        let json = r#"{"nftables": [{"metainfo": {}}, {"table": {}}, {"chain": {}},
            {"rule": {"expr": [{"match": {}}, {"counter": {"packets": 1000, "bytes": 9}}]}},
            {"rule": {"expr": [{"match": {}}, {"match": {}}, {"counter": {"packets": 11, "bytes": 1}}, {"drop": null}]}}]}"#;
        assert_eq!(nft_counters(json), Some((1000, 11)));
        assert_eq!(nft_counters("{}"), None);
        let d = AchievedDirection {
            packets: Some(1000),
            dropped_packets: Some(11),
            ..Default::default()
        };
        assert_eq!(d.loss_percent(), Some(1.1));
    }
}
