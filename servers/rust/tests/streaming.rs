//! The streaming operations (issue 31) against a real server on loopback,
//! every received stream judged by the contract's checker
//! (`protobench_contract::stream::check`):
//!
//! - gRPC (tonic client): echo stream, every subscription workload, upload,
//!   poll; clear text and TLS; stamps on schedule and never in the future;
//!   the limits (count, items, rate, message size) and the injected failure
//!   as statuses;
//! - WebSocket (tokio-tungstenite): echo, subscription and upload in text
//!   (JSON) and binary (protobuf) frames over HTTP/1.1, TLS, and HTTP/2
//!   (RFC 8441); close codes 1000, 1007, 1008 (the idle timeout) and 1009;
//!   a request that is no upgrade;
//! - Server-Sent Events over HTTP/1.1 and HTTP/2: ids in order, the `end`
//!   event, events sent as they are due (not buffered), `Last-Event-ID`;
//! - polling: pages until `done`, the bad queries.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures_util::{SinkExt as _, StreamExt as _};
use http::Method;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use protobench_contract::pb::bench::{
    FeedEvent, FeedPage, PollRequest, StreamMessage, SubscribeRequest, UploadSummary,
};
use protobench_contract::stream::check::{Received, ReceivedStream, StreamEnd, check_workload};
use protobench_contract::stream::workload::{self, Plan, StreamWorkload};
use protobench_contract::stream::{self, MAX_COUNT};
use protobench_contract::{Protocol, StreamOperation};
use protobench_server::RunningServer;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as Ws;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use tonic::codec::Streaming;
use tonic::transport::Channel;
use tonic::{Code, Status};
use tonic_prost::ProstCodec;

use common::{CALL_TIMEOUT, HttpConn, assert_json_error, config, dataset, parse_sse, start};

const ALL: [Protocol; 3] = [Protocol::Rest, Protocol::RestH2, Protocol::Grpc];

fn now_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64
}

fn find(name: &str) -> &'static StreamWorkload {
    workload::find(name).unwrap_or_else(|| panic!("no stream workload {name}"))
}

fn judge(w: &StreamWorkload, received: &ReceivedStream) {
    if let Err(mismatch) = check_workload(w, &dataset(), received) {
        panic!("{}: {mismatch}", w.name);
    }
}

// ------------------------------------------------------------------ gRPC

async fn grpc(server: &RunningServer) -> tonic::client::Grpc<Channel> {
    let mut grpc = tonic::client::Grpc::new(common::grpc_channel(server).await).max_decoding_message_size(usize::MAX);
    grpc.ready().await.expect("channel ready");
    grpc
}

fn path(op: StreamOperation) -> http::uri::PathAndQuery {
    http::uri::PathAndQuery::from_static(op.grpc_path())
}

/// Reads a gRPC response stream to its end, stamping each message's arrival.
async fn drain<T>(response: Result<tonic::Response<Streaming<T>>, Status>) -> (Received<T>, Vec<i64>) {
    let mut messages = Vec::new();
    let mut arrivals = Vec::new();
    let end = match response {
        Err(status) => status_end(status),
        Ok(response) => {
            let mut inbound = response.into_inner();
            loop {
                match tokio::time::timeout(CALL_TIMEOUT, inbound.message())
                    .await
                    .expect("in time")
                {
                    Ok(Some(m)) => {
                        arrivals.push(now_ns());
                        messages.push(m);
                    }
                    Ok(None) => break StreamEnd::Clean,
                    Err(status) => break status_end(status),
                }
            }
        }
    };
    (Received { messages, end }, arrivals)
}

fn status_end(status: Status) -> StreamEnd {
    StreamEnd::Status {
        code: status.code() as i32,
        message: status.message().to_owned(),
    }
}

async fn grpc_echo(server: &RunningServer, sent: Vec<StreamMessage>) -> Received<StreamMessage> {
    let mut grpc = grpc(server).await;
    let request = tonic::Request::new(futures_util::stream::iter(sent));
    let codec = ProstCodec::<StreamMessage, StreamMessage>::default();
    drain(grpc.streaming(request, path(StreamOperation::EchoStream), codec).await)
        .await
        .0
}

async fn grpc_subscribe(server: &RunningServer, request: SubscribeRequest) -> (Received<FeedEvent>, Vec<i64>) {
    let mut grpc = grpc(server).await;
    let codec = ProstCodec::<SubscribeRequest, FeedEvent>::default();
    drain(
        grpc.server_streaming(tonic::Request::new(request), path(StreamOperation::Subscribe), codec)
            .await,
    )
    .await
}

async fn grpc_upload(server: &RunningServer, sent: Vec<StreamMessage>) -> Received<UploadSummary> {
    let mut grpc = grpc(server).await;
    let request = tonic::Request::new(futures_util::stream::iter(sent));
    let codec = ProstCodec::<StreamMessage, UploadSummary>::default();
    match grpc
        .client_streaming(request, path(StreamOperation::Upload), codec)
        .await
    {
        Ok(summary) => Received {
            messages: vec![summary.into_inner()],
            end: StreamEnd::Clean,
        },
        Err(status) => Received {
            messages: vec![],
            end: status_end(status),
        },
    }
}

async fn grpc_poll(server: &RunningServer, request: PollRequest) -> Result<FeedPage, Status> {
    let mut grpc = grpc(server).await;
    let codec = ProstCodec::<PollRequest, FeedPage>::default();
    grpc.unary(tonic::Request::new(request), path(StreamOperation::Poll), codec)
        .await
        .map(tonic::Response::into_inner)
}

/// Every workload over gRPC, as the engine will call it.
async fn grpc_workload(server: &RunningServer, w: &StreamWorkload) -> ReceivedStream {
    match w.plan {
        Plan::Echo { .. } => ReceivedStream::Echo(grpc_echo(server, w.messages()).await),
        Plan::Upload { .. } => ReceivedStream::Upload(grpc_upload(server, w.messages()).await),
        Plan::Subscribe { .. } => ReceivedStream::Feed(grpc_subscribe(server, w.subscribe_request().unwrap()).await.0),
        Plan::Poll { .. } => {
            let mut pages = Vec::new();
            for poll in w.polls() {
                pages.push(grpc_poll(server, poll).await.expect("a page"));
            }
            ReceivedStream::Pages(pages)
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_serves_every_stream_workload_in_clear_text_and_tls() {
    for tls in [false, true] {
        let server = start(config(&[Protocol::Grpc], tls)).await;
        for w in workload::ALL {
            judge(w, &grpc_workload(&server, w).await);
        }
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paced_subscription_is_stamped_on_schedule_and_never_sent_early() {
    let server = start(config(&[Protocol::Grpc], false)).await;
    let w = find("stream.sub.1k.r1000");
    let started = Instant::now();
    let (received, arrivals) = grpc_subscribe(&server, w.subscribe_request().unwrap()).await;
    let took = started.elapsed();
    judge(w, &ReceivedStream::Feed(received.clone()));
    // 100 events at 1000/s: the last is due 99 ms after the first.
    assert!(took >= Duration::from_millis(99), "took {took:?}");
    // Latency from the scheduled send time is never negative: the server
    // does not send an event before its time.
    for (event, arrival) in received.messages.iter().zip(&arrivals) {
        assert!(
            *arrival >= event.scheduled_ns,
            "event {} arrived {} ns before it was due",
            event.seq,
            event.scheduled_ns - arrival
        );
    }
    // The stamps are the server's wall clock, not offsets.
    let first = received.messages[0].scheduled_ns;
    assert!((now_ns() - first).abs() < 60_000_000_000, "first stamp {first}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_refuses_what_is_over_the_limits_with_its_status() {
    let mut config = config(&[Protocol::Grpc], false);
    config.max_request_bytes = 1024;
    let server = start(config).await;
    let over = [
        (
            SubscribeRequest {
                count: MAX_COUNT + 1,
                items: 1,
                rate: 0,
            },
            "count is 1000001, expected 1..=1000000",
        ),
        (
            SubscribeRequest {
                count: 1,
                items: 1396,
                rate: 0,
            },
            "items is 1396, expected 0..=1395",
        ),
        (
            SubscribeRequest {
                count: 1,
                items: 0,
                rate: 2_000_000,
            },
            "rate is 2000000, expected 0 (as fast as possible) ..=1000000",
        ),
    ];
    for (request, message) in over {
        let (received, _) = grpc_subscribe(&server, request).await;
        assert!(received.messages.is_empty());
        assert_eq!(
            received.end,
            StreamEnd::Status {
                code: Code::InvalidArgument as i32,
                message: message.into()
            }
        );
    }
    // A message over the size limit ends an echo stream after the replies
    // to the messages before it, and an upload, with RESOURCE_EXHAUSTED.
    let small = StreamMessage {
        seq: 1,
        payload: "x".repeat(100),
    };
    let big = StreamMessage {
        seq: 2,
        payload: "y".repeat(2000),
    };
    let echoed = grpc_echo(&server, vec![small.clone(), big.clone()]).await;
    assert_eq!(echoed.messages, std::slice::from_ref(&small));
    assert!(
        matches!(&echoed.end, StreamEnd::Status { code, .. } if *code == Code::ResourceExhausted as i32),
        "{:?}",
        echoed.end
    );
    let uploaded = grpc_upload(&server, vec![small.clone(), big]).await;
    assert!(
        matches!(&uploaded.end, StreamEnd::Status { code, .. } if *code == Code::ResourceExhausted as i32),
        "{:?}",
        uploaded.end
    );
    // Bad polls are INVALID_ARGUMENT.
    let bad = PollRequest {
        count: 10,
        max: 0,
        ..PollRequest::default()
    };
    let status = grpc_poll(&server, bad).await.unwrap_err();
    assert_eq!(
        (status.code(), status.message()),
        (Code::InvalidArgument, "max is 0, expected 1..=1000")
    );
    // And the server goes on serving.
    assert_eq!(grpc_echo(&server, vec![small.clone()]).await.messages, [small]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_injected_failure_ends_a_stream_before_its_first_message() {
    let mut config = config(&ALL, false);
    config.failure_rate = 1.0;
    let server = start(config).await;
    let (received, _) = grpc_subscribe(&server, find("stream.sub.1k").subscribe_request().unwrap()).await;
    assert!(received.messages.is_empty());
    assert_eq!(
        received.end,
        StreamEnd::Status {
            code: Code::Unavailable as i32,
            message: "injected failure".into()
        }
    );
    let echo = grpc_echo(&server, find("stream.echo.64b").messages()).await;
    assert!(echo.messages.is_empty(), "{:?}", echo.end);
    // Over HTTP: the contract's 500 before any event or upgrade.
    let mut http = HttpConn::open(&server, Protocol::Rest).await;
    let response = http.get(&format!("{}?count=3", stream::SSE_PATH)).await;
    assert_json_error(&response, 500);
    let addr = server.listener(Protocol::Rest).unwrap().addr;
    let err = tokio_tungstenite::connect_async(format!("ws://{addr}{}", stream::WS_ECHO_PATH))
        .await
        .expect_err("no upgrade");
    assert!(
        matches!(&err, tokio_tungstenite::tungstenite::Error::Http(r) if r.status() == 500),
        "{err}"
    );
}

// ------------------------------------------------------------- WebSocket

/// How a WebSocket client frames its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frames {
    /// Text frames of canonical JSON.
    Json,
    /// Binary frames of protobuf.
    Protobuf,
}

fn frame<T: prost::Message + serde::Serialize>(frames: Frames, message: &T) -> Ws {
    match frames {
        Frames::Json => Ws::text(String::from_utf8(stream::to_json(message)).unwrap()),
        Frames::Protobuf => Ws::binary(message.encode_to_vec()),
    }
}

fn unframe<T: prost::Message + Default + serde::de::DeserializeOwned>(frames: Frames, message: Ws) -> T {
    match (frames, message) {
        (Frames::Json, Ws::Text(text)) => stream::from_json(text.as_bytes()).expect("canonical JSON"),
        (Frames::Protobuf, Ws::Binary(bytes)) => stream::from_protobuf(&bytes).expect("protobuf"),
        (frames, other) => panic!("a {frames:?} frame expected, got {other:?}"),
    }
}

/// A WebSocket to `path` on the listener of `protocol`: HTTP/1.1 (clear or
/// TLS) or, on `rest-h2`, RFC 8441's extended CONNECT over HTTP/2.
async fn ws_connect(server: &RunningServer, protocol: Protocol, path: &str) -> WebSocketStream<Box<dyn Io>> {
    let listener = *server.listener(protocol).expect("served");
    let tcp = TcpStream::connect(listener.addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let alpn: &[u8] = if protocol.is_http2() { b"h2" } else { b"http/1.1" };
    let io: Box<dyn Io> = if listener.tls {
        let connector = tokio_rustls::TlsConnector::from(common::client_tls(alpn));
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        Box::new(connector.connect(name, tcp).await.unwrap())
    } else {
        Box::new(tcp)
    };
    if protocol.is_http2() {
        return h2_websocket(io, listener.addr, listener.tls, path).await;
    }
    let scheme = if listener.tls { "wss" } else { "ws" };
    let url = format!("{scheme}://localhost:{}{path}", listener.addr.port());
    let (ws, response) = tokio_tungstenite::client_async(url, io).await.expect("the upgrade");
    assert_eq!(response.status(), 101);
    ws
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

async fn h2_websocket(io: Box<dyn Io>, addr: SocketAddr, tls: bool, path: &str) -> WebSocketStream<Box<dyn Io>> {
    let (mut sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
        .await
        .expect("h2 handshake");
    tokio::spawn(conn);
    let scheme = if tls { "https" } else { "http" };
    let mut request = http::Request::builder()
        .method(Method::CONNECT)
        .uri(format!("{scheme}://{addr}{path}"))
        .header("sec-websocket-version", "13")
        .body(Empty::<Bytes>::new())
        .unwrap();
    request
        .extensions_mut()
        .insert(hyper::ext::Protocol::from_static("websocket"));
    sender.ready().await.unwrap();
    let response = sender.send_request(request).await.expect("a response to CONNECT");
    assert_eq!(response.status(), 200, "extended CONNECT accepted");
    let upgraded = hyper::upgrade::on(response).await.expect("the stream upgraded");
    let io: Box<dyn Io> = Box::new(TokioIo::new(upgraded));
    WebSocketStream::from_raw_socket(io, Role::Client, None).await
}

/// The close frame of a client that is done: 1000.
fn normal_close() -> CloseFrame {
    CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    }
}

/// Sends the client's close frame. Over HTTP/2 the server may finish its
/// half of the stream (its close reply, END_STREAM, then hyper's RST_STREAM
/// NO_ERROR, RFC 9113 section 8.1) while our flush is still pending, which
/// the client library reports as a write error: the end is judged by what
/// the server sent ([`ws_read_to_end`]), not by that.
async fn close_ws<S>(ws: &mut WebSocketStream<S>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let _ = ws.close(Some(normal_close())).await;
}

/// Reads frames until the server's close frame (answered) and the end.
async fn ws_read_to_end<S>(ws: &mut WebSocketStream<S>) -> (Vec<Ws>, StreamEnd)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut data = Vec::new();
    loop {
        match tokio::time::timeout(CALL_TIMEOUT, ws.next()).await.expect("in time") {
            Some(Ok(Ws::Close(frame))) => {
                let end = StreamEnd::from_close(
                    frame.as_ref().map(|f| u16::from(f.code)),
                    frame.as_ref().map_or("", |f| f.reason.as_str()),
                );
                // The library answers the close; read until the end.
                while let Some(Ok(_)) = ws.next().await {}
                return (data, end);
            }
            Some(Ok(Ws::Ping(_) | Ws::Pong(_))) => {}
            Some(Ok(message)) => data.push(message),
            Some(Err(err)) => return (data, StreamEnd::Broken(err.to_string())),
            None => return (data, StreamEnd::Broken("closed without a close frame".into())),
        }
    }
}

async fn ws_echo(server: &RunningServer, protocol: Protocol, frames: Frames, sent: &[StreamMessage]) -> ReceivedStream {
    let mut ws = ws_connect(server, protocol, stream::WS_ECHO_PATH).await;
    let mut replies = Vec::new();
    // One in flight at a time, as a latency-measuring client would send.
    for m in sent {
        ws.send(frame(frames, m)).await.unwrap();
        let reply = tokio::time::timeout(CALL_TIMEOUT, ws.next()).await.expect("in time");
        replies.push(unframe::<StreamMessage>(frames, reply.unwrap().unwrap()));
    }
    close_ws(&mut ws).await;
    let (rest, end) = ws_read_to_end(&mut ws).await;
    assert!(rest.is_empty(), "nothing after the replies: {rest:?}");
    ReceivedStream::Echo(Received { messages: replies, end })
}

async fn ws_subscribe(
    server: &RunningServer,
    protocol: Protocol,
    frames: Frames,
    request: SubscribeRequest,
) -> Received<FeedEvent> {
    let mut ws = ws_connect(server, protocol, stream::WS_SUBSCRIBE_PATH).await;
    ws.send(frame(frames, &request)).await.unwrap();
    let (data, end) = ws_read_to_end(&mut ws).await;
    Received {
        messages: data.into_iter().map(|m| unframe(frames, m)).collect(),
        end,
    }
}

async fn ws_upload(
    server: &RunningServer,
    protocol: Protocol,
    frames: Frames,
    sent: &[StreamMessage],
) -> ReceivedStream {
    let mut ws = ws_connect(server, protocol, stream::WS_UPLOAD_PATH).await;
    for m in sent {
        ws.feed(frame(frames, m)).await.unwrap();
    }
    // The empty frame ends the upload.
    let end_frame = match frames {
        Frames::Json => Ws::text(""),
        Frames::Protobuf => Ws::binary(Vec::<u8>::new()),
    };
    ws.send(end_frame).await.unwrap();
    let (data, end) = ws_read_to_end(&mut ws).await;
    ReceivedStream::Upload(Received {
        messages: data.into_iter().map(|m| unframe(frames, m)).collect(),
        end,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_serves_echo_subscription_and_upload_in_both_frame_types_over_h1_and_h2() {
    let server = start(config(&ALL, false)).await;
    for protocol in [Protocol::Rest, Protocol::RestH2] {
        for frames in [Frames::Json, Frames::Protobuf] {
            let context = format!("{protocol} {frames:?}");
            for name in ["stream.echo.64b", "stream.echo.64k"] {
                let w = find(name);
                let received = ws_echo(&server, protocol, frames, &w.messages()).await;
                check(w, &received, &context);
            }
            for name in [
                "stream.sub.tiny",
                "stream.sub.8k",
                "stream.sub.64k",
                "stream.sub.1k.r1000",
            ] {
                let w = find(name);
                let received = ws_subscribe(&server, protocol, frames, w.subscribe_request().unwrap()).await;
                check(w, &ReceivedStream::Feed(received), &context);
            }
            for name in ["stream.upload.1k", "stream.upload.64k"] {
                let w = find(name);
                let received = ws_upload(&server, protocol, frames, &w.messages()).await;
                check(w, &received, &context);
            }
        }
    }
}

fn check(w: &StreamWorkload, received: &ReceivedStream, context: &str) {
    if let Err(mismatch) = check_workload(w, &dataset(), received) {
        panic!("{} over {context}: {mismatch}", w.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_works_over_tls_on_both_listeners() {
    let server = start(config(&ALL, true)).await;
    for protocol in [Protocol::Rest, Protocol::RestH2] {
        let w = find("stream.echo.1k");
        check(w, &ws_echo(&server, protocol, Frames::Json, &w.messages()).await, "tls");
        let w = find("stream.sub.1k");
        let received = ws_subscribe(&server, protocol, Frames::Protobuf, w.subscribe_request().unwrap()).await;
        check(w, &ReceivedStream::Feed(received), "tls");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_bad_input_gets_its_close_code_and_the_server_goes_on() {
    let mut config = config(&[Protocol::Rest], false);
    config.max_request_bytes = 1024;
    let server = start(config).await;
    let close_code = |end: &StreamEnd| match end {
        StreamEnd::Close { code, .. } => *code,
        other => panic!("a close frame expected, got {other}"),
    };
    // A message over the size limit: 1009, without buffering it whole.
    let mut ws = ws_connect(&server, Protocol::Rest, stream::WS_ECHO_PATH).await;
    ws.send(Ws::text("x".repeat(4096))).await.unwrap();
    let (_, end) = ws_read_to_end(&mut ws).await;
    assert_eq!(close_code(&end), stream::CLOSE_TOO_BIG, "{end}");
    // Not the message's JSON: 1007 with the decoder's reason.
    let mut ws = ws_connect(&server, Protocol::Rest, stream::WS_ECHO_PATH).await;
    ws.send(Ws::text(r#"{"seq":1,"payload":"a","extra":true}"#))
        .await
        .unwrap();
    let (_, end) = ws_read_to_end(&mut ws).await;
    assert_eq!(close_code(&end), stream::CLOSE_INVALID, "{end}");
    // Garbage protobuf: 1007.
    let mut ws = ws_connect(&server, Protocol::Rest, stream::WS_UPLOAD_PATH).await;
    ws.send(Ws::binary(vec![0xff, 0xff, 0xff])).await.unwrap();
    let (_, end) = ws_read_to_end(&mut ws).await;
    assert_eq!(close_code(&end), stream::CLOSE_INVALID, "{end}");
    // A subscription over the count limit: 1007 naming the limit, no event.
    let request = SubscribeRequest {
        count: MAX_COUNT + 1,
        items: 0,
        rate: 0,
    };
    let received = ws_subscribe(&server, Protocol::Rest, Frames::Json, request).await;
    assert!(received.messages.is_empty());
    assert_eq!(
        received.end,
        StreamEnd::Close {
            code: stream::CLOSE_INVALID,
            reason: "count is 1000001, expected 1..=1000000".into()
        }
    );
    // A plain GET (no upgrade) gets a JSON error, not a hang.
    let mut http = HttpConn::open(&server, Protocol::Rest).await;
    let response = http.get(stream::WS_ECHO_PATH).await;
    assert!(response.status.is_client_error(), "{}", response.status);
    assert_json_error(&response, response.status.as_u16());
    let response = http.send(Method::POST, stream::WS_ECHO_PATH, &[], vec![]).await;
    assert_json_error(&response, 405);
    // Still serving.
    let w = find("stream.echo.64b");
    check(
        w,
        &ws_echo(&server, Protocol::Rest, Frames::Json, &w.messages()).await,
        "after",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_websocket_client_is_closed_after_the_idle_timeout() {
    let mut config = config(&[Protocol::Rest, Protocol::RestH2], false);
    config.idle_timeout = Duration::from_secs(1);
    let server = start(config).await;
    for protocol in [Protocol::Rest, Protocol::RestH2] {
        for path in [stream::WS_ECHO_PATH, stream::WS_SUBSCRIBE_PATH, stream::WS_UPLOAD_PATH] {
            let mut ws = ws_connect(&server, protocol, path).await;
            let started = Instant::now();
            let (_, end) = tokio::time::timeout(Duration::from_secs(10), ws_read_to_end(&mut ws))
                .await
                .expect("closed by the server");
            assert!(
                matches!(&end, StreamEnd::Close { code, .. } if *code == stream::CLOSE_POLICY),
                "{protocol} {path}: {end}"
            );
            assert!(
                started.elapsed() >= Duration::from_millis(900),
                "{:?}",
                started.elapsed()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_closing_mid_subscription_ends_it_cleanly() {
    let server = start(config(&[Protocol::Rest], false)).await;
    let mut ws = ws_connect(&server, Protocol::Rest, stream::WS_SUBSCRIBE_PATH).await;
    let request = SubscribeRequest {
        count: 1000,
        items: 0,
        rate: 100,
    };
    ws.send(frame(Frames::Json, &request)).await.unwrap();
    let first = ws.next().await.unwrap().unwrap();
    assert_eq!(unframe::<FeedEvent>(Frames::Json, first).seq, 1);
    close_ws(&mut ws).await;
    // The server answers the close at once instead of sending on for 10 s.
    let (_, end) = tokio::time::timeout(Duration::from_secs(5), ws_read_to_end(&mut ws))
        .await
        .expect("the server answers the close");
    assert_eq!(end, StreamEnd::Clean);
}

// -------------------------------------------------- Server-Sent Events

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_sends_the_feed_with_ids_in_order_and_an_end_event_over_h1_and_h2() {
    for tls in [false, true] {
        let server = start(config(&ALL, tls)).await;
        for protocol in [Protocol::Rest, Protocol::RestH2] {
            for name in [
                "stream.sub.tiny",
                "stream.sub.1k",
                "stream.sub.64k",
                "stream.sub.1k.r1000",
            ] {
                let w = find(name);
                let request = w.subscribe_request().unwrap();
                let mut http = HttpConn::open(&server, protocol).await;
                let response = http
                    .get(&format!("{}?{}", stream::SSE_PATH, stream::subscribe_query(&request)))
                    .await;
                assert_eq!(response.status, 200);
                assert_eq!(response.header("content-type"), "text/event-stream");
                let (received, ids) = parse_sse(&response.text(), request.count);
                let expected: Vec<String> = (1..=request.count).map(|s| s.to_string()).collect();
                assert_eq!(ids, expected, "{name} over {protocol}: ids are the seqs in order");
                check(w, &ReceivedStream::Feed(received), &format!("sse {protocol} tls={tls}"));
            }
        }
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_sends_each_event_when_due_not_all_at_the_end() {
    let server = start(config(&[Protocol::Rest], false)).await;
    let listener = *server.listener(Protocol::Rest).unwrap();
    let tcp = TcpStream::connect(listener.addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await.unwrap();
    tokio::spawn(conn);
    let request = http::Request::get(format!("{}?count=5&items=1&rate=10", stream::SSE_PATH))
        .header("host", listener.addr.to_string())
        .body(Empty::<Bytes>::new())
        .unwrap();
    let started = Instant::now();
    let response = sender.send_request(request).await.unwrap();
    let mut body = response.into_body();
    let mut arrivals = Vec::new();
    while let Some(frame) = body.frame().await {
        if frame.unwrap().data_ref().is_some_and(|d| !d.is_empty()) {
            arrivals.push(started.elapsed());
        }
    }
    // Five events 100 ms apart: the first arrives long before the last.
    let (first, last) = (arrivals[0], *arrivals.last().unwrap());
    assert!(last >= Duration::from_millis(400), "{arrivals:?}");
    assert!(last - first >= Duration::from_millis(300), "{arrivals:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_resumes_after_last_event_id_and_refuses_bad_queries() {
    let server = start(config(&[Protocol::RestH2], false)).await;
    let mut http = HttpConn::open(&server, Protocol::RestH2).await;
    let response = http
        .send(
            Method::GET,
            &format!("{}?count=10&items=2", stream::SSE_PATH),
            &[("last-event-id", "7")],
            vec![],
        )
        .await;
    let (received, ids) = parse_sse(&response.text(), 10);
    assert_eq!(ids, ["8", "9", "10"]);
    let d = dataset();
    for event in &received.messages {
        assert_eq!(event.items, stream::feed_event(&d, event.seq, 2, 0).items);
    }
    assert_eq!(received.end, StreamEnd::Clean);
    for (query, message) in [
        ("count=0", "count is 0, expected 1..=1000000"),
        ("count=1000001", "count is 1000001, expected 1..=1000000"),
        ("count=5&items=5000", "items is 5000, expected 0..=1395"),
        (
            "count=5&rate=x",
            "query parameter rate is \"x\", expected a non-negative decimal integer",
        ),
        (
            "count=5&after=1",
            "unknown query parameter \"after\"; expected count, items, rate",
        ),
    ] {
        let response = http.get(&format!("{}?{query}", stream::SSE_PATH)).await;
        assert_json_error(&response, 400);
        assert_eq!(response.json()["message"], message, "{query}");
    }
    let response = http
        .send(
            Method::GET,
            &format!("{}?count=5", stream::SSE_PATH),
            &[("last-event-id", "6")],
            vec![],
        )
        .await;
    assert_json_error(&response, 400);
}

// --------------------------------------------------------------- polling

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polling_pages_through_the_feed_until_done_over_h1_and_h2() {
    let server = start(config(&ALL, false)).await;
    let w = find("stream.poll.1k");
    for protocol in [Protocol::Rest, Protocol::RestH2] {
        let mut http = HttpConn::open(&server, protocol).await;
        let mut pages = Vec::new();
        for poll in w.polls() {
            let response = http
                .get(&format!("{}?{}", stream::POLL_PATH, stream::poll_query(&poll)))
                .await;
            assert_eq!(response.status, 200, "{}", response.text());
            assert_eq!(response.header("content-type"), "application/json");
            pages.push(stream::from_json::<FeedPage>(&response.body).expect("a page"));
        }
        check(w, &ReceivedStream::Pages(pages), &protocol.to_string());
        // A paced feed: only what is due comes back; a client polling on
        // catches up with the schedule.
        let start_ns = now_ns();
        let mut after = 0;
        let mut polls = 0;
        while after < 20 {
            let query = format!("count=20&items=1&rate=200&startNs={start_ns}&after={after}&max=1000");
            let page: FeedPage =
                stream::from_json(&http.get(&format!("{}?{query}", stream::POLL_PATH)).await.body).unwrap();
            for event in &page.events {
                assert!(
                    event.scheduled_ns <= now_ns(),
                    "a poll returned an event before its time"
                );
                after += 1;
                assert_eq!(event.seq, after);
            }
            assert_eq!(page.done, after == 20);
            polls += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(polls > 2, "20 events at 200/s are due over 95 ms, not at once");
        // Bad queries: the contract's 400.
        for query in [
            "count=10&max=0",
            "count=10&max=1001",
            "count=10&max=5&after=11",
            "count=10&max=5&rate=5",
        ] {
            let response = http.get(&format!("{}?{query}", stream::POLL_PATH)).await;
            assert_json_error(&response, 400);
        }
    }
}

#[test]
fn the_manifest_lists_every_streaming_transport() {
    // The manifest says the server serves every transport.
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/manifest.toml")).unwrap();
    assert!(
        manifest.contains(r#"streaming = ["grpc", "websocket", "sse", "poll", "connect"]"#),
        "servers/rust/manifest.toml lists its streaming transports"
    );
}
