//! Emulated networks, for real on this machine (root, iproute2, nftables,
//! toxiproxy where the kernel has no netem):
//!
//! - the server host is created and removed, also after its owner was SIGKILLed
//! - a 100 Mbit/s profile measures within 10% of its rate (never above;
//!   one of three tries within, as a starved machine only lowers it)
//! - 20 ms one-way delay measures a 40 ms RTT, never under 38 ms and within
//!   10% above in one of three tries (a starved proxy only adds)
//! - 1% loss drops about 1% and shows TCP retransmissions
//! - a profile this machine cannot apply fails before anything is created
//! - a server started inside is reached through the link
//!
//! Without root or the tools these tests skip with a printed reason, and
//! fail when `PROTOBENCH_REQUIRE_NETNS=1` (CI). They run one at a time
//! (measurements on a shared 2-core machine).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use protobench_runner::network::{
    self, Capabilities, EmulatedLink, MeasureOptions, Mechanism, Network, NetworkError, ServerHost,
};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `Some(capabilities)` when the machine can emulate `needs`, else skips
/// (or panics under PROTOBENCH_REQUIRE_NETNS=1).
fn require(needs: &str) -> Option<Capabilities> {
    let caps = Capabilities::detect();
    let mut missing = Vec::new();
    if !caps.root {
        missing.push("root");
    }
    // (without root the kernel is not probed: only the tools can be named)
    if !(caps.ip && caps.tc && (caps.tbf || !caps.root)) {
        missing.push("iproute2 with the tbf qdisc");
    }
    if needs.contains("loss") && !(caps.netem || caps.nft) {
        missing.push("netem or nftables (apt-get install nftables)");
    }
    if needs.contains("delay") && !caps.netem && caps.toxiproxy.is_none() {
        missing.push("netem or toxiproxy (scripts/setup.sh)");
    }
    if missing.is_empty() {
        return Some(caps);
    }
    let reason = format!("network emulation needs {}", missing.join(", "));
    if std::env::var("PROTOBENCH_REQUIRE_NETNS").as_deref() == Ok("1") {
        panic!("{reason} (PROTOBENCH_REQUIRE_NETNS=1)");
    }
    eprintln!("skipped: {reason}");
    None
}

fn link(spec: &str, caps: &Capabilities) -> EmulatedLink {
    let network: Network = spec.parse().unwrap();
    let plan = network::plan(network.profile().unwrap(), caps).unwrap();
    EmulatedLink::create(&plan).unwrap()
}

fn namespace_exists(ns: &str) -> bool {
    Path::new("/run/netns").join(ns).exists()
}

fn interface_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

#[test]
fn server_host_is_created_and_removed() {
    let _g = serial();
    let Some(_) = require("") else { return };
    let host = ServerHost::create().unwrap();
    let (ns, g) = (host.namespace().to_string(), host.host_interface().to_string());
    assert!(ns.starts_with(&format!("pb{}n", std::process::id())), "{ns}");
    assert!(namespace_exists(&ns) && interface_exists(&g));
    // the generator side reaches a socket bound inside
    let ip = host.server_ip();
    let listener = host.run_inside(move || TcpListener::bind((ip, 0))).unwrap().unwrap();
    let addr = listener.local_addr().unwrap();
    TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    // the server interface is only inside the namespace
    assert!(!interface_exists(host.server_interface()));
    drop(listener);
    drop(host);
    assert!(!namespace_exists(&ns), "{ns} left behind");
    assert!(!interface_exists(&g), "{g} left behind");
}

/// Helper run in a child process by `leftovers_of_a_killed_owner_are_removed`:
/// creates a link with toxiproxy in it and a loss table on the generator
/// side (where the machine has them), reports its names, and waits to be killed.
#[test]
#[ignore = "helper: run as a child process by leftovers_of_a_killed_owner_are_removed"]
fn helper_create_a_link_and_wait_to_be_killed() {
    let caps = Capabilities::detect();
    let spec = match (caps.netem || caps.toxiproxy.is_none(), caps.nft) {
        (false, true) => "delay=5ms,loss=0.1%",
        (false, false) => "delay=5ms",
        (true, _) => "rate=10mbit",
    };
    let l = link(spec, &caps);
    println!(
        "ready {} {} {}",
        l.host().namespace(),
        l.host().host_interface(),
        l.toxiproxy_pid().unwrap_or(0)
    );
    std::io::stdout().flush().unwrap();
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn leftovers_of_a_killed_owner_are_removed() {
    let _g = serial();
    let Some(_) = require("") else { return };
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "helper_create_a_link_and_wait_to_be_killed",
            "--nocapture",
            "--test-threads=1",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            // libtest prints the test's name on the same line first
            if let Some((_, rest)) = line.split_once("ready ") {
                let _ = tx.send(rest.to_string());
            }
        }
    });
    let ready = rx.recv_timeout(Duration::from_secs(30));
    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    let ready = ready.expect("the child reported its link within 30 s");
    let parts: Vec<&str> = ready.split_whitespace().collect();
    let (ns, g, toxiproxy): (&str, &str, u32) = (parts[0], parts[1], parts[2].parse().unwrap());
    assert!(namespace_exists(ns), "the killed owner's {ns} should still be there");
    assert!(interface_exists(g));
    // the next creation sweeps what dead owners left
    let host = ServerHost::create().unwrap();
    assert!(!namespace_exists(ns), "{ns} not removed");
    assert!(!interface_exists(g), "{g} not removed");
    let tables = Command::new("nft").args(["list", "tables", "netdev"]).output();
    if let Ok(t) = tables {
        let t = String::from_utf8_lossy(&t.stdout);
        assert!(!t.lines().any(|l| l.trim() == format!("table netdev {ns}")), "{t}");
    }
    if toxiproxy != 0 {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Path::new(&format!("/proc/{toxiproxy}")).exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !Path::new(&format!("/proc/{toxiproxy}")).exists(),
            "toxiproxy {toxiproxy} survived"
        );
    }
    // and the sweep leaves live owners (this process) alone
    assert!(namespace_exists(host.namespace()));
    assert!(
        network::cleanup_leftovers()
            .unwrap()
            .iter()
            .all(|n| !n.contains(host.namespace()))
    );
}

#[test]
fn rate_of_100_mbit_is_measured_within_10_percent() {
    let _g = serial();
    let Some(caps) = require("") else { return };
    let mut l = link("rate=100mbit", &caps);
    assert_eq!(l.plan().mechanisms.rate, Mechanism::TcTbf);
    // Goodput is TCP payload: a 100 Mbit/s wire carries 1448 of every
    // 1514 bytes as payload (95.6 Mbit/s), the figure the product's own
    // far-from-profile rule compares with. Judging against the raw 100
    // failed a correct link at 89.6 Mbit/s (6% under its payload).
    let payload = 100e6 * network::measure::PAYLOAD_SHARE;
    // A shaper caps the rate; a starved sender or receiver (CI runs this
    // beside three other lanes on two cores) only lowers it: a correct
    // link measured 83.3 Mbit/s down once in CI. So no transfer may exceed
    // the rate by more than 10%, every transfer must complete, and one of
    // up to three measurements must come within 10% on both sides. A wrong
    // shaper (half the rate, or none) fails all three.
    let mut seen = Vec::new();
    for _ in 0..3 {
        let a = l.measure(&MeasureOptions::default()).unwrap();
        eprintln!("100mbit: {}", network::measure::describe(&a));
        let mut within = true;
        for (side, d) in [("up", &a.up), ("down", &a.down)] {
            assert!(d.complete, "{side}: {d:?}");
            let off = d.goodput_bps / payload - 1.0;
            assert!(
                off <= 0.10,
                "{side}: {:.1} Mbit/s is above the shaped rate",
                d.goodput_bps / 1e6
            );
            within &= off >= -0.10;
        }
        seen.push((a.up.goodput_bps / 1e6, a.down.goodput_bps / 1e6));
        if within {
            let report = l.report(a);
            assert!(report.warnings.is_empty(), "{:?}", report.warnings);
            return;
        }
    }
    panic!(
        "no measurement within 10% of {:.1} Mbit/s (up, down): {seen:.1?}",
        payload / 1e6
    );
}

#[test]
fn delay_of_20_ms_each_way_measures_40_ms_round_trip() {
    let _g = serial();
    let Some(caps) = require("delay") else { return };
    let mut l = link("rate=100mbit,delay=20ms", &caps);
    // Delay is a floor: no round trip may come in under it, while a starved
    // proxy (CI's other lanes share two cores) only adds to it. So every
    // measurement's median must reach 38 ms, and one of up to three must be
    // within 10% above 40 ms. CI's four lanes on two cores once gave 42.1,
    // 43.0 and 42.8 ms (the proxy's CPU time rising with it); a delay
    // applied one way (20 ms) or twice (80 ms) still fails.
    let mut seen = Vec::new();
    let a = loop {
        let a = l
            .measure(&MeasureOptions {
                transfer: Duration::from_millis(500),
                ..MeasureOptions::default()
            })
            .unwrap();
        eprintln!(
            "delay 20ms via {:?}: {}",
            l.plan().mechanisms.delay,
            network::measure::describe(&a)
        );
        let rtt_ms = a.rtt_ns as f64 / 1e6;
        assert!(rtt_ms >= 38.0, "rtt {rtt_ms:.2} ms is under the delay");
        seen.push(rtt_ms);
        if rtt_ms <= 44.0 {
            break a;
        }
        assert!(seen.len() < 3, "no round trip within 10% above 40 ms: {seen:.2?}");
    };
    assert_eq!(a.rtt_samples, 30);
    if l.plan().mechanisms.delay == Mechanism::Toxiproxy {
        // toxiproxy did the work, and its CPU time is measured
        assert!(a.toxiproxy_cpu_ns.unwrap() > 0, "{a:?}");
    }
}

#[test]
fn loss_of_1_percent_drops_packets_and_causes_retransmissions() {
    let _g = serial();
    let Some(caps) = require("loss") else { return };
    let mut l = link("rate=100mbit,loss=1%", &caps);
    let a = l.measure(&MeasureOptions::default()).unwrap();
    eprintln!("loss 1%: {}", network::measure::describe(&a));
    // the server host's own TCP resent what its veth end lost
    let resent = a.down.retransmitted_segments.unwrap();
    assert!(resent > 10, "{resent} retransmissions down: {a:?}");
    if l.plan().mechanisms.loss == Mechanism::Nftables {
        for (side, d) in [("up", &a.up), ("down", &a.down)] {
            let loss = d.loss_percent().unwrap();
            assert!(
                (0.5..=1.5).contains(&loss),
                "{side}: {loss:.2}% of {:?} packets",
                d.packets
            );
        }
    }
    // both transfers still complete
    assert!(a.up.complete && a.down.complete, "{a:?}");
}

#[test]
fn a_profile_this_machine_cannot_apply_fails_before_anything_is_created() {
    let _g = serial();
    let Some(caps) = require("") else { return };
    let ours = || {
        std::fs::read_dir("/run/netns")
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .starts_with(&format!("pb{}n", std::process::id()))
                    })
                    .count()
            })
            .unwrap_or(0)
    };
    let before = ours();
    // this machine without its delay mechanisms: no netem, no toxiproxy
    let lacking = Capabilities {
        netem: false,
        toxiproxy: None,
        ..caps.clone()
    };
    let network: Network = "delay=20ms".parse().unwrap();
    let err = network::plan(network.profile().unwrap(), &lacking).unwrap_err();
    assert!(matches!(err, NetworkError::Unavailable { .. }), "{err:?}");
    assert!(err.to_string().contains("toxiproxy is not installed"), "{err}");
    // and the real check on this machine: an ordinary profile passes, the
    // check itself leaves nothing behind
    let plans = network::check(&["loopback".parse().unwrap(), "rate=10mbit".parse().unwrap()]).unwrap();
    assert!(plans[0].is_none() && plans[1].is_some());
    assert_eq!(ours(), before, "check created a namespace and left it");
}

#[test]
fn a_server_started_inside_is_reached_through_the_link() {
    let _g = serial();
    let Some(caps) = require("delay") else { return };
    let mut l = link("rate=50mbit,delay=5ms", &caps);
    // a stand-in server: an echo on the bind address, started with the
    // command prefix like a manifest's server would be
    let bind = l.bind_addr();
    let script = format!(
        "import socket\ns=socket.socket()\ns.bind(('{}',0))\ns.listen()\nprint('listening protocol=echo addr=%s:%d tls=false' % s.getsockname(), flush=True)\nc,_=s.accept()\nc.sendall(c.recv(16))\n",
        bind.ip()
    );
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: python3 is not installed (the stand-in server)");
        return;
    }
    let argv = l.host().wrap_command(&["python3".into(), "-c".into(), script]);
    let mut server = Command::new(&argv[0])
        .args(&argv[1..])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut out = BufReader::new(server.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = out.read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("listening line within 10 s");
    let addr: SocketAddr = line
        .split("addr=")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // the PID is the server's own, and it runs inside the server host
    assert!(
        l.host().pids().contains(&server.id()),
        "{:?} lacks {}",
        l.host().pids(),
        server.id()
    );
    // a process spawned from a thread that entered the namespace is inside too
    let ns = l.host().namespace().to_string();
    let inside = std::thread::scope(|s| {
        s.spawn(|| {
            network::topology::enter_namespace(&ns).unwrap();
            Command::new("cat").arg("/proc/self/net/dev").output().unwrap()
        })
        .join()
        .unwrap()
    });
    let dev = String::from_utf8_lossy(&inside.stdout).into_owned();
    assert!(dev.contains(l.host().server_interface()), "{dev}");
    let target = l.expose("echo", addr).unwrap();
    let mut s = TcpStream::connect_timeout(&target, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let t = Instant::now();
    s.write_all(b"ping").unwrap();
    let mut buf = [0u8; 4];
    s.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"ping");
    assert!(t.elapsed() >= Duration::from_millis(9), "no delay: {:?}", t.elapsed());
    let _ = server.kill();
    let _ = server.wait();
}
