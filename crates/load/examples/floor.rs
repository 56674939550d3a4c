//! Floor clients for the engine's benchmarks: what any client pays on this
//! machine, measured in the same minute as the engine, so that what the
//! engine adds on top is a number.
//!
//!   floor wire ADDR PATH RATE SECONDS          (bench/wire.sh)
//!   floor lag RATE SECONDS                     (bench/openloop.sh's sweep)
//!   floor spin RATE SECONDS                    (bench/openloop.sh's sweep)
//!   floor closed ADDR PATH CONNECTIONS SECONDS (bench/engine.sh, HTTP/1.1)
//!
//! `wire`: one thread, one connection, no runtime, no parser library. It
//! sleeps until shortly before each send time, spins to it, reads the clock,
//! writes an HTTP/1.1 GET and polls the socket without ever sleeping until
//! the whole response (head and `Content-Length` body) is in, and reads the
//! clock again. What it adds over a packet capture's request-to-response
//! time is the kernel's path between the clock reads and the wire (system
//! call, TCP, the loopback device, one core to the other), which the engine
//! pays too. Prints `calls=N service_p50_us=X service_p99_us=Y`.
//!
//! `lag`: one thread waiting for uniform send times the engine's way and
//! doing nothing else: a relative `timerfd` armed a start spin early (a
//! twentieth of the interval, at most 500 us, as `timer::spin_for`), a
//! blocking read of it, then a spin to the send time. No calls are made, so
//! its lag is the machine's own wake-up and preemption tail (the
//! hypervisor, other tenants). Prints `sends=N lag_p50_us=X lag_p99_us=Y`.
//!
//! `spin`: the same send times, but the thread never sleeps: it spins on
//! the clock from one send time to the next, a core kept busy for nothing.
//! No sender can be on time more often than this one, so its lag is the
//! bound the machine sets (the vCPU taken away by the hypervisor, an
//! interrupt); what `lag` adds over it is the cost of sleeping. Prints
//! the same line as `lag`.
//!
//! `closed`: the least an HTTP/1.1 closed loop can cost: one thread, one
//! level-triggered epoll set over CONNECTIONS keep-alive connections, one
//! call in flight on each; a readable connection gets one `recv`, and a
//! complete response (found by its blank line and `Content-Length`, no
//! header validation, no timing, no histogram) one `send` of the next
//! request. Three system calls per call at most (`epoll_wait` shared), as
//! wrk and the engine make. Prints `calls=N rate=R` (calls per second of
//! the run). Its CPU per call against wrk's and the engine's, measured in the
//! same rounds, shows how much of a closed loop's cost is the kernel's
//! loopback path that every client pays.
//!
//! Benchmark tools, not part of the product; the scripts build them.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use rustix::time::{Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec};

const USAGE: &str = "usage: floor wire ADDR PATH RATE SECONDS | floor lag RATE SECONDS | floor spin RATE SECONDS | \
                     floor closed ADDR PATH CONNECTIONS SECONDS (e.g. floor wire 127.0.0.1:8080 /v1/inventory/xs 200 5)";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["wire", addr, path, rate, seconds] => wire(addr, path, positive(rate, "RATE"), positive(seconds, "SECONDS")),
        ["lag", rate, seconds] => lag(positive(rate, "RATE"), positive(seconds, "SECONDS"), true),
        ["spin", rate, seconds] => lag(positive(rate, "RATE"), positive(seconds, "SECONDS"), false),
        ["closed", addr, path, connections, seconds] => {
            let connections = connections.parse::<usize>().ok().filter(|n| *n > 0).unwrap_or_else(|| {
                fail(
                    2,
                    &format!("CONNECTIONS must be a positive integer, got {connections:?}"),
                )
            });
            closed(addr, path, connections, positive(seconds, "SECONDS"))
        }
        _ => fail(2, USAGE),
    }
}

fn fail(code: i32, message: &str) -> ! {
    eprintln!("floor: {message}");
    std::process::exit(code)
}

fn positive(arg: &str, what: &str) -> f64 {
    arg.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .unwrap_or_else(|| fail(2, &format!("{what} must be a positive number, got {arg:?}")))
}

/// Uniform send times at `rate` for `seconds`, the first one interval from now.
fn schedule(rate: f64, seconds: f64) -> impl Iterator<Item = Instant> {
    let interval = Duration::from_secs_f64(1.0 / rate);
    let begin = Instant::now() + interval;
    (0..(rate * seconds).round() as u64).map(move |i| begin + interval.mul_f64(i as f64))
}

/// `name=N name_p50_us=X name_p99_us=Y` of the sorted `times`.
fn report(count: &str, name: &str, mut times: Vec<Duration>) {
    times.sort_unstable();
    let pct = |p: f64| times[((p * times.len() as f64) as usize).min(times.len() - 1)].as_secs_f64() * 1e6;
    println!(
        "{count}={} {name}_p50_us={:.1} {name}_p99_us={:.1}",
        times.len(),
        pct(0.5),
        pct(0.99)
    );
}

/// The GET request the engine sends for `path`.
fn get(addr: &str, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: protobench\r\n\r\n").into_bytes()
}

/// A non-blocking connection with `TCP_NODELAY`, as the engine opens them.
fn connect(addr: &str) -> TcpStream {
    let tcp = TcpStream::connect(addr).unwrap_or_else(|e| fail(1, &format!("cannot connect to {addr}: {e}")));
    tcp.set_nodelay(true).expect("TCP_NODELAY");
    tcp.set_nonblocking(true).expect("O_NONBLOCK");
    tcp
}

fn wire(addr: &str, path: &str, rate: f64, seconds: f64) {
    let request = get(addr, path);
    let mut tcp = connect(addr);
    let mut service = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    for due in schedule(rate, seconds) {
        // Sleep to shortly before the send time, then spin: the send is on
        // time and the core is awake when the reply comes.
        let early = due.saturating_duration_since(Instant::now());
        if early > Duration::from_micros(300) {
            std::thread::sleep(early - Duration::from_micros(300));
        }
        while Instant::now() < due {
            std::hint::spin_loop();
        }
        let start = Instant::now();
        tcp.write_all(&request).expect("write the request");
        let mut have = 0usize;
        let end = loop {
            match tcp.read(&mut buf[have..]) {
                Ok(0) => fail(
                    1,
                    &format!("the server closed the connection after {} calls", service.len()),
                ),
                Ok(n) => {
                    have += n;
                    if response_length(&buf[..have]).is_some_and(|total| have >= total) {
                        break Instant::now();
                    }
                    if have == buf.len() {
                        fail(
                            1,
                            &format!("a response over {} bytes; use a smaller workload", buf.len()),
                        );
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) => fail(1, &format!("read: {e}")),
            }
        };
        if !buf[..have].starts_with(b"HTTP/1.1 200") {
            fail(
                1,
                &format!("expected 200, got {:?}", String::from_utf8_lossy(&buf[..have.min(40)])),
            );
        }
        service.push(end - start);
    }
    report("calls", "service", service);
}

/// The whole response's length once its head is in: head plus
/// `Content-Length` (0 when absent: the contract's responses always carry it).
fn response_length(bytes: &[u8]) -> Option<usize> {
    let head_end = bytes.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&bytes[..head_end]).ok()?;
    let length = head
        .split("\r\n")
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    Some(head_end + length)
}

/// `floor lag` (`sleep`: the engine's timer, then its spin) or `floor spin`
/// (never asleep).
fn lag(rate: f64, seconds: f64, sleep: bool) {
    // The engine's start spin for this mean interval (timer::spin_for).
    let spin = Duration::from_secs_f64(1.0 / rate / 20.0).min(Duration::from_micros(500));
    let timer = rustix::time::timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::CLOEXEC).expect("timerfd_create");
    let mut lag = Vec::new();
    for due in schedule(rate, seconds) {
        if let Some(wait) = (due - spin)
            .checked_duration_since(Instant::now())
            .filter(|d| sleep && !d.is_zero())
        {
            let spec = Itimerspec {
                it_interval: Timespec { tv_sec: 0, tv_nsec: 0 },
                it_value: Timespec {
                    tv_sec: wait.as_secs() as _,
                    tv_nsec: wait.subsec_nanos() as _,
                },
            };
            rustix::time::timerfd_settime(&timer, TimerfdTimerFlags::empty(), &spec).expect("timerfd_settime");
            let mut count = [0u8; 8];
            rustix::io::read(&timer, &mut count[..]).expect("read the timerfd");
        }
        let mut now = Instant::now();
        while now < due {
            std::hint::spin_loop();
            now = Instant::now();
        }
        lag.push(now - due);
    }
    report("sends", "lag", lag);
}

fn closed(addr: &str, path: &str, connections: usize, seconds: f64) {
    use rustix::event::epoll;
    let request = get(addr, path);
    let epfd = epoll::create(epoll::CreateFlags::CLOEXEC).expect("epoll_create");
    // Each connection: the socket, its read buffer and how much it holds.
    let mut conns: Vec<(TcpStream, Vec<u8>, usize)> = (0..connections)
        .map(|i| {
            let mut tcp = connect(addr);
            epoll::add(&epfd, &tcp, epoll::EventData::new_u64(i as u64), epoll::EventFlags::IN).expect("epoll_ctl");
            tcp.write_all(&request).expect("write the first request");
            (tcp, vec![0u8; 1 << 16], 0)
        })
        .collect();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let tick = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    };
    let mut events = Vec::with_capacity(256);
    let mut calls = 0u64;
    while Instant::now() < end {
        events.clear();
        epoll::wait(&epfd, rustix::buffer::spare_capacity(&mut events), Some(&tick)).expect("epoll_wait");
        for event in &events {
            let (tcp, buf, have) = &mut conns[event.data.u64() as usize];
            match tcp.read(&mut buf[*have..]) {
                Ok(0) => fail(1, &format!("the server closed a connection after {calls} calls")),
                Ok(n) => *have += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                Err(e) => fail(1, &format!("read: {e}")),
            }
            if response_length(&buf[..*have]).is_some_and(|total| *have >= total) {
                if !buf.starts_with(b"HTTP/1.1 2") {
                    fail(
                        1,
                        &format!(
                            "expected 2xx, got {:?}",
                            String::from_utf8_lossy(&buf[..(*have).min(40)])
                        ),
                    );
                }
                calls += 1;
                *have = 0;
                tcp.write_all(&request).expect("write a request");
            } else if *have == buf.len() {
                fail(
                    1,
                    &format!("a response over {} bytes; use a smaller workload", buf.len()),
                );
            }
        }
    }
    let rate = calls as f64 / start.elapsed().as_secs_f64();
    println!("calls={calls} rate={rate:.0}");
}
