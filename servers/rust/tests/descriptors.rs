//! Descriptor exhaustion (issue 14, item 4): with the server's descriptor
//! limit nearly used up, a flood of idle connections must not stop the
//! server: the accept loops back off instead of spinning, connections opened
//! before the flood keep being answered, and once the idle timeout closes
//! the flood new connections are served again.
//!
//! The server runs in its own process (this test binary again, running the
//! ignored `server_for_the_descriptor_test`) so that its descriptor limit
//! (set with prlimit) is not the test's.

mod common;

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::HttpConn;
use protobench_contract::Protocol;
use rustix::process::{Pid, Resource, Rlimit, getrlimit, prlimit};
use tokio::net::TcpStream;

const IDLE: Duration = Duration::from_secs(1);
/// Descriptors the server may open beyond those it has once listening.
const SPARE_DESCRIPTORS: u64 = 16;
/// Idle connections opened per listener: together far more than the spare.
const FLOOD_PER_LISTENER: usize = 12;

/// Serves every protocol (clear text, idle timeout 1 s) and prints the
/// listening lines; exits when standard input closes. Run by the test below.
#[test]
#[ignore = "the server half of server_keeps_serving_when_out_of_descriptors"]
fn server_for_the_descriptor_test() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut config = common::config(&Protocol::CORE, false);
        config.idle_timeout = IDLE;
        let server = common::start(config).await;
        for listener in server.listeners() {
            println!("{listener}");
        }
        tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new()))
            .await
            .unwrap()
            .unwrap();
    });
}

/// The server's CPU time so far (user + system, /proc clock ticks of 10 ms).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

async fn answered(conn: &mut HttpConn, protocol: Protocol) -> bool {
    let call = async {
        match protocol {
            Protocol::Soap => conn.get("/soap?wsdl").await.status == 200,
            Protocol::Grpc => {
                let headers = [("content-type", "application/grpc"), ("te", "trailers")];
                let r = conn
                    .send(
                        http::Method::POST,
                        "/protobench.v1.Bench/GetInventoryXs",
                        &headers,
                        vec![0; 5],
                    )
                    .await;
                r.status == 200
            }
            _ => conn.get("/v1/inventory/xs").await.status == 200,
        }
    };
    tokio::time::timeout(Duration::from_secs(2), call)
        .await
        .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_keeps_serving_when_out_of_descriptors() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "server_for_the_descriptor_test",
            "--nocapture",
            "--quiet",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut addrs: Vec<(Protocol, SocketAddr)> = Vec::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while addrs.len() < Protocol::CORE.len() {
        let line = lines.next().expect("a listening line").unwrap();
        let Some(rest) = line.strip_prefix("listening protocol=") else {
            continue;
        };
        let (protocol, rest) = rest.split_once(" addr=").unwrap();
        let addr = rest.split_once(' ').unwrap().0.parse().unwrap();
        addrs.push((protocol.parse().unwrap(), addr));
    }

    // Connections opened before the flood, one per listener.
    let mut before = Vec::new();
    for &(protocol, addr) in &addrs {
        let mut conn = HttpConn::open_addr(addr, protocol.is_http2(), false).await.unwrap();
        assert!(
            answered(&mut conn, protocol).await,
            "{protocol} answers before the flood"
        );
        before.push((protocol, conn));
    }
    let open = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count() as u64;
    // The child inherited this process's hard limit; only the soft one drops.
    let limit = Rlimit {
        current: Some(open + SPARE_DESCRIPTORS),
        maximum: getrlimit(Resource::Nofile).maximum,
    };
    prlimit(Pid::from_raw(pid as i32), Resource::Nofile, limit).unwrap();

    // The flood: silent connections, more than the server has descriptors for.
    let mut flood = Vec::new();
    for &(_, addr) in &addrs {
        for _ in 0..FLOOD_PER_LISTENER {
            flood.push(TcpStream::connect(addr).await.unwrap());
        }
    }
    let cpu_before = cpu_time(pid);
    tokio::time::sleep(Duration::from_millis(100)).await;
    for (protocol, conn) in &mut before {
        assert!(
            answered(conn, *protocol).await,
            "{protocol}: a connection from before the flood is answered"
        );
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    let cpu = cpu_time(pid) - cpu_before;
    assert!(
        cpu < Duration::from_millis(250),
        "the server spent {cpu:?} of CPU in 0.5 s of flood"
    );

    // The idle timeout closes the flood (in turns of SPARE_DESCRIPTORS), then
    // a new connection to every listener is served again.
    for &(protocol, addr) in &addrs {
        let served = async {
            loop {
                if let Ok(Ok(mut conn)) = tokio::time::timeout(
                    Duration::from_secs(3),
                    HttpConn::open_addr(addr, protocol.is_http2(), false),
                )
                .await
                    && answered(&mut conn, protocol).await
                {
                    return;
                }
            }
        };
        tokio::time::timeout(IDLE * 8, served)
            .await
            .unwrap_or_else(|_| panic!("{protocol}: no new connection served within 8 idle timeouts of the flood"));
    }
    drop(flood);
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
}
