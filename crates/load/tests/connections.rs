//! Connection policies against the built-in Rust server on loopback (port 0):
//!
//! - per call: every call opens its own connection (`connections_opened`
//!   equals the calls), for every protocol, clear text and TLS; the connect
//!   time shows in `connect_share` and `connects_per_second`
//! - shared: N HTTP/2 connections carry 16 callers, whatever their number
//! - per caller: one connection per caller, none opened while measuring
//!
//! Every run is bounded by a request count (a few hundred calls).

use std::sync::{Arc, OnceLock};

use protobench_contract::{Dataset, Protocol};
use protobench_load::{LoadPlan, LoadResult, TlsPlan, plan_defaults, run};
use protobench_server::{RunningServer, ServerConfig, TlsFiles};
use tokio_util::sync::CancellationToken;

const ALL: [Protocol; 4] = [Protocol::Rest, Protocol::RestH2, Protocol::Grpc, Protocol::Soap];

fn dataset() -> Arc<Dataset> {
    static DATASET: OnceLock<Arc<Dataset>> = OnceLock::new();
    DATASET
        .get_or_init(|| {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contract/data/dataset.json");
            Arc::new(protobench_server::load_dataset(&path).expect("contract/data/dataset.json loads"))
        })
        .clone()
}

fn certificate() -> &'static TlsFiles {
    static CERT: OnceLock<TlsFiles> = OnceLock::new();
    CERT.get_or_init(|| {
        let dir =
            std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("conn-tls-{}", std::process::id()));
        protobench_server::generate_self_signed(&dir).expect("a self-signed certificate")
    })
}

/// The Rust server on 127.0.0.1 port 0 for every protocol.
async fn server(tls: bool) -> RunningServer {
    let mut config = ServerConfig::default();
    for p in ALL {
        config.set_addr(p, Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0))));
    }
    config.workers = 2;
    if tls {
        config.tls = Some(certificate().clone());
    }
    protobench_server::start(config, dataset())
        .await
        .expect("the server starts")
}

fn plan(server: &RunningServer, protocol: Protocol, concurrency: u32, requests: u64) -> LoadPlan {
    let listener = server.listener(protocol).expect("the protocol is served");
    let mut p = plan_defaults(protocol, &listener.addr.to_string());
    p.workload = Some("inventory.xs".into());
    p.concurrency = concurrency;
    p.connections = concurrency;
    p.requests = Some(requests);
    p.duration_ns = None;
    p.timeout_ns = 5_000_000_000;
    p.connect_timeout_ns = 2_000_000_000;
    if listener.tls {
        p.tls = Some(TlsPlan {
            insecure: true,
            ..Default::default()
        });
    }
    p
}

async fn go(plan: LoadPlan) -> LoadResult {
    run(plan, None, CancellationToken::new())
        .await
        .expect("the run completes")
}

/// The result (with `per_call` in its plan) follows the published schema.
fn assert_valid(r: &LoadResult) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/schema/load-result.schema.json");
    let schema: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let value = serde_json::to_value(r).unwrap();
    assert_eq!(value["plan"]["per_call"], true);
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

async fn per_call_opens_one_connection_per_call(tls: bool) {
    let server = server(tls).await;
    for protocol in ALL {
        let mut p = plan(&server, protocol, 4, 200);
        p.per_call = true;
        let r = go(p).await;
        let what = format!("{protocol} tls={tls}");
        assert_eq!(r.error_count(), 0, "{what}: {:?}", r.errors);
        assert_eq!(r.calls, 200, "{what}");
        assert_eq!(r.connections_opened, r.calls, "{what}: one connection per call");
        assert_eq!(r.connect.count, r.calls, "{what}: one connect time per call");
        assert!(r.connects_per_second > 0.0, "{what}");
        // Connecting is inside every call's latency: on loopback a small
        // part of it in clear text, a large one with TLS.
        eprintln!(
            "{what}: connect share {:.3}, p50 {} us",
            r.connect_share,
            r.latency.p50_ns / 1000
        );
        let least = if tls { 0.2 } else { 0.0 };
        assert!(
            r.connect_share > least && r.connect_share < 1.0,
            "{what}: connect share {}",
            r.connect_share
        );
        assert!(r.latency.min_ns >= r.connect.min_ns, "{what}");
        assert_valid(&r);
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_call_opens_a_connection_for_every_call_in_clear_text() {
    per_call_opens_one_connection_per_call(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_call_opens_a_connection_for_every_call_with_tls() {
    per_call_opens_one_connection_per_call(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_opens_exactly_n_connections_whatever_the_concurrency() {
    for tls in [false, true] {
        let server = server(tls).await;
        for protocol in [Protocol::Grpc, Protocol::RestH2] {
            for (connections, concurrency) in [(2, 16), (1, 8)] {
                let mut p = plan(&server, protocol, concurrency, 400);
                p.connections = connections;
                let r = go(p).await;
                let what = format!("{protocol} tls={tls} {connections} for {concurrency}");
                assert_eq!(r.error_count(), 0, "{what}: {:?}", r.errors);
                assert_eq!(r.connections_opened, u64::from(connections), "{what}");
                assert_eq!(r.connect_share, 0.0, "{what}: connections open before the start");
                assert_eq!(r.connects_per_second, 0.0, "{what}");
            }
        }
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_caller_opens_one_connection_per_caller() {
    let server = server(false).await;
    for protocol in ALL {
        let r = go(plan(&server, protocol, 6, 300)).await;
        assert_eq!(r.error_count(), 0, "{protocol}: {:?}", r.errors);
        assert_eq!(r.connections_opened, 6, "{protocol}");
        assert_eq!(r.connect_share, 0.0, "{protocol}");
    }
    server.shutdown().await;
}

/// Requests of about a megabyte on streams that share one connection, in
/// clear text and over TLS: the request bodies wait for the server's flow
/// control window, and under TLS every write ends on an HTTP/2 frame
/// boundary (crates/load/src/driver/h2conn.rs); every call must come back
/// whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_requests_multiplexed_on_one_http2_connection_arrive_whole() {
    for tls in [false, true] {
        let server = server(tls).await;
        for protocol in [Protocol::RestH2, Protocol::Grpc] {
            let mut p = plan(&server, protocol, 4, 24);
            p.workload = Some("product.large".into());
            p.connections = 1;
            let r = go(p).await;
            let what = format!("{protocol} tls={tls}");
            assert_eq!(r.error_count(), 0, "{what}: {:?}", r.errors);
            assert_eq!(r.calls, 24, "{what}");
            assert_eq!(r.connections_opened, 1, "{what}");
            assert!(
                r.bytes_sent_per_call > 900_000.0,
                "{what}: {} bytes sent per call",
                r.bytes_sent_per_call
            );
        }
        server.shutdown().await;
    }
}
