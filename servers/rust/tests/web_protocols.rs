//! GraphQL, Connect (protobuf and JSON) and gRPC-Web (binary and text):
//! every workload, clear text and TLS, exactly the contract's response
//! (GraphQL byte for byte with its vector; Connect and gRPC-Web with the
//! protobuf and JSON vectors they reuse), and clean errors for bad input;
//! Connect's server streaming (the subscription) and its refusals.

mod common;

use common::{HttpConn, vector};
use http::Method;
use protobench_contract::{Encoding, Message, Protocol, graphql, grpc_web, workload};

const NEW: [Protocol; 5] = [
    Protocol::Graphql,
    Protocol::Connect,
    Protocol::ConnectJson,
    Protocol::GrpcWeb,
    Protocol::GrpcWebText,
];

fn graphql_vector(workload: &str, file: &str) -> Vec<u8> {
    let path = common::contract_dir().join("graphql/vectors").join(workload).join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Posts a gRPC-Web call and returns its messages and `grpc-status`.
async fn grpc_web_call(conn: &mut HttpConn, text: bool, path: &str, message: &[u8]) -> (Vec<Vec<u8>>, String, String) {
    let (ct, body) = if text {
        (
            grpc_web::TEXT_CONTENT_TYPE,
            grpc_web::to_text(&grpc_web::frame(message)),
        )
    } else {
        (grpc_web::CONTENT_TYPE, grpc_web::frame(message))
    };
    // The response is text when Accept asks for it (tonic-web, and the
    // grpc-web JavaScript client sends it so).
    let response = conn
        .send(Method::POST, path, &[("content-type", ct), ("accept", ct)], body)
        .await;
    assert_eq!(response.status, 200, "{path}: {}", response.text());
    assert!(
        response.header("content-type").starts_with(ct),
        "{path}: {}",
        response.header("content-type")
    );
    let raw = if text {
        grpc_web::from_text(&response.body).unwrap()
    } else {
        response.body.to_vec()
    };
    let parsed = grpc_web::parse(&raw).unwrap_or_else(|e| panic!("{path}: {e}"));
    if !parsed.has_trailers {
        // A trailers-only response: the status is in the headers, the body empty.
        assert!(raw.is_empty(), "{path}: messages but no trailer frame");
        let status = response.header("grpc-status").to_owned();
        let message = response.header("grpc-message").to_owned();
        assert!(!status.is_empty(), "{path}: no grpc-status anywhere");
        return (Vec::new(), status, message);
    }
    let status = parsed.trailer("grpc-status").unwrap_or("(none)").to_owned();
    let message = parsed.trailer("grpc-message").unwrap_or("").to_owned();
    (parsed.messages.iter().map(|m| m.to_vec()).collect(), status, message)
}

async fn every_workload(tls: bool) {
    let server = common::start(common::config(&NEW, tls)).await;
    let dataset = common::dataset();
    let mut gql = HttpConn::open(&server, Protocol::Graphql).await;
    let mut connect = HttpConn::open(&server, Protocol::Connect).await;
    let mut connect_json = HttpConn::open(&server, Protocol::ConnectJson).await;
    let mut web = HttpConn::open(&server, Protocol::GrpcWeb).await;
    let mut web_text = HttpConn::open(&server, Protocol::GrpcWebText).await;
    for w in workload::ALL {
        let op = w.operation;
        let expected = op.respond(&w.request(), &dataset).unwrap();

        let r = gql.post_json("/graphql", &vector(w.name, "request.graphql.json")).await;
        assert_eq!(r.status, 200, "{} graphql: {}", w.name, r.text());
        assert_eq!(r.header("content-type"), "application/json");
        assert!(
            r.body == vector(w.name, "response.graphql.json"),
            "{} graphql: bytes differ from the vector: {}",
            w.name,
            &r.text()[..r.text().len().min(300)]
        );
        assert!(Message::decode_response(op, Encoding::Graphql, &r.body).unwrap() == expected);

        let r = connect
            .send(
                Method::POST,
                op.grpc_path(),
                &[("content-type", "application/proto"), ("connect-protocol-version", "1")],
                vector(w.name, "request.pb"),
            )
            .await;
        assert_eq!(r.status, 200, "{} connect: {}", w.name, r.text());
        assert_eq!(r.header("content-type"), "application/proto");
        assert!(
            r.body == vector(w.name, "response.pb"),
            "{} connect: bytes differ",
            w.name
        );

        let r = connect_json
            .send(
                Method::POST,
                op.grpc_path(),
                &[("content-type", "application/json")],
                vector(w.name, "request.json"),
            )
            .await;
        assert_eq!(r.status, 200, "{} connect-json: {}", w.name, r.text());
        assert_eq!(r.header("content-type"), "application/json");
        assert!(
            r.body == vector(w.name, "response.json"),
            "{} connect-json: bytes differ",
            w.name
        );

        for (text, conn) in [(false, &mut web), (true, &mut web_text)] {
            let (messages, status, message) =
                grpc_web_call(conn, text, op.grpc_path(), &vector(w.name, "request.pb")).await;
            assert_eq!(
                (status.as_str(), message.as_str()),
                ("0", ""),
                "{} grpc-web text={text}",
                w.name
            );
            assert_eq!(messages.len(), 1, "{} grpc-web text={text}", w.name);
            assert!(
                messages[0] == vector(w.name, "response.pb"),
                "{} grpc-web: bytes differ",
                w.name
            );
        }
    }
    for g in graphql::WORKLOADS {
        let r = gql.post_json("/graphql", &graphql_vector(g.name, "request.json")).await;
        assert_eq!(r.status, 200, "{}: {}", g.name, r.text());
        assert!(
            r.body == graphql_vector(g.name, "response.json"),
            "{}: bytes differ",
            g.name
        );
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_workload_over_graphql_connect_and_grpc_web_clear_text() {
    every_workload(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_workload_over_graphql_connect_and_grpc_web_tls() {
    every_workload(true).await;
}

fn first_error(r: &common::HttpResponse) -> (String, String) {
    let v = r.json();
    assert!(v["data"].is_null(), "{v}");
    let e = &v["errors"][0];
    (
        e["message"].as_str().unwrap_or_default().to_owned(),
        e["extensions"]["code"].as_str().unwrap_or_default().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphql_refuses_bad_input_cleanly() {
    let mut config = common::config(&[Protocol::Graphql], false);
    config.max_request_bytes = 4096;
    let server = common::start(config).await;
    let mut c = HttpConn::open(&server, Protocol::Graphql).await;
    // Not JSON, not a GraphQL request: the contract's JSON error.
    for body in [&b"{"[..], b"[1,2]", b"{\"query\": 5}"] {
        let r = c.post_json("/graphql", body).await;
        common::assert_json_error(&r, 400);
    }
    let r = c
        .send(
            Method::POST,
            "/graphql",
            &[("content-type", "text/plain")],
            b"{}".to_vec(),
        )
        .await;
    common::assert_json_error(&r, 415);
    let r = c.post_json("/graphql", &vec![b' '; 5000]).await;
    common::assert_json_error(&r, 413);
    let r = c.send(Method::PUT, "/graphql", &[], Vec::new()).await;
    common::assert_json_error(&r, 405);
    assert_eq!(r.header("allow"), "GET, POST");
    common::assert_json_error(&c.post_json("/nope", b"{}").await, 404);
    // GraphQL errors: a syntax error, an unknown field, an unknown file.
    let r = c.post_json("/graphql", br#"{"query":"{ inventoryS { "}"#).await;
    assert_eq!(r.status, 200);
    assert!(!first_error(&r).0.is_empty());
    let r = c.post_json("/graphql", br#"{"query":"{ nope }"}"#).await;
    assert!(first_error(&r).0.contains("nope"), "{}", r.text());
    let r = c
        .post_json("/graphql", br#"{"query":"{ file(name: \"x\") { name } }"}"#)
        .await;
    let (message, code) = first_error(&r);
    assert_eq!(code, "NOT_FOUND");
    assert!(message.contains("no file named \"x\""), "{message}");
    // A clone over the contract's bound: INVALID_ARGUMENT.
    let r = c
        .post_json(
            "/graphql",
            br#"{"query":"mutation { cloneText(input: {text: \"a\", times: 100001}) { texts } }"}"#,
        )
        .await;
    assert_eq!(first_error(&r).1, "INVALID_ARGUMENT", "{}", r.text());
    // Both members of the oneof; a float beyond float32's range.
    for input in [r#"{c1: \"a\", c2: true}"#, r#"{f: 1e300}"#] {
        let body =
            format!(r#"{{"query":"mutation {{ sayHello(input: {{request: {input}}}) {{ response {{ name }} }} }}"}}"#);
        let r = c.post_json("/graphql", body.as_bytes()).await;
        assert_eq!(first_error(&r).1, "INVALID_ARGUMENT", "{input}: {}", r.text());
    }
    // Aliases repeating the largest root field: refused by the complexity
    // limit before anything runs.
    let aliases: String = (0..100)
        .map(|i| format!("a{i}: inventoryL {{ items {{ id }} }} "))
        .collect();
    let body = serde_json::json!({ "query": format!("{{ {aliases} }}") }).to_string();
    let r = c.post_json("/graphql", body.as_bytes()).await;
    assert!(r.body.len() < 4096, "{} bytes", r.body.len());
    assert!(first_error(&r).0.to_lowercase().contains("complex"), "{}", r.text());
    assert_eq!(server.requests_served(), 0, "nothing refused reached an operation");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphql_injected_failures_are_graphql_errors() {
    let mut config = common::config(&[Protocol::Graphql], false);
    config.failure_rate = 1.0;
    let server = common::start(config).await;
    let mut c = HttpConn::open(&server, Protocol::Graphql).await;
    let r = c
        .post_json("/graphql", &vector("tasks.int", "request.graphql.json"))
        .await;
    assert_eq!(
        first_error(&r),
        ("injected failure".to_owned(), "INJECTED_FAILURE".to_owned())
    );
    // Three root fields are three calls, each drawn.
    let r = c
        .post_json("/graphql", &graphql_vector("graphql.dashboard", "request.json"))
        .await;
    assert_eq!(r.json()["errors"].as_array().map(Vec::len), Some(3), "{}", r.text());
    assert_eq!(server.requests_served(), 4);
    server.shutdown().await;
}

fn connect_error(r: &common::HttpResponse, status: u16, code: &str) -> String {
    assert_eq!(r.status, status, "{}", r.text());
    assert_eq!(r.header("content-type"), "application/json");
    let v = r.json();
    assert_eq!(v["code"], code, "{v}");
    v["message"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_errors_carry_connect_codes() {
    let mut config = common::config(&[Protocol::Connect], false);
    config.max_request_bytes = 4096;
    let server = common::start(config).await;
    let mut c = HttpConn::open(&server, Protocol::Connect).await;
    let proto = [("content-type", "application/proto")];
    let echo = "/protobench.v1.Bench/Echo";
    let r = c.send(Method::POST, echo, &proto, vec![0xff, 0xff, 0xff]).await;
    assert!(connect_error(&r, 400, "invalid_argument").contains("protobuf"));
    let r = c.post_json(echo, br#"{"payload":"x","extra":1}"#).await;
    connect_error(&r, 400, "invalid_argument");
    let r = c.send(Method::POST, echo, &proto, vec![b'x'; 5000]).await;
    assert!(connect_error(&r, 429, "resource_exhausted").contains("limit of 4096"));
    let r = c.send(Method::POST, "/protobench.v1.Bench/Nope", &proto, vec![]).await;
    connect_error(&r, 501, "unimplemented");
    let r = c
        .send(Method::POST, echo, &[("content-type", "text/plain")], vec![])
        .await;
    assert_eq!(r.status, 415);
    let r = c.send(Method::GET, echo, &[], vec![]).await;
    assert_eq!(r.status, 405);
    let r = c
        .send(
            Method::POST,
            echo,
            &[("content-type", "application/proto"), ("content-encoding", "gzip")],
            vec![],
        )
        .await;
    connect_error(&r, 501, "unimplemented");
    let file = Message::FileRequest(protobench_contract::pb::bench::FileRequest { name: "x".into() });
    let r = c
        .send(Method::POST, "/protobench.v1.Bench/GetFile", &proto, file.to_protobuf())
        .await;
    assert!(connect_error(&r, 404, "not_found").contains("no file named"));
    assert_eq!(server.requests_served(), 0);
    server.shutdown().await;

    let mut config = common::config(&[Protocol::ConnectJson], false);
    config.failure_rate = 1.0;
    let server = common::start(config).await;
    let mut c = HttpConn::open(&server, Protocol::ConnectJson).await;
    let r = c.post_json(echo, br#"{"payload":"x"}"#).await;
    assert_eq!(connect_error(&r, 503, "unavailable"), "injected failure");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_web_errors_are_grpc_statuses_in_the_trailer_frame() {
    let mut config = common::config(&[Protocol::GrpcWeb], false);
    config.max_request_bytes = 4096;
    let server = common::start(config).await;
    let mut c = HttpConn::open(&server, Protocol::GrpcWeb).await;
    let file = Message::FileRequest(protobench_contract::pb::bench::FileRequest { name: "x".into() });
    let (messages, status, message) =
        grpc_web_call(&mut c, false, "/protobench.v1.Bench/GetFile", &file.to_protobuf()).await;
    assert_eq!((messages.len(), status.as_str()), (0, "5"), "{message}");
    let (_, status, _) = grpc_web_call(&mut c, true, "/protobench.v1.Bench/Echo", &[0xff, 0xff]).await;
    assert_eq!(status, "3");
    let (_, status, _) = grpc_web_call(&mut c, false, "/protobench.v1.Bench/Echo", &[b'x'; 5000]).await;
    assert_eq!(status, "8", "over the size limit: RESOURCE_EXHAUSTED");
    let (_, status, _) = grpc_web_call(&mut c, false, "/protobench.v1.Bench/Nope", &[]).await;
    assert_eq!(status, "12");
    // Not gRPC-Web at all: refused, never answered as a call.
    let r = c
        .send(
            Method::POST,
            "/protobench.v1.Bench/Echo",
            &[("content-type", "application/json")],
            b"{}".to_vec(),
        )
        .await;
    assert!(r.status.is_client_error(), "{}", r.status);
    assert_eq!(server.requests_served(), 0);
    server.shutdown().await;
}

/// A GET of `target` on `conn`.
async fn get(conn: &mut HttpConn, target: &str) -> common::HttpResponse {
    conn.send(Method::GET, target, &[("accept", "application/json")], Vec::new())
        .await
}

/// `graphql-get`: every query workload by its hash alone, unknown before
/// the registering POST and exactly the vector after it; a document
/// registered on one listener is that listener's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persisted_queries_by_get_answer_exactly_the_vectors() {
    use graphql::persisted::{Persisted, not_found_body};
    let server = common::start(common::config(&[Protocol::Graphql, Protocol::GraphqlGet], false)).await;
    let mut c = HttpConn::open(&server, Protocol::GraphqlGet).await;
    let not_found: serde_json::Value = serde_json::from_slice(&not_found_body()).unwrap();
    let mut queries: Vec<(String, Vec<u8>, Vec<u8>)> = workload::ALL
        .iter()
        .filter(|w| !graphql::root(w.operation).mutation)
        .map(|w| {
            (
                w.name.to_owned(),
                vector(w.name, "request.graphql.json"),
                vector(w.name, "response.graphql.json"),
            )
        })
        .collect();
    for g in graphql::WORKLOADS {
        queries.push((
            g.name.to_owned(),
            graphql_vector(g.name, "request.json"),
            graphql_vector(g.name, "response.json"),
        ));
    }
    assert_eq!(queries.len(), 14, "9 REST GETs and 5 GraphQL-only workloads");
    for (name, request, response) in &queries {
        let p = Persisted::from_body(request).unwrap();
        let target = p.get_target();
        let r = get(&mut c, &target).await;
        if name != "tasks.file-3m4" {
            // (tasks.file-455k registered the same document)
            assert_eq!(r.status, 200, "{name}: {}", r.text());
            assert_eq!(r.json(), not_found, "{name}");
        }
        let r = c.post_json("/graphql", &p.registration_body()).await;
        assert!(
            r.status == 200 && r.body == *response,
            "{name}: registering: {}",
            r.text()
        );
        let r = get(&mut c, &target).await;
        assert_eq!(r.status, 200, "{name}: {}", r.text());
        assert_eq!(r.header("content-type"), "application/json");
        assert!(r.body == *response, "{name}: bytes differ from the vector");
    }
    // The store is per listener: the graphql listener has none of these.
    let mut other = HttpConn::open(&server, Protocol::Graphql).await;
    let p = Persisted::from_body(&queries[0].1).unwrap();
    assert_eq!(get(&mut other, &p.get_target()).await.json(), not_found);
    // A plain GET with the document runs it (no hash, nothing stored).
    let plain = format!(
        "/graphql?query={}",
        p.query.replace(' ', "%20").replace('{', "%7B").replace('}', "%7D")
    );
    let r = get(&mut other, &plain).await;
    assert!(r.status == 200 && r.body == queries[0].2, "{}", r.text());
    server.shutdown().await;
}

/// `graphql-get`'s refusals: a hash that is not the document's, a mutation
/// by GET, malformed extensions, no document at all; and the store's bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persisted_queries_refuse_bad_input_and_keep_at_most_1000_documents() {
    use graphql::persisted::{CAPACITY, MISMATCH, Persisted, extensions, not_found_body};
    let server = common::start(common::config(&[Protocol::GraphqlGet], false)).await;
    let mut c = HttpConn::open(&server, Protocol::GraphqlGet).await;
    let message = |r: &common::HttpResponse| r.json()["errors"][0]["message"].as_str().unwrap_or_default().to_owned();
    // A document whose hash is not the one given: refused, not stored.
    let p = Persisted::from_body(&vector("inventory.xs", "request.graphql.json")).unwrap();
    let mut wrong = serde_json::from_slice::<serde_json::Value>(&p.registration_body()).unwrap();
    wrong["extensions"] = extensions(&"0".repeat(64));
    let r = c.post_json("/graphql", wrong.to_string().as_bytes()).await;
    assert_eq!(
        (r.status.as_u16(), message(&r)),
        (400, MISMATCH.to_owned()),
        "{}",
        r.text()
    );
    // A mutation by GET: 405, Allow: POST (its hash registered by POST first).
    let m = Persisted::from_body(&vector("echo.1k", "request.graphql.json")).unwrap();
    assert!(m.is_mutation());
    assert_eq!(c.post_json("/graphql", &m.registration_body()).await.status, 200);
    let r = get(&mut c, &m.get_target()).await;
    assert_eq!(r.status, 405, "{}", r.text());
    assert_eq!(r.header("allow"), "POST");
    assert!(message(&r).contains("mutation"), "{}", r.text());
    // Malformed: version 2, a short hash, extensions not JSON, nothing at all.
    for (query, says) in [
        (
            "extensions=%7B%22persistedQuery%22%3A%7B%22version%22%3A2%2C%22sha256Hash%22%3A%22ab%22%7D%7D",
            "version must be 1",
        ),
        (
            "extensions=%7B%22persistedQuery%22%3A%7B%22version%22%3A1%2C%22sha256Hash%22%3A%22ab%22%7D%7D",
            "64 hex digits",
        ),
        ("extensions=%7Bnope", "extensions"),
        ("", "no query"),
    ] {
        let r = get(&mut c, &format!("/graphql?{query}")).await;
        assert_eq!(r.status, 400, "{query}: {}", r.text());
        assert!(message(&r).contains(says), "{query}: {}", r.text());
    }
    // The bound: 1,001 documents registered, the first is dropped, the
    // others are kept.
    let doc = |i: usize| format!(r#"{{"query":"query Q{i} {{ a{i}: inventoryS {{ serviceName }} }}"}}"#);
    for i in 0..=CAPACITY {
        let p = Persisted::from_body(doc(i).as_bytes()).unwrap();
        let r = c.post_json("/graphql", &p.registration_body()).await;
        assert_eq!(r.status, 200, "{i}: {}", r.text());
    }
    let not_found: serde_json::Value = serde_json::from_slice(&not_found_body()).unwrap();
    let first = Persisted::from_body(doc(0).as_bytes()).unwrap();
    assert_eq!(get(&mut c, &first.get_target()).await.json(), not_found);
    for i in [1, CAPACITY / 2, CAPACITY] {
        let p = Persisted::from_body(doc(i).as_bytes()).unwrap();
        let r = get(&mut c, &p.get_target()).await;
        assert!(r.json()["data"].is_object(), "{i}: {}", r.text());
    }
    server.shutdown().await;
}

/// The envelopes of a Connect stream's body: (flags, message).
fn envelopes(mut body: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    while !body.is_empty() {
        let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
        out.push((body[0], body[5..5 + len].to_vec()));
        body = &body[5 + len..];
    }
    out
}

fn enveloped(flags: u8, message: &[u8]) -> Vec<u8> {
    let mut out = vec![flags];
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// A stream that ended at once with a Connect error: its code and message.
fn stream_error(r: &common::HttpResponse) -> (String, String) {
    assert_eq!(r.status, 200, "{}", r.text());
    let all = envelopes(&r.body);
    assert_eq!(all.len(), 1, "only the end-of-stream message: {all:?}");
    assert_eq!(all[0].0, 0x02);
    let end: serde_json::Value = serde_json::from_slice(&all[0].1).unwrap();
    (
        end["error"]["code"].as_str().unwrap().to_owned(),
        end["error"]["message"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_server_streaming_sends_the_feed_then_the_end_of_stream_message() {
    use prost::Message as _;
    use protobench_contract::pb::bench::{FeedEvent, SubscribeRequest};
    let mut config = common::config(&[Protocol::Connect], false);
    config.max_request_bytes = 4096;
    let server = common::start(config).await;
    let mut c = HttpConn::open(&server, Protocol::Connect).await;
    let path = "/protobench.v1.Streams/Subscribe";
    let proto = [("content-type", "application/connect+proto")];
    let request = SubscribeRequest {
        count: 3,
        items: 2,
        rate: 0,
    };
    // Protobuf: three events in order, then `{}`.
    let r = c
        .send(Method::POST, path, &proto, enveloped(0, &request.encode_to_vec()))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), "application/connect+proto");
    let all = envelopes(&r.body);
    assert_eq!(all.len(), 4, "{all:?}");
    for (i, (flags, message)) in all[..3].iter().enumerate() {
        let event = FeedEvent::decode(&message[..]).unwrap();
        assert_eq!((*flags, event.seq, event.items.len()), (0, i as u32 + 1, 2));
    }
    assert_eq!(all[3], (0x02, b"{}".to_vec()));
    // JSON: the same feed as canonical JSON.
    let json = [("content-type", "application/connect+json")];
    let r = c
        .send(Method::POST, path, &json, enveloped(0, br#"{"count":2,"items":1}"#))
        .await;
    assert_eq!(r.header("content-type"), "application/connect+json");
    let all = envelopes(&r.body);
    assert_eq!(all.len(), 3, "{all:?}");
    let event: serde_json::Value = serde_json::from_slice(&all[1].1).unwrap();
    assert_eq!(event["seq"], 2);
    // Refusals: errors in the end-of-stream message (HTTP 200), no event.
    for (body, code, says) in [
        (vec![0, 0, 0], "invalid_argument", "expected one enveloped message"),
        (enveloped(1, b"x"), "invalid_argument", "compressed"),
        (
            enveloped(0, &[0xff, 0xff]),
            "invalid_argument",
            "undecodable SubscribeRequest",
        ),
        (
            enveloped(
                0,
                &SubscribeRequest {
                    count: 2_000_000,
                    items: 1,
                    rate: 0,
                }
                .encode_to_vec(),
            ),
            "invalid_argument",
            "count is 2000000",
        ),
        (vec![0; 5000], "resource_exhausted", "limit of 4096"),
    ] {
        let r = c.send(Method::POST, path, &proto, body).await;
        let (found, message) = stream_error(&r);
        assert_eq!(found, code, "{message}");
        assert!(message.contains(says), "{message}");
    }
    let r = c
        .send(
            Method::POST,
            path,
            &[
                ("content-type", "application/connect+proto"),
                ("connect-content-encoding", "gzip"),
            ],
            enveloped(0, &request.encode_to_vec()),
        )
        .await;
    assert_eq!(stream_error(&r).0, "unimplemented");
    // Not Connect's streaming media type: an HTTP refusal.
    let r = c
        .send(
            Method::POST,
            path,
            &[("content-type", "application/proto")],
            request.encode_to_vec(),
        )
        .await;
    assert_eq!(
        connect_error(&r, 415, "unknown"),
        "content type \"application/proto\" is not supported for a stream; expected application/connect+proto or application/connect+json"
    );
    server.shutdown().await;

    let mut config = common::config(&[Protocol::Connect], false);
    config.failure_rate = 1.0;
    let server = common::start(config).await;
    let mut c = HttpConn::open(&server, Protocol::Connect).await;
    let r = c
        .send(Method::POST, path, &proto, enveloped(0, &request.encode_to_vec()))
        .await;
    assert_eq!(stream_error(&r), ("unavailable".into(), "injected failure".into()));
    server.shutdown().await;
}
