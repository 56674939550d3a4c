//! The environment contract's run-time behaviour: the failure draw and the
//! injected service time on every protocol, and graceful shutdown with
//! calls in flight.

mod common;

use std::time::{Duration, Instant};

use common::{GrpcClient, HttpConn, soap_fault, vector};
use protobench_contract::Protocol;
use protobench_contract::data::splitmix64;
use protobench_server::{ServerConfig, ServiceTime};

const CALLS: u64 = 2000;
const RATE: f64 = 0.2;
const SEED: u64 = 42;

/// What one call of `inventory.xs` over `protocol` got: `Ok(())` for the
/// normal response, `Err(())` for the injected failure (anything else panics).
async fn call_xs(protocol: Protocol, http: Option<&mut HttpConn>, grpc: Option<&mut GrpcClient>) -> Result<(), ()> {
    match protocol {
        Protocol::Rest | Protocol::RestH2 => {
            let r = http.unwrap().get("/v1/inventory/xs").await;
            match r.status.as_u16() {
                200 => Ok(()),
                500 => {
                    assert_eq!(
                        r.json(),
                        serde_json::json!({"code": 500, "message": "injected failure"})
                    );
                    Err(())
                }
                s => panic!("unexpected status {s}: {}", r.text()),
            }
        }
        Protocol::Soap => {
            let r = http.unwrap().post_soap(&vector("inventory.xs", "request.xml")).await;
            match r.status.as_u16() {
                200 => Ok(()),
                500 => {
                    assert_eq!(
                        soap_fault(&r),
                        ("soap:Server".to_owned(), "injected failure".to_owned())
                    );
                    Err(())
                }
                s => panic!("unexpected status {s}: {}", r.text()),
            }
        }
        Protocol::Grpc => match grpc
            .unwrap()
            .call("/protobench.v1.Bench/GetInventoryXs", Vec::new())
            .await
        {
            Ok(_) => Ok(()),
            Err(status) => {
                assert_eq!(
                    (status.code(), status.message()),
                    (tonic::Code::Unavailable, "injected failure")
                );
                Err(())
            }
        },
        Protocol::Graphql | Protocol::GraphqlGet => {
            let r = http
                .unwrap()
                .post_json("/graphql", &vector("inventory.xs", "request.graphql.json"))
                .await;
            assert_eq!(r.status.as_u16(), 200, "{}", r.text());
            let v = r.json();
            match v.get("errors") {
                None => Ok(()),
                Some(e) => {
                    assert_eq!(e[0]["message"], "injected failure", "{v}");
                    Err(())
                }
            }
        }
        Protocol::Connect | Protocol::ConnectJson => {
            let r = http
                .unwrap()
                .send(
                    http::Method::POST,
                    "/protobench.v1.Bench/GetInventoryXs",
                    &[("content-type", "application/proto")],
                    Vec::new(),
                )
                .await;
            match r.status.as_u16() {
                200 => Ok(()),
                503 => {
                    assert_eq!(
                        r.json(),
                        serde_json::json!({"code": "unavailable", "message": "injected failure"})
                    );
                    Err(())
                }
                s => panic!("unexpected status {s}: {}", r.text()),
            }
        }
        Protocol::GrpcWeb | Protocol::GrpcWebText => {
            use protobench_contract::grpc_web;
            let ct = protocol.content_type();
            let mut body = grpc_web::frame(&[]);
            if protocol == Protocol::GrpcWebText {
                body = grpc_web::to_text(&body);
            }
            let r = http
                .unwrap()
                .send(
                    http::Method::POST,
                    "/protobench.v1.Bench/GetInventoryXs",
                    &[("content-type", ct), ("accept", ct)],
                    body,
                )
                .await;
            assert_eq!(r.status.as_u16(), 200, "{}", r.text());
            let raw = if protocol == Protocol::GrpcWebText {
                grpc_web::from_text(&r.body).unwrap()
            } else {
                r.body.to_vec()
            };
            let parsed = grpc_web::parse(&raw).unwrap();
            // A failure may come trailers-only: the status in the headers.
            let status = parsed
                .trailer("grpc-status")
                .unwrap_or(r.header("grpc-status"))
                .to_owned();
            let message = parsed
                .trailer("grpc-message")
                .unwrap_or(r.header("grpc-message"))
                .to_owned();
            match status.as_str() {
                "0" => Ok(()),
                "14" => {
                    // grpc-message is percent-encoded.
                    assert_eq!(message.replace("%20", " "), "injected failure");
                    Err(())
                }
                s => panic!("unexpected grpc-status {s}: {message}"),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_injection_fails_exactly_the_calls_splitmix64_picks() {
    // The contract's formula, computed here independently of the server.
    let expected = (0..CALLS)
        .filter(|k| (splitmix64(SEED + k) as f64) / 2f64.powi(64) < RATE)
        .count() as u64;
    let rate = expected as f64 / CALLS as f64;
    assert!((RATE - 0.025..=RATE + 0.025).contains(&rate), "the seed gives {rate}");

    for protocol in Protocol::ALL {
        let mut config = common::config(&[protocol], false);
        config.failure_rate = RATE;
        config.failure_seed = SEED;
        let server = common::start(config).await;
        let mut http = match protocol {
            Protocol::Grpc => None,
            _ => Some(HttpConn::open(&server, protocol).await),
        };
        let mut grpc = match protocol {
            Protocol::Grpc => Some(GrpcClient::connect(&server).await),
            _ => None,
        };
        let mut failures = 0;
        for _ in 0..CALLS {
            if call_xs(protocol, http.as_mut(), grpc.as_mut()).await.is_err() {
                failures += 1;
            }
        }
        assert_eq!(failures, expected, "{protocol}");
        assert_eq!(server.requests_served(), CALLS, "{protocol}");
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_requests_are_not_drawn() {
    let mut config = common::config(&[Protocol::Rest], false);
    config.failure_rate = 1.0;
    let server = common::start(config).await;
    let mut c = HttpConn::open(&server, Protocol::Rest).await;
    assert_eq!(c.post_json("/v1/echo", b"{").await.status, 400);
    assert_eq!(c.get("/v1/tasks/files/nope").await.status, 404);
    assert_eq!(server.requests_served(), 0);
    assert_eq!(c.get("/v1/tasks/files/file-455k").await.status, 500);
    assert_eq!(server.requests_served(), 1);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_service_time_delays_every_protocol_without_blocking_other_calls() {
    let mut config = common::config(&Protocol::ALL, false);
    config.service_time = Some(ServiceTime::Sleep(Duration::from_millis(50)));
    let server = common::start(config).await;
    for protocol in Protocol::ALL {
        let mut http = match protocol {
            Protocol::Grpc => None,
            _ => Some(HttpConn::open(&server, protocol).await),
        };
        let mut grpc = match protocol {
            Protocol::Grpc => Some(GrpcClient::connect(&server).await),
            _ => None,
        };
        let start = Instant::now();
        call_xs(protocol, http.as_mut(), grpc.as_mut()).await.unwrap();
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(50), "{protocol}: {took:?}");
    }
    // 40 concurrent calls sleeping 50 ms each finish together, not one after another (2 s).
    let listener = *server.listener(Protocol::RestH2).unwrap();
    let start = Instant::now();
    let calls: Vec<_> = (0..40)
        .map(|_| {
            tokio::spawn(async move {
                let mut c = HttpConn::open_addr(listener.addr, true, false).await.unwrap();
                c.get("/v1/inventory/xs").await.status
            })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap(), 200);
    }
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(50) && took < Duration::from_millis(1500),
        "{took:?}"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spin_service_time_delays_the_call() {
    let mut config = common::config(&[Protocol::Grpc], false);
    config.service_time = Some(ServiceTime::Spin(Duration::from_millis(30)));
    let server = common::start(config).await;
    let mut c = GrpcClient::connect(&server).await;
    let start = Instant::now();
    c.call("/protobench.v1.Bench/GetInteger", Vec::new()).await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(30), "{:?}", start.elapsed());
    server.shutdown().await;
}

/// Starts a slow call over `protocol`, shuts the server down while it is in
/// flight, and checks the call completes normally and the listener is closed.
async fn shutdown_drains(protocol: Protocol, tls: bool) {
    let mut config: ServerConfig = common::config(&[protocol], tls);
    config.service_time = Some(ServiceTime::Sleep(Duration::from_millis(300)));
    let server = common::start(config).await;
    let listener = server.listeners()[0];
    let call_started = Instant::now();
    let call = match protocol {
        Protocol::Grpc => {
            let mut c = GrpcClient::connect(&server).await;
            tokio::spawn(async move {
                c.call("/protobench.v1.Bench/GetInteger", Vec::new())
                    .await
                    .unwrap()
                    .to_vec()
            })
        }
        _ => {
            let mut c = HttpConn::open(&server, protocol).await;
            tokio::spawn(async move {
                match protocol {
                    Protocol::Soap => c.post_soap(&vector("tasks.int", "request.xml")).await.body.to_vec(),
                    _ => c.get("/v1/tasks/integer").await.body.to_vec(),
                }
            })
        }
    };
    common::eventually("the call is in flight", || server.in_flight() == 1).await;
    let started = Instant::now();
    server.shutdown().await;
    let took = started.elapsed();
    assert!(
        call_started.elapsed() >= Duration::from_millis(300),
        "{protocol}: shutdown did not wait for the call"
    );
    let body = call.await.unwrap();
    let expected = match protocol {
        Protocol::Grpc => vector("tasks.int", "response.pb"),
        Protocol::Soap => vector("tasks.int", "response.xml"),
        _ => vector("tasks.int", "response.json"),
    };
    assert_eq!(body, expected, "{protocol}: the call in flight got its normal response");
    assert!(took < Duration::from_secs(5), "{protocol}: the drain took {took:?}");
    assert!(
        tokio::net::TcpStream::connect(listener.addr).await.is_err(),
        "{protocol}: the listener is closed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_calls_in_flight_finish() {
    for protocol in Protocol::CORE {
        shutdown_drains(protocol, false).await;
    }
    shutdown_drains(Protocol::RestH2, true).await;
    shutdown_drains(Protocol::Grpc, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_idle_connections_at_once() {
    let server = common::start(common::config(&Protocol::CORE, false)).await;
    let mut idle = Vec::new();
    for protocol in [Protocol::Rest, Protocol::RestH2, Protocol::Soap] {
        let mut c = HttpConn::open(&server, protocol).await;
        c.get("/v1/inventory/xs").await;
        idle.push(c);
    }
    let mut grpc = GrpcClient::connect(&server).await;
    grpc.call("/protobench.v1.Bench/GetInventoryXs", Vec::new())
        .await
        .unwrap();
    let started = Instant::now();
    server.shutdown().await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "idle connections held the drain: {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_that_cannot_bind_starts_nothing() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut config = common::config(&[Protocol::Rest], false);
    config.grpc = Some(taken.local_addr().unwrap());
    let err = protobench_server::start(config, common::dataset()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("cannot listen for grpc on {}", taken.local_addr().unwrap())
    );
}
