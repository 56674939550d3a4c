//! Opening one stream on any transport, up to the point where it carries
//! messages (the response head, the WebSocket upgrade's 101): the one
//! place that knows which transport half goes with which operation, shared
//! by the load path and by `verify`.

use std::rc::Rc;

use bytes::Bytes;
use protobench_contract::pb::bench::{FeedEvent, PollRequest, StreamMessage, SubscribeRequest, UploadSummary};
use protobench_contract::stream::{self as contract_stream, StreamOperation};
use protobench_model::load::Protocol;
use protobench_model::stream::{Frames, StreamEndKind, StreamTransport};

use super::record::Outcome;
use super::session::{MessageSink, MessageSource};
use super::{connect, grpc, poll, sse, ws};
use crate::driver::ByteCounters;
use crate::driver::net::Endpoint;

/// What a stream is opened for.
pub(crate) struct Target<'a> {
    pub(crate) protocol: Protocol,
    pub(crate) transport: StreamTransport,
    pub(crate) op: StreamOperation,
    pub(crate) frames: Frames,
    pub(crate) endpoint: &'a Endpoint,
    /// The gRPC path, WebSocket path, or SSE path and query.
    pub(crate) path: &'a str,
    /// A subscription's request (sent while opening).
    pub(crate) subscribe: &'a SubscribeRequest,
    /// Polling: the first poll (its `startNs` is set when the stream opens)
    /// and the interval after a page that was not full.
    pub(crate) poll: Option<(PollRequest, std::time::Duration)>,
}

/// The sending half of any transport.
pub(crate) enum AnySink {
    Grpc(grpc::GrpcSink),
    Ws(ws::WsSink),
    WsUpload(ws::WsUploadSink),
}

impl MessageSink for AnySink {
    async fn send(&mut self, message: &StreamMessage) -> Result<bool, Outcome> {
        match self {
            AnySink::Grpc(s) => s.send(message).await,
            AnySink::Ws(s) => s.send(message).await,
            AnySink::WsUpload(s) => s.send(message).await,
        }
    }

    async fn finish(&mut self) -> Result<(), Outcome> {
        match self {
            AnySink::Grpc(s) => s.finish().await,
            AnySink::Ws(s) => s.finish().await,
            AnySink::WsUpload(s) => s.finish().await,
        }
    }
}

/// The receiving half of any transport.
pub(crate) enum AnySource {
    Grpc(grpc::GrpcSource),
    Ws(ws::WsSource),
    Sse(sse::SseSource),
    Poll(poll::PollSource),
    Connect(connect::ConnectSource),
}

impl MessageSource<StreamMessage> for AnySource {
    async fn next(&mut self) -> Result<Option<StreamMessage>, Outcome> {
        match self {
            AnySource::Grpc(s) => s.next().await,
            AnySource::Ws(s) => s.next().await,
            AnySource::Sse(_) | AnySource::Poll(_) | AnySource::Connect(_) => {
                Err(Outcome::new(StreamEndKind::WrongMessage, "a feed carries no echo"))
            }
        }
    }
}

impl MessageSource<UploadSummary> for AnySource {
    async fn next(&mut self) -> Result<Option<UploadSummary>, Outcome> {
        match self {
            AnySource::Grpc(s) => s.next().await,
            AnySource::Ws(s) => s.next().await,
            AnySource::Sse(_) | AnySource::Poll(_) | AnySource::Connect(_) => Err(Outcome::new(
                StreamEndKind::WrongMessage,
                "a feed carries no upload summary",
            )),
        }
    }
}

impl MessageSource<FeedEvent> for AnySource {
    async fn next(&mut self) -> Result<Option<FeedEvent>, Outcome> {
        match self {
            AnySource::Grpc(s) => s.next().await,
            AnySource::Ws(s) => s.next().await,
            AnySource::Sse(s) => s.next().await,
            AnySource::Poll(s) => s.next().await,
            AnySource::Connect(s) => s.next().await,
        }
    }
}

/// An open stream: its halves (a subscription over gRPC or SSE has no
/// sending half left) and the requests sent while opening it.
pub(crate) struct Opened {
    pub(crate) sink: Option<AnySink>,
    pub(crate) source: AnySource,
    pub(crate) requests: u64,
}

/// A stream that only receives (a subscription), its one request sent.
fn feed(source: AnySource) -> Opened {
    Opened {
        sink: None,
        source,
        requests: 1,
    }
}

/// The path a stream is opened on: the gRPC path (gRPC and Connect), the
/// WebSocket path of the operation, polling's path, or SSE's path with
/// the subscription in its query.
pub(crate) fn path(transport: StreamTransport, op: StreamOperation, subscribe: &SubscribeRequest) -> String {
    match (transport, op) {
        (StreamTransport::Grpc | StreamTransport::Connect, op) => op.grpc_path().to_owned(),
        (StreamTransport::WebSocket, StreamOperation::EchoStream) => contract_stream::WS_ECHO_PATH.to_owned(),
        (StreamTransport::WebSocket, StreamOperation::Upload) => contract_stream::WS_UPLOAD_PATH.to_owned(),
        (StreamTransport::WebSocket, _) => contract_stream::WS_SUBSCRIBE_PATH.to_owned(),
        (StreamTransport::Poll, _) => contract_stream::POLL_PATH.to_owned(),
        (StreamTransport::Sse, _) => format!(
            "{}?{}",
            contract_stream::SSE_PATH,
            contract_stream::subscribe_query(subscribe)
        ),
    }
}

/// Opens a stream: on `conn` (a shared HTTP/2 connection) or on a
/// connection of its own.
pub(crate) async fn open_stream(
    t: &Target<'_>,
    conn: Option<&h2::client::SendRequest<Bytes>>,
    counters: &Rc<ByteCounters>,
) -> Result<Opened, Outcome> {
    let echo = t.op == StreamOperation::EchoStream;
    let upload = t.op == StreamOperation::Upload;
    match t.transport {
        StreamTransport::Grpc | StreamTransport::Sse if t.protocol.is_http2() => {
            let own;
            let conn = match conn {
                Some(c) => c,
                None => {
                    own = grpc::connect(t.endpoint, counters).await?;
                    &own
                }
            };
            let is_grpc = t.transport == StreamTransport::Grpc;
            let kind = if is_grpc {
                grpc::Kind::Grpc
            } else {
                grpc::Kind::EventStream
            };
            let (response, send) = grpc::open(conn, t.endpoint, t.path, kind, !is_grpc).await?;
            let mut sink = grpc::GrpcSink(send);
            if upload {
                // The answer's head comes after the last message: read it then.
                return Ok(Opened {
                    sink: Some(AnySink::Grpc(sink)),
                    source: AnySource::Grpc(grpc::GrpcSource::later(response)),
                    requests: 0,
                });
            }
            if !is_grpc {
                let body = grpc::head(response, grpc::Kind::EventStream).await?;
                return Ok(feed(AnySource::Sse(sse::SseSource::new(sse::Body::H2(grpc::H2Body(
                    body,
                ))))));
            }
            if echo {
                // A gRPC server may hold its response head until it has a
                // message to answer (grpc++ and grpc-go do by default):
                // waiting for the head before the first message would
                // deadlock, so it is read with the first reply, and the
                // stream is ready once its request is out and it can carry data.
                sink.ready().await?;
                return Ok(Opened {
                    sink: Some(AnySink::Grpc(sink)),
                    source: AnySource::Grpc(grpc::GrpcSource::later(response)),
                    requests: 0,
                });
            }
            sink.send_frame(grpc::frame(t.subscribe), true).await?;
            let body = grpc::head(response, grpc::Kind::Grpc).await?;
            Ok(feed(AnySource::Grpc(grpc::GrpcSource::new(body))))
        }
        StreamTransport::WebSocket => {
            let socket = ws::open(t.endpoint, counters, t.path).await?;
            let (mut sink, source) = ws::split(socket, t.frames);
            if upload {
                return Ok(Opened {
                    sink: Some(AnySink::WsUpload(ws::WsUploadSink(sink))),
                    source: AnySource::Ws(source),
                    requests: 0,
                });
            }
            if !echo {
                sink.send_message(t.subscribe).await?;
            }
            Ok(Opened {
                sink: Some(AnySink::Ws(sink)),
                source: AnySource::Ws(source),
                requests: u64::from(!echo),
            })
        }
        StreamTransport::Sse => {
            let body = sse::open_h1(t.endpoint, counters, t.path).await?;
            Ok(feed(AnySource::Sse(sse::SseSource::new(body))))
        }
        StreamTransport::Poll => {
            let poller = match (t.protocol.is_http2(), conn) {
                (true, Some(c)) => poll::Poller::H2(c.clone()),
                (true, None) => poll::Poller::H2(grpc::connect(t.endpoint, counters).await?),
                (false, _) => poll::open_h1(t.endpoint, counters).await?,
            };
            let (mut first, interval) = t.poll.expect("a polling target has its first poll");
            if first.rate > 0 {
                first.start_ns = super::session::wall_ns();
            }
            let source = poll::PollSource::new(poller, t.endpoint, first, interval);
            Ok(Opened {
                sink: None,
                source: AnySource::Poll(source),
                requests: 0,
            })
        }
        StreamTransport::Connect => {
            let body = connect::open_h1(t.endpoint, counters, t.path, t.subscribe).await?;
            Ok(feed(AnySource::Connect(connect::ConnectSource::new(body))))
        }
        StreamTransport::Grpc => Err(Outcome::new(
            StreamEndKind::Broken,
            format!("--stream {} over --protocol {} is not driven", t.transport, t.protocol),
        )),
    }
}
