//! Connection and request limits (issue 14, items 4-7): idle and read
//! timeouts on every listener, clear and TLS; HTTP/2's advertised stream
//! limit; gRPC framing (content type, one message per unary call); SOAP's
//! element bound. Real sockets on 127.0.0.1, timeouts of 1 s, every wait
//! bounded. Descriptor exhaustion is in `tests/descriptors.rs` (its own
//! process).

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{HttpConn, soap_fault};
use http::Method;
use protobench_contract::Protocol;
use protobench_server::{RunningServer, ServerConfig, ServiceTime};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

const IDLE: Duration = Duration::from_secs(1);
const READ: Duration = Duration::from_secs(1);
/// How much later than its timeout a connection may close.
const SLACK: Duration = Duration::from_millis(2500);

const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An empty SETTINGS frame.
const H2_SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];

fn short_timeouts(protocols: &[Protocol], tls: bool) -> ServerConfig {
    let mut config = common::config(protocols, tls);
    config.idle_timeout = IDLE;
    config.read_timeout = READ;
    config
}

fn addr(server: &RunningServer, protocol: Protocol) -> SocketAddr {
    server.listener(protocol).expect("served").addr
}

/// Reads until the server closes the connection (EOF or reset) and returns
/// what it sent and when it closed, or panics after `within`.
async fn read_until_closed(stream: &mut TcpStream, within: Duration, what: &str) -> (Vec<u8>, Duration) {
    let start = Instant::now();
    let mut received = Vec::new();
    let read_all = async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(within, read_all)
        .await
        .unwrap_or_else(|_| panic!("{what}: still open after {within:?}"));
    (received, start.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_send_nothing_are_closed_after_the_idle_timeout_clear_and_tls() {
    for tls in [false, true] {
        let server = common::start(short_timeouts(&Protocol::ALL, tls)).await;
        let mut silent = Vec::new();
        for protocol in Protocol::ALL {
            // Nothing at all: with TLS, a handshake that never starts.
            let stream = TcpStream::connect(addr(&server, protocol)).await.unwrap();
            silent.push((protocol, stream, Instant::now()));
        }
        for (protocol, stream, opened) in &mut silent {
            let what = format!("a silent {protocol} connection (tls={tls})");
            read_until_closed(stream, IDLE + SLACK, &what).await;
            let after = opened.elapsed();
            assert!(
                after + Duration::from_millis(200) >= IDLE,
                "{what} closed early, after {after:?}"
            );
        }
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_connections_that_send_only_the_preface_get_goaway_and_are_closed() {
    let server = common::start(short_timeouts(&[Protocol::RestH2, Protocol::Grpc], false)).await;
    for protocol in [Protocol::RestH2, Protocol::Grpc] {
        let mut stream = TcpStream::connect(addr(&server, protocol)).await.unwrap();
        stream.write_all(H2_PREFACE).await.unwrap();
        stream.write_all(H2_SETTINGS).await.unwrap();
        let (received, _) = read_until_closed(&mut stream, IDLE + SLACK, &format!("{protocol} preface only")).await;
        let frames = h2_frames(&received);
        let kinds: Vec<u8> = frames.iter().map(|(kind, _)| *kind).collect();
        assert!(
            kinds.contains(&7),
            "{protocol}: a GOAWAY before closing; frames {kinds:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http1_connections_are_closed_when_idle_between_requests() {
    let server = common::start(short_timeouts(&[Protocol::Rest, Protocol::Soap], false)).await;
    for (protocol, request) in [
        (Protocol::Rest, &b"GET /v1/inventory/xs HTTP/1.1\r\nhost: x\r\n\r\n"[..]),
        (Protocol::Soap, b"GET /soap?wsdl HTTP/1.1\r\nhost: x\r\n\r\n"),
    ] {
        let mut stream = TcpStream::connect(addr(&server, protocol)).await.unwrap();
        stream.write_all(request).await.unwrap();
        let (received, _) = read_until_closed(&mut stream, IDLE + SLACK, &format!("idle {protocol}")).await;
        assert!(received.starts_with(b"HTTP/1.1 200"), "{protocol}: answered first");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stops_arriving_is_answered_408_and_its_connection_closed() {
    for tls in [false, true] {
        let server = common::start(short_timeouts(&[Protocol::Rest, Protocol::Soap], tls)).await;
        for (protocol, head) in [
            (
                Protocol::Rest,
                "POST /v1/echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n",
            ),
            (
                Protocol::Soap,
                "POST /soap HTTP/1.1\r\nhost: x\r\ncontent-type: text/xml\r\ncontent-length: 1000\r\n\r\n",
            ),
        ] {
            let what = format!("{protocol} (tls={tls}) with 15 of 1000 body bytes");
            let request = [head.as_bytes(), b"{\"payload\":\"ab"].concat();
            let received = if tls {
                let tcp = TcpStream::connect(addr(&server, protocol)).await.unwrap();
                let connector = tokio_rustls::TlsConnector::from(common::client_tls(b"http/1.1"));
                let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
                let mut stream = connector.connect(name, tcp).await.unwrap();
                stream.write_all(&request).await.unwrap();
                let mut received = Vec::new();
                tokio::time::timeout(READ + SLACK, stream.read_to_end(&mut received))
                    .await
                    .unwrap_or_else(|_| panic!("{what}: still open"))
                    .ok();
                received
            } else {
                let mut stream = TcpStream::connect(addr(&server, protocol)).await.unwrap();
                stream.write_all(&request).await.unwrap();
                read_until_closed(&mut stream, READ + SLACK, &what).await.0
            };
            let text = String::from_utf8_lossy(&received);
            assert!(text.starts_with("HTTP/1.1 408"), "{what}: {text}");
            assert!(text.contains("did not arrive within 1s"), "{what}: {text}");
        }
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_call_longer_than_the_idle_timeout_is_not_cut() {
    let mut config = short_timeouts(&[Protocol::RestH2, Protocol::Grpc], false);
    config.service_time = Some(ServiceTime::Sleep(IDLE * 2));
    let server = common::start(config).await;
    let mut c = HttpConn::open(&server, Protocol::RestH2).await;
    let r = c.get("/v1/tasks/integer").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let mut grpc = common::GrpcClient::connect(&server).await;
    grpc.call("/protobench.v1.Bench/GetInteger", Vec::new())
        .await
        .expect("a grpc call of 2 s on a 1 s idle timeout");
}

/// The frames in `bytes` as (type, payload).
fn h2_frames(mut bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut frames = Vec::new();
    while bytes.len() >= 9 {
        let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
        if bytes.len() < 9 + len {
            break;
        }
        frames.push((bytes[3], bytes[9..9 + len].to_vec()));
        bytes = &bytes[9 + len..];
    }
    frames
}

/// SETTINGS_MAX_CONCURRENT_STREAMS from the server's first SETTINGS frame.
async fn advertised_max_streams(addr: SocketAddr) -> Option<u32> {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(H2_PREFACE).await.unwrap();
    stream.write_all(H2_SETTINGS).await.unwrap();
    let mut received = Vec::new();
    let mut buf = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let n = tokio::time::timeout_at(deadline, stream.read(&mut buf))
            .await
            .expect("the server's SETTINGS within 5 s")
            .unwrap();
        assert!(n > 0, "closed before sending SETTINGS");
        received.extend_from_slice(&buf[..n]);
        if let Some((kind, payload)) = h2_frames(&received).into_iter().next() {
            assert_eq!(kind, 4, "the server's first frame is SETTINGS");
            return payload
                .chunks_exact(6)
                .find(|s| u16::from_be_bytes([s[0], s[1]]) == 3)
                .map(|s| u32::from_be_bytes([s[2], s[3], s[4], s[5]]));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_http2_listener_advertises_the_stream_limit() {
    let server = common::start(common::config(&[Protocol::RestH2, Protocol::Grpc], false)).await;
    for protocol in [Protocol::RestH2, Protocol::Grpc] {
        assert_eq!(
            advertised_max_streams(addr(&server, protocol)).await,
            Some(1000),
            "{protocol} default"
        );
    }
    let mut config = common::config(&[Protocol::RestH2, Protocol::Grpc], false);
    config.max_streams = 7;
    let server = common::start(config).await;
    for protocol in [Protocol::RestH2, Protocol::Grpc] {
        assert_eq!(
            advertised_max_streams(addr(&server, protocol)).await,
            Some(7),
            "{protocol}"
        );
    }
}

/// A gRPC frame: uncompressed, `message` as it is.
fn grpc_frame(message: &[u8]) -> Vec<u8> {
    let mut frame = vec![0];
    frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
    frame.extend_from_slice(message);
    frame
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_refuses_a_missing_or_non_grpc_content_type_with_415() {
    let server = common::start(common::config(&[Protocol::Grpc], false)).await;
    let mut c = HttpConn::open(&server, Protocol::Grpc).await;
    let path = "/protobench.v1.Bench/GetInventoryXs";
    for content_type in [
        None,
        Some("application/json"),
        Some("text/plain"),
        Some("application/grp"),
    ] {
        let mut headers = vec![("te", "trailers")];
        headers.extend(content_type.map(|ct| ("content-type", ct)));
        let r = c.send(Method::POST, path, &headers, grpc_frame(b"")).await;
        assert_eq!(r.status, 415, "content-type {content_type:?}: {}", r.text());
        assert!(r.text().contains("expected application/grpc"), "{}", r.text());
    }
    for content_type in ["application/grpc", "application/grpc+proto"] {
        let headers = [("te", "trailers"), ("content-type", content_type)];
        let r = c.send(Method::POST, path, &headers, grpc_frame(b"")).await;
        assert_eq!(r.status, 200, "{content_type}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unary_grpc_call_with_a_second_message_is_not_ok() {
    let server = common::start(common::config(&[Protocol::Grpc], false)).await;
    let mut c = HttpConn::open(&server, Protocol::Grpc).await;
    let headers = [("te", "trailers"), ("content-type", "application/grpc")];
    for (path, workload) in [
        ("/helloworld.Greeter/SayHello", "grpcbench.string-10b"),
        ("/protobench.v1.Bench/EchoProduct", "product.small"),
    ] {
        let message = common::vector(workload, "request.pb");
        let one = c.send(Method::POST, path, &headers, grpc_frame(&message)).await;
        assert_eq!(
            (one.status.as_u16(), one.header("grpc-status")),
            (200, ""),
            "{path}: one message is fine"
        );
        let body = [grpc_frame(&message), grpc_frame(&message)].concat();
        let r = c.send(Method::POST, path, &headers, body).await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("grpc-status"), "13", "{path}: INTERNAL; {:?}", r.headers);
        assert!(
            r.header("grpc-message")
                .contains("more%20than%20one%20request%20message"),
            "{path}: {}",
            r.header("grpc-message")
        );
        assert!(r.body.is_empty(), "{path}: no response message");
    }
}

fn soap_siblings(count: usize) -> Vec<u8> {
    let mut xml = String::from(
        r#"<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><EchoRequest xmlns="urn:protobench:v1">"#,
    );
    for _ in 0..count {
        xml.push_str("<a/>");
    }
    xml.push_str("</EchoRequest></soap:Body></soap:Envelope>");
    xml.into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_soap_request_of_more_than_10000_elements_is_refused_before_parsing() {
    let server = common::start(common::config(&[Protocol::Soap], false)).await;
    let mut c = HttpConn::open(&server, Protocol::Soap).await;
    // The envelope, Body and EchoRequest are 3 elements.
    for (siblings, refused) in [(9_997, false), (9_998, true), (2_000_000, true)] {
        let r = c.post_soap(&soap_siblings(siblings)).await;
        assert_eq!(r.status, 500, "{siblings}");
        let (code, message) = soap_fault(&r);
        assert_eq!(code, "soap:Client", "{siblings}");
        assert_eq!(
            message == "too many XML elements: more than 10000",
            refused,
            "{siblings} siblings: {message}"
        );
    }
    let echo = common::vector("echo.128b", "request.xml");
    assert_eq!(c.post_soap(&echo).await.status, 200, "the connection still works");
}
