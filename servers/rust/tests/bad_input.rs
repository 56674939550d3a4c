//! Bad input gets the contract's status and a clear message, never a panic
//! or a hung connection; the connection (or server) keeps working after it.

mod common;

use bytes::Bytes;
use common::{GrpcClient, HttpConn, assert_json_error, soap_fault, vector};
use http::Method;
use protobench_contract::Protocol;
use tonic::Code;

const SMALL_LIMIT: usize = 1024;

fn small_limit_config(protocols: &[Protocol]) -> protobench_server::ServerConfig {
    let mut config = common::config(protocols, false);
    config.max_request_bytes = SMALL_LIMIT;
    config
}

fn echo_json(payload_len: usize) -> Vec<u8> {
    format!(r#"{{"payload":"{}"}}"#, "x".repeat(payload_len)).into_bytes()
}

fn echo_xml(payload: &str) -> Vec<u8> {
    format!(
        r#"<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><EchoRequest xmlns="urn:protobench:v1"><payload>{payload}</payload></EchoRequest></soap:Body></soap:Envelope>"#
    )
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_answers_bad_requests_with_the_contract_status_and_json_error() {
    let server = common::start(small_limit_config(&[Protocol::Rest, Protocol::RestH2])).await;
    for protocol in [Protocol::Rest, Protocol::RestH2] {
        let mut c = HttpConn::open(&server, protocol).await;
        // Malformed JSON, wrong types, unknown members, an empty body: 400.
        for body in [
            &br#"{"payload":"#[..],
            br#"{"payload":5}"#,
            br#"{"payload":"x","extra":1}"#,
            b"",
            b"[]",
        ] {
            let r = c.post_json("/v1/echo", body).await;
            assert_json_error(&r, 400);
            assert!(
                r.json()["message"].as_str().unwrap().starts_with("invalid JSON"),
                "{}",
                r.text()
            );
        }
        // Floating-point values the type cannot hold (a float beyond its
        // range, proto3's non-finite strings): 400, never echoed as null.
        for body in [
            &br#"{"request":{"name":"a","f":8.5e168}}"#[..],
            br#"{"request":{"name":"a","f":3.4028236e38}}"#,
            br#"{"request":{"name":"a","d":"Infinity"}}"#,
        ] {
            let r = c.post_json("/v1/greeter/hello", body).await;
            assert_json_error(&r, 400);
            assert!(
                r.json()["message"].as_str().unwrap().contains("not a finite number"),
                "{}",
                r.text()
            );
        }
        let r = c.post_json("/v1/products/modify", br#"{"price":"NaN"}"#).await;
        assert_json_error(&r, 400);
        let r = c
            .post_json("/v1/greeter/hello", br#"{"request":{"name":"a","f":3.4028235e38}}"#)
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        // Invalid values: 400; an unknown file: 404.
        assert_json_error(
            &c.post_json("/v1/tasks/clone", br#"{"text":"x","times":100001}"#).await,
            400,
        );
        assert_json_error(
            &c.post_json("/v1/tasks/clone", br#"{"text":"x","times":-1}"#).await,
            400,
        );
        let r = c.get("/v1/tasks/files/nope").await;
        assert_json_error(&r, 404);
        assert_eq!(
            r.json()["message"],
            "no file named \"nope\"; known files: file-455k, file-3m4"
        );
        // Unknown paths: 404; a known path with another method: 405 with Allow.
        assert_json_error(&c.get("/v1/nope").await, 404);
        assert_json_error(&c.get("/").await, 404);
        let r = c.send(Method::GET, "/v1/echo", &[], Vec::new()).await;
        assert_json_error(&r, 405);
        assert_eq!(r.header("allow"), "POST");
        let r = c.send(Method::DELETE, "/v1/inventory/m", &[], Vec::new()).await;
        assert_json_error(&r, 405);
        assert_eq!(r.header("allow"), "GET, HEAD");
        // A body that is not JSON, or has no content type: 415.
        let r = c
            .send(
                Method::POST,
                "/v1/echo",
                &[("content-type", "text/plain")],
                echo_json(3),
            )
            .await;
        assert_json_error(&r, 415);
        assert_json_error(&c.send(Method::POST, "/v1/echo", &[], echo_json(3)).await, 415);
        // A charset parameter and another letter case are fine.
        let r = c
            .send(
                Method::POST,
                "/v1/echo",
                &[("content-type", "Application/JSON; charset=utf-8")],
                echo_json(3),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        // Over the limit: 413; at the limit: fine.
        assert_json_error(&c.post_json("/v1/echo", &echo_json(SMALL_LIMIT)).await, 413);
        let mut c = HttpConn::open(&server, protocol).await;
        let r = c.post_json("/v1/echo", &echo_json(SMALL_LIMIT - 14)).await;
        assert_eq!((r.status.as_u16(), r.body.len()), (200, SMALL_LIMIT), "{}", r.text());
    }
    server.shutdown().await;
}

/// A body of several chunks with no known length (sent chunked over HTTP/1.1).
struct Chunks(std::collections::VecDeque<Bytes>);

impl hyper::body::Body for Chunks {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        std::task::Poll::Ready(self.0.pop_front().map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_refuses_an_oversized_chunked_body_without_content_length() {
    use http_body_util::BodyExt as _;

    let server = common::start(small_limit_config(&[Protocol::Rest])).await;
    let addr = server.listeners()[0].addr;
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let body = Chunks((0..4).map(|_| Bytes::from(vec![b' '; 512])).collect());
    let request = http::Request::post("/v1/echo")
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 413);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(json["code"], 413);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soap_answers_bad_requests_with_client_faults() {
    let server = common::start(small_limit_config(&[Protocol::Soap])).await;
    let mut c = HttpConn::open(&server, Protocol::Soap).await;
    let client_fault = |r: &common::HttpResponse, status: u16, contains: &str| {
        assert_eq!(r.status.as_u16(), status, "{}", r.text());
        assert_eq!(r.header("content-type"), "text/xml; charset=utf-8");
        let (code, message) = soap_fault(r);
        assert_eq!(code, "soap:Client");
        assert!(message.contains(contains), "{message:?} should mention {contains:?}");
    };
    // Malformed XML, a non-SOAP root, an unknown body element, a bad value.
    client_fault(&c.post_soap(b"<soap:Envelope").await, 500, "malformed XML");
    client_fault(&c.post_soap(b"<a/>").await, 500, "expected a SOAP 1.1 Envelope");
    let unknown = String::from_utf8(echo_xml("x"))
        .unwrap()
        .replace("EchoRequest", "NopeRequest");
    client_fault(
        &c.post_soap(unknown.as_bytes()).await,
        500,
        "unknown body element {urn:protobench:v1}NopeRequest",
    );
    let wrong_ns = String::from_utf8(echo_xml("x"))
        .unwrap()
        .replace("urn:protobench:v1", "urn:other");
    client_fault(
        &c.post_soap(wrong_ns.as_bytes()).await,
        500,
        "unknown body element {urn:other}EchoRequest",
    );
    let bad_value = String::from_utf8(vector("tasks.clone-hello", "request.xml"))
        .unwrap()
        .replace(">1<", ">many<");
    client_fault(&c.post_soap(bad_value.as_bytes()).await, 500, "CloneTextRequest");
    let too_many = String::from_utf8(vector("tasks.clone-hello", "request.xml"))
        .unwrap()
        .replace(">1<", ">100001<");
    client_fault(&c.post_soap(too_many.as_bytes()).await, 500, "times is 100001");
    let no_file = String::from_utf8(vector("tasks.file-455k", "request.xml"))
        .unwrap()
        .replace("file-455k", "nope");
    client_fault(&c.post_soap(no_file.as_bytes()).await, 500, "no file named \"nope\"");
    // DTDs are refused: no external entity is read, no entity is expanded.
    let xxe = br#"<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><EchoRequest xmlns="urn:protobench:v1"><payload>&x;</payload></EchoRequest></soap:Body></soap:Envelope>"#;
    let r = c.post_soap(xxe).await;
    client_fault(&r, 500, "DTD");
    assert!(!r.text().contains("root:"), "the entity was expanded: {}", r.text());
    let laughs = br#"<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><EchoRequest xmlns="urn:protobench:v1"><payload>&b;</payload></EchoRequest></soap:Body></soap:Envelope>"#;
    client_fault(&c.post_soap(laughs).await, 500, "DTD");
    // Undefined entities are refused too.
    client_fault(&c.post_soap(&echo_xml("&x;")).await, 500, "");
    // Wrong content type: 415; over the limit: 413; other paths: 404; other methods: 405.
    let r = c
        .send(
            Method::POST,
            "/soap",
            &[("content-type", "application/json")],
            echo_xml("x"),
        )
        .await;
    client_fault(&r, 415, "text/xml");
    client_fault(&c.post_soap(&echo_xml(&"x".repeat(SMALL_LIMIT))).await, 413, "limit");
    let mut c = HttpConn::open(&server, Protocol::Soap).await;
    let r = c
        .send(Method::POST, "/other", &[("content-type", "text/xml")], echo_xml("x"))
        .await;
    client_fault(&r, 404, "/other");
    let r = c.get("/soap").await;
    client_fault(&r, 405, "GET");
    assert_eq!(r.header("allow"), "POST");
    let r = c.send(Method::PUT, "/soap?wsdl", &[], Vec::new()).await;
    client_fault(&r, 405, "PUT");
    // A missing or empty SOAPAction is fine, and the connection still works.
    let r = c
        .send(
            Method::POST,
            "/soap",
            &[("content-type", "text/xml"), ("soapaction", "")],
            echo_xml("ok"),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("<payload>ok</payload>"));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_answers_bad_requests_with_the_contract_status() {
    let server = common::start(small_limit_config(&[Protocol::Grpc])).await;
    let mut c = GrpcClient::connect(&server).await;
    let expect = |result: Result<Bytes, tonic::Status>, code: Code, contains: &str| {
        let status = result.expect_err("an error status");
        assert_eq!(status.code(), code, "{status:?}");
        assert!(
            status.message().contains(contains),
            "{:?} should mention {contains:?}",
            status.message()
        );
    };
    // Garbage protobuf: INVALID_ARGUMENT (tonic's own codec says INTERNAL).
    expect(
        c.call("/protobench.v1.Bench/Echo", vec![0xff, 0xff, 0xff, 0xff]).await,
        Code::InvalidArgument,
        "invalid protobuf",
    );
    expect(
        c.call("/helloworld.Greeter/SayHello", vec![0x0a, 0x05, 0x01]).await,
        Code::InvalidArgument,
        "invalid protobuf",
    );
    // Invalid values and unknown files.
    let clone = |times: i32| {
        use prost::Message as _;
        protobench_contract::pb::bench::CloneRequest {
            text: "x".into(),
            times,
        }
        .encode_to_vec()
    };
    expect(
        c.call("/protobench.v1.Bench/CloneText", clone(-1)).await,
        Code::InvalidArgument,
        "times is -1",
    );
    let nope = vec![0x0a, 0x04, b'n', b'o', b'p', b'e'];
    expect(
        c.call("/protobench.v1.Bench/GetFile", nope).await,
        Code::NotFound,
        "no file named \"nope\"",
    );
    // Over the size limit: RESOURCE_EXHAUSTED (tonic's own code is OUT_OF_RANGE).
    let big = vec![0x0a, 0x90, 0x08]
        .into_iter()
        .chain(std::iter::repeat_n(b'x', 1040))
        .collect();
    expect(
        c.call("/protobench.v1.Bench/Echo", big).await,
        Code::ResourceExhausted,
        "too large",
    );
    // Unknown methods and services: UNIMPLEMENTED.
    expect(
        c.call("/protobench.v1.Bench/Nope", Vec::new()).await,
        Code::Unimplemented,
        "",
    );
    expect(c.call("/nope.Service/Call", Vec::new()).await, Code::Unimplemented, "");
    // The connection still works.
    assert_eq!(
        c.call("/protobench.v1.Bench/GetInteger", Vec::new()).await.unwrap(),
        vector("tasks.int", "response.pb")
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_garbage_and_the_wrong_http_version_close_the_connection_without_harm() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let server = common::start(common::config(&[Protocol::Rest, Protocol::RestH2], false)).await;
    for protocol in [Protocol::Rest, Protocol::RestH2] {
        let addr = server.listener(protocol).unwrap().addr;
        let wrong_version: &[u8] = match protocol {
            Protocol::Rest => b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            _ => b"GET /v1/inventory/xs HTTP/1.1\r\nHost: x\r\n\r\n",
        };
        for garbage in [&b"\x00\x01\x02 not http\r\n\r\n"[..], wrong_version] {
            let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            tcp.write_all(garbage).await.unwrap();
            let mut out = Vec::new();
            let read = tokio::time::timeout(std::time::Duration::from_secs(5), tcp.read_to_end(&mut out)).await;
            assert!(read.is_ok(), "{protocol}: the server closes the connection");
        }
        // The listener still serves.
        let mut c = HttpConn::open(&server, protocol).await;
        assert_eq!(c.get("/v1/inventory/xs").await.status, 200);
    }
    server.shutdown().await;
}
