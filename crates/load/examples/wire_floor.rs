//! The floor under `bench/wire.sh`'s overhead: the least any client on this
//! machine adds around an HTTP/1.1 call on loopback.
//!
//!   wire_floor ADDR PATH RATE SECONDS
//!
//! One blocking-free thread, one connection, no runtime, no parser library:
//! it sleeps until shortly before each send time, spins to it, reads the
//! clock, writes the request and then polls the socket without ever sleeping
//! until the whole response (head and `Content-Length` body) is in, and
//! reads the clock again. What it adds over a packet capture's request to
//! response time is the kernel's path between the clock reads and the
//! wire (system call entry, the TCP stack, the loopback device, one core
//! to the other), which the engine pays too. Prints
//! `calls=N service_p50_us=X service_p99_us=Y`.
//!
//! A benchmark tool, not part of the product: `bench/wire.sh` builds and
//! runs it in the same rounds and capture as the engine.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: wire_floor ADDR PATH RATE SECONDS (e.g. 127.0.0.1:8080 /v1/inventory/xs 200 5)");
        std::process::exit(2);
    }
    let number = |i: usize, what: &str| -> f64 {
        args[i].parse::<f64>().ok().filter(|v| *v > 0.0).unwrap_or_else(|| {
            eprintln!("wire_floor: {what} must be a positive number, got {:?}", args[i]);
            std::process::exit(2)
        })
    };
    let (addr, path) = (&args[1], &args[2]);
    let rate = number(3, "RATE");
    let seconds = number(4, "SECONDS");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: protobench\r\n\r\n");

    let mut tcp = TcpStream::connect(addr).unwrap_or_else(|e| {
        eprintln!("wire_floor: cannot connect to {addr}: {e}");
        std::process::exit(1)
    });
    tcp.set_nodelay(true).expect("TCP_NODELAY");
    tcp.set_nonblocking(true).expect("O_NONBLOCK");

    let interval = Duration::from_secs_f64(1.0 / rate);
    let calls = (rate * seconds).round() as u64;
    let mut service = Vec::with_capacity(calls as usize);
    let mut buf = vec![0u8; 1 << 16];
    let begin = Instant::now() + interval;
    for i in 0..calls {
        let due = begin + interval * u32::try_from(i).expect("fewer than 2^32 calls");
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
        tcp.write_all(request.as_bytes()).expect("write the request");
        let mut have = 0usize;
        let end = loop {
            match tcp.read(&mut buf[have..]) {
                Ok(0) => {
                    eprintln!("wire_floor: the server closed the connection after {i} calls");
                    std::process::exit(1)
                }
                Ok(n) => {
                    have += n;
                    if response_length(&buf[..have]).is_some_and(|total| have >= total) {
                        break Instant::now();
                    }
                    if have == buf.len() {
                        eprintln!(
                            "wire_floor: a response over {} bytes; use a smaller workload",
                            buf.len()
                        );
                        std::process::exit(1)
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) => {
                    eprintln!("wire_floor: read: {e}");
                    std::process::exit(1)
                }
            }
        };
        if !buf[..have].starts_with(b"HTTP/1.1 200") {
            eprintln!(
                "wire_floor: expected 200, got {:?}",
                String::from_utf8_lossy(&buf[..have.min(40)])
            );
            std::process::exit(1)
        }
        service.push(end - start);
    }
    service.sort_unstable();
    let pct = |p: f64| service[((p * service.len() as f64) as usize).min(service.len() - 1)].as_secs_f64() * 1e6;
    println!(
        "calls={} service_p50_us={:.1} service_p99_us={:.1}",
        service.len(),
        pct(0.5),
        pct(0.99)
    );
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
