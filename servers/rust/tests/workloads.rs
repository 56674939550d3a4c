//! Every workload over every protocol, clear text and TLS: the response is
//! exactly the contract's (decoded and compared with `Operation::respond` as
//! the oracle; JSON also compared as a value with the vector, XML and
//! protobuf also byte for byte with the vector).

mod common;

use common::{GrpcClient, HttpConn, drop_nulls, vector};
use http::Method;
use protobench_contract::{Encoding, HttpMethod, Message, Protocol, workload};

async fn every_workload_over_every_protocol(tls: bool) {
    let server = common::start(common::config(&Protocol::ALL, tls)).await;
    let dataset = common::dataset();
    let mut rest = HttpConn::open(&server, Protocol::Rest).await;
    let mut rest_h2 = HttpConn::open(&server, Protocol::RestH2).await;
    let mut soap = HttpConn::open(&server, Protocol::Soap).await;
    let mut grpc = GrpcClient::connect(&server).await;
    let mut calls = 0;
    for w in workload::ALL {
        let op = w.operation;
        let request = w.request();
        let expected = op.respond(&request, &dataset).unwrap();

        for (protocol, conn) in [(Protocol::Rest, &mut rest), (Protocol::RestH2, &mut rest_h2)] {
            let path = op.rest_path(&request);
            let response = match op.http_method() {
                HttpMethod::Get => conn.send(Method::GET, &path, &[], Vec::new()).await,
                HttpMethod::Post => conn.post_json(&path, &vector(w.name, "request.json")).await,
            };
            assert_eq!(response.status, 200, "{} {protocol}: {}", w.name, response.text());
            assert_eq!(
                response.header("content-type"),
                "application/json",
                "{} {protocol}",
                w.name
            );
            let found = Message::decode_response(op, Encoding::Json, &response.body).unwrap();
            assert!(
                found == expected,
                "{} {protocol}: decoded response differs from the oracle",
                w.name
            );
            let expected_json = drop_nulls(serde_json::from_slice(&vector(w.name, "response.json")).unwrap());
            assert!(
                drop_nulls(response.json()) == expected_json,
                "{} {protocol}: JSON differs from the vector",
                w.name
            );
            calls += 1;
        }

        let response = grpc
            .call(op.grpc_path(), vector(w.name, "request.pb"))
            .await
            .unwrap_or_else(|s| panic!("{} grpc: {s:?}", w.name));
        let found = Message::decode_response(op, Encoding::Protobuf, &response).unwrap();
        assert!(
            found == expected,
            "{} grpc: decoded response differs from the oracle",
            w.name
        );
        assert!(
            response == vector(w.name, "response.pb"),
            "{} grpc: bytes differ from the vector",
            w.name
        );
        calls += 1;

        let response = soap.post_soap(&vector(w.name, "request.xml")).await;
        assert_eq!(response.status, 200, "{} soap: {}", w.name, response.text());
        assert_eq!(response.header("content-type"), "text/xml; charset=utf-8");
        let found = Message::decode_response(op, Encoding::Xml, &response.body).unwrap();
        assert!(
            found == expected,
            "{} soap: decoded response differs from the oracle",
            w.name
        );
        assert!(
            response.body == vector(w.name, "response.xml"),
            "{} soap: bytes differ from the vector",
            w.name
        );
        calls += 1;
    }
    assert_eq!(server.requests_served(), calls);
    assert_eq!(server.in_flight(), 0);
    assert!(server.listeners().iter().all(|l| l.tls == tls));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_workload_over_every_protocol_in_clear_text() {
    every_workload_over_every_protocol(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_workload_over_every_protocol_with_tls() {
    every_workload_over_every_protocol(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wsdl_points_at_the_address_the_client_used() {
    for tls in [false, true] {
        let server = common::start(common::config(&[Protocol::Soap], tls)).await;
        let addr = server.listeners()[0].addr;
        let mut soap = HttpConn::open(&server, Protocol::Soap).await;
        let response = soap.get("/soap?wsdl").await;
        assert_eq!(response.status, 200);
        assert_eq!(response.header("content-type"), "text/xml; charset=utf-8");
        let scheme = if tls { "https" } else { "http" };
        let wsdl = response.text();
        assert!(
            wsdl.contains(&format!("<soap:address location=\"{scheme}://{addr}/soap\"/>")),
            "{wsdl}"
        );
        assert!(
            wsdl.contains("<wsdl:definitions") || wsdl.contains("<definitions"),
            "{wsdl}"
        );
        let response = soap
            .send(Method::GET, "/soap?wsdl", &[("host", "a\"b<c")], Vec::new())
            .await;
        assert!(response.text().contains("location=\"http"), "{}", response.text());
        assert!(
            response.text().contains("a&quot;b&lt;c/soap"),
            "the Host header is escaped: {}",
            response.text()
        );
        server.shutdown().await;
    }
}
