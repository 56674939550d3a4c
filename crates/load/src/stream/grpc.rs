//! gRPC streams (and SSE over HTTP/2) on the `h2` crate: a stream's
//! messages go out as DATA frames as the schedule says, with HTTP/2 flow
//! control visible (a message that finds no window is a deferred send),
//! and come back as they arrive, deframed one by one.
//!
//! The engine's own HTTP/2 client (`driver/h2conn.rs`) sends a request
//! body whole and reads a response whole; a stream needs both halves open
//! for its lifetime with back-pressure on the sending one, which `h2`'s
//! `SendStream`/`RecvStream` give as they are.

use std::rc::Rc;

use bytes::{Buf as _, BufMut as _, Bytes, BytesMut};
use h2::client::SendRequest;
use h2::{RecvStream, SendStream};
use http::{HeaderMap, Request, StatusCode};
use protobench_contract::pb::bench::StreamMessage;
use protobench_model::stream::StreamEndKind;

use super::record::Outcome;
use super::session::{MessageSink, MessageSource};
use crate::driver::ByteCounters;
use crate::driver::grpc::{MAX_GRPC_MESSAGE, is_grpc_content_type, percent_decode};
use crate::driver::net::Endpoint;

/// HTTP/2 receive windows: as the unary driver's (docs/engine.md).
const STREAM_WINDOW: u32 = 8 << 20;
const CONNECTION_WINDOW: u32 = 64 << 20;

fn broken(what: &str, e: impl std::fmt::Display) -> Outcome {
    Outcome::new(StreamEndKind::Broken, format!("{what}: {e}"))
}

/// Opens an HTTP/2 connection (TCP, TLS with ALPN `h2`, preface) and
/// drives it on this thread.
pub(crate) async fn connect(endpoint: &Endpoint, counters: &Rc<ByteCounters>) -> Result<SendRequest<Bytes>, Outcome> {
    let io = endpoint.connect(counters).await.map_err(Outcome::from)?;
    if endpoint.tls.is_some() && io.inner.alpn() != Some(b"h2") {
        return Err(Outcome::new(
            StreamEndKind::Connect,
            format!("{} did not agree to HTTP/2 (ALPN h2)", endpoint.addr),
        ));
    }
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .enable_push(false)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(|e| {
            Outcome::new(
                StreamEndKind::Connect,
                format!("HTTP/2 handshake with {}: {e}", endpoint.addr),
            )
        })?;
    tokio::task::spawn_local(async move {
        let _ = connection.await;
    });
    send.ready().await.map_err(|e| {
        Outcome::new(
            StreamEndKind::Connect,
            format!("HTTP/2 connection to {}: {e}", endpoint.addr),
        )
    })
}

/// What an HTTP/2 stream carries: a gRPC call, an event stream (SSE) or
/// one JSON reply (a poll).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Grpc,
    EventStream,
    Json,
}

impl Kind {
    /// The content type a reply must have (gRPC's is checked apart).
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Kind::Grpc => "application/grpc",
            Kind::EventStream => "text/event-stream",
            Kind::Json => "application/json",
        }
    }
}

/// Opens a stream: a request to `path` with the gRPC headers (or a plain
/// GET), its head sent; `end` closes the client's side at once (no body).
pub(crate) async fn open(
    conn: &SendRequest<Bytes>,
    endpoint: &Endpoint,
    path: &str,
    kind: Kind,
    end: bool,
) -> Result<(h2::client::ResponseFuture, SendStream<Bytes>), Outcome> {
    let uri = format!("{}://{}{path}", endpoint.scheme(), endpoint.authority);
    let request = if kind == Kind::Grpc {
        Request::post(uri)
            .header("content-type", "application/grpc")
            .header("te", "trailers")
    } else {
        Request::get(uri).header("accept", kind.content_type())
    }
    .body(())
    .map_err(|e| broken("building the request", e))?;
    let mut conn = conn
        .clone()
        .ready()
        .await
        .map_err(|e| broken("the HTTP/2 connection", e))?;
    conn.send_request(request, end)
        .map_err(|e| broken("opening an HTTP/2 stream", e))
}

/// Waits for the response head: 200, and for gRPC its content type (a
/// trailers-only answer is the status it carries).
pub(crate) async fn head(response: h2::client::ResponseFuture, kind: Kind) -> Result<RecvStream, Outcome> {
    let response = response.await.map_err(|e| broken("waiting for the response head", e))?;
    let (parts, body) = response.into_parts();
    if parts.status != StatusCode::OK {
        return Err(Outcome::coded(
            StreamEndKind::HttpStatus,
            i64::from(parts.status.as_u16()),
            format!("http status {} (expected 200)", parts.status.as_u16()),
        ));
    }
    if kind != Kind::Grpc {
        content_type(&parts.headers, kind)?;
    } else {
        if let Some(status) = grpc_status(&parts.headers) {
            return Err(
                status.unwrap_or_else(|| Outcome::new(StreamEndKind::Broken, "trailers-only OK before any message"))
            );
        }
        let ct = parts.headers.get("content-type").map(|v| v.as_bytes()).unwrap_or(b"");
        if !is_grpc_content_type(ct) {
            return Err(Outcome::new(
                StreamEndKind::WrongMessage,
                format!(
                    "content type {:?} (expected application/grpc)",
                    String::from_utf8_lossy(ct)
                ),
            ));
        }
    }
    Ok(body)
}

/// Checks the content type of an SSE or poll response (either HTTP version).
pub(crate) fn content_type(headers: &http::HeaderMap, kind: Kind) -> Result<(), Outcome> {
    let ct = headers.get("content-type").map(|v| v.as_bytes()).unwrap_or(b"");
    if ct.starts_with(kind.content_type().as_bytes()) {
        Ok(())
    } else {
        Err(Outcome::new(
            StreamEndKind::WrongMessage,
            format!(
                "content type {:?} (expected {})",
                String::from_utf8_lossy(ct),
                kind.content_type()
            ),
        ))
    }
}

/// `grpc-status` of a header map: `None` if absent, `Some(None)` for OK,
/// `Some(Some(outcome))` for a failure.
fn grpc_status(headers: &HeaderMap) -> Option<Option<Outcome>> {
    let code = headers.get("grpc-status")?;
    let code: i64 = std::str::from_utf8(code.as_bytes())
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    if code == 0 {
        return Some(None);
    }
    let message = headers
        .get("grpc-message")
        .map(|m| percent_decode(m.as_bytes()))
        .unwrap_or_default();
    Some(Some(Outcome::coded(
        StreamEndKind::GrpcStatus,
        code,
        format!("grpc status {code}: {message}"),
    )))
}

/// One message in its 5-byte gRPC frame.
pub(crate) fn frame<M: prost::Message>(message: &M) -> Bytes {
    let len = message.encoded_len();
    let mut buf = BytesMut::with_capacity(5 + len);
    buf.put_u8(0);
    buf.put_u32(len as u32);
    message.encode(&mut buf).expect("a BytesMut grows");
    buf.freeze()
}

/// The sending half of a gRPC stream.
pub(crate) struct GrpcSink(pub(crate) SendStream<Bytes>);

impl GrpcSink {
    /// Waits until the stream can carry data (its HEADERS are out and the
    /// peer's window has room): part of a stream's set-up, so that its
    /// first message is not counted as deferred for a stream still opening.
    pub(crate) async fn ready(&mut self) -> Result<(), Outcome> {
        self.0.reserve_capacity(1);
        while self.0.capacity() == 0 {
            match std::future::poll_fn(|cx| self.0.poll_capacity(cx)).await {
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(broken("opening the stream", e)),
                None => return Err(Outcome::new(StreamEndKind::Broken, "the stream closed while opening")),
            }
        }
        self.0.reserve_capacity(0);
        Ok(())
    }

    /// Sends one framed message as the flow-control window allows, in as
    /// many pieces as it takes: a message larger than the peer's window
    /// (64 KiB messages against grpc-go's default 65,535-byte stream
    /// window, which it widens only once it has seen a message's header)
    /// must go out in part, or it never goes. `Ok(true)` when the window
    /// was not there at once for all of it.
    pub(crate) async fn send_frame(&mut self, mut bytes: Bytes, end: bool) -> Result<bool, Outcome> {
        let mut blocked = false;
        loop {
            self.0.reserve_capacity(bytes.len());
            while self.0.capacity() == 0 && !bytes.is_empty() {
                blocked = true;
                match std::future::poll_fn(|cx| self.0.poll_capacity(cx)).await {
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(broken("waiting for the flow-control window", e)),
                    None => return Err(Outcome::new(StreamEndKind::Broken, "the stream closed while sending")),
                }
            }
            let n = self.0.capacity().min(bytes.len());
            if n < bytes.len() {
                blocked = true;
            }
            let piece = bytes.split_to(n);
            let last = bytes.is_empty();
            self.0
                .send_data(piece, end && last)
                .map_err(|e| broken("sending a message", e))?;
            if last {
                return Ok(blocked);
            }
        }
    }
}

impl MessageSink for GrpcSink {
    async fn send(&mut self, message: &StreamMessage) -> Result<bool, Outcome> {
        self.send_frame(frame(message), false).await
    }

    async fn finish(&mut self) -> Result<(), Outcome> {
        self.0
            .send_data(Bytes::new(), true)
            .map_err(|e| broken("ending the client's side", e))
    }
}

/// The receiving half of a gRPC stream: messages as they arrive, then
/// the trailers' status.
pub(crate) struct GrpcSource {
    /// The response head still to come (a client-streaming call is answered
    /// only after the client's last message).
    head: Option<h2::client::ResponseFuture>,
    body: Option<RecvStream>,
    buf: BytesMut,
}

impl GrpcSource {
    pub(crate) fn new(body: RecvStream) -> GrpcSource {
        GrpcSource {
            head: None,
            body: Some(body),
            buf: BytesMut::new(),
        }
    }

    /// A source whose head is read with its first message.
    pub(crate) fn later(head: h2::client::ResponseFuture) -> GrpcSource {
        GrpcSource {
            head: Some(head),
            body: None,
            buf: BytesMut::new(),
        }
    }

    /// The next message's bytes; `Ok(None)` at the end with status OK.
    pub(crate) async fn next_bytes(&mut self) -> Result<Option<Bytes>, Outcome> {
        if let Some(head) = self.head.take() {
            self.body = Some(self::head(head, Kind::Grpc).await?);
        }
        let Some(body) = self.body.as_mut() else {
            return Err(Outcome::new(StreamEndKind::Broken, "the stream has no response"));
        };
        loop {
            if self.buf.len() >= 5 {
                if self.buf[0] != 0 {
                    return Err(Outcome::new(
                        StreamEndKind::WrongMessage,
                        "a compressed gRPC message (none was asked for)",
                    ));
                }
                let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
                if len > MAX_GRPC_MESSAGE {
                    return Err(Outcome::new(
                        StreamEndKind::WrongMessage,
                        format!("a gRPC message of {len} bytes (limit {MAX_GRPC_MESSAGE})"),
                    ));
                }
                if self.buf.len() >= 5 + len {
                    self.buf.advance(5);
                    return Ok(Some(self.buf.split_to(len).freeze()));
                }
            }
            match body.data().await {
                Some(Ok(data)) => {
                    let _ = body.flow_control().release_capacity(data.len());
                    self.buf.extend_from_slice(&data);
                }
                Some(Err(e)) => return Err(broken("reading the stream", e)),
                None => break,
            }
        }
        if !self.buf.is_empty() {
            return Err(Outcome::new(
                StreamEndKind::Broken,
                format!("the stream ended inside a message ({} bytes left)", self.buf.len()),
            ));
        }
        let trailers = body.trailers().await.map_err(|e| broken("reading the trailers", e))?;
        match trailers.as_ref().and_then(grpc_status) {
            Some(None) => Ok(None),
            Some(Some(failure)) => Err(failure),
            None => Err(Outcome::new(
                StreamEndKind::Broken,
                "the stream ended without grpc-status",
            )),
        }
    }
}

impl<M: prost::Message + Default> MessageSource<M> for GrpcSource {
    async fn next(&mut self) -> Result<Option<M>, Outcome> {
        match self.next_bytes().await? {
            None => Ok(None),
            Some(bytes) => M::decode(bytes)
                .map(Some)
                .map_err(|e| Outcome::new(StreamEndKind::WrongMessage, format!("undecodable message: {e}"))),
        }
    }
}

/// The raw body of a plain HTTP/2 response (SSE), chunk by chunk.
pub(crate) struct H2Body(pub(crate) RecvStream);

impl H2Body {
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, Outcome> {
        match self.0.data().await {
            Some(Ok(data)) => {
                let _ = self.0.flow_control().release_capacity(data.len());
                Ok(Some(data))
            }
            Some(Err(e)) => Err(broken("reading the stream", e)),
            None => Ok(None),
        }
    }
}
