//! Where a custom gRPC call's descriptors come from (issue #13), against
//! servers on loopback (port 0):
//!
//! - server reflection (no --proto, no --protoset): the built-in Rust
//!   server describes the method and N calls succeed, clear text and TLS
//! - a server without reflection: the error says so and names --proto and
//!   --protoset
//! - a descriptor set file (`protoc -o`), made here from the contract's own
//!   descriptors, describes the method without reflection
//!
//! Every run is bounded by a request count (a few dozen calls).

use std::convert::Infallible;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http_body_util::Full;
use protobench_contract::{Dataset, Protocol};
use protobench_load::{CustomCall, LoadError, LoadPlan, LoadResult, TlsPlan, Validation, plan_defaults, run};
use protobench_model::format::error_chain;
use protobench_server::{RunningServer, ServerConfig, TlsFiles};
use tokio_util::sync::CancellationToken;

fn dataset() -> Arc<Dataset> {
    static DATASET: OnceLock<Arc<Dataset>> = OnceLock::new();
    DATASET
        .get_or_init(|| {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contract/data/dataset.json");
            Arc::new(protobench_server::load_dataset(&path).expect("contract/data/dataset.json loads"))
        })
        .clone()
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("grpc-desc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir.join(name)
}

fn certificate() -> &'static TlsFiles {
    static CERT: OnceLock<TlsFiles> = OnceLock::new();
    CERT.get_or_init(|| protobench_server::generate_self_signed(&tmp("tls")).expect("a self-signed certificate"))
}

/// The Rust server's gRPC listener on 127.0.0.1 port 0.
async fn server(tls: bool) -> RunningServer {
    let mut config = ServerConfig::default();
    config.set_addr(Protocol::Grpc, Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0))));
    config.workers = 1;
    if tls {
        config.tls = Some(certificate().clone());
    }
    protobench_server::start(config, dataset())
        .await
        .expect("the server starts")
}

/// `requests` calls of helloworld's SayHello at `target`, checked in full
/// against the method's output type.
fn say_hello(target: &str, custom: CustomCall, requests: u64) -> LoadPlan {
    let mut p = plan_defaults(Protocol::Grpc, target);
    p.custom = Some(CustomCall {
        call: Some("helloworld.Greeter/SayHello".into()),
        data: Some(r#"{"request": {"name": "reflected"}}"#.into()),
        ..custom
    });
    p.validate = Validation::Full;
    p.concurrency = 2;
    p.connections = 2;
    p.requests = Some(requests);
    p.duration_ns = None;
    p.timeout_ns = 5_000_000_000;
    p.connect_timeout_ns = 2_000_000_000;
    p
}

async fn go(plan: LoadPlan) -> Result<LoadResult, LoadError> {
    run(plan, None, CancellationToken::new()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_reflection_describes_the_method_when_no_proto_is_given() {
    for tls in [false, true] {
        let server = server(tls).await;
        let addr = server.listener(Protocol::Grpc).expect("gRPC is served").addr;
        let mut p = say_hello(&addr.to_string(), CustomCall::default(), 20);
        if tls {
            p.tls = Some(TlsPlan {
                insecure: true,
                ..TlsPlan::default()
            });
        }
        let r = go(p).await.expect("the run completes");
        assert_eq!((r.calls, r.successes), (20, 20), "tls={tls}: {:?}", r.errors);
        // Counted on the server side: the 20 calls reached the operation.
        assert_eq!(server.requests_served(), 20, "tls={tls}");
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_reflection_is_named_with_the_alternatives() {
    // Every call is answered UNIMPLEMENTED (trailers-only), as a gRPC
    // server without the reflection service answers it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let asked = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = asked.clone();
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    seen.lock().unwrap().push(req.uri().path().to_owned());
                    async move {
                        Ok::<_, Infallible>(
                            hyper::Response::builder()
                                .status(200)
                                .header("content-type", "application/grpc")
                                .header("grpc-status", "12")
                                .body(Full::new(Bytes::new()))
                                .unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    let err = go(say_hello(&addr.to_string(), CustomCall::default(), 1))
        .await
        .expect_err("nothing describes the method");
    let text = error_chain(&err);
    assert!(
        text.starts_with("cannot describe gRPC method helloworld.Greeter/SayHello by server reflection: ")
            && text.contains("does not serve gRPC reflection (grpc.reflection.v1 or v1alpha)")
            && text.contains("--proto")
            && text.contains("--protoset"),
        "{text}"
    );
    // v1 first, then v1alpha; no call of the method itself.
    assert_eq!(
        *asked.lock().unwrap(),
        [
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
        ]
    );
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protoset_file_describes_the_method() {
    let set = tmp("contract.protoset");
    std::fs::write(&set, protobench_contract::pb::FILE_DESCRIPTOR_SET).expect("the set is written");
    let server = server(false).await;
    let addr = server.listener(Protocol::Grpc).expect("gRPC is served").addr;
    let custom = CustomCall {
        protoset: Some(set.clone()),
        ..CustomCall::default()
    };
    let r = go(say_hello(&addr.to_string(), custom, 10))
        .await
        .expect("the run completes");
    assert_eq!((r.calls, r.successes), (10, 10), "{:?}", r.errors);

    // A file that is not a descriptor set is named.
    std::fs::write(&set, b"not a descriptor set").unwrap();
    let custom = CustomCall {
        protoset: Some(set.clone()),
        ..CustomCall::default()
    };
    let err = go(say_hello(&addr.to_string(), custom, 1))
        .await
        .expect_err("a bad set");
    assert!(
        error_chain(&err).starts_with(&format!("cannot use descriptor set {}: ", set.display())),
        "{}",
        error_chain(&err)
    );
    server.shutdown().await;
}
